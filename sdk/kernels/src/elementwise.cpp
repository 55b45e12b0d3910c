// Elementwise kernels: unary math and activations, broadcasting arithmetic, comparisons, logic, Cast, Clip,
// Where and the variadic Min/Max/Sum/Mean.
#include <algorithm>
#include <limits>

#include "broadcast.h"
#include "kernel.h"
#include "scalar_ops.h"

namespace graphsplit::kernels {

float leaky_relu_alpha(const KernelContext& ctx) {
  return ctx.attr_float("alpha", 0.01f);
}
std::pair<float, float> hard_sigmoid_params(const KernelContext& ctx) {
  return {ctx.attr_float("alpha", 0.2f), ctx.attr_float("beta", 0.5f)};
}

namespace {

// Elementwise loops split over threads only above this many values: below it, waking a thread costs more.
constexpr int64_t kParallelGrain = 64 * 1024;

// ---- unary
// y = op(x) elementwise, computed in Compute<T> (double stays double); `visit` picks the admitted types.
template <class Visit, class Op>
Status unary(KernelContext& ctx, Visit visit, Op op) {
  const Tensor& x = ctx.in(0);
  return visit(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), dims_of(x));
    const int64_t n = num_elements(dims_of(x));
    parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[i] = T(static_cast<C>(op(static_cast<C>(in[i]))));
    });
    return Status::ok();
  });
}
template <class Op>
Status unary_float_exact(KernelContext& ctx, Op op) {
  return unary(
      ctx, [](DataType t, auto&& f) { return visit_float(t, f); }, op);
}
template <class Op>
Status unary_numeric(KernelContext& ctx, Op op) {
  return unary(
      ctx, [](DataType t, auto&& f) { return visit_arith(t, f); }, op);
}

#define GS_UNARY_FLOAT(name, expr)                                              \
  Status name(KernelContext& ctx) {                                             \
    return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return expr; }); \
  }

GS_UNARY_FLOAT(Exp, std::exp(v))
GS_UNARY_FLOAT(Log, std::log(v))
GS_UNARY_FLOAT(Sqrt, std::sqrt(v))
GS_UNARY_FLOAT(Reciprocal, 1 / v)
GS_UNARY_FLOAT(Floor, std::floor(v))
GS_UNARY_FLOAT(Ceil, std::ceil(v))
GS_UNARY_FLOAT(Round, std::nearbyint(v))
GS_UNARY_FLOAT(Sin, std::sin(v))
GS_UNARY_FLOAT(Cos, std::cos(v))
GS_UNARY_FLOAT(Tan, std::tan(v))
GS_UNARY_FLOAT(Asin, std::asin(v))
GS_UNARY_FLOAT(Acos, std::acos(v))
GS_UNARY_FLOAT(Atan, std::atan(v))
GS_UNARY_FLOAT(Sinh, std::sinh(v))
GS_UNARY_FLOAT(Cosh, std::cosh(v))
GS_UNARY_FLOAT(Asinh, std::asinh(v))
GS_UNARY_FLOAT(Acosh, std::acosh(v))
GS_UNARY_FLOAT(Atanh, std::atanh(v))
GS_UNARY_FLOAT(Erf, std::erf(v))
GS_UNARY_FLOAT(Tanh, std::tanh(v))
GS_UNARY_FLOAT(Softsign, v / (1 + std::abs(v)))
GS_UNARY_FLOAT(Softplus, v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)))
GS_UNARY_FLOAT(Mish, v* std::tanh(v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v))))
#undef GS_UNARY_FLOAT

