// Resampling kernels: Resize and Upsample (separable, one axis at a time), GridSample, RoiAlign.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

// ---- Resize / Upsample, separable one axis at a time.
struct Tap {
  int64_t index;
  double weight;
};

// Where output index `o` of an axis samples the input (ONNX's coordinate_transformation_mode); nothing for an
// unknown mode. tf_crop_and_resize marks points outside the roi.
std::optional<double> source_coordinate(const std::string& coord, int64_t o, int64_t in, int64_t out,
                                        double scale, const std::vector<double>& roi, size_t a,
                                        bool* outside) {
  // ONNX's reference uses the unrounded output length when scales are given.
  const double length_resized = static_cast<double>(in) * scale;
  const size_t rank = roi.size() / 2;
  if (coord == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (coord == "half_pixel_symmetric") {
    const double adj = static_cast<double>(out) / (scale * static_cast<double>(in));
    const double center = static_cast<double>(in) / 2.0;
    return center * (1 - adj) + (o + 0.5) / scale - 0.5;
  }
  if (coord == "pytorch_half_pixel") return length_resized > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (coord == "align_corners")
    return length_resized == 1 ? 0.0
                               : static_cast<double>(o) * static_cast<double>(in - 1) / (length_resized - 1);
  if (coord == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  if (coord == "asymmetric") return o / scale;
  if (coord == "tf_crop_and_resize") {
    const double s = roi.empty() ? 0 : roi[a], e = roi.empty() ? 1 : roi[rank + a];
    const double src = length_resized > 1 ? s * (in - 1) + o * (e - s) * (in - 1) / (length_resized - 1)
                                          : 0.5 * (s + e) * (in - 1);
    if (src < 0 || src > static_cast<double>(in - 1)) *outside = true;
    return src;
  }
  return std::nullopt;
}

int64_t nearest_index(double src, const std::string& nearest, int64_t in) {
  double r;
  if (nearest == "round_prefer_ceil")
    r = std::floor(src + 0.5);
  else if (nearest == "floor")
    r = std::floor(src);
  else if (nearest == "ceil")
    r = std::ceil(src);
  else  // round_prefer_floor
    r = (src - std::floor(src) == 0.5) ? std::floor(src) : std::round(src);
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

void linear_taps(double src, int64_t in, std::vector<Tap>* t) {
  const double c = std::clamp(src, 0.0, static_cast<double>(in - 1));
  const auto i0 = static_cast<int64_t>(std::floor(c));
  const int64_t i1 = std::min(i0 + 1, in - 1);
  const double f = c - static_cast<double>(i0);
  t->push_back({i0, 1 - f});
  if (i1 != i0) t->push_back({i1, f});
}

// Keys' cubic convolution with coefficient A; exclude_outside drops taps past the edge and renormalises.
void cubic_taps(double src, int64_t in, double A, bool exclude_outside, std::vector<Tap>* t) {
  const double fl = std::floor(src), f = src - fl;
  double w[4];
  const double d[4] = {1 + f, f, 1 - f, 2 - f};
  for (int k = 0; k < 4; ++k) {
    const double z = d[k];
    w[k] = z <= 1 ? ((A + 2) * z - (A + 3)) * z * z + 1 : ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
  }
  double sum = 0;
  for (int k = 0; k < 4; ++k) {
    const int64_t i = static_cast<int64_t>(fl) - 1 + k;
    if (exclude_outside && (i < 0 || i >= in)) w[k] = 0;
    sum += w[k];
  }
  for (int k = 0; k < 4; ++k) {
    if (w[k] == 0) continue;
    const int64_t i = std::clamp<int64_t>(static_cast<int64_t>(fl) - 1 + k, 0, in - 1);
    t->push_back({i, exclude_outside && sum != 0 ? w[k] / sum : w[k]});
  }
}

// Antialiased downsampling (opset 18): the linear or cubic filter stretched by 1 / scale, so that every input
// sample under the output's footprint contributes; weights normalised to 1, indices past an edge repeat it.
void antialias_taps(double src, int64_t in, double scale, bool cubic, double A, bool exclude_outside,
                    std::vector<Tap>* t) {
  const double base = std::floor(src), ratio = src - base;
  const auto start = static_cast<int64_t>(std::floor((cubic ? -2.0 : -1.0) / scale) + 1);
  const int64_t end = 2 - start;  // [start, end): symmetric around the sample
  const auto filter = [&](double z) {
    z = std::abs(z);
    if (!cubic) return std::clamp(1 - z, 0.0, 1.0);
    if (z <= 1) return ((A + 2) * z - (A + 3)) * z * z + 1;
    if (z < 2) return ((A * z - 5 * A) * z + 8 * A) * z - 4 * A;
    return 0.0;
  };
  std::vector<Tap> taps;
  double sum = 0;
  for (int64_t i = start; i < end; ++i) {
    const auto at = static_cast<int64_t>(base) + i;
    const double w =
        (exclude_outside && (at < 0 || at >= in)) ? 0.0 : filter(scale * (static_cast<double>(i) - ratio));
    taps.push_back({std::clamp<int64_t>(at, 0, in - 1), w});
    sum += w;
  }
  for (Tap& tap : taps)
    if (tap.weight != 0) t->push_back({tap.index, sum != 0 ? tap.weight / sum : 0});
}

// One axis of a separable resize: every output index the weighted sum of its taps.
std::vector<double> resample_axis(const std::vector<double>& cur, const Dims& cd, size_t a, int64_t out,
                                  const std::vector<std::vector<Tap>>& taps) {
  int64_t outer = 1, inner = 1;
  split_at_axis(cd, static_cast<int64_t>(a), &outer, &inner);
  std::vector<double> next(static_cast<size_t>(outer * out * inner));
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double* dst = next.data() + (r * out + o) * inner;
      std::fill(dst, dst + inner, 0.0);
      for (const Tap& t : taps[o]) {
        const double* src = cur.data() + (r * cd[a] + t.index) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += t.weight * src[i];
      }
    }
  return next;
}

// Nearest-neighbour resizing is a gather (one tap of weight 1 per axis): the values are copied as they are,
// without the weighted passes in double that the other modes need.
Status gather_nearest(KernelContext& ctx, const Tensor& x, const Dims& out_dims,
                      const std::vector<std::vector<std::vector<Tap>>>& taps) {
  const Dims& xd = dims_of(x);
  const size_t rank = xd.size();
  const int64_t size = sdk::element_size(dtype_of(x));
  if (size == 0 || x.desc().kind != sdk::ValueKind::kTensor)
    return ctx.unsupported("data type " + std::string(sdk::to_string(dtype_of(x))) + " is not supported");
  char* out = ctx.allocate(0, dtype_of(x), out_dims);
  const int64_t total = num_elements(out_dims);
  if (total == 0) return Status::ok();
  const Dims in_strides = strides_of(xd);
  // Per axis, the source offset (in elements) of each output index.
  std::vector<Dims> offset(rank);
  for (size_t a = 0; a < rank; ++a)
    for (const auto& t : taps[a]) offset[a].push_back(t.at(0).index * in_strides[a]);
  const char* in = x.data();
  const int64_t inner = rank ? out_dims[rank - 1] : 1;
  const Dims& last = rank ? offset[rank - 1] : Dims{0};
  Dims idx(rank, 0);
  for (int64_t o = 0; o < total; o += inner) {
    int64_t base = 0;
    for (size_t a = 0; a + 1 < rank; ++a) base += offset[a][idx[a]];
    char* dst = out + o * size;
    if (size == 4) {
      auto* d = reinterpret_cast<uint32_t*>(dst);
      const auto* src = reinterpret_cast<const uint32_t*>(in) + base;
      for (int64_t k = 0; k < inner; ++k) d[k] = src[last[k]];
    } else {
      for (int64_t k = 0; k < inner; ++k) std::memcpy(dst + k * size, in + (base + last[k]) * size, size);
    }
    for (size_t a = rank - 1; a-- > 0;) {
      if (++idx[a] < out_dims[a]) break;
      idx[a] = 0;
    }
  }
  return Status::ok();
}

Status resize_impl(KernelContext& ctx, const Tensor& x, std::vector<double> scales, Dims out_dims,
                   bool legacy) {
  const Dims& xd = dims_of(x);
  const size_t rank = xd.size();
  const std::string mode = ctx.attr_string("mode", "nearest");
  std::string coord = legacy ? "asymmetric" : ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  std::string nearest = legacy ? "floor" : ctx.attr_string("nearest_mode", "round_prefer_floor");
  if (legacy && ctx.opset >= 10 && mode == "nearest") nearest = "floor";
  const double cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  const double extrapolation = ctx.attr_float("extrapolation_value", 0.0f);
  const bool antialias = ctx.attr_int("antialias", 0) != 0;
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear")
    return ctx.unsupported("mode '" + mode + "' is not supported");
  std::vector<double> roi;
  if (!legacy && ctx.has_input(1) && num_elements(dims_of(ctx.in(1))) == static_cast<int64_t>(2 * rank)) {
    for (int64_t i = 0; i < static_cast<int64_t>(2 * rank); ++i)
      roi.push_back(scalar_as_double(ctx.in(1), i));
  }
  if (out_dims.size() != rank || scales.size() != rank)
    return ctx.error("the output rank " + std::to_string(out_dims.size()) + " is not the input's");
  for (size_t a = 0; a < rank; ++a) {
    if (!(scales[a] > 0) || !std::isfinite(scales[a]) || out_dims[a] < 0 || out_dims[a] > (int64_t{1} << 40))
      return ctx.error("scales or sizes give output shape " + dims_string(out_dims) + " for input " +
                       dims_string(xd));
  }
  // Per axis, per output index: the input taps and whether the point lies outside (tf_crop_and_resize).
  std::vector<std::vector<std::vector<Tap>>> taps(rank);
  std::vector<std::vector<bool>> outside(rank);
  for (size_t a = 0; a < rank; ++a) {
    const int64_t in = xd[a], out = out_dims[a];
    const double scale = scales[a];
    taps[a].resize(static_cast<size_t>(out));
    outside[a].assign(static_cast<size_t>(out), false);
    for (int64_t o = 0; o < out; ++o) {
      bool out_of_roi = false;
      const std::optional<double> mapped = source_coordinate(coord, o, in, out, scale, roi, a, &out_of_roi);
      if (!mapped) return ctx.unsupported("coordinate_transformation_mode '" + coord + "' is not supported");
      const double src = *mapped;
      outside[a][o] = out_of_roi;
      auto& t = taps[a][o];
      if (in == out && scale == 1.0 && coord != "tf_crop_and_resize") {
        t.push_back({o, 1.0});
        continue;
      }
      if (mode == "nearest")
        t.push_back({nearest_index(src, nearest, in), 1.0});
      else if (antialias && scale < 1)
        antialias_taps(src, in, scale, mode == "cubic", cubic_a, exclude_outside, &t);
      else if (mode == "linear" || mode == "bilinear")
        linear_taps(src, in, &t);
      else
        cubic_taps(src, in, cubic_a, exclude_outside, &t);
    }
  }
  if (mode == "nearest" && coord != "tf_crop_and_resize" && rank > 0)
    return gather_nearest(ctx, x, out_dims, taps);
  return visit_numeric(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    std::vector<double> cur(static_cast<size_t>(num_elements(xd)));
    const T* px = data_as<T>(x);
    for (size_t i = 0; i < cur.size(); ++i) cur[i] = static_cast<double>(static_cast<C>(px[i]));
    Dims cd = xd;
    for (size_t a = 0; a < rank; ++a) {
      if (cd[a] == out_dims[a] && taps[a].size() == static_cast<size_t>(cd[a]) &&
          coord != "tf_crop_and_resize" && scales[a] == 1.0)
        continue;
      cur = resample_axis(cur, cd, a, out_dims[a], taps[a]);
      cd[a] = out_dims[a];
    }
    T* py = ctx.allocate_as<T>(0, dtype_of(x), out_dims);
    const int64_t total = num_elements(out_dims);
    const bool crop = coord == "tf_crop_and_resize";
    Dims idx(rank, 0);
    for (int64_t i = 0; i < total; ++i) {
      bool out_of_range = false;
      if (crop) {
        for (size_t a = 0; a < rank; ++a) out_of_range = out_of_range || outside[a][idx[a]];
        for (size_t a = rank; a-- > 0;) {
          if (++idx[a] < out_dims[a]) break;
          idx[a] = 0;
        }
      }
      double v = out_of_range ? extrapolation : cur[i];
      if constexpr (std::is_integral_v<C>) v = std::nearbyint(v);
      py[i] = T(static_cast<C>(v));
    }
    return Status::ok();
  });
}

Status Resize(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  const size_t rank = xd.size();
  std::vector<double> scales;
  Dims out(rank);
  const size_t scales_input = ctx.opset < 11 ? 1 : 2;
  if (ctx.opset >= 11 && ctx.has_input(3) && num_elements(dims_of(ctx.in(3))) > 0) {
    Dims sizes = to_int64s(ctx.in(3));
    auto axes = ctx.attr_ints("axes");
    Dims full = xd;
    if (axes) {
      for (size_t i = 0; i < axes->size(); ++i) {
        int64_t a = (*axes)[i];
        if (!normalize_axis(&a, static_cast<int64_t>(rank))) return ctx.error("axis out of range");
        full[a] = sizes[i];
      }
    } else {
      if (sizes.size() != rank) return ctx.error("sizes must have one entry per dimension");
      full = sizes;
    }
    const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      double s = policy == "not_larger" ? 1e300 : 0;
      std::vector<int64_t> ax;
      if (axes) {
        for (int64_t a : *axes) ax.push_back(a < 0 ? a + static_cast<int64_t>(rank) : a);
      } else {
        for (size_t a = 0; a < rank; ++a) ax.push_back(static_cast<int64_t>(a));
      }
      for (int64_t a : ax) {
        const double r = static_cast<double>(full[a]) / static_cast<double>(xd[a]);
        s = policy == "not_larger" ? std::min(s, r) : std::max(s, r);
      }
      scales.assign(rank, 1.0);
      for (int64_t a : ax) scales[a] = s;
      return resize_impl(ctx, x, scales, ctx.rule_dims(0), false);
    }
    out = full;
    for (size_t a = 0; a < rank; ++a)
      scales.push_back(xd[a] ? static_cast<double>(out[a]) / static_cast<double>(xd[a]) : 1.0);
  } else if (ctx.has_input(scales_input)) {
    const Tensor& st = ctx.in(scales_input);
    auto axes = ctx.attr_ints("axes");
    scales.assign(rank, 1.0);
    const int64_t n = num_elements(dims_of(st));
    if (axes) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t a = (*axes)[i];
        if (!normalize_axis(&a, static_cast<int64_t>(rank))) return ctx.error("axis out of range");
        scales[a] = scalar_as_double(st, i);
      }
    } else {
      if (n != static_cast<int64_t>(rank)) return ctx.error("scales must have one entry per dimension");
      for (int64_t i = 0; i < n; ++i) scales[i] = scalar_as_double(st, i);
    }
    out = ctx.rule_dims(0);  // floor(size * scale), the shape rule's
  } else {
    return ctx.error("needs scales or sizes");
  }
  return resize_impl(ctx, x, scales, out, ctx.opset < 11);
}

