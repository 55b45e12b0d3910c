// Shape rules of elementwise operators (same shape, or numpy broadcast), with value propagation of small
// integer tensors through the arithmetic that shape computations use. Also the rule table itself.
#include <algorithm>
#include <mutex>

#include "infer.h"

namespace graphsplit::kernels::infer {

// ------------------------------------------------------------------ context helpers

DimExpr InferContext::unknown_dim() {
  return sym->fresh_symbol("u");
}

DimExpr InferContext::unbacked_dim(DimExpr upper) {
  const sdk::SymRange r = upper.range();
  return sym->fresh_symbol("n", {0, r.hi}, true);
}

std::optional<SymDims> InferContext::elems(size_t i) const {
  const SymValue* v = in(i);
  if (!v || !v->elems) return std::nullopt;
  return v->elems;
}

std::optional<std::vector<int64_t>> InferContext::const_ints(size_t i) const {
  auto e = elems(i);
  if (!e) return std::nullopt;
  std::vector<int64_t> out;
  for (DimExpr d : *e) {
    if (!d.is_const()) return std::nullopt;
    out.push_back(d.value());
  }
  return out;
}

void InferContext::set(size_t i, DataType dtype, SymDims dims) {
  if (i >= outputs.size()) return;
  SymValue& v = outputs[i];
  v.dtype = dtype != DataType::kUndefined ? dtype : (in(0) ? in(0)->dtype : DataType::kUndefined);
  v.rank_known = true;
  v.dims = std::move(dims);
}

void InferContext::set_like(size_t out, size_t in, DataType dtype) {
  const SymValue* x = this->in(in);
  if (dtype == DataType::kUndefined && x) dtype = x->dtype;
  if (const SymValue* r = ranked(in)) {
    set(out, dtype, r->dims);
  } else if (out < outputs.size()) {
    outputs[out].dtype = dtype;
  }
}

Status apply_rule_to(InferContext& ctx, std::string_view rule, std::vector<size_t> inputs) {
  InferContext inner = ctx;
  inner.inputs.clear();
  for (size_t i : inputs) inner.inputs.push_back(ctx.in(i));
  GS_RETURN_IF_ERROR(find_rule(rule, {})(inner));
  ctx.outputs = std::move(inner.outputs);
  return Status::ok();
}

void InferContext::set_values(size_t i, DataType dtype, SymDims dims, SymDims values) {
  set(i, dtype, std::move(dims));
  if (i < outputs.size() && static_cast<int64_t>(values.size()) <= max_value_elements)
    outputs[i].elems = std::move(values);
}

DimExpr product(sdk::SymbolTable& sym, const SymDims& dims, size_t begin, size_t end) {
  if (begin >= end || begin >= dims.size()) return sym.constant(1);
  DimExpr p = dims[begin];
  for (size_t i = begin + 1; i < end && i < dims.size(); ++i) p = sym.mul(p, dims[i]);
  return p;
}

Status broadcast(InferContext& ctx, const SymDims& a, const SymDims& b, SymDims* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, DimExpr());
  for (size_t k = 0; k < rank; ++k) {
    const DimExpr x = k < rank - a.size() ? ctx.c(1) : a[k - (rank - a.size())];
    const DimExpr y = k < rank - b.size() ? ctx.c(1) : b[k - (rank - b.size())];
    DimExpr& r = (*out)[k];
    if (x == y || (y.is_const() && y.value() == 1)) {
      r = x;
    } else if (x.is_const() && x.value() == 1) {
      r = y;
    } else if (x.is_const() && y.is_const()) {
      return ctx.error("shapes cannot broadcast: dimension " + x.to_string() + " against " + y.to_string());
    } else if (x.is_const() || y.is_const()) {
      r = x.is_const() ? x : y;  // the other is 1 or equal to it
    } else {
      r = ctx.sym->max(x, y);
      ctx.sym->assume(x.to_string() + " == " + y.to_string() + " or one of them is 1 (broadcast at node '" +
                      ctx.node->name() + "')");
    }
  }
  return Status::ok();
}