Status Sigmoid(KernelContext& ctx) {
  return unary_float_exact(ctx, [](auto v) -> decltype(v) { return scalar::sigmoid(v); });
}
Status LeakyRelu(KernelContext& ctx) {
  const float alpha = leaky_relu_alpha(ctx);
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return scalar::leaky_relu(v, alpha); });
}
Status Elu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.0f);
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return v < 0 ? alpha * (std::exp(v) - 1) : v; });
}
Status Celu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.0f);
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) {
    return std::max<decltype(v)>(0, v) + std::min<decltype(v)>(0, alpha * (std::exp(v / alpha) - 1));
  });
}
Status Selu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.67326319217681884765625f);
  const float gamma = ctx.attr_float("gamma", 1.05070102214813232421875f);
  return unary_float_exact(
      ctx, [&](auto v) -> decltype(v) { return v > 0 ? gamma * v : gamma * (alpha * std::exp(v) - alpha); });
}
Status ThresholdedRelu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 1.0f);
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return v > alpha ? v : 0; });
}
Status HardSigmoid(KernelContext& ctx) {
  const auto [alpha, beta] = hard_sigmoid_params(ctx);
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return scalar::hard_sigmoid(v, alpha, beta); });
}
Status HardSwish(KernelContext& ctx) {
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) { return scalar::hard_swish(v); });
}
Status Shrink(KernelContext& ctx) {
  const float bias = ctx.attr_float("bias", 0.0f), lambd = ctx.attr_float("lambd", 0.5f);
  return unary_numeric(ctx, [&](auto v) -> decltype(v) {
    using C = decltype(v);
    if (static_cast<double>(v) < -lambd) return static_cast<C>(v + bias);
    if (static_cast<double>(v) > lambd) return static_cast<C>(v - bias);
    return C(0);
  });
}
Status Gelu(KernelContext& ctx) {
  const std::string approx = ctx.attr_string("approximate", "none");
  return unary_float_exact(ctx, [&](auto v) -> decltype(v) {
    using C = decltype(v);
    if (approx == "tanh")
      return C(0.5) * v * (1 + std::tanh(C(0.7978845608028654) * (v + C(0.044715) * v * v * v)));
    return C(0.5) * v * (1 + std::erf(v / C(1.4142135623730951)));
  });
}
Status Relu(KernelContext& ctx) {
  return unary_numeric(ctx, [](auto v) -> decltype(v) { return scalar::relu(v); });
}
Status Abs(KernelContext& ctx) {
  return unary_numeric(ctx, [](auto v) -> decltype(v) {
    if constexpr (std::is_unsigned_v<decltype(v)>)
      return v;
    else
      return v < 0 ? static_cast<decltype(v)>(-v) : v;
  });
}
Status Neg(KernelContext& ctx) {
  return unary_numeric(ctx, [](auto v) -> decltype(v) { return static_cast<decltype(v)>(-v); });
}
Status Sign(KernelContext& ctx) {
  return unary_numeric(ctx, [](auto v) -> decltype(v) {
    using C = decltype(v);
    return v > C(0) ? C(1) : (v < C(0) ? static_cast<C>(-1) : C(0));
  });
}

template <class Pred>
Status float_predicate(KernelContext& ctx, Pred pred) {
  const Tensor& x = ctx.in(0);
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    const T* in = data_as<T>(x);
    bool* out = ctx.allocate_as<bool>(0, DataType::kBool, dims_of(x));
    const int64_t n = num_elements(dims_of(x));
    for (int64_t i = 0; i < n; ++i) out[i] = pred(static_cast<double>(static_cast<Compute<T>>(in[i])));
    return Status::ok();
  });
}
Status IsNaN(KernelContext& ctx) {
  return float_predicate(ctx, [](double v) { return std::isnan(v); });
}
Status IsInf(KernelContext& ctx) {
  const bool neg = ctx.attr_int("detect_negative", 1) != 0, pos = ctx.attr_int("detect_positive", 1) != 0;
  return float_predicate(ctx, [&](double v) { return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)); });
}
Status Not(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (dtype_of(x) != DataType::kBool) return ctx.error("Not takes bool");
  const bool* in = data_as<bool>(x);
  bool* out = ctx.allocate_as<bool>(0, DataType::kBool, dims_of(x));
  for (int64_t i = 0, n = num_elements(dims_of(x)); i < n; ++i) out[i] = !in[i];
  return Status::ok();
}

