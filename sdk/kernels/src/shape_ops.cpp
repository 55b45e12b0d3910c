// Data-movement kernels. They copy bytes, so every fixed-size data type works.
// Over 600 lines on purpose: every data-movement kernel shares the split_at_axis and strided-copy helpers
// at the top; splitting them would put those helpers in a header for one caller family.
#include <algorithm>
#include <numeric>

#include "broadcast.h"
#include "kernel.h"

namespace graphsplit::kernels {
namespace {

int64_t esize(const Tensor& t) {
  return sdk::element_size(dtype_of(t));
}

Status need_fixed_size(KernelContext& ctx, const Tensor& t) {
  if (esize(t) == 0)
    return ctx.error("data type " + std::string(sdk::to_string(dtype_of(t))) + " is not supported");
  return Status::ok();
}

Status Shape(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const auto rank = static_cast<int64_t>(d.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  const int64_t n = std::max<int64_t>(0, end - start);
  int64_t* out = ctx.allocate_as<int64_t>(0, DataType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) out[i] = d[start + i];
  return Status::ok();
}

Status Size(KernelContext& ctx) {
  *ctx.allocate_as<int64_t>(0, DataType::kInt64, {}) = num_elements(dims_of(ctx.in(0)));
  return Status::ok();
}

// Reshape, Flatten, Squeeze and Unsqueeze only relabel the bytes: the new dims are the shape rule's.
Status relabel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& out = ctx.rule_dims(0);
  if (num_elements(out) != num_elements(dims_of(x)))
    return ctx.error("cannot relabel " + dims_string(dims_of(x)) + " as " + dims_string(out));
  ctx.set_output_copy(0, x, out);
  return Status::ok();
}

// Generic strided copy: out[i] = in[permuted index].
void transpose_bytes(const char* in, const Dims& in_dims, const std::vector<int64_t>& perm, char* out,
                     int64_t es) {
  const size_t rank = in_dims.size();
  Dims out_dims(rank), in_strides = strides_of(in_dims), src_stride(rank);
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = in_dims[perm[i]];
    src_stride[i] = in_strides[perm[i]];
  }
  const int64_t total = num_elements(out_dims);
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(out, in, static_cast<size_t>(es));
    return;
  }
  Dims idx(rank, 0);
  int64_t src = 0;
  const int64_t inner = out_dims[rank - 1], inner_stride = src_stride[rank - 1];
  for (int64_t o = 0; o < total; o += inner) {
    if (es == 4) {
      auto* po = reinterpret_cast<uint32_t*>(out) + o;
      const auto* pi = reinterpret_cast<const uint32_t*>(in);
      for (int64_t k = 0; k < inner; ++k) po[k] = pi[src + k * inner_stride];
    } else {
      for (int64_t k = 0; k < inner; ++k)
        std::memcpy(out + (o + k) * es, in + (src + k * inner_stride) * es, static_cast<size_t>(es));
    }
    for (size_t d = rank - 1; d-- > 0;) {
      ++idx[d];
      src += src_stride[d];
      if (idx[d] < out_dims[d]) break;
      src -= src_stride[d] * out_dims[d];
      idx[d] = 0;
    }
  }
}

Status Transpose(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  std::vector<int64_t> perm = ctx.attr_ints("perm").value_or(std::vector<int64_t>{});
  if (perm.empty()) {
    perm.resize(d.size());
    for (size_t i = 0; i < d.size(); ++i) perm[i] = static_cast<int64_t>(d.size() - 1 - i);
  }
  if (perm.size() != d.size()) return ctx.error("perm has the wrong length");
  std::vector<bool> seen(d.size(), false);
  Dims out(d.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (!normalize_axis(&p, static_cast<int64_t>(d.size())) || seen[p])
      return ctx.error("perm is not a permutation");
    seen[p] = true;
    perm[i] = p;
    out[i] = d[p];
  }
  char* o = ctx.allocate(0, dtype_of(x), out);
  transpose_bytes(x.data(), d, perm, o, esize(x));
  return Status::ok();
}

