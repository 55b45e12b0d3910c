// Shape rules of the operators that move, select or compute shapes (Shape, Gather, Concat, Reshape, Slice,
// Expand, ...), with value propagation: these are the chains that decide whether a model is static.
#include <algorithm>

#include "infer.h"

namespace graphsplit::kernels::infer {
namespace {

Status shape(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) {
    ctx.set(0, DataType::kInt64, {ctx.unknown_dim()});  // always a vector, of the (unknown) rank
    return Status::ok();
  }
  const int64_t rank = x->rank();
  int64_t start = ctx.opset >= 15 ? ctx.attrs.attr_int("start", 0) : 0;
  int64_t end = ctx.opset >= 15 ? ctx.attrs.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SymDims values(x->dims.begin() + start, x->dims.begin() + end);
  ctx.set_values(0, DataType::kInt64, {ctx.c(end - start)}, values);
  return Status::ok();
}

Status size(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) {
    ctx.set(0, DataType::kInt64, {});
    return Status::ok();
  }
  ctx.set_values(0, DataType::kInt64, {}, {product(*ctx.sym, x->dims, 0, x->dims.size())});
  return Status::ok();
}

// Axes from the attribute (older opsets) or input 1 (newer); nullopt if they are not known numbers.
// Axes from input 1 (`from_input`: the newer opsets) or the `axes` attribute; nullopt if the input's values
// are not known numbers. Absent either way: no axes.
std::optional<std::vector<int64_t>> axes_of(InferContext& ctx, bool from_input) {
  if (from_input) {
    if (!ctx.has(1)) return std::vector<int64_t>{};
    return ctx.const_ints(1);
  }
  auto a = ctx.attrs.attr_ints("axes");
  return a ? *a : std::vector<int64_t>{};
}

Status unsqueeze(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto axes = axes_of(ctx, ctx.opset >= 13);
  if (!x || !axes) return Status::ok();
  const int64_t rank = x->rank() + static_cast<int64_t>(axes->size());
  std::vector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    if (!normalize_axis(&a, rank) || inserted[a])
      return ctx.error("axes " + dims_string(*axes) + " are invalid");
    inserted[a] = true;
  }
  SymDims dims;
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(inserted[i] ? ctx.c(1) : x->dims[k++]);
  ctx.set(0, DataType::kUndefined, dims);
  if (x->elems) ctx.out(0).elems = x->elems;
  return Status::ok();
}

