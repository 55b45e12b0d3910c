// ONNX types and tensors in the IR: TypeProto -> TensorDesc, TensorProto -> Tensor (raw, typed and external
// data, every size checked against the file). Internal to the ONNX importer.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <unordered_map>

#include "graphsplit/sdk/ir/tensor.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::onnx_detail {

using sdk::Status;
namespace fs = std::filesystem;

// The importer's checks of the ModelProto itself (IR version, opsets, producer), for the shape inferencer
// too.
Status check_header(const onnx::ModelProto& m, const std::string& source);

void type_to_desc(const onnx::TypeProto& t, sdk::TensorDesc* d);
sdk::TensorDesc desc_of(const onnx::TypeProto* t);

template <class T>
void append_le(std::string* out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // x86-64 and aarch64 are little-endian; the file format says little-endian
  out->append(b, sizeof(T));
}

// "FLOAT8E4M3FN (17)": the ONNX name of an element type graphsplit has no representation for (float8, int4,
// float4 and whatever comes after), for messages.
inline std::string unsupported_type_name(int32_t dt) {
  // Types newer than libonnx 1.12's proto (ONNX 1.14 and later).
  static const char* const kNewer[] = {"FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                                       "UINT4",        "INT4",           "FLOAT4E2M1", "FLOAT8E8M0"};
  std::string name = "unknown";
  if (dt >= 17 && dt <= 24) {
    name = kNewer[dt - 17];
  } else if (onnx::TensorProto::DataType_IsValid(dt)) {
    name = onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(dt));
  }
  return name + " (" + std::to_string(dt) + ")";
}

// Initializers whose raw bytes were left in the model file when it was parsed (import_bytes): each message
// holds everything but raw_data, and the bytes are read from the file when the tensor is made, straight into
// its buffer. Parsed into the message, a model's weights were in memory twice at once (the file's bytes and
// the message's copy), then a third time as tensors.
struct EmbeddedWeights {
  struct Span {
    int64_t offset = 0;
    int64_t length = 0;
  };
  std::string file;  // the model file
  std::unordered_map<const onnx::TensorProto*, Span> spans;
};

class TensorReader {
 public:
  TensorReader(std::string source, std::string base_dir, const EmbeddedWeights* embedded = nullptr)
      : source_(std::move(source)), base_dir_(std::move(base_dir)), embedded_(embedded) {}

