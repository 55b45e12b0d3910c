// What kernels see: their node, input tensors, a way to allocate outputs, and small helpers shared by all of
// them. Internal to libgraphsplit_kernels.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/ir/tensor.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::kernels {

using sdk::DataType;
using sdk::Status;
using sdk::Tensor;
using Dims = std::vector<int64_t>;

// IEEE half and bfloat16, computed through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f);  // NOLINT(google-explicit-constructor): behaves as a narrower float
  operator float() const;
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f);  // NOLINT(google-explicit-constructor)
  operator float() const;
};

// Where outputs live: the planned arena slot when the plan has one and the shape matches, else fresh memory.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual Tensor allocate(size_t output, sdk::TensorDesc desc, size_t bytes, char** writable) = 0;
};

// Thrown by KernelContext::in() for an input the node does not have (a malformed model: found by fuzzing);
// the executor turns it into an error naming the node and the input.
struct MissingInput : std::exception {
  explicit MissingInput(size_t i) : index(i) {}
  const char* what() const noexcept override { return "a required input is missing"; }
  size_t index;
};

// What the operator's shape rule (the function shape inference runs at compile time) says of one output,
// evaluated on the inputs of this run.
struct RuleShape {
  bool known = false;  // false: the rule cannot tell before the kernel runs (NonZero's count)
  DataType dtype = DataType::kUndefined;
  Dims dims;
};

// Thrown by KernelContext::allocate for an output whose shape is not the one the rule gave, and by
// rule_dims() when the rule gave none: the executor reports it naming the node.
struct RuleMismatch : std::exception {
  explicit RuleMismatch(std::string m) : message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

struct KernelContext {
  const sdk::Node* node = nullptr;
  int opset = 17;
  std::vector<const Tensor*> inputs;  // nullptr: an omitted optional input
  std::vector<Tensor>* outputs = nullptr;
  OutputAllocator* allocator = nullptr;
  int64_t max_tensor_bytes = 0;  // 0: no limit
  // How many times this executable called the node before: random generators draw anew on each call.
  uint64_t call = 0;
  // Per output, from the operator's shape rule; nullptr when the operator has no rule (control flow).
  const std::vector<RuleShape>* rule = nullptr;
  // False in the inner context of a kernel that computes in a wider type (QLinearConv through a double Conv):
  // the dims still have to be the rule's, the type is converted afterwards.
  bool rule_checks_dtype = true;
  // Bit i: input i is a constant of the graph, the same bytes on every call (a kernel may pack it once).
  uint64_t constant_inputs = 0;
  // The step's own state, kept across calls for as long as the executable lives (prepared oneDNN primitives);
  // nullptr where there is no step (a kernel called by another kernel).
  std::shared_ptr<void>* state = nullptr;
  // Input 0 and output 0 are rank-4 values held channels-last: their dims read [N, H, W, C] and their bytes
  // are in that order (layout.h). Only kernels that layout.h names as channels-last capable see it set.
  bool channels_last = false;

  size_t num_inputs() const { return inputs.size(); }
  bool input_is_constant(size_t i) const { return i < 64 && (constant_inputs >> i & 1) != 0; }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const Tensor& in(size_t i) const {
    if (i >= inputs.size() || !inputs[i]) throw MissingInput(i);
    return *inputs[i];
  }
  size_t num_outputs() const { return node->num_outputs(); }
  // Is output i consumed (ONNX optional outputs may be left unnamed)?
  bool wants_output(size_t i) const { return i < node->num_outputs(); }

