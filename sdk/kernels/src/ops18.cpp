// Operators of opsets 18-23 beyond the elementwise ones (GroupNormalization, RMSNormalization,
// CenterCropPad, Col2Im, AffineGrid) and the older normalisations that share their arithmetic
// (LpNormalization, GlobalLpPool). Accumulation in double, results in the input's type.
#include <cmath>
#include <cstring>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

// x [N, C, ...] in num_groups groups of C / num_groups channels; scale and bias per channel (opset 21) or
// per group (opset 18).
Status GroupNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t groups = ctx.attr_int("num_groups", 0);
  if (d.size() < 2 || groups < 1 || d[1] % groups != 0)
    return ctx.error("needs x of rank >= 2 whose channels divide into num_groups (" + std::to_string(groups) +
                     ")");
  const int64_t N = d[0], C = d[1], inner = num_elements(Dims(d.begin() + 2, d.end())), per = C / groups;
  const std::vector<double> v = to_doubles(x), scale = to_doubles(ctx.in(1)), bias = to_doubles(ctx.in(2));
  const bool per_channel = static_cast<int64_t>(scale.size()) == C;
  if (!per_channel && static_cast<int64_t>(scale.size()) != groups)
    return ctx.error("scale must hold one value per channel or per group");
  if (bias.size() != scale.size()) return ctx.error("scale and bias differ in length");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  std::vector<double> y(v.size());
  const int64_t span = per * inner;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (n * C + g * per) * inner;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < span; ++k) mean += v[base + k];
      mean /= static_cast<double>(span);
      for (int64_t k = 0; k < span; ++k) var += (v[base + k] - mean) * (v[base + k] - mean);
      const double inv = 1 / std::sqrt(var / static_cast<double>(span) + eps);
      for (int64_t k = 0; k < span; ++k) {
        const int64_t c = per_channel ? g * per + k / inner : g;
        y[base + k] = (v[base + k] - mean) * inv * scale[c] + bias[c];
      }
    }
  }
  return write_float_output(ctx, 0, dtype_of(x), d, [&](int64_t i) { return y[i]; });
}

// x divided by the root mean square over the axes from `axis` on, times scale (broadcast over them).
Status RMSNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", -1);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis is out of range");
  const int64_t inner = num_elements(Dims(d.begin() + axis, d.end())),
                outer = num_elements(d) / std::max<int64_t>(inner, 1);
  const std::vector<double> v = to_doubles(x), scale = to_doubles(ctx.in(1));
  if (scale.empty() || inner % static_cast<int64_t>(scale.size()) != 0)
    return ctx.error("scale does not broadcast over the normalised axes");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  std::vector<double> y(v.size());
  for (int64_t o = 0; o < outer; ++o) {
    double sq = 0;
    for (int64_t k = 0; k < inner; ++k) sq += v[o * inner + k] * v[o * inner + k];
    const double inv = 1 / std::sqrt(sq / static_cast<double>(inner) + eps);
    for (int64_t k = 0; k < inner; ++k)
      y[o * inner + k] = v[o * inner + k] * inv * scale[k % static_cast<int64_t>(scale.size())];
  }
  return write_float_output(ctx, 0, dtype_of(x), d, [&](int64_t i) { return y[i]; });
}

// x divided by its L1 or L2 norm along `axis`.
Status LpNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", -1);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) return ctx.error("p must be 1 or 2, got " + std::to_string(p));
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis is out of range");
  int64_t outer = 0, inner = 0;
  split_at_axis(d, axis, &outer, &inner);
  const std::vector<double> v = to_doubles(x);
  std::vector<double> y(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double norm = 0;
      for (int64_t k = 0; k < d[axis]; ++k) {
        const double e = v[(o * d[axis] + k) * inner + i];
        norm += p == 1 ? std::abs(e) : e * e;
      }
      if (p == 2) norm = std::sqrt(norm);
      for (int64_t k = 0; k < d[axis]; ++k) {
        const int64_t at = (o * d[axis] + k) * inner + i;
        y[at] = norm == 0 ? 0 : v[at] / norm;
      }
    }
  return write_float_output(ctx, 0, dtype_of(x), d, [&](int64_t i) { return y[i]; });
}

