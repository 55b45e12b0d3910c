#include "graphsplit/sdk/plugin.h"
#include "multibatch_clone.h"

namespace {

// The pass reads GE options: ge.inputShape, ge.dynamicBatchSize, ge.dynamicImageSize, ge.dynamicDims,
// ge.inputFormat (atc sets them from its gear options). Without a gear option it does nothing.
constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("clone", "GE's MultiBatchClonePass: one static Case branch per gear",
                      graphsplit::plugins::multibatch::MultiBatchClone, GS_NO_OPTIONS),
};

}  // namespace

GS_DEFINE_PLUGIN("multibatch", "0.1.0", kComponents)
