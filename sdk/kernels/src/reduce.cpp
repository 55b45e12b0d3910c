// Reductions, arg-reductions, Softmax family, CumSum.
#include <algorithm>
#include <limits>

#include "dnnl.h"
#include "kernel.h"

namespace graphsplit::kernels {
namespace {

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// Output index of every input element (reduced axes collapsed).
struct ReducePlan {
  Dims out_dims;       // with keepdims
  Dims out_dims_kept;  // as returned
  std::vector<bool> reduced;
  int64_t reduce_count = 1;
};

Status plan_reduce(KernelContext& ctx, const Dims& d, std::vector<int64_t> axes, ReducePlan* p) {
  const auto rank = static_cast<int64_t>(d.size());
  const bool keep = ctx.attr_int("keepdims", 1) != 0;
  const bool noop = ctx.attr_int("noop_with_empty_axes", 0) != 0;
  p->reduced.assign(d.size(), false);
  if (axes.empty() && !noop) {
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  }
  for (int64_t a : axes) {
    if (!normalize_axis(&a, rank)) return ctx.error("axis out of range");
    p->reduced[a] = true;
  }
  for (int64_t a = 0; a < rank; ++a) {
    p->out_dims.push_back(p->reduced[a] ? 1 : d[a]);
    if (p->reduced[a]) p->reduce_count *= d[a];
    if (!p->reduced[a] || keep) p->out_dims_kept.push_back(p->reduced[a] ? 1 : d[a]);
  }
  return Status::ok();
}

template <class F>
void for_each_reduce(const Dims& d, const ReducePlan& p, F&& f) {
  const int64_t total = num_elements(d);
  const size_t rank = d.size();
  std::vector<int64_t> step(rank, 0), idx(rank, 0);
  int64_t stride = 1;
  for (size_t a = rank; a-- > 0;) {
    step[a] = p.reduced[a] ? 0 : stride;
    stride *= p.out_dims[a];
  }
  int64_t o = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, o);
    for (size_t a = rank; a-- > 0;) {
      ++idx[a];
      o += step[a];
      if (idx[a] < d[a]) break;
      o -= step[a] * d[a];
      idx[a] = 0;
    }
  }
}

Status reduce(KernelContext& ctx, Reduce kind) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1))
    axes = to_int64s(ctx.in(1));
  else
    axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{});
  ReducePlan p;
  GS_RETURN_IF_ERROR(plan_reduce(ctx, dims_of(x), axes, &p));
  if (axes.empty() && ctx.attr_int("noop_with_empty_axes", 0) != 0) {
    ctx.set_output_copy(0, x, dims_of(x));
    return Status::ok();
  }
  return visit_arith(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<is_floatish<T>(), double, Compute<T>>;
    const T* in = data_as<T>(x);
    const int64_t n_out = num_elements(p.out_dims);
    std::vector<Acc> acc(static_cast<size_t>(n_out));
    const bool extremum = kind == Reduce::kMax || kind == Reduce::kMin;
    if (extremum && p.reduce_count == 0) return ctx.error("reducing an empty dimension with Max/Min");
    Acc init = kind == Reduce::kProd ? Acc(1) : Acc(0);
    if (kind == Reduce::kMax) init = std::numeric_limits<Acc>::lowest();
    if (kind == Reduce::kMin) init = std::numeric_limits<Acc>::max();
    std::fill(acc.begin(), acc.end(), init);
    std::vector<Acc> shift;
    if (kind == Reduce::kLogSumExp) {  // subtract the max for stability
      shift.assign(acc.size(), std::numeric_limits<Acc>::lowest());
      for_each_reduce(dims_of(x), p, [&](int64_t i, int64_t o) {
        shift[o] = std::max(shift[o], static_cast<Acc>(static_cast<Compute<T>>(in[i])));
      });
    }
    for_each_reduce(dims_of(x), p, [&](int64_t i, int64_t o) {
      const Acc v = static_cast<Acc>(static_cast<Compute<T>>(in[i]));
      switch (kind) {
        case Reduce::kSum:
        case Reduce::kMean:
        case Reduce::kLogSum:
          acc[o] += v;
          break;
        case Reduce::kMax:
          acc[o] = std::max(acc[o], v);
          break;
        case Reduce::kMin:
          acc[o] = std::min(acc[o], v);
          break;
        case Reduce::kProd:
          acc[o] *= v;
          break;
        case Reduce::kL1:
          acc[o] += v < 0 ? static_cast<Acc>(-v) : v;
          break;
        case Reduce::kL2:
        case Reduce::kSumSquare:
          acc[o] += v * v;
          break;
        case Reduce::kLogSumExp:
          acc[o] += static_cast<Acc>(std::exp(static_cast<double>(v - shift[o])));
          break;
      }
    });
    T* out = ctx.allocate_as<T>(0, dtype_of(x), p.out_dims_kept);
    for (int64_t o = 0; o < n_out; ++o) {
      double v = static_cast<double>(acc[o]);
      if (kind == Reduce::kMean) v = p.reduce_count ? v / static_cast<double>(p.reduce_count) : std::nan("");
      if (kind == Reduce::kL2) v = std::sqrt(v);
      if (kind == Reduce::kLogSum) v = std::log(v);
      if (kind == Reduce::kLogSumExp) v = std::log(v) + static_cast<double>(shift[o]);
      if constexpr (is_floatish<T>())
        out[o] = T(static_cast<Compute<T>>(v));
      else
        out[o] = kind == Reduce::kMean ? static_cast<T>(v) : static_cast<T>(acc[o]);
    }
    return Status::ok();
  });
}

