// Sequence and optional values in ONNX's SequenceProto / OptionalProto files, as the backend test data stores
// them. A .pb file does not say which message it holds, so the reader takes the kind the model declares.
#include <onnx/onnx-data_pb.h>

#include <climits>

#include "common/atomic_file.h"
#include "import/onnx_import.h"
#include "import/onnx_tensors.h"

namespace graphsplit {
namespace {

using sdk::Status;
using sdk::Tensor;
using sdk::ValueKind;

// Nested sequences are legal but never deep; a bound keeps a hostile file from exhausting the stack.
constexpr int kMaxNesting = 16;

// SequenceProto/OptionalProto elem_type numbering.
enum ElemType : int32_t {
  kElemTensor = 1,
  kElemSparse = 2,
  kElemSequence = 3,
  kElemMap = 4,
  kElemOptional = 5
};

Status read_sequence(const onnx::SequenceProto& s, const std::string& source, int depth, Tensor* out);

Status read_tensor(const onnx::TensorProto& t, const std::string& source, Tensor* out) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return Status::invalid_argument(source + ": external tensor data is not supported in input files");
  return onnx_detail::TensorReader(source, {}).read(t, "tensor '" + t.name() + "'", out);
}

// A map as two 1-D tensors: the keys (int64 or string) and the values (MapProto keeps one scalar per key).
Status read_map(const onnx::MapProto& m, const std::string& source, Tensor* out) {
  sdk::TensorDesc kd;
  kd.dtype = static_cast<sdk::DataType>(m.key_type());
  Tensor keys;
  if (kd.dtype == sdk::DataType::kString) {
    kd.shape = sdk::Shape({static_cast<int64_t>(m.string_keys_size())});
    keys = Tensor::from_strings(kd, std::vector<std::string>(m.string_keys().begin(), m.string_keys().end()));
  } else if (kd.dtype == sdk::DataType::kInt64) {
    kd.shape = sdk::Shape({static_cast<int64_t>(m.keys_size())});
    keys = Tensor(kd, std::string(reinterpret_cast<const char*>(m.keys().data()), 8 * m.keys().size()));
  } else {
    return Status::unsupported(source + ": map keys of type " + std::to_string(m.key_type()) +
                               " are not supported");
  }
  std::string bytes;
  sdk::TensorDesc vd;
  for (const onnx::TensorProto& t : m.values().tensor_values()) {
    Tensor v;
    GS_RETURN_IF_ERROR(read_tensor(t, source, &v));
    if (vd.dtype != sdk::DataType::kUndefined && v.desc().dtype != vd.dtype)
      return Status::invalid_argument(source + ": a map's values differ in type");
    vd.dtype = v.desc().dtype;
    bytes += v.bytes();
  }
  if (m.values().tensor_values_size() != kd.shape.dims()[0] || sdk::element_size(vd.dtype) == 0)
    return Status::invalid_argument(source + ": a map needs one numeric value per key");
  vd.shape = sdk::Shape({kd.shape.dims()[0]});
  *out = Tensor::map(std::move(keys), Tensor(vd, std::move(bytes)));
  return Status::ok();
}

Status unsupported_elem(const std::string& source, const char* what, int32_t elem_type) {
  return Status::unsupported(source + ": " + what + " of element type " + std::to_string(elem_type) +
                             " (sparse tensors, maps, optionals) is not supported");
}

Status read_sequence(const onnx::SequenceProto& s, const std::string& source, int depth, Tensor* out) {
  if (depth > kMaxNesting) return Status::invalid_argument(source + ": sequences nested too deeply");
  std::vector<Tensor> items;
  sdk::DataType dtype = sdk::DataType::kUndefined;
  if (s.elem_type() == kElemTensor) {
    for (const onnx::TensorProto& t : s.tensor_values()) {
      items.emplace_back();
      GS_RETURN_IF_ERROR(read_tensor(t, source, &items.back()));
      dtype = items.back().desc().dtype;
    }
  } else if (s.elem_type() == kElemMap) {
    for (const onnx::MapProto& m : s.map_values()) {
      items.emplace_back();
      GS_RETURN_IF_ERROR(read_map(m, source, &items.back()));
      dtype = items.back().desc().dtype;
    }
  } else if (s.elem_type() == kElemSequence) {
    for (const onnx::SequenceProto& inner : s.sequence_values()) {
      items.emplace_back();
      GS_RETURN_IF_ERROR(read_sequence(inner, source, depth + 1, &items.back()));
      dtype = items.back().desc().dtype;
    }
  } else {
    return unsupported_elem(source, "a sequence", s.elem_type());
  }
  for (const Tensor& t : items)
    if (t.desc().dtype != dtype)
      return Status::invalid_argument(source + ": the sequence's elements differ in data type");
  *out =
      Tensor::sequence(dtype == sdk::DataType::kUndefined ? sdk::DataType::kFloat : dtype, std::move(items));
  return Status::ok();
}

// An optional with no value is empty, whether or not it names its element type (onnx's writers do both).
Status read_optional(const onnx::OptionalProto& o, const std::string& source, Tensor* out) {
  Tensor element;
  if (o.elem_type() == kElemTensor && o.has_tensor_value()) {
    GS_RETURN_IF_ERROR(read_tensor(o.tensor_value(), source, &element));
    *out = Tensor::optional(ValueKind::kTensor, element.desc().dtype, &element);
  } else if (o.elem_type() == kElemSequence && o.has_sequence_value()) {
    GS_RETURN_IF_ERROR(read_sequence(o.sequence_value(), source, 1, &element));
    *out = Tensor::optional(ValueKind::kSequence, element.desc().dtype, &element);
  } else if (o.elem_type() == 0 || o.elem_type() == kElemTensor || o.elem_type() == kElemSequence) {
    const ValueKind kind = o.elem_type() == kElemSequence ? ValueKind::kSequence : ValueKind::kTensor;
    *out = Tensor::optional(kind, sdk::DataType::kFloat, nullptr);
  } else {
    return unsupported_elem(source, "an optional", o.elem_type());
  }
  return Status::ok();
}

template <class Message>
Status parse_message(std::string_view bytes, const std::string& source, const char* what, Message* m) {
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !m->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Status::invalid_argument(source + ": not an ONNX " + what + " (protobuf parse failed)");
  // A TensorProto parses as either message too, leaving its data among the unknown fields.
  if (!m->GetReflection()->GetUnknownFields(*m).empty())
    return Status::invalid_argument(source + ": not an ONNX " + what + " (a tensor .pb where a " +
                                    (std::string_view(what) == "SequenceProto" ? "sequence"
                                     : std::string_view(what) == "MapProto"    ? "map"
                                                                               : "optional") +
                                    " is expected?)");
  return Status::ok();
}

void write_sequence(const Tensor& seq, onnx::SequenceProto* s, std::string* error);

void write_tensor(const Tensor& t, onnx::TensorProto* p, std::string* error) {
  std::string bytes;
  Status st = serialize_tensor_proto(t, "", &bytes);
  if (!st.is_ok() || !p->ParseFromString(bytes))
    *error = st.is_ok() ? "a tensor could not be written" : st.message();
}

void write_map(const Tensor& map, onnx::MapProto* m, std::string* error) {
  const Tensor& keys = map.elements().at(0);
  const Tensor& values = map.elements().at(1);
  m->set_key_type(static_cast<int32_t>(keys.desc().dtype));
  if (keys.desc().dtype == sdk::DataType::kString) {
    std::vector<std::string> text;
    keys.strings(&text);
    for (const std::string& k : text) m->add_string_keys(k);
  } else {
    const auto* k = reinterpret_cast<const int64_t*>(keys.data());
    for (size_t i = 0; i < keys.size_bytes() / 8; ++i) m->add_keys(k[i]);
  }
  auto* vs = m->mutable_values();
  vs->set_elem_type(kElemTensor);
  const int64_t es = sdk::element_size(values.desc().dtype);
  for (size_t i = 0; es > 0 && i < values.size_bytes() / static_cast<size_t>(es); ++i) {
    sdk::TensorDesc d;
    d.dtype = values.desc().dtype;
    d.shape = sdk::Shape(std::vector<int64_t>{});
    write_tensor(Tensor(d, std::string(values.data() + i * es, static_cast<size_t>(es))),
                 vs->add_tensor_values(), error);
  }
}

void write_sequence(const Tensor& seq, onnx::SequenceProto* s, std::string* error) {
  const ValueKind kind = seq.element_kind();
  s->set_elem_type(kind == ValueKind::kSequence ? kElemSequence
                   : kind == ValueKind::kMap    ? kElemMap
                                                : kElemTensor);
  for (const Tensor& e : seq.elements()) {
    if (kind == ValueKind::kSequence)
      write_sequence(e, s->add_sequence_values(), error);
    else if (kind == ValueKind::kMap)
      write_map(e, s->add_map_values(), error);
    else
      write_tensor(e, s->add_tensor_values(), error);
  }
}

}  // namespace

