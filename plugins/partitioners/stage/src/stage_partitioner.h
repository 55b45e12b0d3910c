// GE's StagePartitioner (reference, section 5): pipeline stages tagged with `_stage_level`, each in its own
// PartitionedCall.
#pragma once

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::stage {

class StagePartitioner final : public sdk::Partitioner {
 public:
  explicit StagePartitioner(const sdk::PluginContext&) {}
  sdk::Status partition(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::stage