Status squeeze(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto axes = axes_of(ctx, ctx.opset >= 13);
  if (!x || !axes) return Status::ok();
  std::vector<bool> drop(x->dims.size(), false);
  if (axes->empty()) {
    for (size_t i = 0; i < x->dims.size(); ++i) {
      if (!x->dims[i].is_const()) return Status::ok();  // which ones are 1 is known only at run time
      drop[i] = x->dims[i].value() == 1;
    }
  }
  for (int64_t a : *axes) {
    if (!normalize_axis(&a, x->rank())) return ctx.error("axis " + std::to_string(a) + " is out of range");
    if (x->dims[a].is_const() && x->dims[a].value() != 1)
      return ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " + x->dims[a].to_string());
    drop[a] = true;
  }
  SymDims dims;
  for (size_t i = 0; i < x->dims.size(); ++i) {
    if (!drop[i]) dims.push_back(x->dims[i]);
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (x->elems) ctx.out(0).elems = x->elems;
  return Status::ok();
}

Status concat(InferContext& ctx) {
  int64_t axis = ctx.attrs.attr_int("axis", 0);
  SymDims dims;
  std::optional<SymDims> values = SymDims{};
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const SymValue* v = ctx.ranked(i);
    if (!v) {
      if (ctx.in(0)) ctx.out(0).dtype = ctx.in(0)->dtype;
      return Status::ok();
    }
    if (i == 0) {
      if (!normalize_axis(&axis, v->rank())) return ctx.error("axis is out of range");
      dims = v->dims;
      dims[axis] = ctx.c(0);
    } else if (v->rank() != static_cast<int64_t>(dims.size())) {
      return ctx.error("inputs differ in rank");
    }
    for (size_t k = 0; k < dims.size(); ++k) {
      if (static_cast<int64_t>(k) == axis) continue;
      if (dims[k].is_const() && v->dims[k].is_const() && dims[k] != v->dims[k])
        return ctx.error("inputs differ in dimension " + std::to_string(k));
      ctx.sym->unify(dims[k], v->dims[k]);  // Concat proves them equal
      if (!dims[k].is_const()) dims[k] = v->dims[k].is_const() ? v->dims[k] : dims[k];
    }
    dims[axis] = ctx.sym->add(dims[axis], v->dims[axis]);
    if (values && v->elems && v->rank() == 1) {
      values->insert(values->end(), v->elems->begin(), v->elems->end());
    } else {
      values.reset();
    }
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (values) ctx.out(0).elems = std::move(values);
  return Status::ok();
}

Status gather(InferContext& ctx) {
  const SymValue* data = ctx.ranked(0);
  const SymValue* idx = ctx.ranked(1);
  if (!data || !idx) return Status::ok();
  int64_t axis = ctx.attrs.attr_int("axis", 0);
  if (!normalize_axis(&axis, data->rank())) return ctx.error("axis is out of range");
  SymDims dims(data->dims.begin(), data->dims.begin() + axis);
  dims.insert(dims.end(), idx->dims.begin(), idx->dims.end());
  dims.insert(dims.end(), data->dims.begin() + axis + 1, data->dims.end());
  ctx.set(0, DataType::kUndefined, dims);
  auto picks = ctx.const_ints(1);
  if (data->elems && data->rank() == 1 && picks) {
    const auto n = static_cast<int64_t>(data->elems->size());
    SymDims values;
    for (int64_t p : *picks) {
      if (p < -n || p >= n) return ctx.error("index " + std::to_string(p) + " is out of range");
      values.push_back((*data->elems)[p < 0 ? p + n : p]);
    }
    ctx.out(0).elems = std::move(values);
  }
  return Status::ok();
}

Status gather_elements(InferContext& ctx) {
  if (const SymValue* idx = ctx.ranked(1)) {
    ctx.set(0, DataType::kUndefined, idx->dims);
  }
  return Status::ok();
}

// Reshape's target: 0 copies the input dimension (unless allowzero), -1 is what is left.
Status reshape(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto target = ctx.elems(1);
  if (!target) {
    if (const SymValue* s = ctx.ranked(1); s && s->rank() == 1 && s->dims[0].is_const()) {
      SymDims dims;
      for (int64_t i = 0; i < s->dims[0].value(); ++i) dims.push_back(ctx.unknown_dim());
      ctx.set(0, DataType::kUndefined, dims);
    }
    return Status::ok();
  }
  const bool allowzero = ctx.attrs.attr_int("allowzero", 0) != 0;
  SymDims dims = *target;
  int infer_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!dims[i].is_const()) continue;
    const int64_t d = dims[i].value();
    if (d == -1) {
      if (infer_at >= 0) return ctx.error("the target shape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (d == 0 && !allowzero) {
      if (!x || i >= x->dims.size())
        return x ? ctx.error("a 0 in the target shape has no input dimension") : Status::ok();
      dims[i] = x->dims[i];
    } else if (d < -1) {
      return ctx.error("the target shape holds " + std::to_string(d));
    }
  }
  if (infer_at >= 0) {
    if (!x) return Status::ok();
    const DimExpr total = product(*ctx.sym, x->dims, 0, x->dims.size());
    DimExpr known = ctx.c(1);
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int>(i) != infer_at) known = ctx.sym->mul(known, dims[i]);
    }
    if (known.is_const() && known.value() == 0)
      return ctx.error("-1 next to a 0 dimension cannot be inferred");
    DimExpr q = ctx.sym->floor_div(total, known);
    if (total.is_const() && known.is_const() && total.value() % known.value() != 0)
      return ctx.error("cannot reshape " + std::to_string(total.value()) + " elements into a multiple of " +
                       std::to_string(known.value()));
    // Only an exact quotient is the dimension; anything else is known at run time only.
    if (!q.is_const() && ctx.sym->mul(q, known) != total) q = ctx.unknown_dim();
    dims[infer_at] = q;
  } else if (x) {
    const DimExpr in = product(*ctx.sym, x->dims, 0, x->dims.size());
    const DimExpr out = product(*ctx.sym, dims, 0, dims.size());
    if (in.is_const() && out.is_const() && in != out)
      return ctx.error("cannot reshape " + std::to_string(in.value()) + " elements into " +
                       std::to_string(out.value()));
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (x && x->elems) ctx.out(0).elems = x->elems;
  return Status::ok();
}