#define GS_REDUCE(name, kind)         \
  Status name(KernelContext& ctx) {   \
    return reduce(ctx, Reduce::kind); \
  }
GS_REDUCE(ReduceSum, kSum)
GS_REDUCE(ReduceMean, kMean)
GS_REDUCE(ReduceMax, kMax)
GS_REDUCE(ReduceMin, kMin)
GS_REDUCE(ReduceProd, kProd)
GS_REDUCE(ReduceL1, kL1)
GS_REDUCE(ReduceL2, kL2)
GS_REDUCE(ReduceLogSum, kLogSum)
GS_REDUCE(ReduceLogSumExp, kLogSumExp)
GS_REDUCE(ReduceSumSquare, kSumSquare)
#undef GS_REDUCE

Status arg_reduce(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  const bool keep = ctx.attr_int("keepdims", 1) != 0, last = ctx.attr_int("select_last_index", 0) != 0;
  if (d[axis] == 0) return ctx.error("arg-reduction over an empty dimension");
  Dims out;
  for (size_t a = 0; a < d.size(); ++a) {
    if (static_cast<int64_t>(a) != axis)
      out.push_back(d[a]);
    else if (keep)
      out.push_back(1);
  }
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  return visit_numeric(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    int64_t* o = ctx.allocate_as<int64_t>(0, DataType::kInt64, out);
    for (int64_t r = 0; r < outer; ++r) {
      for (int64_t k = 0; k < inner; ++k) {
        int64_t best = 0;
        C bv = static_cast<C>(in[r * d[axis] * inner + k]);
        for (int64_t j = 1; j < d[axis]; ++j) {
          const C v = static_cast<C>(in[(r * d[axis] + j) * inner + k]);
          const bool better = max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
          if (better) {
            bv = v;
            best = j;
          }
        }
        o[r * inner + k] = best;
      }
    }
    return Status::ok();
  });
}
Status ArgMax(KernelContext& ctx) {
  return arg_reduce(ctx, true);
}
Status ArgMin(KernelContext& ctx) {
  return arg_reduce(ctx, false);
}

enum class SoftKind { kSoftmax, kLogSoftmax, kHardmax };