Status Concat(KernelContext& ctx) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(&ctx.in(i));
  if (ins.empty()) return ctx.error("no inputs");
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, *ins[0]));
  const Dims& d0 = dims_of(*ins[0]);
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(d0.size()))) return ctx.error("axis out of range");
  Dims out = d0;
  out[axis] = 0;
  for (const Tensor* t : ins) {
    const Dims& d = dims_of(*t);
    if (dtype_of(*t) != dtype_of(*ins[0])) return ctx.error("inputs differ in type");
    if (d.size() != d0.size()) return ctx.error("inputs have different ranks");
    for (size_t i = 0; i < d.size(); ++i)
      if (static_cast<int64_t>(i) != axis && d[i] != d0[i])
        return ctx.error("input shapes " + dims_string(d0) + " and " + dims_string(d) +
                         " differ off the axis");
    out[axis] += d[axis];
  }
  const int64_t es = esize(*ins[0]);
  int64_t outer = 1, inner = 1;
  split_at_axis(out, axis, &outer, &inner);
  char* o = ctx.allocate(0, dtype_of(*ins[0]), out);
  const int64_t row = out[axis] * inner * es;
  int64_t offset = 0;
  for (const Tensor* t : ins) {
    const int64_t chunk = dims_of(*t)[axis] * inner * es;
    for (int64_t r = 0; r < outer; ++r)
      std::memcpy(o + r * row + offset, t->data() + r * chunk, static_cast<size_t>(chunk));
    offset += chunk;
  }
  return Status::ok();
}

Status Split(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  std::vector<int64_t> split;
  if (ctx.has_input(1))
    split = to_int64s(ctx.in(1));
  else if (auto s = ctx.attr_ints("split"))
    split = *s;
  const auto n = static_cast<int64_t>(ctx.num_outputs());
  if (split.empty()) {
    const int64_t chunk = (d[axis] + n - 1) / n;  // opset 18 uneven tail; equal split otherwise
    for (int64_t i = 0; i < n; ++i)
      split.push_back(std::max<int64_t>(0, std::min(chunk, d[axis] - i * chunk)));
  }
  if (static_cast<int64_t>(split.size()) != n ||
      std::accumulate(split.begin(), split.end(), int64_t{0}) != d[axis])
    return ctx.error("split sizes do not add up to dimension " + std::to_string(d[axis]));
  const int64_t es = esize(x);
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    Dims od = d;
    od[axis] = split[k];
    char* o = ctx.allocate(k, dtype_of(x), od);
    const int64_t chunk = split[k] * inner * es;
    for (int64_t r = 0; r < outer; ++r)
      std::memcpy(o + r * chunk, x.data() + r * d[axis] * inner * es + offset, static_cast<size_t>(chunk));
    offset += chunk;
  }
  return Status::ok();
}

Status Slice(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  const auto rank = static_cast<int64_t>(d.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attr_ints("starts").value_or(std::vector<int64_t>{});
    ends = ctx.attr_ints("ends").value_or(std::vector<int64_t>{});
    axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{});
  } else {
    starts = to_int64s(ctx.in(1));
    ends = to_int64s(ctx.in(2));
    if (ctx.has_input(3)) axes = to_int64s(ctx.in(3));
    if (ctx.has_input(4)) steps = to_int64s(ctx.in(4));
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return ctx.error("starts, ends, axes and steps differ in length");
  std::vector<int64_t> begin(rank, 0), step(rank, 1), count(d.begin(), d.end());
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    if (!normalize_axis(&a, rank)) return ctx.error("axis out of range");
    const int64_t dim = d[a];
    // Steps beyond the dimension behave alike; bounding them keeps the arithmetic below from overflowing.
    const int64_t st = std::clamp<int64_t>(steps[i], -(int64_t{1} << 62), int64_t{1} << 62);
    if (st == 0) return ctx.error("step 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count[a] = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count[a] = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    begin[a] = s;
    step[a] = st;
  }
  const int64_t es = esize(x);
  char* o = ctx.allocate(0, dtype_of(x), count);
  const int64_t total = num_elements(count);
  if (total == 0) return Status::ok();
  const Dims is = strides_of(d);
  Dims idx(rank, 0);
  int64_t base = 0;
  for (int64_t a = 0; a < rank; ++a) base += begin[a] * is[a];
  if (rank == 0) {
    std::memcpy(o, x.data(), static_cast<size_t>(es));
    return Status::ok();
  }
  const int64_t inner = count[rank - 1], inner_step = step[rank - 1] * is[rank - 1];
  int64_t src = base;
  for (int64_t out = 0; out < total; out += inner) {
    if (inner_step == 1) {
      std::memcpy(o + out * es, x.data() + src * es, static_cast<size_t>(inner * es));
    } else {
      for (int64_t k = 0; k < inner; ++k)
        std::memcpy(o + (out + k) * es, x.data() + (src + k * inner_step) * es, static_cast<size_t>(es));
    }
    for (int64_t a = rank - 1; a-- > 0;) {
      ++idx[a];
      src += step[a] * is[a];
      if (idx[a] < count[a]) break;
      src -= step[a] * is[a] * count[a];
      idx[a] = 0;
    }
  }
  return Status::ok();
}

