// GE's CreateSubGraphWithScopePass and SplitVariableIntoSubgraphPass (reference, section 7).
#pragma once

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::multibatch {

// Nodes sharing a `_subgraph_multi_dims_index` (>= 0) become one PartitionedCall whose subgraph is marked
// `_subgraph_is_multi_dims` and `_no_need_dynamic_shape_partition`; its inner Data carry the scope's grades
// (`_op_multi_dims_input_dims`) and the largest grade's shape (`_op_max_shape`). Root only.
class CreateSubGraphWithScope final : public sdk::Pass {
 public:
  explicit CreateSubGraphWithScope(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

// A variable (Variable, VariableV2, VarHandleOp, RefData) feeding a node with subgraphs is copied into each
// subgraph, next to the inner Data that receives it, and takes over that Data's consumers; a While's outputs
// at the variable's index are read from the variable directly.
class SplitVariableIntoSubgraph final : public sdk::Pass {
 public:
  explicit SplitVariableIntoSubgraph(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::multibatch
