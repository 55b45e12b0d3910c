#pragma once

#include "graphsplit/kernels/kernel_engine.h"

namespace graphsplit::plugins::host_cpu {

// Host CPU: shape computation and small integer tensors. Beyond the table: every output must be known to hold
// at most `max_output_elements` elements; a 1-D output of unknown length counts as a shape vector and is
// accepted, other dynamic outputs are refused. Shape and Size always qualify.
class HostCpuEngine final : public kernels::KernelEngine {
 public:
  explicit HostCpuEngine(const sdk::PluginContext& ctx);
  sdk::SupportVerdict check_support(const sdk::Node& node) const override;

 private:
  int64_t max_output_elements_;
};

}  // namespace graphsplit::plugins::host_cpu