Status parse_value_proto(std::string_view bytes, const std::string& source, ValueKind kind, Tensor* out,
                         std::string* name) {
  if (kind == ValueKind::kSequence) {
    onnx::SequenceProto s;
    GS_RETURN_IF_ERROR(parse_message(bytes, source, "SequenceProto", &s));
    if (name) *name = s.name();
    return read_sequence(s, source, 1, out);
  }
  if (kind == ValueKind::kOptional) {
    onnx::OptionalProto o;
    GS_RETURN_IF_ERROR(parse_message(bytes, source, "OptionalProto", &o));
    if (name) *name = o.name();
    return read_optional(o, source, out);
  }
  if (kind == ValueKind::kMap) {
    onnx::MapProto m;
    GS_RETURN_IF_ERROR(parse_message(bytes, source, "MapProto", &m));
    if (name) *name = m.name();
    return read_map(m, source, out);
  }
  if (kind == ValueKind::kSparseTensor)
    return Status::unsupported(source + ": " + std::string(sdk::to_string(kind)) +
                               " values are not supported");
  return parse_tensor_proto(bytes, source, out, name);
}

Status read_value_proto_file(const std::string& path, ValueKind kind, Tensor* out, std::string* name) {
  std::string bytes;
  GS_RETURN_IF_ERROR(read_file(path, &bytes, uint64_t{1} << 31));
  return parse_value_proto(bytes, path, kind, out, name);
}

