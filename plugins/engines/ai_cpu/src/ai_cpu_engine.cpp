#include "ai_cpu_engine.h"

namespace graphsplit::plugins::ai_cpu {

AiCpuEngine::AiCpuEngine(const sdk::PluginContext& ctx)
    : kernels::KernelEngine(ctx, std::string(sdk::engine::kAiCpu)),
      string_tensors_(ctx.options().get_bool("string_tensors", true)) {}

sdk::SupportVerdict AiCpuEngine::check_support(const sdk::Node& node) const {
  sdk::SupportVerdict v = check_table(node);
  if (!v.supported || string_tensors_) return v;
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    const sdk::TensorDesc* d = node.input_desc(i);
    if (d && d->dtype == sdk::DataType::kString) {
      return {false, sdk::ReasonCode::kEngineUnsupportedDtype,
              "input " + std::to_string(i) + " is a string tensor and string_tensors = false"};
    }
  }
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    if (node.output_desc(o).dtype == sdk::DataType::kString) {
      return {false, sdk::ReasonCode::kEngineUnsupportedDtype,
              "output " + std::to_string(o) + " is a string tensor and string_tensors = false"};
    }
  }
  return v;
}

}  // namespace graphsplit::plugins::ai_cpu
