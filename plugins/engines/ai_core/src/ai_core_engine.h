#pragma once

#include "graphsplit/kernels/kernel_engine.h"

namespace graphsplit::plugins::ai_core {

// AI Core: dense compute and vector ops. Beyond the table: no tensor may exceed `max_rank` dimensions, and
// convolution/pooling rows need a 4-D or 5-D input of known rank.
class AiCoreEngine final : public kernels::KernelEngine {
 public:
  explicit AiCoreEngine(const sdk::PluginContext& ctx);
  sdk::SupportVerdict check_support(const sdk::Node& node) const override;

 private:
  int64_t max_rank_;
};

}  // namespace graphsplit::plugins::ai_core
