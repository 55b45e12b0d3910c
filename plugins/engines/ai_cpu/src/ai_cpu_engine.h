#pragma once

#include "graphsplit/kernels/kernel_engine.h"

namespace graphsplit::plugins::ai_cpu {

// AI CPU: the general fallback for every ONNX operator, dynamic and data-dependent shapes included. With
// `string_tensors = false` it refuses STRING tensors (for targets whose AI CPU lacks the string kernels).
class AiCpuEngine final : public kernels::KernelEngine {
 public:
  explicit AiCpuEngine(const sdk::PluginContext& ctx);
  sdk::SupportVerdict check_support(const sdk::Node& node) const override;

 private:
  bool string_tensors_;
};

}  // namespace graphsplit::plugins::ai_cpu
