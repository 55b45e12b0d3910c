// One shape rule per operator, two callers: inference over symbolic dims at compile time, and the executor
// over the dims of the tensors a kernel is about to read, so the kernel's outputs are checked against (or
// taken from) the same function.
#include "infer.h"

namespace graphsplit::kernels::infer {

std::vector<RuleShape> rule_shapes(const InferContext& ctx) {
  std::vector<RuleShape> out(ctx.outputs.size());
  for (size_t o = 0; o < ctx.outputs.size(); ++o) {
    const SymValue& v = ctx.outputs[o];
    RuleShape& r = out[o];
    r.dtype = v.dtype != DataType::kUndefined ? v.dtype : default_type(ctx, o);
    if (v.kind != sdk::ValueKind::kTensor || !v.rank_known) continue;
    r.known = std::all_of(v.dims.begin(), v.dims.end(), [](DimExpr d) { return d.is_const(); });
    if (!r.known) continue;
    for (DimExpr d : v.dims) r.dims.push_back(d.value());
  }
  return out;
}

Status evaluate_rule(RuleFn rule, const sdk::Node& node, int opset, sdk::SymbolTable& sym,
                     const std::vector<const SymValue*>& inputs, std::vector<RuleShape>* out) {
  InferContext ctx;
  ctx.node = &node;
  ctx.opset = opset;
  ctx.sym = &sym;
  ctx.attrs.node = &node;
  ctx.attrs.opset = opset;
  ctx.inputs = inputs;
  ctx.outputs.resize(node.num_outputs());
  try {
    GS_RETURN_IF_ERROR(rule(ctx));
  } catch (const sdk::SymOverflow& e) {
    return Status::invalid_argument(e.what());
  }
  *out = rule_shapes(ctx);
  return Status::ok();
}

}  // namespace graphsplit::kernels::infer
