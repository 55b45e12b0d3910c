// The only file of this plugin that defines its descriptor.
#include "fusion_passes.h"
#include "graphsplit/sdk/plugin.h"

namespace {

using namespace graphsplit::plugins::fusion;

constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("conv_bn",
                      "Folds an inference BatchNormalization into the Conv before it (GE's "
                      "ConvBatchnormFusionPass)",
                      ConvBatchNorm, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("conv_scale",
                      "Folds a Mul or Add by a per-channel constant into the Conv before it (GE's "
                      "ConvScaleFusionPass)",
                      ConvScale, GS_NO_OPTIONS),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