// ---- binary with broadcasting
template <class R, bool kAllowBool = false, class Op>
Status binary(KernelContext& ctx, DataType out_type, Op op) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (dtype_of(a) != dtype_of(b)) return ctx.error("input types differ");
  Dims out_dims;
  if (!broadcast_shape(dims_of(a), dims_of(b), &out_dims))
    return ctx.error("shapes " + dims_string(dims_of(a)) + " and " + dims_string(dims_of(b)) +
                     " do not broadcast");
  return visit_numeric<kAllowBool>(dtype_of(a), [&](auto tag) -> Status {
    using T = decltype(tag);
    using C = Compute<T>;
    using Out = std::conditional_t<std::is_same_v<R, void>, T, R>;
    const T* pa = data_as<T>(a);
    const T* pb = data_as<T>(b);
    Out* out = ctx.allocate_as<Out>(0, std::is_same_v<R, void> ? dtype_of(a) : out_type, out_dims);
    Status status;
    // Rows with unit or zero steps get their own loops so that the compiler vectorises them.
    for_each_broadcast_row(
        out_dims, dims_of(a), dims_of(b),
        [&](int64_t o, int64_t i, int64_t ia, int64_t j, int64_t ib, int64_t n) {
          Out* __restrict y = out + o;
          const T* __restrict x0 = pa + i;
          const T* __restrict x1 = pb + j;
          auto f = [&](C u, C v) { return static_cast<Out>(op(u, v, &status)); };
          if (ia == 1 && ib == 1) {
            for (int64_t k = 0; k < n; ++k) y[k] = f(static_cast<C>(x0[k]), static_cast<C>(x1[k]));
          } else if (ia == 1 && ib == 0) {
            const C v = static_cast<C>(x1[0]);
            for (int64_t k = 0; k < n; ++k) y[k] = f(static_cast<C>(x0[k]), v);
          } else if (ia == 0 && ib == 1) {
            const C u = static_cast<C>(x0[0]);
            for (int64_t k = 0; k < n; ++k) y[k] = f(u, static_cast<C>(x1[k]));
          } else {
            for (int64_t k = 0; k < n; ++k) y[k] = f(static_cast<C>(x0[k * ia]), static_cast<C>(x1[k * ib]));
          }
        },
        std::is_floating_point_v<C> ? kParallelGrain : 0);  // integers may set `status`
    return status;
  });
}

Status Add(KernelContext& ctx) {
  return binary<void>(ctx, DataType::kUndefined, [](auto x, auto y, Status*) { return x + y; });
}
Status Sub(KernelContext& ctx) {
  return binary<void>(ctx, DataType::kUndefined, [](auto x, auto y, Status*) { return x - y; });
}
Status Mul(KernelContext& ctx) {
  return binary<void>(ctx, DataType::kUndefined, [](auto x, auto y, Status*) { return x * y; });
}
Status Div(KernelContext& ctx) {
  return binary<void>(ctx, DataType::kUndefined, [](auto x, auto y, Status* s) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) {
        *s = Status::invalid_argument("integer division by zero");
        return 0;
      }
      if constexpr (std::is_signed_v<C>) {
        if (x == std::numeric_limits<C>::min() && y == -1) return x;
      }
    }
    return x / y;
  });
}
Status Mod(KernelContext& ctx) {
  const bool fmod = ctx.attr_int("fmod", 0) != 0;
  return binary<void>(ctx, DataType::kUndefined, [&](auto x, auto y, Status* s) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) {
        *s = Status::invalid_argument("integer modulo by zero");
        return 0;
      }
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return 0;
        C r = x % y;
        if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
      } else {
        return x % y;
      }
    } else {
      C r = std::fmod(x, y);
      if (!fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
  });
}
template <class Op>
Status compare(KernelContext& ctx, Op op) {
  return binary<bool, true>(ctx, DataType::kBool, [&](auto x, auto y, Status*) { return op(x, y); });
}
Status Equal(KernelContext& ctx) {
  return compare(ctx, [](auto x, auto y) { return x == y; });
}
Status Less(KernelContext& ctx) {
  return compare(ctx, [](auto x, auto y) { return x < y; });
}
Status Greater(KernelContext& ctx) {
  return compare(ctx, [](auto x, auto y) { return x > y; });
}
Status LessOrEqual(KernelContext& ctx) {
  return compare(ctx, [](auto x, auto y) { return x <= y; });
}
Status GreaterOrEqual(KernelContext& ctx) {
  return compare(ctx, [](auto x, auto y) { return x >= y; });
}
template <class Op>
Status logic(KernelContext& ctx, Op op) {
  if (dtype_of(ctx.in(0)) != DataType::kBool) return ctx.error("takes bool inputs");
  return binary<bool, true>(ctx, DataType::kBool,
                            [&](auto x, auto y, Status*) { return op(bool(x), bool(y)); });
}
Status And(KernelContext& ctx) {
  return logic(ctx, [](bool x, bool y) { return x && y; });
}
Status Or(KernelContext& ctx) {
  return logic(ctx, [](bool x, bool y) { return x || y; });
}
Status Xor(KernelContext& ctx) {
  return logic(ctx, [](bool x, bool y) { return x != y; });
}