  // A new output tensor of the given type and shape; returns its writable bytes.
  char* allocate(size_t i, DataType dtype, const Dims& dims);
  template <class T>
  T* allocate_as(size_t i, DataType dtype, const Dims& dims) {
    return reinterpret_cast<T*>(allocate(i, dtype, dims));
  }
  // Output i with the dims and type the shape rule gave: kernels whose output shape is pure shape arithmetic
  // take it from the rule instead of computing it a second time.
  char* allocate_ruled(size_t i, DataType dtype);
  template <class T>
  T* allocate_ruled_as(size_t i, DataType dtype) {
    return reinterpret_cast<T*>(allocate_ruled(i, dtype));
  }
  const Dims& rule_dims(size_t i) const;
  // Throws RuleMismatch when output i of this type and dims is not what the rule said.
  void check_rule(size_t i, DataType dtype, const Dims& dims) const;
  // Output i is `value` as it is: immutable values made whole (strings, sequences, optionals, maps) that no
  // planned buffer can hold.
  void set_output(size_t i, Tensor value);
  // Output i holds the given bytes (copied into place).
  void set_output_copy(size_t i, const Tensor& source, const Dims& dims);

  // Attributes with ONNX defaults.
  int64_t attr_int(std::string_view key, int64_t fallback) const;
  float attr_float(std::string_view key, float fallback) const;
  std::string attr_string(std::string_view key, std::string fallback = {}) const;
  std::optional<std::vector<int64_t>> attr_ints(std::string_view key) const;
  std::optional<std::vector<float>> attr_floats(std::string_view key) const;
  const Tensor* attr_tensor(std::string_view key) const;

  Status error(const std::string& message) const;
  // A documented gap of the kernel (a mode or attribute it does not implement), as opposed to bad input.
  Status unsupported(const std::string& message) const;
};

// The thread budget of the kernels (omrun --threads; 0 there means every processor), at least 1.
int kernel_threads();
// OpenBLAS on one thread and its thread pool stopped, once per process (nn.cpp).
void quiet_blas();

// Runs f(begin, end) over [0, n) on up to kernel_threads() threads, each taking at least `grain` items; one
// call on the calling thread when the work is small. For work whose items are independent (elementwise):
// every item is computed the same way whichever thread takes it, so results do not depend on the thread
// count. f must not throw.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int64_t most = grain > 0 ? n / grain : n;
  const int threads = static_cast<int>(std::min<int64_t>(kernel_threads(), most));
  if (threads <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t i = omp_get_thread_num(), t = omp_get_num_threads();
    f(n * i / t, n * (i + 1) / t);
  }
}

using KernelFn = Status (*)(KernelContext&);

// Registration happens in each source file's registration function (no static registries, design guide).
struct KernelEntry {
  const char* op_type;
  KernelFn fn;
};
void register_elementwise(std::vector<KernelEntry>* table);
void register_shape_ops(std::vector<KernelEntry>* table);
void register_reductions(std::vector<KernelEntry>* table);
void register_nn(std::vector<KernelEntry>* table);
void register_normalization(std::vector<KernelEntry>* table);
void register_resampling(std::vector<KernelEntry>* table);
void register_misc(std::vector<KernelEntry>* table);
void register_recurrent(std::vector<KernelEntry>* table);
void register_quantized(std::vector<KernelEntry>* table);
void register_sequence(std::vector<KernelEntry>* table);
void register_strings(std::vector<KernelEntry>* table);
void register_random(std::vector<KernelEntry>* table);
void register_training(std::vector<KernelEntry>* table);
void register_signal(std::vector<KernelEntry>* table);
void register_ops18(std::vector<KernelEntry>* table);
void register_ml(std::vector<KernelEntry>* table);
void register_attention(std::vector<KernelEntry>* table);
void register_trees(std::vector<KernelEntry>* table);
// Dropout in training mode (random.cpp).
Status dropout_training(KernelContext& ctx, double ratio);
// Input i's strings (an error for a non-string or corrupt input), and output i as these strings
// (strings.cpp).
Status read_strings(const KernelContext& ctx, size_t i, std::vector<std::string>* out);
void set_strings(KernelContext& ctx, size_t i, const Dims& dims, const std::vector<std::string>& values);
// ai.onnx.ml's shared pieces (ml.cpp): the class labels as a 1-D tensor (int64 or string), a row's
// post_transform, and output 0 as the labels of each row's best class.
Tensor class_label_tensor(const KernelContext& ctx, int64_t* count);
Status ml_post_transform(const KernelContext& ctx, std::vector<double>& row);
Status write_class_labels(KernelContext& ctx, const Tensor& names, const std::vector<int64_t>& best);
// Cast where either side is a string (strings.cpp).
Status cast_string(KernelContext& ctx, const Tensor& x, DataType to);
KernelFn find_kernel(std::string_view op_type, std::string_view domain);
// The graph's ai.onnx opset (its `_onnx_opset_import`, else its root's; 17 when neither says).
int onnx_opset_of(const sdk::Graph& graph);

