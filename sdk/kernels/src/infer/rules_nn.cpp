// Shape rules of convolution, pooling, matrix products, normalisation, recurrent layers and resampling. The
// window arithmetic is the kernels' (nn.cpp conv_window) over expressions, so that a symbolic spatial size
// becomes floor((s + pads - dilation*(k-1) - 1) / stride) + 1 instead of unknown.
#include <algorithm>
#include <cmath>

#include "infer.h"

namespace graphsplit::kernels::infer {
namespace {

struct Geometry {
  std::vector<int64_t> kernel, strides, dilations, pads;
  std::string auto_pad;
};

Status read_geometry(InferContext& ctx, size_t spatial, std::vector<int64_t> kernel, Geometry* g) {
  g->kernel = std::move(kernel);
  g->strides = ctx.attrs.attr_ints("strides").value_or(std::vector<int64_t>(spatial, 1));
  g->dilations = ctx.attrs.attr_ints("dilations").value_or(std::vector<int64_t>(spatial, 1));
  g->pads = ctx.attrs.attr_ints("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  g->auto_pad = ctx.attrs.attr_string("auto_pad", "NOTSET");
  if (g->kernel.size() != spatial || g->strides.size() != spatial || g->dilations.size() != spatial ||
      g->pads.size() != 2 * spatial)
    return ctx.error("kernel_shape, strides, dilations or pads do not match the input rank");
  for (size_t i = 0; i < spatial; ++i) {
    if (g->strides[i] <= 0) return ctx.error("strides must be positive, got " + dims_string(g->strides));
    if (g->dilations[i] <= 0)
      return ctx.error("dilations must be positive, got " + dims_string(g->dilations));
    if (g->kernel[i] <= 0) return ctx.error("kernel_shape must be positive, got " + dims_string(g->kernel));
    if (g->pads[i] < 0 || g->pads[spatial + i] < 0) return ctx.error("pads must not be negative");
  }
  return Status::ok();
}

// One spatial output size of a Conv or pooling window.
Status window_out(InferContext& ctx, const Geometry& g, size_t i, DimExpr in, bool ceil_mode, DimExpr* out) {
  auto& s = *ctx.sym;
  const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1, stride = g.strides[i];
  if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
    *out = s.ceil_div(in, ctx.c(stride));
    return Status::ok();
  }
  const size_t n = g.kernel.size();
  const int64_t pb = g.auto_pad == "VALID" ? 0 : g.pads[i], pe = g.auto_pad == "VALID" ? 0 : g.pads[n + i];
  const DimExpr span = s.sub(s.add(in, ctx.c(pb + pe)), ctx.c(eff));
  if (span.is_const() && span.value() < 0) return ctx.error("the kernel is larger than the padded input");
  if (!ceil_mode) {
    *out = s.add(s.floor_div(span, ctx.c(stride)), ctx.c(1));
    return Status::ok();
  }
  if (!in.is_const()) {
    *out = ctx.unknown_dim();
    return Status::ok();
  }
  int64_t o = (span.value() + stride - 1) / stride + 1;
  if ((o - 1) * stride >= in.value() + pb) --o;  // a window must start inside the input or left padding
  *out = ctx.c(o);
  return Status::ok();
}

Status conv(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  const SymValue* w = ctx.ranked(1);
  if (!x || !w) return Status::ok();
  if (x->rank() < 3 || w->rank() != x->rank()) return ctx.error("input and weight ranks must match (>= 3)");
  const size_t spatial = x->dims.size() - 2;
  std::vector<int64_t> kernel;
  if (auto k = ctx.attrs.attr_ints("kernel_shape")) {
    kernel = *k;
  } else {
    for (size_t i = 0; i < spatial; ++i) {
      if (!w->dims[2 + i].is_const()) return Status::ok();
      kernel.push_back(w->dims[2 + i].value());
    }
  }
  Geometry g;
  GS_RETURN_IF_ERROR(read_geometry(ctx, spatial, kernel, &g));
  const int64_t group = ctx.attrs.attr_int("group", 1);
  if (group <= 0) return ctx.error("group must be positive");
  if (x->dims[1].is_const() && w->dims[1].is_const() && x->dims[1].value() != w->dims[1].value() * group)
    return ctx.error("weight has " + w->dims[1].to_string() + " channels per group for " +
                     x->dims[1].to_string() + " input channels in " + std::to_string(group) + " groups");
  SymDims dims = {x->dims[0], w->dims[0]};
  for (size_t i = 0; i < spatial; ++i) {
    DimExpr o;
    GS_RETURN_IF_ERROR(window_out(ctx, g, i, x->dims[2 + i], false, &o));
    dims.push_back(o);
  }
  ctx.set(0, ctx.node->type() == "ConvInteger" ? DataType::kInt32 : DataType::kUndefined, dims);
  return Status::ok();
}

Status conv_transpose(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  const SymValue* w = ctx.ranked(1);
  if (!x || !w || x->rank() < 3 || w->rank() != x->rank()) return Status::ok();
  const size_t spatial = x->dims.size() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < spatial; ++i) {
    if (!w->dims[2 + i].is_const()) return Status::ok();
    kernel.push_back(w->dims[2 + i].value());
  }
  if (auto k = ctx.attrs.attr_ints("kernel_shape")) kernel = *k;
  Geometry g;
  GS_RETURN_IF_ERROR(read_geometry(ctx, spatial, kernel, &g));
  const auto out_pad = ctx.attrs.attr_ints("output_padding").value_or(std::vector<int64_t>(spatial, 0));
  const auto out_shape = ctx.attrs.attr_ints("output_shape");
  if (out_pad.size() != spatial) return ctx.error("output_padding does not match the input rank");
  const int64_t group = ctx.attrs.attr_int("group", 1);
  if (group <= 0) return ctx.error("group must be positive");
  auto& s = *ctx.sym;
  SymDims dims = {x->dims[0], s.mul(w->dims[1], ctx.c(group))};
  for (size_t i = 0; i < spatial; ++i) {
    const DimExpr in = x->dims[2 + i];
    if (out_shape && out_shape->size() >= spatial) {
      dims.push_back(ctx.c((*out_shape)[out_shape->size() - spatial + i]));
    } else if (g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER") {
      dims.push_back(s.mul(in, ctx.c(g.strides[i])));
    } else {
      const int64_t eff = (g.kernel[i] - 1) * g.dilations[i] + 1;
      const int64_t pads = g.auto_pad == "VALID" ? 0 : g.pads[i] + g.pads[spatial + i];
      dims.push_back(s.add(s.mul(ctx.c(g.strides[i]), s.sub(in, ctx.c(1))), ctx.c(out_pad[i] + eff - pads)));
    }
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status pool(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  if (x->rank() < 3) return ctx.error("the input must have rank >= 3");
  const size_t spatial = x->dims.size() - 2;
  auto kernel = ctx.attrs.attr_ints("kernel_shape");
  if (!kernel) return ctx.error("kernel_shape is required");
  Geometry g;
  GS_RETURN_IF_ERROR(read_geometry(ctx, spatial, *kernel, &g));
  const bool ceil_mode = ctx.attrs.attr_int("ceil_mode", 0) != 0;
  SymDims dims = {x->dims[0], x->dims[1]};
  for (size_t i = 0; i < spatial; ++i) {
    DimExpr o;
    GS_RETURN_IF_ERROR(window_out(ctx, g, i, x->dims[2 + i], ceil_mode, &o));
    dims.push_back(o);
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (ctx.outputs.size() > 1) ctx.set(1, DataType::kInt64, dims);
  return Status::ok();
}

Status global_pool(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  if (x->rank() < 2) return ctx.error("the input must have rank >= 2");
  SymDims dims = {x->dims[0], x->dims[1]};
  for (int64_t i = 2; i < x->rank(); ++i) dims.push_back(ctx.c(1));
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status matmul(InferContext& ctx) {
  const SymValue* a = ctx.ranked(0);
  const SymValue* b = ctx.ranked(1);
  if (!a || !b) return Status::ok();
  if (a->rank() == 0 || b->rank() == 0) return ctx.error("MatMul inputs must not be scalars");
  SymDims ad = a->dims, bd = b->dims;
  const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
  if (a_vec) ad.insert(ad.begin(), ctx.c(1));
  if (b_vec) bd.push_back(ctx.c(1));
  const DimExpr k1 = ad.back(), k2 = bd[bd.size() - 2];
  if (k1.is_const() && k2.is_const() && k1 != k2)
    return ctx.error("inner dimensions differ: " + k1.to_string() + " and " + k2.to_string());
  ctx.sym->unify(k1, k2);  // MatMul proves them equal
  SymDims batch;
  GS_RETURN_IF_ERROR(
      broadcast(ctx, SymDims(ad.begin(), ad.end() - 2), SymDims(bd.begin(), bd.end() - 2), &batch));
  if (!a_vec) batch.push_back(ad[ad.size() - 2]);
  if (!b_vec) batch.push_back(bd.back());
  const std::string& t = ctx.node->type();
  DataType dtype = DataType::kUndefined;
  if (t == "MatMulInteger") dtype = DataType::kInt32;
  ctx.set(0, dtype, batch);
  return Status::ok();
}

Status qlinear_matmul(InferContext& ctx) {
  // Inputs: a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero.
  GS_RETURN_IF_ERROR(apply_rule_to(ctx, "MatMul", {0, 3}));
  if (ctx.in(7)) ctx.out(0).dtype = ctx.in(7)->dtype;
  return Status::ok();
}

Status gemm(InferContext& ctx) {
  const SymValue* a = ctx.ranked(0);
  const SymValue* b = ctx.ranked(1);
  if (!a || !b) return Status::ok();
  if (a->rank() != 2 || b->rank() != 2) return ctx.error("Gemm inputs must be matrices");
  const bool ta = ctx.attrs.attr_int("transA", 0) != 0, tb = ctx.attrs.attr_int("transB", 0) != 0;
  const DimExpr m = ta ? a->dims[1] : a->dims[0], k1 = ta ? a->dims[0] : a->dims[1];
  const DimExpr k2 = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
  if (k1.is_const() && k2.is_const() && k1 != k2)
    return ctx.error("inner dimensions differ: " + k1.to_string() + " and " + k2.to_string());
  ctx.sym->unify(k1, k2);
  ctx.set(0, DataType::kUndefined, {m, n});
  return Status::ok();
}

Status layer_norm(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  ctx.set(0, DataType::kUndefined, x->dims);
  int64_t axis = ctx.attrs.attr_int("axis", -1);
  if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
  SymDims stat(x->dims.begin(), x->dims.begin() + axis);
  stat.resize(x->dims.size(), ctx.c(1));
  const auto stash = static_cast<DataType>(ctx.attrs.attr_int("stash_type", 1));
  for (size_t o = 1; o < ctx.outputs.size(); ++o) ctx.set(o, stash, stat);
  return Status::ok();
}

// LSTM, GRU, RNN: Y [seq, dirs, batch, hidden], Y_h (and Y_c) [dirs, batch, hidden]; layout 1 swaps.
Status recurrent(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (x && x->rank() != 3) return ctx.error("X must have rank 3");
  const int64_t hidden = ctx.attrs.attr_int("hidden_size", 0);
  if (hidden <= 0) return ctx.error("hidden_size must be positive");
  const std::string dir = ctx.attrs.attr_string("direction", "forward");
  const DimExpr dirs = ctx.c(dir == "bidirectional" ? 2 : 1), h = ctx.c(hidden);
  const bool batch_first = ctx.attrs.attr_int("layout", 0) != 0;
  const DimExpr seq = x ? x->dims[batch_first ? 1 : 0] : ctx.unknown_dim();
  const DimExpr batch = x ? x->dims[batch_first ? 0 : 1] : ctx.unknown_dim();
  ctx.set(0, DataType::kUndefined, batch_first ? SymDims{batch, seq, dirs, h} : SymDims{seq, dirs, batch, h});
  for (size_t o = 1; o < ctx.outputs.size(); ++o)
    ctx.set(o, DataType::kUndefined, batch_first ? SymDims{batch, dirs, h} : SymDims{dirs, batch, h});
  return Status::ok();
}

// Resize and Upsample: sizes when given, else floor(dim * scale) with the scales as floats.
Status resize(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  const bool upsample = ctx.node->type() == "Upsample";
  size_t scales_at = 2, sizes_at = 3;
  if (upsample || ctx.opset < 11) scales_at = 1;
  auto sizes = upsample ? std::nullopt : ctx.elems(sizes_at);
  std::vector<double> scales;
  if (upsample && ctx.opset < 9) {
    for (float f : ctx.attrs.attr_floats("scales").value_or(std::vector<float>{})) scales.push_back(f);
  } else if (const SymValue* s = ctx.in(scales_at);
             s && s->constant && s->constant->desc().shape.num_elements() > 0) {
    scales = to_doubles(*s->constant);
  }
  std::vector<int64_t> axes;
  if (auto a = ctx.attrs.attr_ints("axes"); a && ctx.opset >= 18) {
    axes = *a;
  } else {
    for (int64_t i = 0; i < x->rank(); ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) {
    if (!normalize_axis(&a, x->rank())) return ctx.error("axes are out of range");
  }
  SymDims dims = x->dims;
  const std::string aspect = ctx.attrs.attr_string("keep_aspect_ratio_policy", "stretch");
  auto all_const = [&](const SymDims& v) {
    return std::all_of(v.begin(), v.end(), [](DimExpr e) { return e.is_const(); });
  };
  SymDims on_axes;
  for (int64_t a : axes) on_axes.push_back(x->dims[a]);
  if (sizes && sizes->size() == axes.size() && aspect == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i) dims[axes[i]] = (*sizes)[i];
  } else if (sizes && sizes->size() == axes.size() && all_const(*sizes) && all_const(on_axes)) {
    // keep_aspect_ratio_policy: one scale for every axis, the smallest (not_larger) or largest ratio.
    const bool not_larger = aspect == "not_larger";
    double scale = not_larger ? 1e300 : 0;
    for (size_t i = 0; i < axes.size(); ++i) {
      const double r = static_cast<double>((*sizes)[i].value()) / static_cast<double>(on_axes[i].value());
      scale = not_larger ? std::min(scale, r) : std::max(scale, r);
    }
    for (size_t i = 0; i < axes.size(); ++i)
      dims[axes[i]] =
          ctx.c(static_cast<int64_t>(std::round(scale * static_cast<double>(on_axes[i].value()))));
  } else if (scales.size() == axes.size() && !sizes) {
    for (double f : scales) {
      if (!(f > 0) || f > 1e12)
        return ctx.error("scale " + std::to_string(f) + " is not a positive size factor");
    }
    for (size_t i = 0; i < axes.size(); ++i) {
      const DimExpr d = x->dims[axes[i]];
      if (d.is_const()) {
        dims[axes[i]] = ctx.c(static_cast<int64_t>(std::floor(static_cast<double>(d.value()) * scales[i])));
      } else if (scales[i] == std::floor(scales[i]) && scales[i] >= 0) {
        dims[axes[i]] = ctx.sym->mul(d, ctx.c(static_cast<int64_t>(scales[i])));
      } else {
        dims[axes[i]] = ctx.unknown_dim();
      }
    }
  } else {
    for (int64_t a : axes) dims[a] = ctx.unknown_dim();
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status quantize(InferContext& ctx) {
  DataType dtype = DataType::kUint8;
  if (ctx.in(2)) dtype = ctx.in(2)->dtype;
  if (ctx.node->type() == "DequantizeLinear") dtype = ctx.in(1) ? ctx.in(1)->dtype : DataType::kFloat;
  ctx.set_like(0, 0, dtype);
  return Status::ok();
}

Status nms(InferContext& ctx) {
  const SymValue* boxes = ctx.ranked(0);
  const SymValue* scores = ctx.ranked(1);
  DimExpr upper = ctx.c(INT64_MAX);  // no bound known
  if (boxes && scores && boxes->rank() == 3 && scores->rank() == 3)
    upper = product(*ctx.sym, {scores->dims[0], scores->dims[1], boxes->dims[1]}, 0, 3);
  ctx.set(0, DataType::kInt64, {ctx.unbacked_dim(upper), ctx.c(3)});
  return Status::ok();
}

Status compress(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  const sdk::AttrValue* axis_attr = ctx.node->attrs().get("axis");
  if (!axis_attr) {
    ctx.set(0, DataType::kUndefined, {ctx.unbacked_dim(product(*ctx.sym, x->dims, 0, x->dims.size()))});
    return Status::ok();
  }
  int64_t axis = ctx.attrs.attr_int("axis", 0);
  if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
  SymDims dims = x->dims;
  dims[axis] = ctx.unbacked_dim(x->dims[axis]);
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

}  // namespace

void register_nn_rules(std::vector<RuleEntry>* t) {
  const RuleEntry entries[] = {
      {"Conv", conv},
      {"ConvInteger", conv},
      {"ConvTranspose", conv_transpose},
      {"MaxPool", pool},
      {"AveragePool", pool},
      {"LpPool", pool},
      {"GlobalAveragePool", global_pool},
      {"GlobalMaxPool", global_pool},
      {"GlobalLpPool", global_pool},
      {"MatMul", matmul},
      {"MatMulInteger", matmul},
      {"QLinearMatMul", qlinear_matmul},
      {"Gemm", gemm},
      {"LayerNormalization", layer_norm},
      {"LSTM", recurrent},
      {"GRU", recurrent},
      {"RNN", recurrent},
      {"Resize", resize},
      {"Upsample", resize},
      {"QuantizeLinear", quantize},
      {"DequantizeLinear", quantize},
      {"NonMaxSuppression", nms},
      {"Compress", compress},
  };
  t->insert(t->end(), std::begin(entries), std::end(entries));
}

}  // namespace graphsplit::kernels::infer