Status softmax(KernelContext& ctx, SoftKind kind) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const auto rank = static_cast<int64_t>(d.size());
  int64_t axis = ctx.attr_int("axis", ctx.opset < 13 ? 1 : -1);
  if (!normalize_axis(&axis, rank)) return ctx.error("axis out of range");
  // Before opset 13 the input is coerced to 2-D at `axis`; from 13 the axis alone is normalised.
  int64_t outer = 1, n = 1, inner = 1;
  if (ctx.opset < 13) {
    for (int64_t a = 0; a < rank; ++a) (a < axis ? outer : n) *= d[a];
  } else {
    split_at_axis(d, axis, &outer, &inner);
    n = d[axis];
  }
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), d);
    if constexpr (std::is_same_v<T, float>) {
      if (kind != SoftKind::kHardmax && outer * n * inner > 0) {
        const dnnl_path::SoftmaxSpec spec{{outer, n, inner}, 1, kind == SoftKind::kLogSoftmax};
        if (dnnl_path::softmax_f32(ctx, spec, in, out)) return Status::ok();
      }
    }
    std::vector<C> row(static_cast<size_t>(n));
    for (int64_t r = 0; r < outer; ++r) {
      for (int64_t k = 0; k < inner; ++k) {
        const int64_t base = r * n * inner + k;
        C m = std::numeric_limits<C>::lowest();
        int64_t arg = 0;
        for (int64_t j = 0; j < n; ++j) {
          row[j] = static_cast<C>(in[base + j * inner]);
          if (row[j] > m) {
            m = row[j];
            arg = j;
          }
        }
        if (kind == SoftKind::kHardmax) {
          for (int64_t j = 0; j < n; ++j) out[base + j * inner] = T(C(j == arg ? 1 : 0));
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(row[j] - m));
        for (int64_t j = 0; j < n; ++j) {
          const double v = kind == SoftKind::kSoftmax ? std::exp(static_cast<double>(row[j] - m)) / sum
                                                      : static_cast<double>(row[j] - m) - std::log(sum);
          out[base + j * inner] = T(static_cast<C>(v));
        }
      }
    }
    return Status::ok();
  });
}
Status Softmax(KernelContext& ctx) {
  return softmax(ctx, SoftKind::kSoftmax);
}
Status LogSoftmax(KernelContext& ctx) {
  return softmax(ctx, SoftKind::kLogSoftmax);
}
Status Hardmax(KernelContext& ctx) {
  return softmax(ctx, SoftKind::kHardmax);
}

Status CumSum(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (num_elements(dims_of(ctx.in(1))) != 1) return ctx.error("axis must be a scalar");
  int64_t axis = static_cast<int64_t>(scalar_as_double(ctx.in(1)));
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  return visit_arith(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), d);
    for (int64_t r = 0; r < outer; ++r) {
      for (int64_t k = 0; k < inner; ++k) {
        C sum = 0;
        for (int64_t j0 = 0; j0 < d[axis]; ++j0) {
          const int64_t j = reverse ? d[axis] - 1 - j0 : j0;
          const int64_t at = (r * d[axis] + j) * inner + k;
          const C v = static_cast<C>(in[at]);
          if (exclusive) {
            out[at] = T(sum);
            sum += v;
          } else {
            sum += v;
            out[at] = T(sum);
          }
        }
      }
    }
    return Status::ok();
  });
}

