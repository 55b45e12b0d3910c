// The partition report (atc --partition_report): the partitioned graph and the partitioners' decision log.
#pragma once

#include <string>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

// "root", "partitioned_call", "stage", "engine_subgraph", "case_branch", "if_branch", "loop_body" or
// "subgraph".
std::string graph_kind(const sdk::Graph& g);

sdk::Status partition_report_json(const sdk::Graph& root, const std::string& model,
                                  const std::vector<sdk::Decision>& decisions, std::string* json);

}  // namespace graphsplit