Status Gather(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  std::vector<int64_t> idx = to_int64s(ctx.in(1));
  const Dims& id = dims_of(ctx.in(1));
  Dims out(d.begin(), d.begin() + axis);
  out.insert(out.end(), id.begin(), id.end());
  out.insert(out.end(), d.begin() + axis + 1, d.end());
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  const int64_t es = esize(x), chunk = inner * es;
  for (int64_t& i : idx) {
    if (i < 0) i += d[axis];
    if (i < 0 || i >= d[axis])
      return ctx.error("index " + std::to_string(i) + " out of range for dimension " +
                       std::to_string(d[axis]));
  }
  char* o = ctx.allocate(0, dtype_of(x), out);
  const auto n = static_cast<int64_t>(idx.size());
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(o + (r * n + k) * chunk, x.data() + (r * d[axis] + idx[k]) * chunk,
                  static_cast<size_t>(chunk));
  return Status::ok();
}

// GatherElements/ScatterElements: for every element of `indices` (shape id), its offset in data (shape d):
// the element's own coordinates with the one along `axis` replaced by the index. Checks rank and every
// coordinate.
Status element_offsets(KernelContext& ctx, const Dims& d, const Tensor& indices, int64_t* axis,
                       std::vector<int64_t>* offsets) {
  const Dims& id = dims_of(indices);
  if (!normalize_axis(axis, static_cast<int64_t>(d.size())) || id.size() != d.size())
    return ctx.error("indices must have the data's rank and axis must be in range");
  const std::vector<int64_t> idx = to_int64s(indices);
  const Dims xs = strides_of(d), is = strides_of(id);
  offsets->resize(idx.size());
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
    int64_t rem = i, at = 0;
    for (size_t a = 0; a < id.size(); ++a) {
      int64_t c = rem / is[a];
      rem %= is[a];
      if (static_cast<int64_t>(a) == *axis) c = idx[i] < 0 ? idx[i] + d[a] : idx[i];
      if (c < 0 || c >= d[a]) return ctx.error("index " + std::to_string(idx[i]) + " out of range");
      at += c * xs[a];
    }
    (*offsets)[i] = at;
  }
  return Status::ok();
}

Status GatherElements(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  int64_t axis = ctx.attr_int("axis", 0);
  std::vector<int64_t> offsets;
  GS_RETURN_IF_ERROR(element_offsets(ctx, dims_of(x), ctx.in(1), &axis, &offsets));
  const int64_t es = esize(x);
  char* o = ctx.allocate(0, dtype_of(x), dims_of(ctx.in(1)));
  for (size_t i = 0; i < offsets.size(); ++i)
    std::memcpy(o + static_cast<int64_t>(i) * es, x.data() + offsets[i] * es, static_cast<size_t>(es));
  return Status::ok();
}

