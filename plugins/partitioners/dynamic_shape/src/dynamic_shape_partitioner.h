// GE's DynamicShapePartitioner (reference, section 3): static-shape parts of the root graph apart from
// dynamic-shape parts, each in its own PartitionedCall.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::dynamic_shape {

// Attribute names (GE spellings).
inline constexpr std::string_view kIsUnknownShape = "_is_unknown_shape";
inline constexpr std::string_view kForceUnknownShape = "_force_unknown_shape";
inline constexpr std::string_view kOwnerGraphIsUnknown = "OwnerGraphIsUnknown";
inline constexpr std::string_view kDynamicShapePartitioned = "_dynamic_shape_partitioned";
inline constexpr std::string_view kNoNeedPartition = "_no_need_dynamic_shape_partition";
inline constexpr std::string_view kMemoryDiscontiguous = "_memory_discontiguous_allocation";
inline constexpr std::string_view kControlFlowGroup = "_control_flow_group";
inline constexpr std::string_view kStageLevel = "_stage_level";
inline constexpr std::string_view kTilingDependOp = "_dynamic_tiling_depend_op";
inline constexpr std::string_view kTilingSinkOp = "_tiling_sink_op";
inline constexpr std::string_view kSupportAddrRefresh = "_is_support_addr_refresh";
inline constexpr std::string_view kOpNoTiling = "_op_no_tiling";
// Why a node or cluster went dynamic, for the partition report: root attribute, "CODE|nodes|detail" entries.
inline constexpr std::string_view kDecisions = "_dsp_decisions";

class DynamicShapePartitioner final : public sdk::Partitioner {
 public:
  explicit DynamicShapePartitioner(const sdk::PluginContext&) {}
  sdk::Status partition(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::dynamic_shape