// BitwiseAnd/Or/Xor (opset 18): integers only, broadcast.
template <class Op>
Status bitwise(KernelContext& ctx, Op op) {
  return binary<void>(ctx, DataType::kUndefined, [&](auto x, auto y, Status* s) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
      return static_cast<C>(op(x, y));
    } else {
      *s = Status::invalid_argument("bitwise operators take integer tensors");
      return x;
    }
  });
}
Status BitwiseAnd(KernelContext& ctx) {
  return bitwise(ctx, [](auto x, auto y) { return x & y; });
}
Status BitwiseOr(KernelContext& ctx) {
  return bitwise(ctx, [](auto x, auto y) { return x | y; });
}
Status BitwiseXor(KernelContext& ctx) {
  return bitwise(ctx, [](auto x, auto y) { return x ^ y; });
}
Status BitwiseNot(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  return visit_numeric<false>(dtype_of(x), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      const T* in = data_as<T>(x);
      T* out = ctx.allocate_as<T>(0, dtype_of(x), dims_of(x));
      for (int64_t i = 0, n = num_elements(dims_of(x)); i < n; ++i) out[i] = static_cast<T>(~in[i]);
      return Status::ok();
    } else {
      return ctx.error("BitwiseNot takes integer tensors");
    }
  });
}

Status BitShift(KernelContext& ctx) {
  const bool left = ctx.attr_string("direction") == "LEFT";
  return binary<void>(ctx, DataType::kUndefined, [&](auto x, auto y, Status*) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C> && std::is_unsigned_v<C>) {
      if (y >= sizeof(C) * 8) return 0;
      return static_cast<C>(left ? x << y : x >> y);
    } else {
      return x;
    }
  });
}

// Pow: the exponent may have another type.
Status Pow(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  Dims out_dims;
  if (!broadcast_shape(dims_of(a), dims_of(b), &out_dims)) return ctx.error("shapes do not broadcast");
  if (sdk::element_size(dtype_of(b)) == 0) return ctx.error("the exponent type is not numeric");
  return visit_arith(dtype_of(a), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* pa = data_as<T>(a);
    std::vector<double> exponent(static_cast<size_t>(num_elements(dims_of(b))));
    for (size_t i = 0; i < exponent.size(); ++i) exponent[i] = scalar_as_double(b, i);
    T* out = ctx.allocate_as<T>(0, dtype_of(a), out_dims);
    for_each_broadcast2(out_dims, dims_of(a), dims_of(b), [&](int64_t o, int64_t i, int64_t j) {
      const double e = exponent[j];
      if constexpr (std::is_same_v<C, float>) {
        out[o] = T(e == 2.0 ? C(pa[i]) * C(pa[i]) : std::pow(C(pa[i]), static_cast<float>(e)));
      } else {
        out[o] = T(static_cast<C>(std::pow(static_cast<double>(C(pa[i])), e)));
      }
    });
    return Status::ok();
  });
}