// ---- helpers
int64_t num_elements(const Dims& dims);
const Dims& dims_of(const Tensor& t);
DataType dtype_of(const Tensor& t);
template <class T>
const T* data_as(const Tensor& t) {
  return reinterpret_cast<const T*>(t.data());
}
// Reads an integer tensor (int32/int64/uint8...) as int64 values.
std::vector<int64_t> to_int64s(const Tensor& t);
// Any numeric tensor as doubles.
std::vector<double> to_doubles(const Tensor& t);
double scalar_as_double(const Tensor& t, size_t index = 0);
// Normalises a possibly negative axis against `rank`; false if out of range.
bool normalize_axis(int64_t* axis, int64_t rank);
std::string dims_string(const Dims& dims);
// Elements before and after `axis` (exclusive): a tensor seen as [outer, dims[axis], inner].
void split_at_axis(const Dims& dims, int64_t axis, int64_t* outer, int64_t* inner);
// Row-major strides.
Dims strides_of(const Dims& dims);
// Numpy-style broadcast; false if incompatible.
bool broadcast_shape(const Dims& a, const Dims& b, Dims* out);

// Calls f(T{}) for the C++ type of `dtype`. Returns unsupported for types outside `Types`.
template <bool kAllowBool = true, class F>
Status visit_numeric(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat:
      return f(float{});
    case DataType::kDouble:
      return f(double{});
    case DataType::kFloat16:
      return f(Half{});
    case DataType::kBFloat16:
      return f(BFloat16{});
    case DataType::kInt8:
      return f(int8_t{});
    case DataType::kUint8:
      return f(uint8_t{});
    case DataType::kInt16:
      return f(int16_t{});
    case DataType::kUint16:
      return f(uint16_t{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kUint32:
      return f(uint32_t{});
    case DataType::kInt64:
      return f(int64_t{});
    case DataType::kUint64:
      return f(uint64_t{});
    case DataType::kBool:
      if constexpr (kAllowBool) return f(bool{});
      [[fallthrough]];
    default:
      return Status::unsupported("data type " + std::string(sdk::to_string(dtype)) + " is not supported");
  }
}
// Numeric types without bool (arithmetic).
template <class F>
Status visit_arith(DataType dtype, F&& f) {
  return visit_numeric<false>(dtype, std::forward<F>(f));
}
template <class F>
Status visit_float(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kFloat:
      return f(float{});
    case DataType::kDouble:
      return f(double{});
    case DataType::kFloat16:
      return f(Half{});
    case DataType::kBFloat16:
      return f(BFloat16{});
    default:
      return Status::unsupported("data type " + std::string(sdk::to_string(dtype)) +
                                 " is not supported (floating point only)");
  }
}
// Output `o` of a floating-point type, element i computed in double by value(i).
template <class F>
Status write_float_output(KernelContext& ctx, size_t o, DataType dtype, const Dims& dims, F value);

template <class T>
constexpr bool is_floatish() {
  return std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
}
inline bool is_floatish_type(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBFloat16;
}
// The type computations are done in: float for the 16-bit floats, T otherwise.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <class F>
Status write_float_output(KernelContext& ctx, size_t o, DataType dtype, const Dims& dims, F value) {
  return visit_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(o, dtype, dims);
    for (int64_t i = 0, n = num_elements(dims); i < n; ++i) out[i] = T(static_cast<Compute<T>>(value(i)));
    return Status::ok();
  });
}

}  // namespace graphsplit::kernels
