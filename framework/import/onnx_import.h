// ONNX import: .onnx file -> graphsplit IR, with shapes from libonnx's shape inference.
// ONNX and protobuf headers stay inside onnx_import.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
  bool infer_shapes = true;
};

// The newest ai.onnx opset the linked libonnx knows.
int max_supported_onnx_opset();

sdk::Status import_onnx_file(const std::string& path, const OnnxImportOptions& options,
                             std::unique_ptr<sdk::Graph>* root);
// `source` names the model in messages; `base_dir` resolves external tensor data.
sdk::Status import_onnx_bytes(std::string_view bytes, const std::string& source, const std::string& base_dir,
                              const OnnxImportOptions& options, std::unique_ptr<sdk::Graph>* root);

}  // namespace graphsplit
