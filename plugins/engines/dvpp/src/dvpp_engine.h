#pragma once

#include "graphsplit/kernels/kernel_engine.h"

namespace graphsplit::plugins::dvpp {

// DVPP: uint8 image pre-processing. Every row is shape-dependent: the image must be 4-D with static sizes,
// height and width up to `max_resolution`, a channel dimension (1 or 3) of at most `max_channels`, and Resize
// scales between 1/32 and 16 in nearest or linear mode.
class DvppEngine final : public kernels::KernelEngine {
 public:
  explicit DvppEngine(const sdk::PluginContext& ctx);
  sdk::SupportVerdict check_support(const sdk::Node& node) const override;

 private:
  sdk::SupportVerdict check_image(const sdk::TensorDesc& d, const std::string& what) const;
  int64_t max_resolution_;
  int64_t max_channels_;
};

}  // namespace graphsplit::plugins::dvpp