Status Upsample(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  std::vector<double> scales;
  if (ctx.has_input(1)) {
    for (int64_t i = 0; i < num_elements(dims_of(ctx.in(1))); ++i)
      scales.push_back(scalar_as_double(ctx.in(1), i));
  } else if (auto s = ctx.attr_floats("scales")) {
    scales.assign(s->begin(), s->end());
  }
  if (scales.size() != xd.size()) return ctx.error("scales must have one entry per dimension");
  return resize_impl(ctx, x, scales, ctx.rule_dims(0), true);
}

// GridSample (opset 16, 2-D): X [N,C,H,W] sampled at grid [N,Ho,Wo,2] (x, y in [-1, 1]).
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// GridSample's bicubic sample at (fx, fy): the 4x4 neighbourhood weighted by the cubic convolution kernel
// (A = -0.75, as ONNX's reference); `pixel` applies the padding mode.
template <class Pixel>
double bicubic_sample(double fx, double fy, const Pixel& pixel) {
  const double x0 = std::floor(fx), y0 = std::floor(fy), tx = fx - x0, ty = fy - y0;
  auto cubic = [](double t, double out[4]) {
    const double A = -0.75;
    auto near = [&](double z) { return ((A + 2) * z - (A + 3)) * z * z + 1; };
    auto far = [&](double z) { return ((A * z - 5 * A) * z + 8 * A) * z - 4 * A; };
    out[0] = far(t + 1);
    out[1] = near(t);
    out[2] = near(1 - t);
    out[3] = far(2 - t);
  };
  double wx[4], wy[4];
  cubic(tx, wx);
  cubic(ty, wy);
  double v = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      v += wy[a] * wx[b] * pixel(static_cast<int64_t>(y0) - 1 + a, static_cast<int64_t>(x0) - 1 + b);
  return v;
}

