#include "graphsplit/sdk/plugin.h"
#include "multibatch_clone.h"
#include "scope_and_variable.h"

namespace {

// The pass reads GE options: ge.inputShape, ge.dynamicBatchSize, ge.dynamicImageSize, ge.dynamicDims,
// ge.inputFormat (atc sets them from its gear options). Without a gear option it does nothing.
constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("clone", "GE's MultiBatchClonePass: one static Case branch per gear",
                      graphsplit::plugins::multibatch::MultiBatchClone, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("scope",
                      "GE's CreateSubGraphWithScopePass: each _subgraph_multi_dims_index scope in a call",
                      graphsplit::plugins::multibatch::CreateSubGraphWithScope, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("split_variable",
                      "GE's SplitVariableIntoSubgraphPass: variables copied into the subgraphs they feed",
                      graphsplit::plugins::multibatch::SplitVariableIntoSubgraph, GS_NO_OPTIONS),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
