#include <algorithm>
#include <atomic>
#include <limits>
#include <stdexcept>

#include "kernel.h"

namespace graphsplit::kernels {

// ---- 16-bit floats (round to nearest even)
Half::Half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    bits = static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    return;
  }
  if (abs >= 0x477ff000u) {  // rounds to >= 65520: overflow to inf
    bits = static_cast<uint16_t>(sign | 0x7c00u);
    return;
  }
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    float magnitude;
    std::memcpy(&magnitude, &abs, 4);
    // Scale so that the half subnormal unit (2^-24) becomes 1, then round to nearest even.
    const float scaled = magnitude * 16777216.0f;
    bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
    return;
  }
  uint32_t mant = abs & 0x7fffffu;
  uint32_t exp = (abs >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  bits = static_cast<uint16_t>(sign | h);
}

Half::operator float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  uint32_t x;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

BFloat16::BFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    return;
  }
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<uint16_t>((x + rounding) >> 16);
}

BFloat16::operator float() const {
  const uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// ---- context
const Dims& KernelContext::rule_dims(size_t i) const {
  if (!rule || i >= rule->size() || !(*rule)[i].known)
    throw RuleMismatch("the shape rule gives no shape for output " + std::to_string(i));
  return (*rule)[i].dims;
}

char* KernelContext::allocate_ruled(size_t i, DataType dtype) {
  return allocate(i, dtype, rule_dims(i));
}

void KernelContext::check_rule(size_t i, DataType dtype, const Dims& dims) const {
  if (!rule || i >= rule->size() || !(*rule)[i].known) return;
  const RuleShape& r = (*rule)[i];
  if (r.dims != dims || (rule_checks_dtype && r.dtype != DataType::kUndefined && r.dtype != dtype)) {
    throw RuleMismatch("output " + std::to_string(i) + " is " + std::string(sdk::to_string(dtype)) +
                       dims_string(dims) + " but its shape rule says " +
                       std::string(sdk::to_string(r.dtype)) + dims_string(r.dims));
  }
}

char* KernelContext::allocate(size_t i, DataType dtype, const Dims& dims) {
  check_rule(i, dtype, dims);
  sdk::TensorDesc desc;
  desc.dtype = dtype;
  desc.shape = sdk::Shape(dims);
  // Element counts from data (Range, ConstantOfShape, Expand...) can be absurd: refuse rather than overflow.
  const int64_t es = sdk::element_size(dtype);
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > (int64_t{1} << 60) / d))
      throw std::length_error("tensor shape " + dims_string(dims) + " is too large");
    count *= d;
  }
  const int64_t limit = max_tensor_bytes;
  if (count > (int64_t{1} << 60) / std::max<int64_t>(es, 1) || (limit > 0 && count * es > limit))
    throw std::length_error("a " + std::string(sdk::to_string(dtype)) + dims_string(dims) +
                            " output exceeds the tensor size limit");
  const size_t bytes = static_cast<size_t>(count * es);
  char* out = nullptr;
  if (outputs->size() <= i) outputs->resize(i + 1);
  (*outputs)[i] = allocator->allocate(i, std::move(desc), bytes, &out);
  return out;
}

void KernelContext::set_output(size_t i, Tensor value) {
  if (outputs->size() <= i) outputs->resize(i + 1);
  (*outputs)[i] = std::move(value);
}

void KernelContext::set_output_copy(size_t i, const Tensor& source, const Dims& dims) {
  if (sdk::element_size(dtype_of(source)) == 0) {
    // Strings have no fixed size, so no buffer can be allocated for them; they are immutable, so the output
    // shares the source's bytes under the new dims.
    check_rule(i, dtype_of(source), dims);
    if (num_elements(dims) != num_elements(dims_of(source)))
      throw std::length_error("a string tensor cannot change its element count");
    Tensor t = source;
    t.mutable_desc().shape = sdk::Shape(dims);
    set_output(i, std::move(t));
    return;
  }
  char* out = allocate(i, dtype_of(source), dims);
  if (source.size_bytes() > 0) std::memcpy(out, source.data(), source.size_bytes());
}

int64_t KernelContext::attr_int(std::string_view key, int64_t fallback) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  if (!v) return fallback;
  if (const int64_t* i = v->as_int()) return *i;
  if (const bool* b = v->as_bool()) return *b ? 1 : 0;
  return fallback;
}

float KernelContext::attr_float(std::string_view key, float fallback) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  if (!v) return fallback;
  if (const double* f = v->as_float()) return static_cast<float>(*f);
  if (const int64_t* i = v->as_int()) return static_cast<float>(*i);
  return fallback;
}

std::string KernelContext::attr_string(std::string_view key, std::string fallback) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  if (!v || !v->as_string()) return fallback;
  return *v->as_string();
}

std::optional<std::vector<int64_t>> KernelContext::attr_ints(std::string_view key) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  if (!v || !v->as_ints()) return std::nullopt;
  return *v->as_ints();
}

std::optional<std::vector<float>> KernelContext::attr_floats(std::string_view key) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  if (!v || v->kind() != sdk::AttrValue::Kind::kFloats) return std::nullopt;
  const auto& d = std::get<std::vector<double>>(v->storage());
  return std::vector<float>(d.begin(), d.end());
}