  Status read(const onnx::TensorProto& t, const std::string& what, sdk::Tensor* out) const {
    const int32_t dt = t.data_type();
    if (dt <= 0 || dt > sdk::kMaxDataType) {
      return err(what + " has data type " + unsupported_type_name(dt) +
                 ", which graphsplit cannot represent");
    }
    const auto dtype = static_cast<sdk::DataType>(dt);
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    sdk::Shape shape(dims);
    for (int64_t d : dims) {
      if (d < 0)
        return err(what + " has negative dimension " + std::to_string(d) + " in shape " + shape.to_string());
    }
    auto count = shape.num_elements();
    if (!count) return err(what + " has a shape whose element count overflows: " + shape.to_string());
    sdk::TensorDesc desc;
    desc.dtype = dtype;
    desc.shape = shape;
    if (t.has_segment()) return err(what + " is segmented, which is not supported");

    if (dtype == sdk::DataType::kString) {
      if (t.data_location() == onnx::TensorProto::EXTERNAL)
        return err(what + ": external string data is not supported");
      if (static_cast<int64_t>(t.string_data_size()) != *count) {
        return err(what + " has " + std::to_string(t.string_data_size()) + " strings but its shape " +
                   shape.to_string() + " holds " + std::to_string(*count));
      }
      *out = sdk::Tensor::from_strings(desc, {t.string_data().begin(), t.string_data().end()});
      return Status::ok();
    }
    const int64_t esize = sdk::element_size(dtype);
    if (*count > std::numeric_limits<int64_t>::max() / esize) {
      return err(what + " is too large: shape " + shape.to_string());
    }
    const int64_t nbytes = *count * esize;
    if (embedded_) {
      if (auto it = embedded_->spans.find(&t); it != embedded_->spans.end())
        return read_embedded(it->second, what, std::move(desc), nbytes, out);
    }
    std::string bytes;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      GS_RETURN_IF_ERROR(read_external(t, what, nbytes, &bytes));
    } else if (t.has_raw_data()) {
      if (static_cast<int64_t>(t.raw_data().size()) != nbytes)
        return byte_count_error(what, static_cast<int64_t>(t.raw_data().size()), desc, nbytes);
      bytes = t.raw_data();
    } else {
      GS_RETURN_IF_ERROR(read_typed(t, what, dtype, *count, &bytes));
    }
    *out = sdk::Tensor(std::move(desc), std::move(bytes));
    return Status::ok();
  }

 private:
  Status err(const std::string& m) const { return Status::invalid_argument(source_ + ": " + m); }

  Status count_error(const std::string& what, int64_t have, int64_t want) const {
    return err(what + " has " + std::to_string(have) + " values but its shape needs " + std::to_string(want));
  }

  // raw_data (parsed, or left in the model file) of another size than the shape and type need.
  Status byte_count_error(const std::string& what, int64_t have, const sdk::TensorDesc& desc,
                          int64_t want) const {
    return err(what + " has " + std::to_string(have) + " bytes of data but shape " + desc.shape.to_string() +
               " of " + std::string(sdk::to_string(desc.dtype)) + " needs " + std::to_string(want));
  }

  Status read_typed(const onnx::TensorProto& t, const std::string& what, sdk::DataType dtype, int64_t count,
                    std::string* bytes) const {
    using D = sdk::DataType;
    // No reserve from the declared shape: a corrupt tensor may declare 2^62 elements and hold three.
    switch (dtype) {
      case D::kFloat:
      case D::kComplex64: {
        const int64_t want = dtype == D::kComplex64 ? 2 * count : count;
        if (t.float_data_size() != want) return count_error(what, t.float_data_size(), want);
        for (float v : t.float_data()) append_le(bytes, v);
        return Status::ok();
      }
      case D::kDouble:
      case D::kComplex128: {
        const int64_t want = dtype == D::kComplex128 ? 2 * count : count;
        if (t.double_data_size() != want) return count_error(what, t.double_data_size(), want);
        for (double v : t.double_data()) append_le(bytes, v);
        return Status::ok();
      }
      case D::kInt64:
        if (t.int64_data_size() != count) return count_error(what, t.int64_data_size(), count);
        for (int64_t v : t.int64_data()) append_le(bytes, v);
        return Status::ok();
      case D::kUint32:
      case D::kUint64:
        if (t.uint64_data_size() != count) return count_error(what, t.uint64_data_size(), count);
        for (uint64_t v : t.uint64_data()) {
          if (dtype == D::kUint32)
            append_le(bytes, static_cast<uint32_t>(v));
          else
            append_le(bytes, v);
        }
        return Status::ok();
      case D::kInt32:
      case D::kInt16:
      case D::kInt8:
      case D::kUint16:
      case D::kUint8:
      case D::kBool:
      case D::kFloat16:
      case D::kBFloat16:
        // ONNX stores all of these widened to int32 (16-bit floats as their bit patterns).
        if (t.int32_data_size() != count) return count_error(what, t.int32_data_size(), count);
        for (int32_t v : t.int32_data()) {
          switch (sdk::element_size(dtype)) {
            case 1:
              append_le(bytes, static_cast<uint8_t>(v));
              break;
            case 2:
              append_le(bytes, static_cast<uint16_t>(v));
              break;
            default:
              append_le(bytes, v);
              break;
          }
        }
        return Status::ok();
      default:
        return err(what + " has data type " + std::string(sdk::to_string(dtype)) + " with no readable data");
    }
  }

  Status read_external(const onnx::TensorProto& t, const std::string& what, int64_t nbytes,
                       std::string* bytes) const {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      try {
        if (kv.key() == "location")
          location = kv.value();
        else if (kv.key() == "offset")
          offset = std::stoll(kv.value());
        else if (kv.key() == "length")
          length = std::stoll(kv.value());
      } catch (const std::exception&) {
        return err(what + ": external_data '" + kv.key() + "' is not a number: '" + kv.value() + "'");
      }
    }
    const fs::path rel(location);
    if (location.empty() || rel.is_absolute() || location.find("..") != std::string::npos) {
      return err(what + ": external data location '" + location +
                 "' must be a relative path inside the model folder");
    }
    if (length >= 0 && length != nbytes) {
      return err(what + ": external data length " + std::to_string(length) + " does not match its shape (" +
                 std::to_string(nbytes) + " bytes)");
    }
    const std::string path = (fs::path(base_dir_) / rel).string();
    std::ifstream in(path, std::ios::binary);
    if (!in) return err(what + ": cannot open external data file '" + path + "'");
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<int64_t>(in.tellg());
    if (offset < 0 || offset > file_size || file_size - offset < nbytes) {
      return err(what + ": external data file '" + path + "' is too short for offset " +
                 std::to_string(offset) + " and " + std::to_string(nbytes) + " bytes");
    }
    in.seekg(offset);
    bytes->resize(static_cast<size_t>(nbytes));
    in.read(bytes->data(), nbytes);
    return Status::ok();
  }

  Status read_embedded(const EmbeddedWeights::Span& span, const std::string& what, sdk::TensorDesc desc,
                       int64_t nbytes, sdk::Tensor* out) const {
    if (span.length != nbytes) return byte_count_error(what, span.length, desc, nbytes);
    std::ifstream in(embedded_->file, std::ios::binary);
    in.seekg(span.offset);
    char* writable = nullptr;
    sdk::Tensor t = sdk::Tensor::allocate(std::move(desc), static_cast<size_t>(nbytes), &writable);
    if (!in || !in.read(writable, nbytes) || in.gcount() != nbytes)
      return err(what + ": cannot read its data from the model file again (did the file change?)");
    *out = std::move(t);
    return Status::ok();
  }

  std::string source_;
  std::string base_dir_;
  const EmbeddedWeights* embedded_ = nullptr;
};

}  // namespace graphsplit::onnx_detail
