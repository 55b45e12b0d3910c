// The partitioned model as ONNX (atc --export_onnx, atc --mode=1 --onnx): every PartitionedCall and every
// engine segment becomes a model-local function of domain `graphsplit`, so that Netron shows the partition
// and ONNX Runtime can run it as an oracle this project did not write (docs/visualisation.md).
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

// The domain of the exported functions and of the GE operators ONNX has no spelling for (MapIndex).
inline constexpr std::string_view kExportDomain = "graphsplit";

// Serializes `root` (a partitioned graph, as atc leaves it or as a .om holds it) as an ONNX ModelProto.
// `decisions` (may be empty: a .om keeps none) adds the partitioners' reason codes to the metadata.
sdk::Status export_onnx(const sdk::Graph& root, const std::vector<sdk::Decision>& decisions,
                        std::string* bytes);

}  // namespace graphsplit