Status PRelu(KernelContext& ctx) {
  // Before opset 7 a 1-D slope of C values is per channel (axis 1), not broadcast from the right: seen as
  // [C, 1, ..., 1] it broadcasts the same way.
  Tensor per_channel;
  const Dims& x = dims_of(ctx.in(0));
  const Dims& slope = dims_of(ctx.in(1));
  if (ctx.opset < 7 && x.size() > 2 && slope.size() == 1 && slope[0] == x[1] && slope[0] != 1) {
    sdk::TensorDesc d = ctx.in(1).desc();
    Dims view(x.size() - 1, 1);
    view[0] = slope[0];
    d.shape = sdk::Shape(view);
    per_channel = Tensor(d, std::shared_ptr<const char>(std::shared_ptr<const char>(), ctx.in(1).data()),
                         ctx.in(1).size_bytes());
  }
  const Tensor* given = ctx.inputs[1];
  if (per_channel.data()) ctx.inputs[1] = &per_channel;
  Status s = binary<void>(ctx, DataType::kUndefined, [](auto x, auto slope, Status*) {
    return x < decltype(x)(0) ? static_cast<decltype(x)>(x * slope) : x;
  });
  ctx.inputs[1] = given;  // a profiler reads the inputs after the call
  return s;
}

// Variadic Min/Max/Sum/Mean: folded pairwise with broadcasting.
template <class Op>
Status variadic(KernelContext& ctx, Op op, bool mean) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) ins.push_back(&ctx.in(i));
  if (ins.empty()) return ctx.error("needs at least one input");
  Dims out_dims = dims_of(*ins[0]);
  for (const Tensor* t : ins)
    if (dtype_of(*t) != dtype_of(*ins[0])) return ctx.error("inputs differ in type");
  for (const Tensor* t : ins) {
    Dims next;
    if (!broadcast_shape(out_dims, dims_of(*t), &next)) return ctx.error("inputs do not broadcast");
    out_dims = next;
  }
  const DataType dt = dtype_of(*ins[0]);
  return visit_arith(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const int64_t n = num_elements(out_dims);
    std::vector<C> acc(static_cast<size_t>(n));
    const T* p0 = data_as<T>(*ins[0]);
    for_each_broadcast2(out_dims, dims_of(*ins[0]), out_dims,
                        [&](int64_t o, int64_t i, int64_t) { acc[o] = static_cast<C>(p0[i]); });
    for (size_t k = 1; k < ins.size(); ++k) {
      const T* p = data_as<T>(*ins[k]);
      for_each_broadcast2(out_dims, dims_of(*ins[k]), out_dims,
                          [&](int64_t o, int64_t i, int64_t) { acc[o] = op(acc[o], static_cast<C>(p[i])); });
    }
    T* out = ctx.allocate_as<T>(0, dt, out_dims);
    for (int64_t i = 0; i < n; ++i)
      out[i] = T(mean ? static_cast<C>(acc[i] / static_cast<C>(ins.size())) : acc[i]);
    return Status::ok();
  });
}
Status Sum(KernelContext& ctx) {
  return variadic(
      ctx, [](auto x, auto y) { return x + y; }, false);
}
Status Mean(KernelContext& ctx) {
  return variadic(
      ctx, [](auto x, auto y) { return x + y; }, true);
}
Status Max(KernelContext& ctx) {
  return variadic(
      ctx,
      [](auto x, auto y) {
        if constexpr (std::is_floating_point_v<decltype(x)>) {
          if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<decltype(x)>::quiet_NaN();
        }
        return x > y ? x : y;
      },
      false);
}
Status Min(KernelContext& ctx) {
  return variadic(
      ctx,
      [](auto x, auto y) {
        if constexpr (std::is_floating_point_v<decltype(x)>) {
          if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<decltype(x)>::quiet_NaN();
        }
        return x < y ? x : y;
      },
      false);
}

