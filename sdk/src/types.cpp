#include "graphsplit/sdk/ir/types.h"

#include <array>
#include <limits>

namespace graphsplit::sdk {
namespace {

struct DataTypeInfo {
  std::string_view name;
  std::string_view onnx_name;
  int64_t size;
};
constexpr std::array<DataTypeInfo, kMaxDataType + 1> kDataTypes = {{
    {"undefined", "undefined", 0},
    {"float32", "float", 4},
    {"uint8", "uint8", 1},
    {"int8", "int8", 1},
    {"uint16", "uint16", 2},
    {"int16", "int16", 2},
    {"int32", "int32", 4},
    {"int64", "int64", 8},
    {"string", "string", 0},
    {"bool", "bool", 1},
    {"float16", "float16", 2},
    {"float64", "double", 8},
    {"uint32", "uint32", 4},
    {"uint64", "uint64", 8},
    {"complex64", "complex64", 8},
    {"complex128", "complex128", 16},
    {"bfloat16", "bfloat16", 2},
}};

constexpr std::array<std::string_view, 8> kFormats = {"ND",        "NCHW",       "NHWC",  "NC1HWC0",
                                                      "FRACTAL_Z", "FRACTAL_NZ", "NCDHW", "NDHWC"};

}  // namespace

std::string_view to_string(DataType type) {
  auto i = static_cast<int32_t>(type);
  return (i >= 0 && i <= kMaxDataType) ? kDataTypes[i].name : "invalid";
}

std::optional<DataType> parse_data_type(std::string_view name) {
  for (int32_t i = 0; i <= kMaxDataType; ++i) {
    if (kDataTypes[i].name == name || kDataTypes[i].onnx_name == name) return static_cast<DataType>(i);
  }
  return std::nullopt;
}

int64_t element_size(DataType type) {
  auto i = static_cast<int32_t>(type);
  return (i >= 0 && i <= kMaxDataType) ? kDataTypes[i].size : 0;
}

std::string_view to_string(Format format) {
  auto i = static_cast<size_t>(format);
  return i < kFormats.size() ? kFormats[i] : "invalid";
}

std::optional<Format> parse_format(std::string_view name) {
  for (size_t i = 0; i < kFormats.size(); ++i) {
    if (kFormats[i] == name) return static_cast<Format>(i);
  }
  return std::nullopt;
}

std::string_view to_string(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor:
      return "tensor";
    case ValueKind::kSequence:
      return "sequence";
    case ValueKind::kMap:
      return "map";
    case ValueKind::kOptional:
      return "optional";
    case ValueKind::kSparseTensor:
      return "sparse_tensor";
    case ValueKind::kUnknown:
      return "unknown";
  }
  return "invalid";
}

void Shape::set_dim_name(size_t index, std::string name) {
  if (dim_names_.size() < dims_.size()) dim_names_.resize(dims_.size());
  if (index < dim_names_.size()) dim_names_[index] = std::move(name);
}

bool Shape::is_static() const {
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

std::optional<int64_t> Shape::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(dims_[i]);
    if (i < dim_names_.size() && !dim_names_[i].empty()) {
      s += '(';
      s += dim_names_[i];
      s += ')';
    }
  }
  s += ']';
  return s;
}

std::string TensorDesc::to_string() const {
  std::string s;
  if (kind != ValueKind::kTensor) {
    s += sdk::to_string(kind);
    s += '<';
  }
  s += sdk::to_string(dtype);
  s += shape.to_string();
  if (kind != ValueKind::kTensor) s += '>';
  return s;
}

}  // namespace graphsplit::sdk
