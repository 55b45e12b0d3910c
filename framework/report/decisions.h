// The decision log as text: one line per record, for the debug log and `atc --explain`.
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"

namespace graphsplit {

// "[dynamic_shape] SIZE_BELOW_LIMIT g: a, b (2 nodes): 2 static nodes < ge.exec.static_model_ops_lower_limit
// 4"
std::string describe(const sdk::Decision& decision);

// Whether `d` was decided in `n`'s graph or one of its ancestors (partitioners move nodes from the graph they
// were decided in into subgraphs, keeping their names).
bool decided_above(const sdk::Decision& d, const sdk::Node& n);

// The records that concern node `n`, in order: those naming it in its graph or in one of that graph's
// ancestors (partitioners move nodes from the graph they were decided in into subgraphs, keeping their
// names).
std::vector<const sdk::Decision*> decisions_about(const std::vector<sdk::Decision>& log, const sdk::Node& n);

}  // namespace graphsplit