// ---- Cast, Clip, Where
template <class From, class To>
To convert(From v) {
  using C = Compute<From>;
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<C>(v) != C(0);
  } else if constexpr (is_floatish<To>()) {
    return To(static_cast<Compute<To>>(static_cast<C>(v)));
  } else if constexpr (is_floatish<From>()) {
    const double d = static_cast<double>(static_cast<C>(v));
    if (std::isnan(d)) return To(0);
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(static_cast<C>(v));
  }
}

Status cast_to(KernelContext& ctx, const Tensor& x, DataType to) {
  if (dtype_of(x) == DataType::kString || to == DataType::kString) return cast_string(ctx, x, to);
  return visit_numeric(dtype_of(x), [&](auto from_tag) {
    using From = decltype(from_tag);
    return visit_numeric(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* in = data_as<From>(x);
      To* out = ctx.allocate_as<To>(0, to, dims_of(x));
      for (int64_t i = 0, n = num_elements(dims_of(x)); i < n; ++i) out[i] = convert<From, To>(in[i]);
      return Status::ok();
    });
  });
}
Status Cast(KernelContext& ctx) {
  return cast_to(ctx, ctx.in(0), static_cast<DataType>(ctx.attr_int("to", 1)));
}
Status CastLike(KernelContext& ctx) {
  return cast_to(ctx, ctx.in(0), dtype_of(ctx.in(1)));
}

template <class T, class C = Compute<T>>
std::pair<C, C> clip_bounds(const KernelContext& ctx) {
  C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
  if (ctx.opset < 11) {
    lo = static_cast<C>(ctx.attr_float("min", -std::numeric_limits<float>::max()));
    hi = static_cast<C>(ctx.attr_float("max", std::numeric_limits<float>::max()));
  } else {
    // min and max: scalars of the input's type; anything else is ignored rather than read past its end
    for (size_t k : {size_t{1}, size_t{2}}) {
      if (!ctx.has_input(k) || dtype_of(ctx.in(k)) != dtype_of(ctx.in(0)) ||
          ctx.in(k).size_bytes() < sizeof(T))
        continue;
      (k == 1 ? lo : hi) = static_cast<C>(data_as<T>(ctx.in(k))[0]);
    }
  }
  return {lo, hi};
}

Status Clip(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  return visit_arith(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const auto [lo, hi] = clip_bounds<T>(ctx);
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), dims_of(x));
    parallel_for(num_elements(dims_of(x)), kParallelGrain, [&, lo = lo, hi = hi](int64_t begin, int64_t end) {
      // Bounds by value: captured by reference they could alias `out`, and the loop would not vectorise.
      for (int64_t i = begin; i < end; ++i) {
        const C v = static_cast<C>(in[i]);
        out[i] = T(scalar::clip(v, lo, hi));
      }
    });
    return Status::ok();
  });
}

Status Where(KernelContext& ctx) {
  const Tensor& c = ctx.in(0);
  const Tensor& a = ctx.in(1);
  const Tensor& b = ctx.in(2);
  Dims ab, out_dims;
  if (!broadcast_shape(dims_of(a), dims_of(b), &ab) || !broadcast_shape(dims_of(c), ab, &out_dims))
    return ctx.error("inputs do not broadcast");
  const int64_t size = sdk::element_size(dtype_of(a));
  if (size == 0)
    return ctx.unsupported("data type " + std::string(sdk::to_string(dtype_of(a))) + " is not supported");
  if (dtype_of(c) != DataType::kBool || dtype_of(a) != dtype_of(b))
    return ctx.error("input types do not match Where");
  char* out = ctx.allocate(0, dtype_of(a), out_dims);
  const bool* pc = data_as<bool>(c);
  for_each_broadcast3(out_dims, dims_of(c), dims_of(a), dims_of(b),
                      [&](int64_t o, int64_t i, int64_t j, int64_t k) {
                        std::memcpy(out + o * size, pc[i] ? a.data() + j * size : b.data() + k * size,
                                    static_cast<size_t>(size));
                      });
  return Status::ok();
}