Status GridSample(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& grid = ctx.in(1);
  const Dims& xd = dims_of(x);
  const Dims& gd = dims_of(grid);
  if (xd.size() != 4) return ctx.unsupported("GridSample on other than 4-D inputs is not supported");
  if (gd.size() != 4 || gd[0] != xd[0] || gd[3] != 2) return ctx.error("grid must be [N, H_out, W_out, 2]");
  const std::string mode = ctx.attr_string("mode", "bilinear"),
                    padding = ctx.attr_string("padding_mode", "zeros");
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return ctx.unsupported("mode '" + mode + "'");
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return ctx.unsupported("padding_mode '" + padding + "'");
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], Ho = gd[1], Wo = gd[2];
  const std::vector<double> g = to_doubles(grid);
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), {N, C, Ho, Wo});
    auto unnormalise = [&](double v, int64_t size) {
      return align ? (v + 1) / 2 * static_cast<double>(size - 1)
                   : ((v + 1) * static_cast<double>(size) - 1) / 2;
    };
    // Where a coordinate lands under the padding mode (zeros: unchanged; the caller treats outside as 0).
    auto pad_coordinate = [&](double v, int64_t size) {
      if (padding == "border") return std::clamp(v, 0.0, static_cast<double>(size - 1));
      if (padding == "reflection") {
        v = align ? reflect(v, 0, static_cast<double>(size - 1))
                  : reflect(v, -0.5, static_cast<double>(size) - 0.5);
        return std::clamp(v, 0.0, static_cast<double>(size - 1));
      }
      return v;
    };
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = px + (n * C + c) * H * W;
        auto pixel = [&](int64_t yy, int64_t xx) -> double {
          if (padding != "zeros") {
            yy = static_cast<int64_t>(pad_coordinate(static_cast<double>(yy), H));
            xx = static_cast<int64_t>(pad_coordinate(static_cast<double>(xx), W));
          }
          if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0.0;
          return static_cast<double>(static_cast<Cm>(plane[yy * W + xx]));
        };
        for (int64_t i = 0; i < Ho * Wo; ++i) {
          const double* gp = g.data() + ((n * Ho * Wo) + i) * 2;
          double fx = unnormalise(gp[0], W), fy = unnormalise(gp[1], H);
          double v = 0;
          if (mode == "bicubic") {
            v = bicubic_sample(fx, fy, pixel);
          } else {
            fx = pad_coordinate(fx, W);
            fy = pad_coordinate(fy, H);
            if (mode == "nearest") {
              v = pixel(static_cast<int64_t>(std::nearbyint(fy)), static_cast<int64_t>(std::nearbyint(fx)));
            } else {
              const double x0 = std::floor(fx), y0 = std::floor(fy), tx = fx - x0, ty = fy - y0;
              const auto ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
              v = (1 - ty) * ((1 - tx) * pixel(iy, ix) + tx * pixel(iy, ix + 1)) +
                  ty * ((1 - tx) * pixel(iy + 1, ix) + tx * pixel(iy + 1, ix + 1));
            }
          }
          py[(n * C + c) * Ho * Wo + i] = T(static_cast<Cm>(v));
        }
      }
    return Status::ok();
  });
}

