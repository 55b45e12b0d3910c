// Operators of opsets 18-23 beyond the elementwise ones (GroupNormalization, RMSNormalization,
// CenterCropPad, Col2Im, AffineGrid) and the older normalisations that share their arithmetic
// (LpNormalization, GlobalLpPool). Accumulation in double, results in the input's type.
#include <cmath>
#include <cstring>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

template <class F>
Status write_doubles(KernelContext& ctx, DataType dtype, const Dims& dims, F value) {
  return visit_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, dtype, dims);
    for (int64_t i = 0, n = num_elements(dims); i < n; ++i) out[i] = T(static_cast<Compute<T>>(value(i)));
    return Status::ok();
  });
}

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
  return write_doubles(ctx, dtype_of(x), d, [&](int64_t i) { return y[i]; });
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
  return write_doubles(ctx, dtype_of(x), d, [&](int64_t i) { return y[i]; });
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
  return write_doubles(ctx, dtype_of(x), d, [&](int64_t i) { return y[i]; });
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
  return write_doubles(ctx, dtype_of(x), od, [&](int64_t plane) {
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
  return write_doubles(ctx, dtype_of(x), od, [&](int64_t i) { return y[i]; });
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
  return write_doubles(ctx, dtype_of(theta), od, [&](int64_t flat) {
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

}  // namespace graphsplit::kernels
