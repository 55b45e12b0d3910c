// ONNX import: .onnx file -> graphsplit IR, with shapes from libonnx's shape inference.
// ONNX and protobuf headers stay inside onnx_import.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "graphsplit/sdk/context.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

struct InputShapeOverride {
  std::string name;           // a graph input of the model
  std::vector<int64_t> dims;  // -1 = unknown; empty = scalar
};

struct OnnxImportOptions {
  // Applied to the graph inputs before shape inference (atc --input_shape).
  std::vector<InputShapeOverride> input_shapes;
  // Shape inference after import: graphsplit's own (kernels/shape_inference.h: symbolic dimensions, shape
  // values, constants evaluated with the CPU kernels; the graph keeps its nodes). libonnx's inference is only
  // the tests' oracle (onnx_reference_inference: libonnx 1.12 instead, opsets <= 17).
  bool infer_shapes = true;
  bool onnx_reference_inference = false;
  // Resource limits (atc --max_nodes, --max_nesting_depth): a model past them is refused before anything is
  // built. Nesting counts graphs below the root (an If in the root's If branch is depth 2); GE refuses more
  // than 25 levels.
  int64_t max_nodes = 20'000'000;
  int max_nesting_depth = 25;
};

// The newest ai.onnx opset the linked libonnx knows (its schemas); graphsplit's own table of operator
// versions (import/onnx_opsets.h) reads up to kMaxOnnxOpset, and models up to IR version kMaxOnnxIrVersion.
int max_supported_onnx_opset();
inline constexpr int kMaxOnnxOpset = 23;
inline constexpr int kMaxOnnxIrVersion = 11;

// Builds libonnx's operator schemas (every operator of every opset: about 32M instructions, once per process)
// on a thread of its own, so that a caller with other work before its import (atc loading its plugins)
// overlaps the two.
// The import waits for the build if it is still running; the thread is joined when the returned object goes.
std::jthread warm_up_onnx_schemas();

sdk::Status import_onnx_file(const std::string& path, const OnnxImportOptions& options,
                             std::unique_ptr<sdk::Graph>* root);
// `source` names the model in messages; `base_dir` resolves external tensor data.
sdk::Status import_onnx_bytes(std::string_view bytes, const std::string& source, const std::string& base_dir,
                              const OnnxImportOptions& options, std::unique_ptr<sdk::Graph>* root);

// The model's shape inference run again with other input shapes (the multi-batch pass asks once per gear):
// parsed once; tensors over 4 KiB lose their bytes first, since no shape computation reads weights. Gives the
// descriptor of every value by name, the same names the import gives nodes' outputs.
class ShapeInferencer {
 public:
  static sdk::Status open(const std::string& path, std::unique_ptr<ShapeInferencer>* out);
  ~ShapeInferencer();
  sdk::Status infer(const std::vector<InputShapeOverride>& input_shapes, sdk::ValueDescs* out) const;

 private:
  struct Impl;
  explicit ShapeInferencer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ONNX TensorProto files (.pb, as in the ONNX test data): one tensor each. `source` names it in messages.
sdk::Status parse_tensor_proto(std::string_view bytes, const std::string& source, sdk::Tensor* out,
                               std::string* name);
sdk::Status read_tensor_proto_file(const std::string& path, sdk::Tensor* out, std::string* name);
sdk::Status serialize_tensor_proto(const sdk::Tensor& tensor, const std::string& name, std::string* bytes);

// Any value .pb: a TensorProto, or for `kind` kSequence / kOptional a SequenceProto / OptionalProto (the file
// does not say which; the model's declared kind does). Maps and sparse tensors are unsupported.
sdk::Status parse_value_proto(std::string_view bytes, const std::string& source, sdk::ValueKind kind,
                              sdk::Tensor* out, std::string* name);
sdk::Status read_value_proto_file(const std::string& path, sdk::ValueKind kind, sdk::Tensor* out,
                                  std::string* name);
// A tensor as TensorProto, a sequence or optional (Tensor::is_container) as SequenceProto / OptionalProto.
sdk::Status serialize_value_proto(const sdk::Tensor& value, const std::string& name, std::string* bytes);

}  // namespace graphsplit
