// The "fusion" pass plugin: graph rewrites GE runs before partitioning (its fusion passes) that leave a model
// computing the same function with fewer operators. Rewrites stay standard ONNX, so an exported model needs
// nothing of graphsplit's.
#pragma once

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::fusion {

// GE's ConvBatchnormFusionPass: an inference BatchNormalization whose input is a float Conv with constant
// weights (and bias), that Conv feeding nothing else, becomes that Conv with the normalisation folded into
// new constant weights and bias: W'[m] = W[m] * a[m], b'[m] = (b[m] - mean[m]) * a[m] + beta[m], a = gamma /
// sqrt(var + eps), computed in double. The Conv then writes the BatchNormalization's value (its name and
// descriptor). In the root graph and every subgraph.
class ConvBatchNorm final : public sdk::Pass {
 public:
  explicit ConvBatchNorm(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::fusion