// RoiAlign (opsets 10 and 16): average or max of bilinear samples per bin, as ONNX's reference (and
// onnxruntime) compute them, max mode included (the max of the four weighted corners per sample).
// RoiAlign's bilinear sample at (yy, xx): the four neighbours' weighted values summed (avg) or their largest
// weighted value (max); 0 outside [-1, H] x [-1, W]. ONNX's reference clamps the way this does.
template <class At>
double roi_sample(double yy, double xx, int64_t H, int64_t W, bool avg, const At& at) {
  if (yy < -1.0 || yy > static_cast<double>(H) || xx < -1.0 || xx > static_cast<double>(W)) return 0;
  yy = std::max(yy, 0.0);
  xx = std::max(xx, 0.0);
  auto ylo = static_cast<int64_t>(yy), xlo = static_cast<int64_t>(xx);
  int64_t yhi, xhi;
  if (ylo >= H - 1) {
    yhi = ylo = H - 1;
    yy = static_cast<double>(ylo);
  } else {
    yhi = ylo + 1;
  }
  if (xlo >= W - 1) {
    xhi = xlo = W - 1;
    xx = static_cast<double>(xlo);
  } else {
    xhi = xlo + 1;
  }
  const double ly = yy - static_cast<double>(ylo), lx = xx - static_cast<double>(xlo);
  const double w1 = (1 - ly) * (1 - lx), w2 = (1 - ly) * lx, w3 = ly * (1 - lx), w4 = ly * lx;
  const double v1 = w1 * at(ylo, xlo), v2 = w2 * at(ylo, xhi), v3 = w3 * at(yhi, xlo), v4 = w4 * at(yhi, xhi);
  return avg ? v1 + v2 + v3 + v4 : std::max(std::max(v1, v2), std::max(v3, v4));
}

