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

// GE's ConvScaleFusionPass for ONNX: a Mul or Add of a float Conv (constant weights and bias, feeding nothing
// else) by a constant with one value, or one value per output channel on the channel axis, becomes that Conv
// with W'[m] = W[m] * s[m], b'[m] = b[m] * s[m] (Mul) or b'[m] = b[m] + t[m] (Add), computed in double; the
// Conv then writes the Mul's or Add's value. Repeated until nothing folds (a Mul then an Add both fold). In
// the root graph and every subgraph.
class ConvScale final : public sdk::Pass {
 public:
  explicit ConvScale(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::fusion