// The p-norm of each spatial plane.
Status GlobalLpPool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() < 3) return ctx.error("the input must have rank >= 3");
  const auto p = static_cast<double>(ctx.attr_int("p", 2));
  const int64_t inner = num_elements(Dims(d.begin() + 2, d.end()));
  const std::vector<double> v = to_doubles(x);
  Dims od(d.size(), 1);
  od[0] = d[0];
  od[1] = d[1];
  return write_float_output(ctx, 0, dtype_of(x), od, [&](int64_t plane) {
    double acc = 0;
    for (int64_t k = 0; k < inner; ++k) acc += std::pow(std::abs(v[plane * inner + k]), p);
    return std::pow(acc, 1 / p);
  });
}

// Each listed axis cropped (centred, the extra element at the end) or zero-padded (the extra at the end) to
// the target length.
Status CenterCropPad(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const std::vector<int64_t> target = to_int64s(ctx.in(1));
  std::vector<int64_t> axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{});
  if (axes.empty())
    for (size_t a = 0; a < d.size(); ++a) axes.push_back(static_cast<int64_t>(a));
  if (axes.size() != target.size()) return ctx.error("shape and axes differ in length");
  Dims od = d;
  std::vector<int64_t> shift(d.size(), 0);  // output index = input index + shift
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t a = axes[k];
    if (!normalize_axis(&a, static_cast<int64_t>(d.size())) || target[k] < 0)
      return ctx.error("bad axes or shape");
    od[a] = target[k];
    shift[a] = target[k] >= d[a] ? (target[k] - d[a]) / 2 : -((d[a] - target[k]) / 2);
  }
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0) return ctx.unsupported("string tensors are not supported");
  char* out = ctx.allocate(0, dtype_of(x), od);
  std::memset(out, 0, static_cast<size_t>(num_elements(od) * es));
  const Dims is = strides_of(d), os = strides_of(od);
  for (int64_t i = 0, n = num_elements(d); i < n; ++i) {
    int64_t rem = i, at = 0;
    bool inside = true;
    for (size_t a = 0; a < d.size(); ++a) {
      const int64_t c = rem / is[a] + shift[a];
      rem %= is[a];
      inside = inside && c >= 0 && c < od[a];
      at += c * os[a];
    }
    if (inside) std::memcpy(out + at * es, x.data() + i * es, static_cast<size_t>(es));
  }
  return Status::ok();
}

// The inverse of im2col: input [N, C * prod(block), L] columns summed back into images [N, C, image...].
Status Col2Im(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const std::vector<int64_t> image = to_int64s(ctx.in(1)), block = to_int64s(ctx.in(2));
  const size_t s = image.size();
  if (d.size() != 3 || s == 0 || block.size() != s)
    return ctx.error("needs x [N, C*prod(block), L] and matching shapes");
  const std::vector<int64_t> dil = ctx.attr_ints("dilations").value_or(std::vector<int64_t>(s, 1));
  const std::vector<int64_t> str = ctx.attr_ints("strides").value_or(std::vector<int64_t>(s, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * s, 0));
  if (dil.size() != s || str.size() != s || pads.size() != 2 * s)
    return ctx.error("attribute lengths do not match");
  for (size_t a = 0; a < s; ++a)
    if (block[a] < 1 || str[a] < 1 || dil[a] < 1 || image[a] < 0)
      return ctx.error("block_shape, strides and dilations must be positive");
  const int64_t kernel = num_elements(block);
  if (kernel == 0 || d[1] % kernel != 0)
    return ctx.error("the channel dimension is not a multiple of the block");
  Dims blocks(s);  // sliding positions per spatial axis
  for (size_t a = 0; a < s; ++a)
    blocks[a] = (image[a] + pads[a] + pads[a + s] - dil[a] * (block[a] - 1) - 1) / str[a] + 1;
  if (num_elements(blocks) != d[2]) return ctx.error("L does not match the number of blocks");
  const int64_t N = d[0], C = d[1] / kernel, L = d[2], plane = num_elements(image);
  const std::vector<double> v = to_doubles(x);
  std::vector<double> y(static_cast<size_t>(N * C * plane), 0.0);
  const Dims bs = strides_of(block), ls = strides_of(blocks), is = strides_of(image);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t k = 0; k < kernel; ++k)
        for (int64_t l = 0; l < L; ++l) {
          int64_t at = 0;
          bool inside = true;
          for (size_t a = 0; a < s; ++a) {
            const int64_t pos = (l / ls[a]) % blocks[a] * str[a] - pads[a] + (k / bs[a]) % block[a] * dil[a];
            inside = inside && pos >= 0 && pos < image[a];
            at += pos * is[a];
          }
          if (inside) y[(n * C + c) * plane + at] += v[((n * C + c) * kernel + k) * L + l];
        }
  Dims od = {N, C};
  od.insert(od.end(), image.begin(), image.end());
  return write_float_output(ctx, 0, dtype_of(x), od, [&](int64_t i) { return y[i]; });
}

// theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D) applied to the normalised coordinates of every output position.
Status AffineGrid(KernelContext& ctx) {
  const Tensor& theta = ctx.in(0);
  const std::vector<int64_t> size = to_int64s(ctx.in(1));
  const Dims& td = dims_of(theta);
  const size_t s = size.size() - 2;
  if ((size.size() != 4 && size.size() != 5) || td.size() != 3 || td[0] != size[0] ||
      td[1] != static_cast<int64_t>(s) || td[2] != static_cast<int64_t>(s) + 1)
    return ctx.error("theta " + dims_string(td) + " does not match size " + dims_string(size));
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  const std::vector<double> t = to_doubles(theta);
  const Dims spatial(size.begin() + 2, size.end());  // (D,) H, W
  const int64_t points = num_elements(spatial);
  const auto coord = [&](int64_t i, int64_t n) {
    if (n <= 1) return 0.0;
    return align ? -1 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1)
                 : (2.0 * static_cast<double>(i) + 1) / static_cast<double>(n) - 1;
  };
  Dims od = {size[0]};
  od.insert(od.end(), spatial.begin(), spatial.end());
  od.push_back(static_cast<int64_t>(s));
  const Dims ss = strides_of(spatial);
  return write_float_output(ctx, 0, dtype_of(theta), od, [&](int64_t flat) {
    const int64_t comp = flat % static_cast<int64_t>(s), rest = flat / static_cast<int64_t>(s);
    const int64_t n = rest / points, at = rest % points;
    // Input coordinates in (x, y[, z]) order: the last spatial axis is x.
    double acc =
        t[(n * static_cast<int64_t>(s) + comp) * (static_cast<int64_t>(s) + 1) + static_cast<int64_t>(s)];
    for (size_t a = 0; a < s; ++a) {
      const size_t axis = s - 1 - a;
      const double c = coord(at / ss[axis] % spatial[axis], spatial[axis]);
      acc +=
          t[(n * static_cast<int64_t>(s) + comp) * (static_cast<int64_t>(s) + 1) + static_cast<int64_t>(a)] *
          c;
    }
    return acc;
  });
}

// A [B, H, S, D] view of a 4-D tensor, or of a 3-D [B, S, H*D] one split into `heads` heads.
struct Heads {
  int64_t B = 0, H = 0, S = 0, D = 0;
  bool packed = false;  // 3-D
  std::vector<double> v;
  double at(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return packed ? v[((b * S + s) * H + h) * D + d] : v[((b * H + h) * S + s) * D + d];
  }
};

Status heads_of(const KernelContext& ctx, size_t i, int64_t heads, Heads* out) {
  const Dims& d = dims_of(ctx.in(i));
  out->v = to_doubles(ctx.in(i));
  if (d.size() == 4) {
    *out = Heads{d[0], d[1], d[2], d[3], false, std::move(out->v)};
    return Status::ok();
  }
  if (d.size() != 3 || heads < 1 || d[2] % heads != 0)
    return ctx.error("input " + std::to_string(i) +
                     " must be [B, H, S, D], or [B, S, H*D] with its head count set");
  *out = Heads{d[0], heads, d[1], d[2] / heads, true, std::move(out->v)};
  return Status::ok();
}

// Past and new keys (or values) along the sequence: [B, H, past + S, D].
Heads concat_past(const KernelContext& ctx, size_t past, const Heads& now) {
  if (!ctx.has_input(past)) return now;
  const Dims& p = dims_of(ctx.in(past));
  const std::vector<double> pv = to_doubles(ctx.in(past));
  Heads all{now.B, now.H, p[2] + now.S, now.D, false, {}};
  all.v.resize(static_cast<size_t>(all.B * all.H * all.S * all.D));
  for (int64_t b = 0; b < all.B; ++b)
    for (int64_t h = 0; h < all.H; ++h)
      for (int64_t s = 0; s < all.S; ++s)
        for (int64_t d = 0; d < all.D; ++d)
          all.v[((b * all.H + h) * all.S + s) * all.D + d] =
              s < p[2] ? pv[((b * all.H + h) * p[2] + s) * all.D + d] : now.at(b, h, s - p[2], d);
  return all;
}