// NegativeLogLikelihoodLoss on log-probabilities [N, C, d...] (as doubles) with targets [N, d...].
Status nll(KernelContext& ctx, const std::vector<double>& logp, const Dims& d, const Tensor& target_t,
           const Tensor* weight, DataType out_type) {
  if (d.size() < 2) return ctx.error("input must have rank >= 2");
  const int64_t N = d[0], C = d[1], inner = num_elements(Dims(d.begin() + 2, d.end()));
  const std::vector<int64_t> target = to_int64s(target_t);
  if (static_cast<int64_t>(target.size()) != N * inner) return ctx.error("target does not match the input");
  if (weight && num_elements(dims_of(*weight)) != C) return ctx.error("weight needs one value per class");
  const std::string reduction = ctx.attr_string("reduction", "mean");
  const bool has_ignore = ctx.node->attrs().has("ignore_index");
  const int64_t ignore = ctx.attr_int("ignore_index", 0);
  std::vector<double> loss(target.size(), 0.0);
  double weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t t = target[n * inner + i];
      if (has_ignore && t == ignore) continue;
      if (t < 0 || t >= C)
        return ctx.error("target " + std::to_string(t) + " is not a class in [0, " + std::to_string(C) + ")");
      const double w = weight ? scalar_as_double(*weight, static_cast<size_t>(t)) : 1.0;
      loss[n * inner + i] = -logp[(n * C + t) * inner + i] * w;
      weight_sum += w;
    }
  return visit_float(out_type, [&](auto tag) {
    using T = decltype(tag);
    using Cm = Compute<T>;
    if (reduction == "none") {
      Dims out = {N};
      out.insert(out.end(), d.begin() + 2, d.end());
      T* o = ctx.allocate_as<T>(0, out_type, out);
      for (size_t k = 0; k < loss.size(); ++k) o[k] = T(static_cast<Cm>(loss[k]));
      return Status::ok();
    }
    double total = 0;
    for (double v : loss) total += v;
    if (reduction == "mean")
      total = weight_sum == 0 ? 0 : total / weight_sum;
    else if (reduction != "sum")
      return ctx.error("unknown reduction '" + reduction + "'");
    *ctx.allocate_as<T>(0, out_type, {}) = T(static_cast<Cm>(total));
    return Status::ok();
  });
}

Status NegativeLogLikelihoodLoss(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (!is_floatish_type(dtype_of(x))) return ctx.error("input must be floating point");
  return nll(ctx, to_doubles(x), dims_of(x), ctx.in(1), ctx.has_input(2) ? &ctx.in(2) : nullptr, dtype_of(x));
}

Status SoftmaxCrossEntropyLoss(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (!is_floatish_type(dtype_of(x))) return ctx.error("scores must be floating point");
  if (d.size() < 2) return ctx.error("scores must have rank >= 2");
  const int64_t N = d[0], C = d[1], inner = num_elements(Dims(d.begin() + 2, d.end()));
  std::vector<double> v = to_doubles(x);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, sum = 0;
      for (int64_t c = 0; c < C; ++c) m = std::max(m, v[(n * C + c) * inner + i]);
      for (int64_t c = 0; c < C; ++c) sum += std::exp(v[(n * C + c) * inner + i] - m);
      const double lse = m + std::log(sum);
      for (int64_t c = 0; c < C; ++c) v[(n * C + c) * inner + i] -= lse;
    }
  GS_RETURN_IF_ERROR(nll(ctx, v, d, ctx.in(1), ctx.has_input(2) ? &ctx.in(2) : nullptr, dtype_of(x)));
  if (ctx.num_outputs() > 1) {
    return visit_float(dtype_of(x), [&](auto tag) {
      using T = decltype(tag);
      T* o = ctx.allocate_as<T>(1, dtype_of(x), d);
      for (size_t k = 0; k < v.size(); ++k) o[k] = T(static_cast<Compute<T>>(v[k]));
      return Status::ok();
    });
  }
  return Status::ok();
}

}  // namespace

void register_reductions(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"ArgMax", ArgMax},
                          {"ArgMin", ArgMin},
                          {"CumSum", CumSum},
                          {"Hardmax", Hardmax},
                          {"LogSoftmax", LogSoftmax},
                          {"NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss},
                          {"ReduceL1", ReduceL1},
                          {"ReduceL2", ReduceL2},
                          {"ReduceLogSum", ReduceLogSum},
                          {"ReduceLogSumExp", ReduceLogSumExp},
                          {"ReduceMax", ReduceMax},
                          {"ReduceMean", ReduceMean},
                          {"ReduceMin", ReduceMin},
                          {"ReduceProd", ReduceProd},
                          {"ReduceSum", ReduceSum},
                          {"ReduceSumSquare", ReduceSumSquare},
                          {"Softmax", Softmax},
                          {"SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss},
                      });
}

}  // namespace graphsplit::kernels
