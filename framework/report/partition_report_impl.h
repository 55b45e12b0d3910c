// The partition report as its protobuf message, for the views built on it (JSON, HTML).
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"
#include "report/partition.pb.h"

namespace graphsplit {

void build_partition_report(const sdk::Graph& root, const std::string& model,
                            const std::vector<sdk::Decision>& decisions, report::PartitionReport* out);
sdk::Status partition_report_to_json(const report::PartitionReport& r, std::string* json);

}  // namespace graphsplit
