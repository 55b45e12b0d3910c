// GE's DynamicShapePartitioner (reference, section 3): static-shape parts of the root graph apart from
// dynamic-shape parts, each in its own PartitionedCall.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::dynamic_shape {

// Attribute names (GE spellings).
// Why a node or cluster went dynamic, for the partition report: root attribute, "CODE|nodes|detail" entries.

class DynamicShapePartitioner final : public sdk::Partitioner {
 public:
  explicit DynamicShapePartitioner(const sdk::PluginContext&) {}
  sdk::Status partition(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::dynamic_shape
