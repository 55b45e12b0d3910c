// The "shape" pass plugin: GE's InferShapePass and ConstantFoldingPass in one walk, on the kernels' rules.
#include <string>

#include "graphsplit/kernels/shape_inference.h"
#include "graphsplit/sdk/pass.h"
#include "graphsplit/sdk/plugin.h"

namespace graphsplit::plugins::shape {
namespace {

// Infers every value's type and shape (symbolic where not a number), propagates small integer tensors and
// folds constant subexpressions into Const nodes. Options: fold_constants, fold_max_bytes.
class InferShapes final : public sdk::Pass {
 public:
  explicit InferShapes(const sdk::PluginContext& ctx) {
    options_.fold_constants = ctx.options().get_bool("fold_constants", true);
    options_.fold_max_bytes = ctx.options().get_int("fold_max_bytes", options_.fold_max_bytes);
  }

  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override {
    kernels::ShapeInferenceStats stats;
    GS_RETURN_IF_ERROR(kernels::infer_shapes(root, options_, &stats));
    *changed = stats.folded > 0 || stats.changed_values > 0;
    std::string no_rule;
    for (const auto& [op, count] : stats.no_rule) no_rule += " " + op + "(" + std::to_string(count) + ")";
    ctx.log(sdk::LogLevel::kInfo, std::to_string(stats.nodes) +
                                      " operators: " + std::to_string(stats.folded) + " folded, " +
                                      std::to_string(stats.refined_dims) + " dimensions made static, " +
                                      std::to_string(stats.symbolic_dims) + " symbolic" +
                                      (no_rule.empty() ? "" : "; no shape rule:" + no_rule));
    for (const std::string& a : stats.assumptions) ctx.log(sdk::LogLevel::kDebug, "assumed: " + a);
    for (const std::string& b : stats.dead_branches)
      ctx.log(sdk::LogLevel::kInfo, "branch never taken with these shapes: " + b);
    return sdk::Status::ok();
  }

 private:
  kernels::ShapeInferenceOptions options_;
};

constexpr gs_option_desc kInferOptions[] = {
    {"fold_constants", GS_OPT_BOOL, "true", 1, 0, nullptr,
     "Replace operators whose inputs are all constants by Const nodes (computed with the CPU kernels)",
     nullptr},
    {"fold_max_bytes", GS_OPT_INT, "1048576", 0, 1099511627776.0, nullptr,
     "Largest tensor folding may create, in bytes (weights are never duplicated wholesale)", nullptr},
};

constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("infer",
                      "Shape inference, value propagation and constant folding (GE's InferShapePass and "
                      "ConstantFoldingPass)",
                      InferShapes, GS_OPTIONS(kInferOptions)),
};

}  // namespace
}  // namespace graphsplit::plugins::shape

GS_DEFINE_THIS_PLUGIN("0.1.0", graphsplit::plugins::shape::kComponents)
