// graphsplit's own definitions of the ai.onnx operator versions that libonnx 1.12 does not know (opsets 18 to
// 23): inputs, outputs and attributes, enough for the importer's schema check. Operators whose interface is
// unchanged since opset 17 (only new element types at 19, 21, 22 or 23) keep libonnx's schema.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graphsplit/sdk/status.h"
#include "import/onnx_import.h"

namespace graphsplit::onnx_detail {

inline constexpr int kMaxOnnxOpset = graphsplit::kMaxOnnxOpset;
inline constexpr int kMaxIrVersion = graphsplit::kMaxOnnxIrVersion;

// The newest version of `op_type` defined by this table at or below `opset` (0 if none).
int table_since_version(const std::string& op_type, int opset);
// Checks input/output counts and attributes (names, types, required) against the table's version at `opset`;
// the message names what is wrong, without the node (the caller prefixes it).
sdk::Status verify_against_table(const onnx::NodeProto& node, int opset);

}  // namespace graphsplit::onnx_detail