Status GatherND(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  const Dims& id = dims_of(ctx.in(1));
  const int64_t b = ctx.attr_int("batch_dims", 0);
  if (id.empty()) return ctx.error("indices must have rank >= 1");
  const int64_t k = id.back();
  if (b + k > static_cast<int64_t>(d.size())) return ctx.error("indices too long");
  std::vector<int64_t> idx = to_int64s(ctx.in(1));
  Dims out(id.begin(), id.end() - 1);
  out.insert(out.end(), d.begin() + b + k, d.end());
  int64_t batch = 1, inner = 1;
  for (int64_t i = 0; i < b; ++i) batch *= d[i];
  for (size_t i = b + k; i < d.size(); ++i) inner *= d[i];
  const int64_t per_batch = num_elements(Dims(id.begin() + b, id.end() - 1));
  const Dims xs = strides_of(Dims(d.begin() + b, d.end()));
  const int64_t batch_stride = num_elements(Dims(d.begin() + b, d.end()));
  const int64_t es = esize(x);
  char* o = ctx.allocate(0, dtype_of(x), out);
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t j = 0; j < per_batch; ++j) {
      const int64_t* ix = idx.data() + (bi * per_batch + j) * k;
      int64_t src = 0;
      for (int64_t a = 0; a < k; ++a) {
        int64_t c = ix[a] < 0 ? ix[a] + d[b + a] : ix[a];
        if (c < 0 || c >= d[b + a]) return ctx.error("index out of range");
        src += c * xs[a];
      }
      std::memcpy(o + (bi * per_batch + j) * inner * es, x.data() + (bi * batch_stride + src) * es,
                  static_cast<size_t>(inner * es));
    }
  }
  return Status::ok();
}

Status Expand(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& out = ctx.rule_dims(0);
  Dims check;  // the copy below reads x at broadcast positions of `out`: they must exist
  if (!broadcast_shape(dims_of(x), out, &check) || check != out) return ctx.error("shape does not broadcast");
  const int64_t es = esize(x);
  char* o = ctx.allocate(0, dtype_of(x), out);
  for_each_broadcast2(out, dims_of(x), out, [&](int64_t oi, int64_t i, int64_t) {
    std::memcpy(o + oi * es, x.data() + i * es, static_cast<size_t>(es));
  });
  return Status::ok();
}

Status Tile(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  const Dims& out = ctx.rule_dims(0);
  if (out.size() != d.size()) return ctx.error("repeats must have one entry per dimension");
  const int64_t es = esize(x), total = num_elements(out);
  if (total > 0 && num_elements(d) == 0) return ctx.error("cannot tile an empty tensor to a non-empty one");
  char* o = ctx.allocate(0, dtype_of(x), out);
  const Dims os = strides_of(out), xs = strides_of(d);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, src = 0;
    for (size_t a = 0; a < d.size(); ++a) {
      const int64_t c = rem / os[a];
      rem %= os[a];
      src += (c % d[a]) * xs[a];
    }
    std::memcpy(o + i * es, x.data() + src * es, static_cast<size_t>(es));
  }
  return Status::ok();
}

Status Pad(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  const auto rank = static_cast<int64_t>(d.size());
  std::vector<int64_t> pads;
  if (ctx.opset < 11)
    pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>{});
  else
    pads = to_int64s(ctx.in(1));
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    axes = to_int64s(ctx.in(3));
    for (int64_t& a : axes)
      if (!normalize_axis(&a, rank)) return ctx.error("axis out of range");
  } else {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  if (pads.size() != 2 * axes.size()) return ctx.error("pads has the wrong length");
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    before[axes[i]] = pads[i];
    after[axes[i]] = pads[i + axes.size()];
  }
  const std::string mode = ctx.attr_string("mode", "constant");
  Dims out(rank);
  for (int64_t a = 0; a < rank; ++a) {
    out[a] = d[a] + before[a] + after[a];
    if (out[a] < 0) return ctx.error("negative output dimension");
  }
  const int64_t es = esize(x);
  std::string fill(static_cast<size_t>(es), '\0');
  if (mode == "constant") {
    if (ctx.opset < 11) {
      const double v = ctx.attr_float("value", 0.0f);
      (void)visit_numeric(dtype_of(x), [&](auto tag) {
        using T = decltype(tag);
        T t = T(static_cast<Compute<T>>(v));
        std::memcpy(fill.data(), &t, sizeof t);
        return Status::ok();
      });
    } else if (ctx.has_input(2) && ctx.in(2).size_bytes() >= static_cast<size_t>(es)) {
      std::memcpy(fill.data(), ctx.in(2).data(), static_cast<size_t>(es));
    }
  } else if (mode != "reflect" && mode != "edge" && mode != "wrap") {
    return ctx.error("unknown mode '" + mode + "'");
  }
  char* o = ctx.allocate(0, dtype_of(x), out);
  const int64_t total = num_elements(out);
  const Dims os = strides_of(out), xs = strides_of(d);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, src = 0;
    bool inside = true;
    for (int64_t a = 0; a < rank; ++a) {
      int64_t c = rem / os[a] - before[a];
      rem %= os[a];
      if (c < 0 || c >= d[a]) {
        if (mode == "constant" || d[a] == 0) {
          inside = false;
          break;
        }
        if (mode == "edge") {
          c = std::clamp<int64_t>(c, 0, d[a] - 1);
        } else if (mode == "wrap") {
          c = ((c % d[a]) + d[a]) % d[a];
        } else {  // reflect
          if (d[a] == 1) {
            c = 0;
          } else {
            const int64_t period = 2 * (d[a] - 1);
            c = ((c % period) + period) % period;
            if (c >= d[a]) c = period - c;
          }
        }
      }
      src += c * xs[a];
    }
    std::memcpy(o + i * es, inside ? x.data() + src * es : fill.data(), static_cast<size_t>(es));
  }
  return Status::ok();
}