Status serialize_value_proto(const Tensor& value, const std::string& name, std::string* bytes) {
  if (!value.is_container()) return serialize_tensor_proto(value, name, bytes);
  std::string error;
  bool written = false;
  if (value.desc().kind == ValueKind::kMap) {
    onnx::MapProto m;
    m.set_name(name);
    write_map(value, &m, &error);
    written = error.empty() && m.SerializeToString(bytes);
  } else if (value.desc().kind == ValueKind::kSequence) {
    onnx::SequenceProto s;
    s.set_name(name);
    write_sequence(value, &s, &error);
    written = error.empty() && s.SerializeToString(bytes);
  } else {
    onnx::OptionalProto o;
    o.set_name(name);
    if (!value.elements().empty()) {
      const Tensor& e = value.elements()[0];
      if (e.is_container()) {
        o.set_elem_type(kElemSequence);
        write_sequence(e, o.mutable_sequence_value(), &error);
      } else {
        o.set_elem_type(kElemTensor);
        write_tensor(e, o.mutable_tensor_value(), &error);
      }
    }
    written = error.empty() && o.SerializeToString(bytes);
  }
  if (!written)
    return Status::internal("value '" + name + "' could not be serialized" +
                            (error.empty() ? "" : ": " + error));
  return Status::ok();
}

}  // namespace graphsplit
