// Normalisation kernels: BatchNormalization, InstanceNormalization, LayerNormalization, LRN.
#include <algorithm>
#include <cmath>

#include "broadcast.h"
#include "kernel.h"

namespace graphsplit::kernels {
namespace {

// Inputs first..last hold at least one value per channel (scale, bias, mean, variance).
Status check_per_channel(KernelContext& ctx, size_t first, size_t last, int64_t channels) {
  for (size_t i = first; i <= last; ++i)
    if (!ctx.has_input(i) || num_elements(dims_of(ctx.in(i))) < channels)
      return ctx.error("input " + std::to_string(i) + " must hold one value per channel (" +
                       std::to_string(channels) + ")");
  return Status::ok();
}

// Training mode: normalise with the batch's own per-channel mean and (population) variance, and return the
// running statistics blended with them by `momentum`.
Status batch_norm_training(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  const double eps = ctx.attr_float("epsilon", 1e-5f), momentum = ctx.attr_float("momentum", 0.9f);
  const int64_t N = xd[0], C = xd[1], inner = num_elements(Dims(xd.begin() + 2, xd.end()));
  GS_RETURN_IF_ERROR(check_per_channel(ctx, 1, 4, C));
  const std::vector<double> v = to_doubles(x);
  std::vector<double> mean(C, 0.0), var(C, 0.0);
  const double count = static_cast<double>(N * inner);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) mean[c] += v[(n * C + c) * inner + i];
    mean[c] /= count;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) var[c] += std::pow(v[(n * C + c) * inner + i] - mean[c], 2);
    var[c] /= count;
  }
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    T* py = ctx.allocate_as<T>(0, dtype_of(x), xd);
    for (int64_t c = 0; c < C; ++c) {
      const double a = scalar_as_double(ctx.in(1), c) / std::sqrt(var[c] + eps);
      const double b = scalar_as_double(ctx.in(2), c) - mean[c] * a;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t k = (n * C + c) * inner + i;
          py[k] = T(static_cast<Cm>(v[k] * a + b));
        }
    }
    for (size_t o = 1; o <= 2 && o < ctx.num_outputs(); ++o) {
      const Tensor& running = ctx.in(o + 2);
      T* out = ctx.allocate_as<T>(o, dtype_of(running), {C});
      for (int64_t c = 0; c < C; ++c) {
        const double batch = o == 1 ? mean[c] : var[c];
        out[c] = T(static_cast<Cm>(scalar_as_double(running, c) * momentum + batch * (1 - momentum)));
      }
    }
    return Status::ok();
  });
}

Status BatchNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  if (xd.size() < 2) return ctx.error("input must have rank >= 2");
  if (ctx.attr_int("training_mode", 0) != 0) return batch_norm_training(ctx);
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  const int64_t N = xd[0], C = xd[1], inner = num_elements(Dims(xd.begin() + 2, xd.end()));
  GS_RETURN_IF_ERROR(check_per_channel(ctx, 1, 4, C));
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), xd);
    const int64_t per_channel = std::max<int64_t>(1, N * inner);
    parallel_for(C, std::max<int64_t>(1, 64 * 1024 / per_channel), [&](int64_t first, int64_t last) {
      for (int64_t c = first; c < last; ++c) {
        const double scale = scalar_as_double(ctx.in(1), c), bias = scalar_as_double(ctx.in(2), c);
        const double mean = scalar_as_double(ctx.in(3), c), var = scalar_as_double(ctx.in(4), c);
        const double a = scale / std::sqrt(var + eps), b = bias - mean * a;
        // Float data in float (the factors rounded once): twice the vector width of double and no
        // conversions.
        using Mul = std::conditional_t<std::is_same_v<Cm, float>, float, double>;
        const auto ma = static_cast<Mul>(a), mb = static_cast<Mul>(b);
        for (int64_t n = 0; n < N; ++n) {
          const T* __restrict src = px + (n * C + c) * inner;
          T* __restrict dst = py + (n * C + c) * inner;
          for (int64_t i = 0; i < inner; ++i)
            dst[i] = T(static_cast<Cm>(static_cast<Mul>(static_cast<Cm>(src[i])) * ma + mb));
        }
      }
    });
    return Status::ok();
  });
}

// Elements per thread below which more threads cost more than they save.
constexpr int64_t kRowGrain = 64 * 1024;

// The mean and the variance about it of n values, each sum kept in eight running sums combined in a fixed
// order: vectorisable (a single running sum is a chain of dependent additions), and the same bits on every
// run and thread count.
template <class Cm, class T>
std::pair<double, double> mean_and_variance(const T* src, int64_t n) {
  constexpr int64_t kLanes = 8;
  auto lane_sum = [&](auto&& value) {
    double lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lanes[l] += value(i + l);
    for (; i < n; ++i) lanes[i % kLanes] += value(i);
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
  };
  const double mean = lane_sum([&](int64_t i) { return static_cast<double>(static_cast<Cm>(src[i])); }) /
                      static_cast<double>(n);
  const double var = lane_sum([&](int64_t i) {
                       const double d = static_cast<double>(static_cast<Cm>(src[i])) - mean;
                       return d * d;
                     }) /
                     static_cast<double>(n);
  return {mean, var};
}