Status ConstantOfShape(KernelContext& ctx) {
  const Dims& shape = ctx.rule_dims(0);
  const Tensor* value = ctx.attr_tensor("value");
  const DataType dt = value ? dtype_of(*value) : DataType::kFloat;
  const int64_t es = sdk::element_size(dt);
  char* o = ctx.allocate(0, dt, shape);
  for (int64_t i = 0, n = num_elements(shape); i < n; ++i) {
    if (value && value->size_bytes() >= static_cast<size_t>(es))
      std::memcpy(o + i * es, value->data(), static_cast<size_t>(es));
    else
      std::memset(o + i * es, 0, static_cast<size_t>(es));
  }
  return Status::ok();
}

Status Range(KernelContext& ctx) {
  const Tensor& s = ctx.in(0);
  return visit_arith(dtype_of(s), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const C start = static_cast<C>(data_as<T>(s)[0]);
    const C limit = static_cast<C>(data_as<T>(ctx.in(1))[0]);
    const C delta = static_cast<C>(data_as<T>(ctx.in(2))[0]);
    if (delta == C(0)) return ctx.error("delta is 0");
    const double count =
        std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    T* o = ctx.allocate_as<T>(0, dtype_of(s), {n});
    for (int64_t i = 0; i < n; ++i) o[i] = T(static_cast<C>(start + static_cast<C>(i) * delta));
    return Status::ok();
  });
}

Status DepthSpace(KernelContext& ctx, bool to_space) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const Dims& d = dims_of(x);
  if (d.size() != 4) return ctx.error("needs a 4-D input");
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0) return ctx.error("blocksize must be positive");
  const int64_t N = d[0], C = d[1], H = d[2], W = d[3], es = esize(x);
  std::vector<int64_t> perm;
  Dims tmp, out;
  if (to_space) {
    if (C % (b * b)) return ctx.error("channels not divisible by blocksize^2");
    const bool crd = ctx.attr_string("mode", "DCR") == "CRD";
    if (crd) {
      tmp = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      tmp = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    }
    out = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b || W % b) return ctx.error("spatial dimensions not divisible by blocksize");
    tmp = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {N, C * b * b, H / b, W / b};
  }
  char* o = ctx.allocate(0, dtype_of(x), out);
  transpose_bytes(x.data(), tmp, perm, o, es);
  return Status::ok();
}
Status DepthToSpace(KernelContext& ctx) {
  return DepthSpace(ctx, true);
}
Status SpaceToDepth(KernelContext& ctx) {
  return DepthSpace(ctx, false);
}

// dst = reduce(dst, src) for Scatter*'s `reduction` (none: overwrite).
Status scatter_combine(KernelContext& ctx, const std::string& reduction, DataType dt, char* dst,
                       const char* src, int64_t count) {
  const int64_t es = sdk::element_size(dt);
  if (reduction == "none") {
    std::memcpy(dst, src, static_cast<size_t>(count * es));
    return Status::ok();
  }
  if (reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
    return ctx.error("unknown reduction '" + reduction + "'");
  return visit_arith(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    T* d = reinterpret_cast<T*>(dst);
    const T* x = reinterpret_cast<const T*>(src);
    for (int64_t i = 0; i < count; ++i) {
      const C a = static_cast<C>(d[i]), b = static_cast<C>(x[i]);
      C r = reduction == "add"   ? static_cast<C>(a + b)
            : reduction == "mul" ? static_cast<C>(a * b)
            : reduction == "max" ? std::max(a, b)
                                 : std::min(a, b);
      d[i] = T(r);
    }
    return Status::ok();
  });
}