// The additive bias for score (b, h, i, j): the mask (bool: false masks out; float: added), broadcast from
// the right over [B, H, Sq, T].
double mask_bias(const KernelContext& ctx, const std::vector<double>& mask, int64_t b, int64_t h, int64_t i,
                 int64_t j) {
  if (mask.empty()) return 0;
  const Dims& md = dims_of(ctx.in(3));
  const Dims idx = {b, h, i, j};
  int64_t at = 0, stride = 1;
  for (size_t k = 0; k < md.size(); ++k) {
    const size_t a = md.size() - 1 - k, f = 3 - k;
    at += (md[a] == 1 ? 0 : idx[f]) * stride;
    stride *= md[a];
  }
  if (dtype_of(ctx.in(3)) == DataType::kBool) return mask[at] != 0 ? 0 : -INFINITY;
  return mask[at];
}

// Scaled dot-product attention (opset 23): Q [B, Hq, Sq, D] (or 3-D), K/V with Hkv heads shared by groups of
// query heads, past keys and values prepended, mask and causal bias, softcap, softmax; outputs Y, present
// key and value, and the scores at the stage qk_matmul_output_mode names.
Status Attention(KernelContext& ctx) {
  Heads q, k, v;
  GS_RETURN_IF_ERROR(heads_of(ctx, 0, ctx.attr_int("q_num_heads", 0), &q));
  GS_RETURN_IF_ERROR(heads_of(ctx, 1, ctx.attr_int("kv_num_heads", 0), &k));
  GS_RETURN_IF_ERROR(heads_of(ctx, 2, ctx.attr_int("kv_num_heads", 0), &v));
  if (k.H < 1 || q.H % k.H != 0 || k.D != q.D || v.H != k.H || v.S != k.S || q.B != k.B)
    return ctx.error("Q, K and V do not agree in batch, heads, sequence or head size");
  const Heads keys = concat_past(ctx, 4, k), values = concat_past(ctx, 5, v);
  const int64_t T = keys.S, group = q.H / k.H, Dv = v.D;
  const double scale = ctx.attr_float("scale", 0.0f) != 0 ? ctx.attr_float("scale", 0.0f)
                                                          : 1 / std::sqrt(static_cast<double>(q.D));
  const double softcap = ctx.attr_float("softcap", 0.0f);
  const bool causal = ctx.attr_int("is_causal", 0) != 0;
  const int64_t mode = ctx.attr_int("qk_matmul_output_mode", 0);
  const std::vector<double> mask = ctx.has_input(3) ? to_doubles(ctx.in(3)) : std::vector<double>{};
  std::vector<double> y(static_cast<size_t>(q.B * q.H * q.S * Dv)),
      qk(static_cast<size_t>(q.B * q.H * q.S * T));
  std::vector<double> row(static_cast<size_t>(T));
  for (int64_t b = 0; b < q.B; ++b)
    for (int64_t h = 0; h < q.H; ++h)
      for (int64_t i = 0; i < q.S; ++i) {
        double* trace = qk.data() + ((b * q.H + h) * q.S + i) * T;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < q.D; ++d) dot += q.at(b, h, i, d) * keys.at(b, h / group, j, d);
          row[j] = dot * scale;
          if (mode == 0) trace[j] = row[j];
          row[j] += mask_bias(ctx, mask, b, h, i, j) + (causal && j > i ? -INFINITY : 0.0);
          if (mode == 1) trace[j] = row[j];
          if (softcap > 0) row[j] = softcap * std::tanh(row[j] / softcap);
          if (mode == 2) trace[j] = row[j];
        }
        const double top = *std::max_element(row.begin(), row.end());
        double sum = 0;
        for (double& r : row) sum += (r = std::isinf(top) ? 0.0 : std::exp(r - top));
        for (int64_t j = 0; j < T; ++j) {
          row[j] = sum > 0 ? row[j] / sum : 0.0;
          if (mode == 3) trace[j] = row[j];
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += row[j] * values.at(b, h / group, j, d);
          y[q.packed ? ((b * q.S + i) * q.H + h) * Dv + d : ((b * q.H + h) * q.S + i) * Dv + d] = acc;
        }
      }
  const DataType dt = dtype_of(ctx.in(0));
  const Dims yd = q.packed ? Dims{q.B, q.S, q.H * Dv} : Dims{q.B, q.H, q.S, Dv};
  const auto emit = [&](size_t o, const Dims& dims, const std::vector<double>& data) {
    return write_float_output(ctx, o, dt, dims, [&](int64_t n) { return data[n]; });
  };
  GS_RETURN_IF_ERROR(emit(0, yd, y));
  if (ctx.wants_output(1)) GS_RETURN_IF_ERROR(emit(1, {keys.B, keys.H, keys.S, keys.D}, keys.v));
  if (ctx.wants_output(2)) GS_RETURN_IF_ERROR(emit(2, {values.B, values.H, values.S, values.D}, values.v));
  if (ctx.wants_output(3)) GS_RETURN_IF_ERROR(emit(3, {q.B, q.H, q.S, T}, qk));
  return Status::ok();
}

