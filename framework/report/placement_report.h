// Placement explanations: the placed graph's engines and the pipeline's decision log (atc --dump_placement,
// --explain).
#pragma once

#include <map>
#include <string>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

// Nodes per engine over the root and every subgraph; unplaced nodes count under "".
std::map<std::string, size_t> placement_summary(const sdk::Graph& root);

sdk::Status placement_report_json(const sdk::Graph& root, const std::string& model,
                                  const std::vector<sdk::Decision>& decisions, std::string* json);

// A readable account of one node (every graph holding a node of that name); not_found with a did-you-mean
// otherwise.
sdk::Status explain_node(const sdk::Graph& root, const std::string& name,
                         const std::vector<sdk::Decision>& decisions, std::string* text);

}  // namespace graphsplit