namespace {

Status same_shape(InferContext& ctx) {
  ctx.set_like(0, 0, DataType::kUndefined);
  if (!ctx.ranked(0) && ctx.in(0)) ctx.out(0).kind = ctx.in(0)->kind;  // Identity also passes sequences
  return Status::ok();
}

// ---- sequences and optionals: what is known is the element tensor.
Status element_of(InferContext& ctx) {  // SequenceAt, OptionalGetElement
  const SymValue* s = ctx.in(0);
  if (!s) return Status::ok();
  ctx.out(0) = *s;
  ctx.out(0).kind = sdk::ValueKind::kTensor;
  ctx.out(0).elems.reset();
  ctx.out(0).constant.reset();
  return Status::ok();
}

Status sequence_of(InferContext& ctx) {  // SequenceConstruct, SequenceInsert, SequenceErase, SplitToSequence
  const SymValue* x = ctx.in(0);
  SymValue& out = ctx.out(0);
  out.kind = sdk::ValueKind::kSequence;
  if (x) out.dtype = x->dtype;
  // Every element the same shape: keep it (SequenceConstruct of equal tensors, Insert of the same shape).
  const std::string& t = ctx.node->type();
  if (x && x->rank_known && (t == "SequenceErase" || (t == "SequenceConstruct" && ctx.inputs.size() == 1))) {
    out.rank_known = true;
    out.dims = x->dims;
  }
  return Status::ok();
}

Status sequence_length(InferContext& ctx) {
  ctx.set(0, DataType::kInt64, {});
  return Status::ok();
}

Status has_element(InferContext& ctx) {
  ctx.set(0, DataType::kBool, {});
  return Status::ok();
}

Status concat_from_sequence(InferContext& ctx) {
  if (ctx.in(0)) ctx.out(0).dtype = ctx.in(0)->dtype;
  return Status::ok();
}

// The input's shape, and the `dtype` attribute's type when it has one (EyeLike, the random Like forms).
Status like_with_dtype(InferContext& ctx) {
  ctx.set_like(0, 0, static_cast<DataType>(ctx.attrs.attr_int("dtype", 0)));
  return Status::ok();
}

// Identity-like operators also carry the values through.
Status pass_through(InferContext& ctx) {
  GS_RETURN_IF_ERROR(same_shape(ctx));
  if (auto e = ctx.elems(0); e && ctx.ranked(0)) ctx.out(0).elems = e;
  return Status::ok();
}

Status dropout(InferContext& ctx) {
  GS_RETURN_IF_ERROR(pass_through(ctx));
  if (ctx.outputs.size() > 1 && ctx.ranked(0)) ctx.set(1, DataType::kBool, ctx.ranked(0)->dims);
  return Status::ok();
}

Status cast(InferContext& ctx) {
  const auto to = static_cast<DataType>(ctx.attrs.attr_int("to", 0));
  ctx.set_like(0, 0, to);
  const SymValue* x = ctx.ranked(0);
  const bool int_to_int = x && x->elems && (to == DataType::kInt64 || to == DataType::kInt32);
  if (int_to_int) ctx.out(0).elems = x->elems;
  return Status::ok();
}

Status cast_like(InferContext& ctx) {
  if (ctx.in(1)) ctx.set_like(0, 0, ctx.in(1)->dtype);
  return Status::ok();
}

Status to_bool(InferContext& ctx) {
  ctx.set_like(0, 0, DataType::kBool);
  return Status::ok();
}

// Row-major index of `out_index` in an input of shape `in` broadcast to `out`.
int64_t broadcast_source(const std::vector<int64_t>& out, const std::vector<int64_t>& in, int64_t out_index) {
  int64_t src = 0, stride = 1;
  for (int64_t k = static_cast<int64_t>(out.size()) - 1, j = static_cast<int64_t>(in.size()) - 1; k >= 0;
       --k, --j) {
    const int64_t coord = out_index % out[k];
    out_index /= out[k];
    if (j < 0) continue;
    if (in[j] != 1) src += coord * stride;
    stride *= in[j];
  }
  return src;
}

std::optional<std::vector<int64_t>> const_dims(const SymDims& d) {
  std::vector<int64_t> r;
  for (DimExpr e : d) {
    if (!e.is_const()) return std::nullopt;
    r.push_back(e.value());
  }
  return r;
}

// Broadcast operators: the shape, then values when both inputs carry them.
template <char kOp>
Status binary(InferContext& ctx) {
  const SymValue* a = ctx.ranked(0);
  const SymValue* b = ctx.ranked(1);
  DataType dtype = ctx.in(0) ? ctx.in(0)->dtype : DataType::kUndefined;
  if (kOp == 'c') dtype = DataType::kBool;
  if (!a || !b) {
    ctx.out(0).dtype = dtype;
    return Status::ok();
  }
  SymDims dims;
  GS_RETURN_IF_ERROR(broadcast(ctx, a->dims, b->dims, &dims));
  ctx.set(0, dtype, dims);
  if (kOp == 'c' || !a->elems || !b->elems) return Status::ok();
  auto od = const_dims(dims), ad = const_dims(a->dims), bd = const_dims(b->dims);
  if (!od || !ad || !bd) return Status::ok();
  const int64_t n = num_elements(*od);
  if (n > ctx.max_value_elements) return Status::ok();
  SymDims values;
  for (int64_t i = 0; i < n; ++i) {
    const DimExpr x = (*a->elems)[broadcast_source(*od, *ad, i)];
    const DimExpr y = (*b->elems)[broadcast_source(*od, *bd, i)];
    DimExpr r;
    switch (kOp) {
      case '+':
        r = ctx.sym->add(x, y);
        break;
      case '-':
        r = ctx.sym->sub(x, y);
        break;
      case '*':
        r = ctx.sym->mul(x, y);
        break;
      case '/':
        r = y.is_const() && y.value() == 0 ? DimExpr() : ctx.sym->trunc_div(x, y);
        break;
      case 'M':
        r = ctx.sym->max(x, y);
        break;
      case 'm':
        r = ctx.sym->min(x, y);
        break;
      case '%':
        if (ctx.attrs.attr_int("fmod", 0) != 0 || !y.is_const() || y.value() == 0) return Status::ok();
        r = ctx.sym->mod(x, y);
        break;
    }
    if (!r.valid()) return Status::ok();
    values.push_back(r);
  }
  ctx.out(0).elems = std::move(values);
  return Status::ok();
}

// Sum, Mean, Max and Min take any number of inputs.
template <char kOp>
Status variadic(InferContext& ctx) {
  if (ctx.inputs.size() == 2) return binary<kOp>(ctx);
  SymDims dims;
  bool first = true;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const SymValue* v = ctx.ranked(i);
    if (!v) {
      ctx.out(0).dtype = ctx.in(0) ? ctx.in(0)->dtype : DataType::kUndefined;
      return Status::ok();
    }
    if (first) {
      dims = v->dims;
      first = false;
    } else {
      SymDims next;
      GS_RETURN_IF_ERROR(broadcast(ctx, dims, v->dims, &next));
      dims = std::move(next);
    }
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status where(InferContext& ctx) {
  const SymValue* c = ctx.ranked(0);
  const SymValue* x = ctx.ranked(1);
  const SymValue* y = ctx.ranked(2);
  const DataType dtype = ctx.in(1) ? ctx.in(1)->dtype : DataType::kUndefined;
  if (!c || !x || !y) {
    ctx.out(0).dtype = dtype;
    return Status::ok();
  }
  SymDims xy, dims;
  GS_RETURN_IF_ERROR(broadcast(ctx, x->dims, y->dims, &xy));
  GS_RETURN_IF_ERROR(broadcast(ctx, c->dims, xy, &dims));
  ctx.set(0, dtype, dims);
  // Where over shape values (torch exports of dynamic reshapes) with a constant condition.
  auto cond = ctx.const_ints(0);
  if (cond && x->elems && y->elems && cond->size() == x->elems->size() && cond->size() == y->elems->size()) {
    SymDims values;
    for (size_t i = 0; i < cond->size(); ++i) values.push_back((*cond)[i] ? (*x->elems)[i] : (*y->elems)[i]);
    ctx.out(0).elems = std::move(values);
  }
  return Status::ok();
}

constexpr const char* kSameShape[] = {"Abs",
                                      "Acos",
                                      "Acosh",
                                      "Asin",
                                      "Asinh",
                                      "Atan",
                                      "Atanh",
                                      "Ceil",
                                      "Celu",
                                      "Clip",
                                      "Cos",
                                      "Cosh",
                                      "Elu",
                                      "Erf",
                                      "Exp",
                                      "Floor",
                                      "Gelu",
                                      "HardSigmoid",
                                      "HardSwish",
                                      "Hardmax",
                                      "LeakyRelu",
                                      "Log",
                                      "LogSoftmax",
                                      "Neg",
                                      "Reciprocal",
                                      "Relu",
                                      "Round",
                                      "Selu",
                                      "Shrink",
                                      "Sigmoid",
                                      "Sign",
                                      "Sin",
                                      "Sinh",
                                      "Softmax",
                                      "Softplus",
                                      "Softsign",
                                      "Sqrt",
                                      "Tan",
                                      "Tanh",
                                      "ThresholdedRelu",
                                      "CumSum",
                                      "Trilu",
                                      "LRN",
                                      "BatchNormalization",
                                      "InstanceNormalization",
                                      "MeanVarianceNormalization",
                                      "Mish",
                                      "ReverseSequence",
                                      "Scatter",
                                      "ScatterElements",
                                      "ScatterND",
                                      "GroupNormalization",
                                      "RMSNormalization",
                                      "RotaryEmbedding",
                                      "Not",
                                      "BitwiseNot"};

// Det: the determinant of each matrix in the last two dimensions.
Status det(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  if (x->rank() < 2) return ctx.error("the input must have rank >= 2");
  ctx.set(0, DataType::kUndefined, SymDims(x->dims.begin(), x->dims.end() - 2));
  return Status::ok();
}

}  // namespace

void register_elementwise_rules(std::vector<RuleEntry>* t) {
  for (const char* op : kSameShape) t->push_back({op, same_shape});
  t->push_back({"Identity", pass_through});
  for (const char* op : {"Bernoulli", "RandomNormalLike", "RandomUniformLike"})
    t->push_back({op, like_with_dtype});
  t->push_back({"SequenceAt", element_of});
  t->push_back({"OptionalGetElement", element_of});
  for (const char* op : {"SequenceConstruct", "SequenceInsert", "SequenceErase", "SplitToSequence"})
    t->push_back({op, sequence_of});
  t->push_back({"SequenceLength", sequence_length});
  t->push_back({"OptionalHasElement", has_element});
  t->push_back({"ConcatFromSequence", concat_from_sequence});
  t->push_back({"Det", det});
  t->push_back({"Dropout", dropout});
  t->push_back({"Cast", cast});
  t->push_back({"CastLike", cast_like});
  t->push_back({"IsNaN", to_bool});
  t->push_back({"IsInf", to_bool});
  t->push_back({"Add", binary<'+'>});
  t->push_back({"Sub", binary<'-'>});
  t->push_back({"Mul", binary<'*'>});
  t->push_back({"Div", binary<'/'>});
  t->push_back({"Mod", binary<'%'>});
  t->push_back({"Pow", binary<'^'>});
  t->push_back({"BitShift", binary<'^'>});
  t->push_back({"BitwiseAnd", binary<'^'>});
  t->push_back({"BitwiseOr", binary<'^'>});
  t->push_back({"BitwiseXor", binary<'^'>});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
    t->push_back({op, binary<'c'>});
  t->push_back({"Max", variadic<'M'>});
  t->push_back({"Min", variadic<'m'>});
  t->push_back({"Sum", variadic<'+'>});
  t->push_back({"Mean", variadic<'^'>});
  t->push_back({"Where", where});
  t->push_back({"PRelu", same_shape});  // slope broadcasts to X (and to the channel axis before opset 7)
}

RuleFn find_rule(std::string_view op_type, std::string_view domain) {
  static const std::vector<RuleEntry>* table = [] {
    auto* t = new std::vector<RuleEntry>();
    register_elementwise_rules(t);
    register_shape_rules(t);
    register_nn_rules(t);
    register_misc_rules(t);
    std::sort(t->begin(), t->end(),
              [](const RuleEntry& a, const RuleEntry& b) { return std::string_view(a.op_type) < b.op_type; });
    return t;
  }();
  if (!domain.empty() && domain != "ai.onnx") return nullptr;
  auto it = std::lower_bound(
      table->begin(), table->end(), op_type,
      [](const RuleEntry& e, std::string_view k) { return std::string_view(e.op_type) < k; });
  return it != table->end() && it->op_type == op_type ? it->fn : nullptr;
}

}  // namespace graphsplit::kernels::infer