Status Identity(KernelContext& ctx) {
  if (ctx.in(0).is_container()) {  // sequences, optionals and maps are immutable: share them
    ctx.set_output(0, ctx.in(0));
    return Status::ok();
  }
  ctx.set_output_copy(0, ctx.in(0), dims_of(ctx.in(0)));
  return Status::ok();
}

Status Dropout(KernelContext& ctx) {
  if (ctx.has_input(2) && ctx.in(2).size_bytes() > 0 && ctx.in(2).data()[0] != 0) {
    const double ratio = ctx.has_input(1) && num_elements(dims_of(ctx.in(1))) >= 1
                             ? scalar_as_double(ctx.in(1))
                             : (ctx.opset < 12 ? ctx.attr_float("ratio", 0.5f) : 0.5);
    return dropout_training(ctx, ratio);
  }
  ctx.set_output_copy(0, ctx.in(0), dims_of(ctx.in(0)));
  if (ctx.num_outputs() > 1) {
    bool* mask = ctx.allocate_as<bool>(1, DataType::kBool, dims_of(ctx.in(0)));
    std::fill(mask, mask + num_elements(dims_of(ctx.in(0))), true);
  }
  return Status::ok();
}

}  // namespace

std::pair<float, float> clip_bounds_f32(const KernelContext& ctx) {
  return clip_bounds<float>(ctx);
}

void register_elementwise(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"Abs", Abs},
                          {"Acos", Acos},
                          {"Acosh", Acosh},
                          {"Add", Add},
                          {"And", And},
                          {"Asin", Asin},
                          {"Asinh", Asinh},
                          {"Atan", Atan},
                          {"Atanh", Atanh},
                          {"BitShift", BitShift},
                          {"BitwiseAnd", BitwiseAnd},
                          {"BitwiseNot", BitwiseNot},
                          {"BitwiseOr", BitwiseOr},
                          {"BitwiseXor", BitwiseXor},
                          {"Mish", Mish},
                          {"Cast", Cast},
                          {"CastLike", CastLike},
                          {"Ceil", Ceil},
                          {"Celu", Celu},
                          {"Clip", Clip},
                          {"Cos", Cos},
                          {"Cosh", Cosh},
                          {"Div", Div},
                          {"Dropout", Dropout},
                          {"Elu", Elu},
                          {"Equal", Equal},
                          {"Erf", Erf},
                          {"Exp", Exp},
                          {"Floor", Floor},
                          {"Gelu", Gelu},
                          {"Greater", Greater},
                          {"GreaterOrEqual", GreaterOrEqual},
                          {"HardSigmoid", HardSigmoid},
                          {"HardSwish", HardSwish},
                          {"Identity", Identity},
                          {"IsInf", IsInf},
                          {"IsNaN", IsNaN},
                          {"LeakyRelu", LeakyRelu},
                          {"Less", Less},
                          {"LessOrEqual", LessOrEqual},
                          {"Log", Log},
                          {"Max", Max},
                          {"Mean", Mean},
                          {"Min", Min},
                          {"Mod", Mod},
                          {"Mul", Mul},
                          {"Neg", Neg},
                          {"Not", Not},
                          {"Or", Or},
                          {"Pow", Pow},
                          {"PRelu", PRelu},
                          {"Reciprocal", Reciprocal},
                          {"Relu", Relu},
                          {"Round", Round},
                          {"Selu", Selu},
                          {"Shrink", Shrink},
                          {"Sigmoid", Sigmoid},
                          {"Sign", Sign},
                          {"Sin", Sin},
                          {"Sinh", Sinh},
                          {"Softplus", Softplus},
                          {"Softsign", Softsign},
                          {"Sqrt", Sqrt},
                          {"Sub", Sub},
                          {"Sum", Sum},
                          {"Tan", Tan},
                          {"Tanh", Tanh},
                          {"ThresholdedRelu", ThresholdedRelu},
                          {"Where", Where},
                          {"Xor", Xor},
                      });
}

}  // namespace graphsplit::kernels
