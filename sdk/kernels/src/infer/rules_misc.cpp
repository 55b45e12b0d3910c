// Shape rules of the remaining operators the kernels run: window functions, Einsum, GatherND, GridSample,
// MaxUnpool, RoiAlign, the losses, dynamic and linear quantization, Unique.
#include <algorithm>
#include <map>

#include "infer.h"

namespace graphsplit::kernels::infer {
namespace {

Status window(InferContext& ctx) {  // BlackmanWindow, HammingWindow, HannWindow
  const auto dtype = static_cast<DataType>(ctx.attrs.attr_int("output_datatype", 1));
  auto size = ctx.elems(0);
  ctx.set(0, dtype, {size && size->size() == 1 ? (*size)[0] : ctx.unknown_dim()});
  return Status::ok();
}

Status dynamic_quantize(InferContext& ctx) {
  ctx.set_like(0, 0, DataType::kUint8);
  ctx.set(1, DataType::kFloat, {});
  ctx.set(2, DataType::kUint8, {});
  return Status::ok();
}

// Einsum with explicit or implicit output, without ellipsis (left unknown).
Status einsum(InferContext& ctx) {
  std::string eq = ctx.attrs.attr_string("equation");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) return Status::ok();
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.inputs.size())
    return ctx.error("the equation has " + std::to_string(terms.size()) + " operands for " +
                     std::to_string(ctx.inputs.size()) + " inputs");
  std::map<char, DimExpr> size;
  std::map<char, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    const SymValue* v = ctx.ranked(i);
    if (!v) return Status::ok();
    if (static_cast<int64_t>(terms[i].size()) != v->rank())
      return ctx.error("operand " + std::to_string(i) + " '" + terms[i] + "' does not match rank " +
                       std::to_string(v->rank()));
    for (size_t k = 0; k < terms[i].size(); ++k) {
      const char c = terms[i][k];
      ++count[c];
      auto [it, fresh] = size.emplace(c, v->dims[k]);
      if (!fresh && !(v->dims[k].is_const() && v->dims[k].value() == 1)) {
        if (it->second.is_const() && it->second.value() == 1)
          it->second = v->dims[k];
        else
          ctx.sym->unify(it->second, v->dims[k]);
      }
    }
  }
  std::string out;
  if (arrow != std::string::npos) {
    out = eq.substr(arrow + 2);
  } else {
    for (const auto& [c, n] : count) {
      if (n == 1) out += c;
    }
  }
  SymDims dims;
  for (char c : out) {
    if (!size.count(c)) return ctx.error("output label '" + std::string(1, c) + "' is not in any operand");
    dims.push_back(size[c]);
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status gather_nd(InferContext& ctx) {
  const SymValue* data = ctx.ranked(0);
  const SymValue* idx = ctx.ranked(1);
  if (!data || !idx || idx->rank() == 0 || !idx->dims.back().is_const()) return Status::ok();
  const int64_t b = ctx.attrs.attr_int("batch_dims", 0), k = idx->dims.back().value();
  if (b < 0 || b + k > data->rank()) return ctx.error("indices' last dimension is too large for the data");
  SymDims dims(idx->dims.begin(), idx->dims.end() - 1);
  dims.insert(dims.end(), data->dims.begin() + b + k, data->dims.end());
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status grid_sample(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  const SymValue* grid = ctx.ranked(1);
  if (!x || !grid || grid->rank() != x->rank() || x->rank() < 3) return Status::ok();
  SymDims dims = {x->dims[0], x->dims[1]};
  dims.insert(dims.end(), grid->dims.begin() + 1, grid->dims.end() - 1);
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status max_unpool(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x || x->rank() < 3) return Status::ok();
  if (auto shape = ctx.elems(2)) {
    ctx.set(0, DataType::kUndefined, *shape);
    return Status::ok();
  }
  if (ctx.has(2)) {  // an output_shape known only at run time
    SymDims dims;
    for (int64_t i = 0; i < x->rank(); ++i) dims.push_back(ctx.unknown_dim());
    ctx.set(0, DataType::kUndefined, dims);
    return Status::ok();
  }
  const size_t s = x->dims.size() - 2;
  const auto kernel = ctx.attrs.attr_ints("kernel_shape").value_or(std::vector<int64_t>{});
  const auto strides = ctx.attrs.attr_ints("strides").value_or(std::vector<int64_t>(s, 1));
  const auto pads = ctx.attrs.attr_ints("pads").value_or(std::vector<int64_t>(2 * s, 0));
  if (kernel.size() != s || strides.size() != s || pads.size() != 2 * s)
    return ctx.error("kernel_shape, strides or pads do not match the input rank");
  SymDims dims = {x->dims[0], x->dims[1]};
  for (size_t i = 0; i < s; ++i) {
    const DimExpr in = ctx.sym->sub(x->dims[2 + i], ctx.c(1));
    dims.push_back(
        ctx.sym->add(ctx.sym->mul(in, ctx.c(strides[i])), ctx.c(kernel[i] - pads[i] - pads[s + i])));
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status roi_align(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  const SymValue* rois = ctx.ranked(1);
  if (!x || !rois || x->rank() != 4 || rois->rank() != 2) return Status::ok();
  ctx.set(0, DataType::kUndefined,
          {rois->dims[0], x->dims[1], ctx.c(ctx.attrs.attr_int("output_height", 1)),
           ctx.c(ctx.attrs.attr_int("output_width", 1))});
  return Status::ok();
}

// NegativeLogLikelihoodLoss (input, target) and SoftmaxCrossEntropyLoss (scores, labels): per element with
// reduction "none", else a scalar; the softmax loss's second output is the log-probabilities.
Status loss(InferContext& ctx) {
  const bool none = ctx.attrs.attr_string("reduction", "mean") == "none";
  const SymValue* target = ctx.ranked(1);
  if (none && target) ctx.set(0, DataType::kUndefined, target->dims);
  if (!none) ctx.set(0, DataType::kUndefined, {});
  if (ctx.outputs.size() > 1) {
    if (const SymValue* scores = ctx.ranked(0)) ctx.set(1, DataType::kUndefined, scores->dims);
  }
  return Status::ok();
}

Status qlinear_conv(InferContext& ctx) {
  // Inputs: x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, B.
  const SymValue* x = ctx.ranked(0);
  const SymValue* w = ctx.ranked(3);
  const DataType dtype = ctx.in(7) ? ctx.in(7)->dtype : DataType::kUndefined;
  if (!x || !w || x->rank() < 3 || w->rank() != x->rank()) {
    ctx.out(0).dtype = dtype;
    return Status::ok();
  }
  GS_RETURN_IF_ERROR(apply_rule_to(ctx, "Conv", {0, 3}));
  ctx.out(0).dtype = dtype;
  return Status::ok();
}

Status unique(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  const sdk::AttrValue* axis_attr = ctx.node->attrs().get("axis");
  const DimExpr total = product(*ctx.sym, x->dims, 0, x->dims.size());
  DimExpr count;
  if (!axis_attr) {
    count = ctx.unbacked_dim(total);
    ctx.set(0, DataType::kUndefined, {count});
    ctx.set(2, DataType::kInt64, {total});
  } else {
    int64_t axis = ctx.attrs.attr_int("axis", 0);
    if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
    count = ctx.unbacked_dim(x->dims[axis]);
    SymDims dims = x->dims;
    dims[axis] = count;
    ctx.set(0, DataType::kUndefined, dims);
    ctx.set(2, DataType::kInt64, {x->dims[axis]});
  }
  ctx.set(1, DataType::kInt64, {count});
  ctx.set(3, DataType::kInt64, {count});
  return Status::ok();
}

// ---- operators new in opsets 18-23 (their kernels are the runtime's business; the shapes are known here)

Status col2im(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto image = ctx.elems(1), block = ctx.elems(2);
  if (!x || !image || !block || x->rank() != 3 || image->size() != block->size()) return Status::ok();
  const DimExpr per_channel = product(*ctx.sym, *block, 0, block->size());
  SymDims dims = {x->dims[0], ctx.sym->floor_div(x->dims[1], per_channel)};
  dims.insert(dims.end(), image->begin(), image->end());
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status center_crop_pad(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto shape = ctx.elems(1);
  if (!x || !shape) return Status::ok();
  std::vector<int64_t> axes = ctx.attrs.attr_ints("axes").value_or(std::vector<int64_t>{});
  if (axes.empty()) {
    for (int64_t i = 0; i < x->rank(); ++i) axes.push_back(i);
  }
  if (axes.size() != shape->size()) return ctx.error("shape and axes differ in length");
  SymDims dims = x->dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!normalize_axis(&a, x->rank())) return ctx.error("axes are out of range");
    dims[a] = (*shape)[i];
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status affine_grid(InferContext& ctx) {
  auto size = ctx.elems(1);
  if (!size || (size->size() != 4 && size->size() != 5)) return Status::ok();
  SymDims dims = {(*size)[0]};
  dims.insert(dims.end(), size->begin() + 2, size->end());
  dims.push_back(ctx.c(static_cast<int64_t>(size->size()) - 2));
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status dft(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x || x->rank() < 2) return Status::ok();
  int64_t axis = ctx.opset >= 20 ? -2 : ctx.attrs.attr_int("axis", 1);
  if (ctx.opset >= 20 && ctx.has(2)) {
    auto a = ctx.const_ints(2);
    if (!a || a->size() != 1) return Status::ok();
    axis = (*a)[0];
  }
  // The axis counts over the signal dimensions (the last one holds real/imaginary).
  if (axis < 0) axis += x->rank();
  if (axis < 0 || axis >= x->rank() - 1) return ctx.error("axis is out of range");
  SymDims dims = x->dims;
  if (ctx.has(1)) {
    auto n = ctx.elems(1);
    dims[axis] = n && n->size() == 1 ? (*n)[0] : ctx.unknown_dim();
  }
  if (ctx.attrs.attr_int("onesided", 0) != 0)
    dims[axis] = ctx.sym->add(ctx.sym->floor_div(dims[axis], ctx.c(2)), ctx.c(1));
  dims.back() = ctx.c(2);
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

// Attention-23 with 4-D inputs Q [B, Hq, S, D], K/V [B, Hkv, L, D/Dv]: Y [B, Hq, S, Dv], present K/V with the
// past prepended; 3-D inputs [B, S, hidden] give Y [B, S, Hq * Dv].
Status attention(InferContext& ctx) {
  const SymValue* q = ctx.ranked(0);
  const SymValue* k = ctx.ranked(1);
  const SymValue* v = ctx.ranked(2);
  if (!q || !k || !v || q->rank() != k->rank() || q->rank() != v->rank()) return Status::ok();
  auto& s = *ctx.sym;
  if (q->rank() == 4) {
    ctx.set(0, DataType::kUndefined, {q->dims[0], q->dims[1], q->dims[2], v->dims[3]});
    const SymValue* past_k = ctx.ranked(4);
    const SymValue* past_v = ctx.ranked(5);
    const DimExpr total = past_k && past_k->rank() == 4 ? s.add(past_k->dims[2], k->dims[2]) : k->dims[2];
    ctx.set(1, DataType::kUndefined, {k->dims[0], k->dims[1], total, k->dims[3]});
    ctx.set(2, DataType::kUndefined,
            {v->dims[0], v->dims[1],
             past_v && past_v->rank() == 4 ? s.add(past_v->dims[2], v->dims[2]) : v->dims[2], v->dims[3]});
    ctx.set(3, DataType::kUndefined, {q->dims[0], q->dims[1], q->dims[2], total});
    return Status::ok();
  }
  const int64_t hq = ctx.attrs.attr_int("q_num_heads", 0), hkv = ctx.attrs.attr_int("kv_num_heads", 0);
  if (q->rank() != 3 || hq <= 0 || hkv <= 0) return Status::ok();
  ctx.set(0, DataType::kUndefined,
          {q->dims[0], q->dims[1], s.mul(s.floor_div(v->dims[2], ctx.c(hkv)), ctx.c(hq))});
  return Status::ok();
}

Status deform_conv(InferContext& ctx) {
  return apply_rule_to(ctx, "Conv", {0, 1});
}

}  // namespace

void register_misc_rules(std::vector<RuleEntry>* t) {
  const RuleEntry entries[] = {
      {"BlackmanWindow", window},
      {"HammingWindow", window},
      {"HannWindow", window},
      {"DynamicQuantizeLinear", dynamic_quantize},
      {"Einsum", einsum},
      {"GatherND", gather_nd},
      {"GridSample", grid_sample},
      {"MaxUnpool", max_unpool},
      {"RoiAlign", roi_align},
      {"NegativeLogLikelihoodLoss", loss},
      {"SoftmaxCrossEntropyLoss", loss},
      {"QLinearConv", qlinear_conv},
      {"Unique", unique},
      {"Col2Im", col2im},
      {"CenterCropPad", center_crop_pad},
      {"AffineGrid", affine_grid},
      {"DFT", dft},
      {"Attention", attention},
      {"DeformConv", deform_conv},
  };
  t->insert(t->end(), std::begin(entries), std::end(entries));
}

}  // namespace graphsplit::kernels::infer