Status RoiAlign(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  const Dims& rd = dims_of(ctx.in(1));
  if (xd.size() != 4 || rd.size() != 2 || rd[1] != 4) return ctx.error("X must be [N,C,H,W] and rois [R,4]");
  const int64_t R = rd[0], N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  const std::vector<double> rois = to_doubles(ctx.in(1));
  const std::vector<int64_t> batch = to_int64s(ctx.in(2));
  if (static_cast<int64_t>(batch.size()) != R) return ctx.error("batch_indices needs one entry per roi");
  const int64_t oh = ctx.attr_int("output_height", 1), ow = ctx.attr_int("output_width", 1);
  const int64_t ratio = ctx.attr_int("sampling_ratio", 0);
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const bool avg = ctx.attr_string("mode", "avg") == "avg";
  const bool half_pixel =
      ctx.attr_string("coordinate_transformation_mode",
                      ctx.opset >= 16 ? "half_pixel" : "output_half_pixel") == "half_pixel";
  if (oh <= 0 || ow <= 0) return ctx.error("output_height and output_width must be positive");
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), {R, C, oh, ow});
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = batch[r];
      if (b < 0 || b >= N) return ctx.error("batch index " + std::to_string(b) + " out of range");
      const double offset = half_pixel ? 0.5 : 0.0;
      const double x0 = rois[r * 4] * scale - offset, y0 = rois[r * 4 + 1] * scale - offset;
      const double x1 = rois[r * 4 + 2] * scale - offset, y1 = rois[r * 4 + 3] * scale - offset;
      double rw = x1 - x0, rh = y1 - y0;
      if (!half_pixel) {
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
      }
      const double bh = rh / static_cast<double>(oh), bw = rw / static_cast<double>(ow);
      const int64_t gh = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rh / static_cast<double>(oh)));
      const int64_t gw = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(rw / static_cast<double>(ow)));
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      for (int64_t c = 0; c < C; ++c) {
        const T* plane = px + (b * C + c) * H * W;
        auto at = [&](int64_t yy, int64_t xx) {
          return static_cast<double>(static_cast<Cm>(plane[yy * W + xx]));
        };
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw) {
            double acc = 0;
            bool first = true;
            for (int64_t iy = 0; iy < gh; ++iy)
              for (int64_t ix = 0; ix < gw; ++ix) {
                const double yy = y0 + static_cast<double>(ph) * bh +
                                  (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
                const double xx = x0 + static_cast<double>(pw) * bw +
                                  (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
                const double v = roi_sample(yy, xx, H, W, avg, at);
                if (avg) {
                  acc += v;
                } else {
                  acc = first ? v : std::max(acc, v);
                  first = false;
                }
              }
            py[((r * C + c) * oh + ph) * ow + pw] = T(static_cast<Cm>(avg ? acc / count : acc));
          }
      }
    }
    return Status::ok();
  });
}

}  // namespace

void register_resampling(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"GridSample", GridSample},
                          {"Resize", Resize},
                          {"RoiAlign", RoiAlign},
                          {"Upsample", Upsample},
                      });
}

}  // namespace graphsplit::kernels
