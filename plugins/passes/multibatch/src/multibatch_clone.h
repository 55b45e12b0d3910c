// GE's MultiBatchClonePass (reference 6.3-6.5): for models compiled with gears (atc --dynamic_batch_size,
// --dynamic_image_size, --dynamic_dims), the root becomes a shape-index path and a Case with one static
// branch per gear. Each branch's shapes come from the host's own shape inference with that gear's input
// shapes.
#pragma once

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::multibatch {

class MultiBatchClone final : public sdk::Pass {
 public:
  explicit MultiBatchClone(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

}  // namespace graphsplit::plugins::multibatch