Status InstanceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  if (xd.size() < 3) return ctx.error("input must have rank >= 3");
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  const int64_t N = xd[0], C = xd[1], inner = num_elements(Dims(xd.begin() + 2, xd.end()));
  GS_RETURN_IF_ERROR(check_per_channel(ctx, 1, 2, C));
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), xd);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        const T* src = px + (n * C + c) * inner;
        const auto [mean, var] = mean_and_variance<Cm>(src, inner);
        const double a = scalar_as_double(ctx.in(1), c) / std::sqrt(var + eps);
        const double b = scalar_as_double(ctx.in(2), c);
        T* dst = py + (n * C + c) * inner;
        for (int64_t i = 0; i < inner; ++i)
          dst[i] = T(static_cast<Cm>((static_cast<double>(static_cast<Cm>(src[i])) - mean) * a + b));
      }
    return Status::ok();
  });
}

Status LayerNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  int64_t axis = ctx.attr_int("axis", -1);
  if (!normalize_axis(&axis, static_cast<int64_t>(xd.size()))) return ctx.error("axis out of range");
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < static_cast<int64_t>(xd.size()); ++a) (a < axis ? outer : inner) *= xd[a];
  Dims stat_dims = xd;
  for (size_t a = axis; a < xd.size(); ++a) stat_dims[a] = 1;
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    const Tensor& scale = ctx.in(1);
    const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
    const Dims inner_dims(xd.begin() + axis, xd.end());
    std::vector<double> sc(static_cast<size_t>(inner)), bi(static_cast<size_t>(inner), 0.0);
    // scale and bias broadcast to the normalised dimensions
    for_each_broadcast2(inner_dims, dims_of(scale), inner_dims,
                        [&](int64_t o, int64_t i, int64_t) { sc[o] = scalar_as_double(scale, i); });
    if (bias)
      for_each_broadcast2(inner_dims, dims_of(*bias), inner_dims,
                          [&](int64_t o, int64_t i, int64_t) { bi[o] = scalar_as_double(*bias, i); });
    T* py = ctx.allocate_as<T>(0, dtype_of(x), xd);
    const DataType stat_type = static_cast<DataType>(ctx.attr_int("stash_type", 1)) == DataType::kFloat
                                   ? DataType::kFloat
                                   : dtype_of(x);
    float* pm = ctx.num_outputs() > 1 ? ctx.allocate_as<float>(1, DataType::kFloat, stat_dims) : nullptr;
    float* pr = ctx.num_outputs() > 2 ? ctx.allocate_as<float>(2, DataType::kFloat, stat_dims) : nullptr;
    (void)stat_type;
    // Rows are independent: split over the threads, each computed the same way whoever computes it.
    const int64_t grain = std::max<int64_t>(1, kRowGrain / std::max<int64_t>(1, inner));
    parallel_for(outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* src = px + r * inner;
        const auto [mean, var] = mean_and_variance<Cm>(src, inner);
        const double inv = 1.0 / std::sqrt(var + eps);
        T* dst = py + r * inner;
        for (int64_t i = 0; i < inner; ++i)
          dst[i] =
              T(static_cast<Cm>((static_cast<double>(static_cast<Cm>(src[i])) - mean) * inv * sc[i] + bi[i]));
        if (pm) pm[r] = static_cast<float>(mean);
        if (pr) pr[r] = static_cast<float>(inv);
      }
    });
    return Status::ok();
  });
}

Status LRN(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  const float alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f),
              bias = ctx.attr_float("bias", 1.0f);
  const int64_t size = ctx.attr_int("size", 1);
  if (xd.size() < 3) return ctx.error("input must have rank >= 3");
  const int64_t N = xd[0], C = xd[1], inner = num_elements(Dims(xd.begin() + 2, xd.end()));
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), xd);
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(C - 1, c + hi); ++k) {
            const double v = static_cast<double>(static_cast<Cm>(px[(n * C + k) * inner + i]));
            sq += v * v;
          }
          const double v = static_cast<double>(static_cast<Cm>(px[(n * C + c) * inner + i]));
          py[(n * C + c) * inner + i] =
              T(static_cast<Cm>(v / std::pow(bias + alpha / static_cast<double>(size) * sq, beta)));
        }
    return Status::ok();
  });
}

}  // namespace

void register_normalization(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"BatchNormalization", BatchNormalization},
                          {"InstanceNormalization", InstanceNormalization},
                          {"LRN", LRN},
                          {"LayerNormalization", LayerNormalization},
                      });
}

}  // namespace graphsplit::kernels
