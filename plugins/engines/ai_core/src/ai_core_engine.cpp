#include "ai_core_engine.h"

namespace graphsplit::plugins::ai_core {

AiCoreEngine::AiCoreEngine(const sdk::PluginContext& ctx)
    : kernels::KernelEngine(ctx, std::string(sdk::engine::kAiCore)),
      max_rank_(ctx.options().get_int("max_rank", 8)) {}

sdk::SupportVerdict AiCoreEngine::check_support(const sdk::Node& node) const {
  sdk::SupportVerdict v = check_table(node);
  if (!v.supported) return v;
  auto too_big = [&](const sdk::TensorDesc* d) {
    return d && d->kind == sdk::ValueKind::kTensor && !d->shape.is_unknown_rank() &&
           static_cast<int64_t>(d->shape.rank()) > max_rank_;
  };
  for (size_t i = 0; i < node.num_inputs(); ++i) {
    if (too_big(node.input_desc(i))) {
      return {false, sdk::ReasonCode::kEngineCheckFailed,
              "input " + std::to_string(i) + " has rank " + std::to_string(node.input_desc(i)->shape.rank()) +
                  "; AI Core takes at most " + std::to_string(max_rank_) + " dimensions"};
    }
  }
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    if (too_big(&node.output_desc(o))) {
      return {false, sdk::ReasonCode::kEngineCheckFailed,
              "output " + std::to_string(o) + " has rank " +
                  std::to_string(node.output_desc(o).shape.rank()) + "; AI Core takes at most " +
                  std::to_string(max_rank_) + " dimensions"};
    }
  }
  const sdk::OpSupportRow* row = table().find(node.type());
  if (row->shape_dependent) {
    // Convolution and pooling kernels exist for 2-D (NCHW) and 3-D (NCDHW) spatial data.
    const sdk::TensorDesc* x = node.num_inputs() ? node.input_desc(0) : nullptr;
    if (!x || x->shape.is_unknown_rank()) {
      return {false, sdk::ReasonCode::kShapeUnknown,
              node.type() + " needs an input of known rank (4-D or 5-D)"};
    }
    if (x->shape.rank() != 4 && x->shape.rank() != 5) {
      return {
          false, sdk::ReasonCode::kEngineCheckFailed,
          node.type() + " on AI Core needs a 4-D or 5-D input, got rank " + std::to_string(x->shape.rank())};
    }
  }
  return v;
}

}  // namespace graphsplit::plugins::ai_core
