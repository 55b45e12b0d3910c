// Model-level rewrites before the import: model-local functions inlined (attributes bound, nested functions,
// their opset imports merged; a recursive function is an error) and sparse initializers made dense.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graphsplit/sdk/status.h"

namespace graphsplit::onnx_detail {

class TensorReader;

// The sparse initializers of a node's subgraphs made dense: what normalize_model does to each node, for a
// node parsed on its own.
sdk::Status densify_node(onnx::NodeProto* n, const TensorReader& reader, const std::string& source);

sdk::Status normalize_model(onnx::ModelProto* m, const std::string& source, const std::string& base_dir);

}  // namespace graphsplit::onnx_detail
