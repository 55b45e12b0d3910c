#include "import/onnx_tensors.h"

#include <onnx/defs/data_type_utils.h>

namespace graphsplit::onnx_detail {

void type_to_desc(const onnx::TypeProto& t, sdk::TensorDesc* d) {
  using V = onnx::TypeProto::ValueCase;
  switch (t.value_case()) {
    case V::kTensorType: {
      const auto& tt = t.tensor_type();
      if (d->kind == sdk::ValueKind::kUnknown) d->kind = sdk::ValueKind::kTensor;
      d->dtype = (tt.elem_type() >= 0 && tt.elem_type() <= sdk::kMaxDataType)
                     ? static_cast<sdk::DataType>(tt.elem_type())
                     : sdk::DataType::kUndefined;
      if (!tt.has_shape()) {
        d->shape = sdk::Shape::unknown_rank();
        return;
      }
      std::vector<int64_t> dims;
      std::vector<std::string> names;
      bool named = false;
      for (const auto& dim : tt.shape().dim()) {
        if (dim.has_dim_value() && dim.dim_value() >= 0) {
          dims.push_back(dim.dim_value());
          names.emplace_back();
        } else {
          dims.push_back(sdk::kUnknownDim);
          names.push_back(dim.has_dim_param() ? dim.dim_param() : std::string());
          named = named || dim.has_dim_param();
        }
      }
      d->shape = sdk::Shape(std::move(dims));
      if (named) d->shape.set_dim_names(std::move(names));
      return;
    }
    case V::kSequenceType:
      if (d->kind == sdk::ValueKind::kUnknown) d->kind = sdk::ValueKind::kSequence;  // the outermost kind
      type_to_desc(t.sequence_type().elem_type(), d);
      return;
    case V::kOptionalType:
      if (d->kind == sdk::ValueKind::kUnknown) d->kind = sdk::ValueKind::kOptional;  // the outermost kind
      type_to_desc(t.optional_type().elem_type(), d);
      return;
    case V::kMapType:
      if (d->kind == sdk::ValueKind::kUnknown) d->kind = sdk::ValueKind::kMap;  // the outermost kind
      type_to_desc(t.map_type().value_type(), d);
      return;
    case V::kSparseTensorType: {
      if (d->kind == sdk::ValueKind::kUnknown) d->kind = sdk::ValueKind::kSparseTensor;
      const int32_t e = t.sparse_tensor_type().elem_type();
      d->dtype =
          (e >= 0 && e <= sdk::kMaxDataType) ? static_cast<sdk::DataType>(e) : sdk::DataType::kUndefined;
      return;
    }
    default:
      d->kind = sdk::ValueKind::kUnknown;
      return;
  }
}

sdk::TensorDesc desc_of(const onnx::TypeProto* t) {
  sdk::TensorDesc d;
  if (t) {
    d.kind = sdk::ValueKind::kUnknown;  // type_to_desc sets the outermost kind first
    type_to_desc(*t, &d);
    if (d.kind == sdk::ValueKind::kUnknown && t->value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      d.kind = sdk::ValueKind::kTensor;
    }
  }
  return d;
}

}  // namespace graphsplit::onnx_detail