Status ScatterElements(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  int64_t axis = ctx.attr_int("axis", 0);
  std::vector<int64_t> offsets;
  GS_RETURN_IF_ERROR(element_offsets(ctx, dims_of(x), ctx.in(1), &axis, &offsets));
  const Tensor& upd = ctx.in(2);
  if (dims_of(upd) != dims_of(ctx.in(1)) || dtype_of(upd) != dtype_of(x))
    return ctx.error("updates must match the indices' shape and the data's type");
  const std::string reduction = ctx.attr_string("reduction", "none");
  const int64_t es = esize(x);
  char* o = ctx.allocate(0, dtype_of(x), dims_of(x));
  std::memcpy(o, x.data(), x.size_bytes());
  for (size_t i = 0; i < offsets.size(); ++i)
    GS_RETURN_IF_ERROR(scatter_combine(ctx, reduction, dtype_of(x), o + offsets[i] * es,
                                       upd.data() + static_cast<int64_t>(i) * es, 1));
  return Status::ok();
}

Status ScatterND(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  GS_RETURN_IF_ERROR(need_fixed_size(ctx, x));
  const std::string reduction = ctx.attr_string("reduction", "none");
  const Dims& d = dims_of(x);
  const Dims& id = dims_of(ctx.in(1));
  if (id.empty()) return ctx.error("indices must have rank >= 1");
  const int64_t k = id.back();
  if (k > static_cast<int64_t>(d.size())) return ctx.error("indices too long");
  std::vector<int64_t> idx = to_int64s(ctx.in(1));
  const int64_t es = esize(x);
  int64_t inner = 1;
  for (size_t i = k; i < d.size(); ++i) inner *= d[i];
  const Dims xs = strides_of(d);
  char* o = ctx.allocate(0, dtype_of(x), d);
  std::memcpy(o, x.data(), x.size_bytes());
  const int64_t n = k == 0 ? 1 : static_cast<int64_t>(idx.size()) / k;
  if (dtype_of(ctx.in(2)) != dtype_of(x) || static_cast<int64_t>(ctx.in(2).size_bytes()) != n * inner * es)
    return ctx.error("updates do not match the indices and the data");
  for (int64_t j = 0; j < n; ++j) {
    int64_t dst = 0;
    for (int64_t a = 0; a < k; ++a) {
      int64_t c = idx[j * k + a] < 0 ? idx[j * k + a] + d[a] : idx[j * k + a];
      if (c < 0 || c >= d[a]) return ctx.error("index out of range");
      dst += c * xs[a];
    }
    GS_RETURN_IF_ERROR(
        scatter_combine(ctx, reduction, dtype_of(x), o + dst * es, ctx.in(2).data() + j * inner * es, inner));
  }
  return Status::ok();
}

}  // namespace

void register_shape_ops(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"Concat", Concat},
                          {"ConstantOfShape", ConstantOfShape},
                          {"DepthToSpace", DepthToSpace},
                          {"Expand", Expand},
                          {"Flatten", relabel},
                          {"Gather", Gather},
                          {"GatherElements", GatherElements},
                          {"GatherND", GatherND},
                          {"Pad", Pad},
                          {"Range", Range},
                          {"Reshape", relabel},
                          {"Scatter", ScatterElements},  // opset 9-10 name of ScatterElements
                          {"ScatterElements", ScatterElements},
                          {"ScatterND", ScatterND},
                          {"Shape", Shape},
                          {"Size", Size},
                          {"Slice", Slice},
                          {"SpaceToDepth", SpaceToDepth},
                          {"Split", Split},
                          {"Squeeze", relabel},
                          {"Tile", Tile},
                          {"Transpose", Transpose},
                          {"Unsqueeze", relabel},
                      });
}

}  // namespace graphsplit::kernels