const Tensor* KernelContext::attr_tensor(std::string_view key) const {
  const sdk::AttrValue* v = node->attrs().get(key);
  return v ? v->as_tensor() : nullptr;
}

Status KernelContext::error(const std::string& message) const {
  return Status::invalid_argument("node '" + node->name() + "' (" + node->type() + "): " + message);
}

Status KernelContext::unsupported(const std::string& message) const {
  return Status::unsupported("node '" + node->name() + "' (" + node->type() + "): " + message);
}

// ---- helpers
int onnx_opset_of(const sdk::Graph& graph) {
  const sdk::AttrValue* v = graph.attrs().get(sdk::attr::kOnnxOpsetImport);
  if (!v || !v->as_strings()) v = graph.root()->attrs().get(sdk::attr::kOnnxOpsetImport);
  if (!v || !v->as_strings()) return 17;
  for (const std::string& entry : *v->as_strings()) {
    auto colon = entry.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string domain = entry.substr(0, colon);
    if (domain.empty() || domain == "ai.onnx") return std::atoi(entry.c_str() + colon + 1);
  }
  return 17;
}

int64_t num_elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

const Dims& dims_of(const Tensor& t) {
  return t.desc().shape.dims();
}

DataType dtype_of(const Tensor& t) {
  return t.desc().dtype;
}

std::vector<int64_t> to_int64s(const Tensor& t) {
  const int64_t n = num_elements(dims_of(t));
  std::vector<int64_t> out(static_cast<size_t>(n));
  (void)visit_numeric(dtype_of(t), [&](auto tag) {
    using T = decltype(tag);
    const T* p = data_as<T>(t);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int64_t>(static_cast<Compute<T>>(p[i]));
    return Status::ok();
  });
  return out;
}

std::vector<double> to_doubles(const Tensor& t) {
  const int64_t n = num_elements(dims_of(t));
  std::vector<double> out(static_cast<size_t>(n));
  (void)visit_numeric(dtype_of(t), [&](auto tag) {
    using T = decltype(tag);
    const T* p = data_as<T>(t);
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(static_cast<Compute<T>>(p[i]));
    return Status::ok();
  });
  return out;
}

double scalar_as_double(const Tensor& t, size_t index) {
  double out = 0;
  const int64_t es = sdk::element_size(dtype_of(t));
  if (es == 0 || (index + 1) * static_cast<size_t>(es) > t.size_bytes())
    return 0;  // absent: never read past the end
  (void)visit_numeric(dtype_of(t), [&](auto tag) {
    using T = decltype(tag);
    out = static_cast<double>(static_cast<Compute<T>>(data_as<T>(t)[index]));
    return Status::ok();
  });
  return out;
}

bool normalize_axis(int64_t* axis, int64_t rank) {
  // A scalar has no axis (found by fuzzing: Slice on a scalar indexed an empty vector).
  if (rank <= 0 || *axis < -rank || *axis >= rank) return false;
  if (*axis < 0) *axis += rank;
  return true;
}

std::string dims_string(const Dims& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

void split_at_axis(const Dims& dims, int64_t axis, int64_t* outer, int64_t* inner) {
  *outer = 1;
  *inner = 1;
  for (int64_t a = 0; a < static_cast<int64_t>(dims.size()); ++a) {
    if (a < axis) *outer *= dims[a];
    if (a > axis) *inner *= dims[a];
  }
}

Dims strides_of(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

bool broadcast_shape(const Dims& a, const Dims& b, Dims* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      (*out)[i] = da;
    else if (da == 1)
      (*out)[i] = db;
    else
      return false;
  }
  return true;
}

// ---- registry
namespace {

struct Registry {
  std::vector<KernelEntry> entries;  // sorted by name
  Registry() {
    register_elementwise(&entries);
    register_shape_ops(&entries);
    register_reductions(&entries);
    register_nn(&entries);
    register_normalization(&entries);
    register_resampling(&entries);
    register_misc(&entries);
    register_recurrent(&entries);
    register_quantized(&entries);
    register_sequence(&entries);
    register_strings(&entries);
    register_random(&entries);
    register_training(&entries);
    register_signal(&entries);
    register_ops18(&entries);
    register_ml(&entries);
    register_attention(&entries);
    register_trees(&entries);
    std::sort(entries.begin(), entries.end(), [](const KernelEntry& a, const KernelEntry& b) {
      return std::string_view(a.op_type) < b.op_type;
    });
  }
};

const Registry& registry() {
  static const Registry r;  // built on first use; holds plain function pointers only
  return r;
}

}  // namespace

KernelFn find_kernel(std::string_view op_type, std::string_view domain) {
  std::string key;
  if (!domain.empty() && domain != "ai.onnx") {
    key = std::string(domain) + "::" + std::string(op_type);
    op_type = key;
  }
  const auto& e = registry().entries;
  auto it = std::lower_bound(e.begin(), e.end(), op_type,
                             [](const KernelEntry& k, std::string_view name) { return k.op_type < name; });
  return it != e.end() && it->op_type == op_type ? it->fn : nullptr;
}

bool has_kernel(std::string_view op_type, std::string_view domain) {
  return find_kernel(op_type, domain) != nullptr;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const KernelEntry& k : registry().entries) names.emplace_back(k.op_type);
  return names;
}

}  // namespace graphsplit::kernels