// Rotary position embedding (opset 23) on X [B, H, S, D] or [B, S, H*D]: the first rotary_embedding_dim
// values of each head rotated by the angles of the cos/sin caches at each position (position_ids, or the
// caches given per batch and position), as halves or as interleaved pairs.
Status RotaryEmbedding(KernelContext& ctx) {
  Heads x;
  GS_RETURN_IF_ERROR(heads_of(ctx, 0, ctx.attr_int("num_heads", 0), &x));
  const std::vector<double> cos = to_doubles(ctx.in(1)), sin = to_doubles(ctx.in(2));
  const Dims& cd = dims_of(ctx.in(1));
  const int64_t rot =
      ctx.attr_int("rotary_embedding_dim", 0) > 0 ? ctx.attr_int("rotary_embedding_dim", 0) : x.D;
  const int64_t half = rot / 2;
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  if (rot > x.D || rot % 2 != 0 || cd.empty() || cd.back() < half)
    return ctx.error("rotary_embedding_dim does not fit the head size and caches");
  const std::vector<int64_t> pos = ctx.has_input(3) ? to_int64s(ctx.in(3)) : std::vector<int64_t>{};
  std::vector<double> y(x.v.size());
  for (int64_t b = 0; b < x.B; ++b)
    for (int64_t h = 0; h < x.H; ++h)
      for (int64_t s = 0; s < x.S; ++s) {
        // Row of the caches: the position id, or (caches [B, S, half]) this batch row and position.
        const int64_t r = pos.empty() ? b * x.S + s : pos[b * x.S + s];
        if (r < 0 || (r + 1) * cd.back() > static_cast<int64_t>(cos.size()))
          return ctx.error("position " + std::to_string(r) + " is outside the caches");
        const auto out_at = [&](int64_t d) {
          return x.packed ? ((b * x.S + s) * x.H + h) * x.D + d : ((b * x.H + h) * x.S + s) * x.D + d;
        };
        for (int64_t d = rot; d < x.D; ++d) y[out_at(d)] = x.at(b, h, s, d);
        for (int64_t k = 0; k < half; ++k) {
          const double c = cos[r * cd.back() + k], sn = sin[r * cd.back() + k];
          const int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + half;
          const double a = x.at(b, h, s, i1), e = x.at(b, h, s, i2);
          y[out_at(i1)] = a * c - e * sn;
          y[out_at(i2)] = e * c + a * sn;
        }
      }
  return write_float_output(ctx, 0, dtype_of(ctx.in(0)), dims_of(ctx.in(0)), [&](int64_t i) { return y[i]; });
}

}  // namespace

void register_ops18(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"AffineGrid", AffineGrid},
                       {"CenterCropPad", CenterCropPad},
                       {"Col2Im", Col2Im},
                       {"GlobalLpPool", GlobalLpPool},
                       {"GroupNormalization", GroupNormalization},
                       {"LpNormalization", LpNormalization},
                       {"RMSNormalization", RMSNormalization}});
}

void register_attention(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"Attention", Attention}, {"RotaryEmbedding", RotaryEmbedding}});
}

}  // namespace graphsplit::kernels
