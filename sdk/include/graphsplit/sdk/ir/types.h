// Value types of the IR: data types, formats, shapes and tensor descriptors.
//
// Conventions follow GE: a dimension of -1 is unknown, and a shape whose only dimension is -2 has unknown
// rank. Symbolic dimension names from ONNX (dim_param) are kept next to the -1 so that later passes can tell
// two unknown dimensions apart when they are the same symbol.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

// Numbering is ONNX's TensorProto.DataType, so the importer and the model file need no translation table.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};
inline constexpr int32_t kMaxDataType = 16;

GS_SDK_API std::string_view to_string(DataType type);
// Returns nullopt for names it does not know; accepts both "float32" and ONNX's "float".
GS_SDK_API std::optional<DataType> parse_data_type(std::string_view name);
// Size in bytes of one element; 0 for kUndefined and kString (variable length).
GS_SDK_API int64_t element_size(DataType type);

enum class Format : int32_t {
  kND = 0,
  kNCHW = 1,
  kNHWC = 2,
  kNC1HWC0 = 3,
  kFractalZ = 4,
  kFractalNZ = 5,
  kNCDHW = 6,
  kNDHWC = 7,
};
GS_SDK_API std::string_view to_string(Format format);
GS_SDK_API std::optional<Format> parse_format(std::string_view name);

// What kind of value flows on an edge. ONNX also has sequences, maps and optionals; for those the
// descriptor's dtype and shape describe the innermost tensor element.
enum class ValueKind : int32_t {
  kTensor = 0,
  kSequence = 1,
  kMap = 2,
  kOptional = 3,
  kSparseTensor = 4,
  kUnknown = 5,
};
GS_SDK_API std::string_view to_string(ValueKind kind);

inline constexpr int64_t kUnknownDim = -1;
inline constexpr int64_t kUnknownRank = -2;

class GS_SDK_API Shape {
 public:
  Shape() = default;  // a scalar
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  static Shape unknown_rank() { return Shape(std::vector<int64_t>{kUnknownRank}); }

  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& mutable_dims() { return dims_; }
  // Symbolic names, parallel to dims(); empty when no dimension has a name.
  const std::vector<std::string>& dim_names() const { return dim_names_; }
  void set_dim_name(size_t index, std::string name);
  void set_dim_names(std::vector<std::string> names) { dim_names_ = std::move(names); }

  bool is_unknown_rank() const { return dims_.size() == 1 && dims_[0] == kUnknownRank; }
  bool is_scalar() const { return dims_.empty(); }
  size_t rank() const { return dims_.size(); }
  // True when every dimension is known (>= 0) and the rank is known.
  bool is_static() const;
  // Element count of a static shape; nullopt if any dimension is unknown or the product overflows int64.
  std::optional<int64_t> num_elements() const;

  // "[1,3,-1(batch),224]" / "[-2]" / "[]": used in messages, dumps and tests.
  std::string to_string() const;

  // Written out (not defaulted) so that the header also compiles as C++17.
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.dims_ == b.dims_ && a.dim_names_ == b.dim_names_;
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  std::vector<int64_t> dims_;
  std::vector<std::string> dim_names_;
};

struct GS_SDK_API TensorDesc {
  ValueKind kind = ValueKind::kTensor;
  DataType dtype = DataType::kUndefined;
  Format format = Format::kND;
  Shape shape = Shape::unknown_rank();

  bool is_static() const { return kind == ValueKind::kTensor && shape.is_static(); }
  std::string to_string() const;  // "float32[1,3,224,224]"
  friend bool operator==(const TensorDesc& a, const TensorDesc& b) {
    return a.kind == b.kind && a.dtype == b.dtype && a.format == b.format && a.shape == b.shape;
  }
  friend bool operator!=(const TensorDesc& a, const TensorDesc& b) { return !(a == b); }
};

}  // namespace graphsplit::sdk