Status flatten(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  int64_t axis = ctx.attrs.attr_int("axis", 1);
  if (axis < 0) axis += x->rank();
  if (axis < 0 || axis > x->rank()) return ctx.error("axis is out of range");
  ctx.set(0, DataType::kUndefined,
          {product(*ctx.sym, x->dims, 0, axis), product(*ctx.sym, x->dims, axis, x->dims.size())});
  if (x->elems) ctx.out(0).elems = x->elems;
  return Status::ok();
}

Status transpose(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  std::vector<int64_t> perm;
  if (auto p = ctx.attrs.attr_ints("perm")) {
    perm = *p;
  } else {
    for (int64_t i = x->rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != x->rank()) return ctx.error("perm does not match the input rank");
  std::vector<bool> seen(perm.size(), false);
  SymDims dims;
  for (int64_t p : perm) {
    if (!normalize_axis(&p, x->rank()) || seen[p])
      return ctx.error("perm " + dims_string(perm) + " is invalid");
    seen[p] = true;
    dims.push_back(x->dims[p]);
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

// Slice bounds clamp as ONNX says: negative from the end, then into [0, dim] (or [-1, dim-1] backwards).
DimExpr slice_length(InferContext& ctx, DimExpr dim, int64_t start, int64_t end, int64_t step) {
  if (!dim.is_const()) {
    // Symbolic dimension: exact for the usual forms (x[a:], x[:b] with b >= 0, x[a:-k]) when step is 1.
    if (step != 1 || start < 0) return ctx.unknown_dim();
    if (end >= (int64_t{1} << 62)) return ctx.sym->max(ctx.sym->sub(dim, ctx.c(start)), ctx.c(0));
    if (end >= 0) return ctx.sym->max(ctx.sym->sub(ctx.sym->min(dim, ctx.c(end)), ctx.c(start)), ctx.c(0));
    return ctx.sym->max(ctx.sym->sub(ctx.sym->add(dim, ctx.c(end)), ctx.c(start)), ctx.c(0));
  }
  const int64_t d = dim.value();
  auto clamp = [&](int64_t v, bool is_end) {
    if (v < 0) v = (v < -d) ? (step < 0 && is_end ? -1 : 0) : v + d;
    if (step > 0) return std::clamp<int64_t>(v, 0, d);
    return std::clamp<int64_t>(v, -1, d - 1);
  };
  const int64_t s = clamp(start, false), e = clamp(end, true);
  const int64_t n = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
  return ctx.c(std::max<int64_t>(n, 0));
}

Status slice(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrs.attr_ints("starts");
    ends = ctx.attrs.attr_ints("ends");
    axes = ctx.attrs.attr_ints("axes");
  } else {
    starts = ctx.const_ints(1);
    ends = ctx.const_ints(2);
    if (ctx.has(3)) axes = ctx.const_ints(3);
    if (ctx.has(4)) steps = ctx.const_ints(4);
    if ((ctx.has(3) && !axes) || (ctx.has(4) && !steps)) starts.reset();
  }
  if (!starts || !ends || starts->size() != ends->size()) {
    SymDims dims;  // only the rank is known
    for (int64_t i = 0; i < x->rank(); ++i) dims.push_back(ctx.unknown_dim());
    ctx.set(0, DataType::kUndefined, dims);
    return Status::ok();
  }
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (!steps) steps = std::vector<int64_t>(starts->size(), 1);
  if (axes->size() != starts->size() || steps->size() != starts->size())
    return ctx.error("starts, ends, axes and steps differ in length");
  SymDims dims = x->dims;
  std::vector<int64_t> first(x->dims.size(), 0), stride(x->dims.size(), 1);
  std::vector<bool> touched(x->dims.size(), false);
  for (size_t i = 0; i < axes->size(); ++i) {
    int64_t a = (*axes)[i];
    if (!normalize_axis(&a, x->rank()) || touched[a]) return ctx.error("axes are invalid");
    if ((*steps)[i] == 0) return ctx.error("a step is 0");
    touched[a] = true;
    dims[a] = slice_length(ctx, x->dims[a], (*starts)[i], (*ends)[i], (*steps)[i]);
    if (x->dims[a].is_const()) {
      const int64_t d = x->dims[a].value();
      int64_t s = (*starts)[i];
      if (s < 0) s += d;
      first[a] = (*steps)[i] > 0 ? std::clamp<int64_t>(s, 0, d) : std::clamp<int64_t>(s, -1, d - 1);
    }
    stride[a] = (*steps)[i];
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (x->elems && x->rank() == 1 && dims[0].is_const()) {
    SymDims values;
    for (int64_t k = 0; k < dims[0].value(); ++k) values.push_back((*x->elems)[first[0] + k * stride[0]]);
    ctx.out(0).elems = std::move(values);
  }
  return Status::ok();
}

Status expand(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto target = ctx.elems(1);
  if (x && !target) {
    if (const SymValue* s = ctx.ranked(1); s && s->rank() == 1 && s->dims[0].is_const()) {
      SymDims dims;
      for (int64_t i = 0; i < std::max(s->dims[0].value(), x->rank()); ++i) dims.push_back(ctx.unknown_dim());
      ctx.set(0, DataType::kUndefined, dims);
    }
    return Status::ok();
  }
  if (!x || !target) return Status::ok();
  SymDims dims;
  GS_RETURN_IF_ERROR(broadcast(ctx, x->dims, *target, &dims));
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status constant_of_shape(InferContext& ctx) {
  const Tensor* value = ctx.attrs.attr_tensor("value");
  const DataType dtype = value ? value->desc().dtype : DataType::kFloat;
  auto target = ctx.elems(0);
  if (!target) {
    ctx.out(0).dtype = dtype;
    // The shape's length is the rank even when its values are unknown.
    if (const SymValue* s = ctx.ranked(0); s && s->rank() == 1 && s->dims[0].is_const()) {
      SymDims dims;
      for (int64_t i = 0; i < s->dims[0].value(); ++i) dims.push_back(ctx.unknown_dim());
      ctx.set(0, dtype, dims);
    }
    return Status::ok();
  }
  for (DimExpr d : *target) {
    if (d.is_const() && d.value() < 0) return ctx.error("the shape holds a negative dimension");
  }
  ctx.set(0, dtype, *target);
  return Status::ok();
}

Status range(InferContext& ctx) {
  const DataType dtype = ctx.in(0) ? ctx.in(0)->dtype : DataType::kUndefined;
  auto start = ctx.elems(0), limit = ctx.elems(1), delta = ctx.elems(2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1 &&
      (*delta)[0].is_const() && (*delta)[0].value() > 0) {
    const DimExpr span = ctx.sym->sub((*limit)[0], (*start)[0]);
    const DimExpr n = ctx.sym->max(ctx.sym->ceil_div(span, (*delta)[0]), ctx.c(0));
    ctx.set(0, dtype, {n});
    return Status::ok();
  }
  ctx.set(0, dtype, {ctx.unknown_dim()});
  return Status::ok();
}

Status tile(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  auto repeats = ctx.elems(1);
  if (!x) return Status::ok();
  if (!repeats || static_cast<int64_t>(repeats->size()) != x->rank()) {
    SymDims dims;
    for (int64_t i = 0; i < x->rank(); ++i) dims.push_back(ctx.unknown_dim());
    ctx.set(0, DataType::kUndefined, dims);
    return Status::ok();
  }
  SymDims dims;
  for (size_t i = 0; i < x->dims.size(); ++i) dims.push_back(ctx.sym->mul(x->dims[i], (*repeats)[i]));
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status split(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  int64_t axis = ctx.attrs.attr_int("axis", 0);
  if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
  const size_t n = ctx.outputs.size();
  std::optional<std::vector<int64_t>> sizes;
  if (ctx.opset >= 13 && ctx.has(1)) {
    sizes = ctx.const_ints(1);
    if (!sizes) return Status::ok();
  } else if (ctx.opset < 13) {
    sizes = ctx.attrs.attr_ints("split");
  }
  for (size_t o = 0; o < n; ++o) {
    SymDims dims = x->dims;
    if (sizes) {
      if (sizes->size() != n)
        return ctx.error("split has " + std::to_string(sizes->size()) + " sizes for " + std::to_string(n) +
                         " outputs");
      dims[axis] = ctx.c((*sizes)[o]);
    } else if (x->dims[axis].is_const()) {
      // Equal parts; the last one smaller when the size does not divide (opset 18's num_outputs).
      const int64_t d = x->dims[axis].value(),
                    part = (d + static_cast<int64_t>(n) - 1) / static_cast<int64_t>(n);
      dims[axis] = ctx.c(std::max<int64_t>(0, std::min<int64_t>(part, d - part * static_cast<int64_t>(o))));
    } else {
      dims[axis] = ctx.sym->ceil_div(x->dims[axis], ctx.c(static_cast<int64_t>(n)));
      if (o + 1 == n) dims[axis] = ctx.unknown_dim();
    }
    ctx.set(o, DataType::kUndefined, dims);
  }
  if (sizes) {
    DimExpr total = ctx.c(0);
    for (int64_t s : *sizes) total = ctx.sym->add(total, ctx.c(s));
    if (x->dims[axis].is_const() && total != x->dims[axis])
      return ctx.error("split sizes add up to " + total.to_string() + ", not " + x->dims[axis].to_string());
  }
  return Status::ok();
}

Status pad(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  std::optional<SymDims> pads;
  if (ctx.opset < 11) {
    if (auto p = ctx.attrs.attr_ints("pads")) {
      pads.emplace();
      for (int64_t v : *p) pads->push_back(ctx.c(v));
    }
  } else {
    pads = ctx.elems(1);
  }
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset >= 18 && ctx.has(3)) {
    axes = ctx.const_ints(3);
    if (!axes) pads.reset();
  }
  if (!axes) {
    axes.emplace();
    for (int64_t i = 0; i < x->rank(); ++i) axes->push_back(i);
  }
  SymDims dims = x->dims;
  if (!pads || pads->size() != 2 * axes->size()) {
    for (auto& d : dims) d = ctx.unknown_dim();
    ctx.set(0, DataType::kUndefined, dims);
    return Status::ok();
  }
  const size_t k = axes->size();
  for (size_t i = 0; i < k; ++i) {
    int64_t a = (*axes)[i];
    if (!normalize_axis(&a, x->rank())) return ctx.error("axes are out of range");
    dims[a] = ctx.sym->add(ctx.sym->add(x->dims[a], (*pads)[i]), (*pads)[i + k]);
    if (dims[a].is_const() && dims[a].value() < 0) return ctx.error("pads make a dimension negative");
  }
  ctx.set(0, DataType::kUndefined, dims);
  return Status::ok();
}

Status reduce(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  const bool keep = ctx.attrs.attr_int("keepdims", 1) != 0;
  // Reduce* take axes as an input from opset 18, ReduceSum from 13.
  const bool axes_input = ctx.opset >= 18 || (ctx.node->type() == "ReduceSum" && ctx.opset >= 13);
  auto axes = axes_of(ctx, axes_input);
  if (!axes) {
    if (keep) {
      SymDims dims;
      for (int64_t i = 0; i < x->rank(); ++i) dims.push_back(ctx.unknown_dim());
      ctx.set(0, DataType::kUndefined, dims);
    }
    return Status::ok();
  }
  std::vector<bool> reduced(x->dims.size(), axes->empty());
  if (axes->empty() && axes_input && ctx.attrs.attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.set(0, DataType::kUndefined, x->dims);
    return Status::ok();
  }
  for (int64_t a : *axes) {
    if (!normalize_axis(&a, x->rank())) return ctx.error("axis is out of range");
    reduced[a] = true;
  }
  SymDims dims;
  for (size_t i = 0; i < x->dims.size(); ++i) {
    if (!reduced[i])
      dims.push_back(x->dims[i]);
    else if (keep)
      dims.push_back(ctx.c(1));
  }
  ctx.set(0, DataType::kUndefined, dims);
  if (x->elems && x->rank() == 1 && !keep &&
      (ctx.node->type() == "ReduceProd" || ctx.node->type() == "ReduceSum")) {
    DimExpr acc = ctx.c(ctx.node->type() == "ReduceProd" ? 1 : 0);
    for (DimExpr e : *x->elems)
      acc = ctx.node->type() == "ReduceProd" ? ctx.sym->mul(acc, e) : ctx.sym->add(acc, e);
    ctx.out(0).elems = SymDims{acc};
  }
  return Status::ok();
}

Status arg_reduce(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) {
    ctx.out(0).dtype = DataType::kInt64;
    return Status::ok();
  }
  int64_t axis = ctx.attrs.attr_int("axis", 0);
  if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
  SymDims dims = x->dims;
  if (ctx.attrs.attr_int("keepdims", 1))
    dims[axis] = ctx.c(1);
  else
    dims.erase(dims.begin() + axis);
  ctx.set(0, DataType::kInt64, dims);
  return Status::ok();
}

Status nonzero(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) {
    ctx.out(0).dtype = DataType::kInt64;
    return Status::ok();
  }
  ctx.set(0, DataType::kInt64,
          {ctx.c(x->rank()), ctx.unbacked_dim(product(*ctx.sym, x->dims, 0, x->dims.size()))});
  return Status::ok();
}

Status topk(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x) return Status::ok();
  int64_t axis = ctx.attrs.attr_int("axis", -1);
  if (!normalize_axis(&axis, x->rank())) return ctx.error("axis is out of range");
  SymDims dims = x->dims;
  if (ctx.opset < 10) {
    dims[axis] = ctx.c(ctx.attrs.attr_int("k", 1));
  } else if (auto k = ctx.elems(1); k && k->size() == 1) {
    dims[axis] = (*k)[0];
  } else {
    dims[axis] = ctx.unbacked_dim(x->dims[axis]);  // a data k
  }
  if (dims[axis].is_const() && x->dims[axis].is_const() && dims[axis].value() > x->dims[axis].value())
    return ctx.error("k = " + dims[axis].to_string() + " exceeds the axis size " + x->dims[axis].to_string());
  ctx.set(0, DataType::kUndefined, dims);
  ctx.set(1, DataType::kInt64, dims);
  return Status::ok();
}

Status depth_space(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  if (!x || x->rank() != 4) return Status::ok();
  const int64_t b = ctx.attrs.attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  const DimExpr bb = ctx.c(b * b), bk = ctx.c(b);
  auto& s = *ctx.sym;
  if (ctx.node->type() == "DepthToSpace") {
    ctx.set(0, DataType::kUndefined,
            {x->dims[0], s.floor_div(x->dims[1], bb), s.mul(x->dims[2], bk), s.mul(x->dims[3], bk)});
  } else {
    ctx.set(0, DataType::kUndefined,
            {x->dims[0], s.mul(x->dims[1], bb), s.floor_div(x->dims[2], bk), s.floor_div(x->dims[3], bk)});
  }
  return Status::ok();
}

Status one_hot(InferContext& ctx) {
  const SymValue* idx = ctx.ranked(0);
  const DataType dtype = ctx.in(2) ? ctx.in(2)->dtype : DataType::kUndefined;
  auto depth = ctx.elems(1);
  if (!idx) return Status::ok();
  int64_t axis = ctx.attrs.attr_int("axis", -1);
  if (!normalize_axis(&axis, idx->rank() + 1)) return ctx.error("axis is out of range");
  SymDims dims = idx->dims;
  dims.insert(dims.begin() + axis, depth && depth->size() == 1 ? (*depth)[0] : ctx.unknown_dim());
  ctx.set(0, dtype, dims);
  return Status::ok();
}

Status eye_like(InferContext& ctx) {
  const SymValue* x = ctx.ranked(0);
  const int64_t dt = ctx.attrs.attr_int("dtype", 0);
  if (x) ctx.set(0, dt ? static_cast<DataType>(dt) : DataType::kUndefined, x->dims);
  return Status::ok();
}

}  // namespace

void register_shape_rules(std::vector<RuleEntry>* t) {
  const RuleEntry entries[] = {
      {"Shape", shape},
      {"Size", size},
      {"Unsqueeze", unsqueeze},
      {"Squeeze", squeeze},
      {"Concat", concat},
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"Reshape", reshape},
      {"Flatten", flatten},
      {"Transpose", transpose},
      {"Slice", slice},
      {"Expand", expand},
      {"ConstantOfShape", constant_of_shape},
      {"Range", range},
      {"Tile", tile},
      {"Split", split},
      {"Pad", pad},
      {"ArgMax", arg_reduce},
      {"ArgMin", arg_reduce},
      {"NonZero", nonzero},
      {"TopK", topk},
      {"DepthToSpace", depth_space},
      {"SpaceToDepth", depth_space},
      {"OneHot", one_hot},
      {"EyeLike", eye_like},
  };
  t->insert(t->end(), std::begin(entries), std::end(entries));
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                         "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    t->push_back({op, reduce});
}

}  // namespace graphsplit::kernels::infer
