// The ai.onnx.preview.training optimisers: Adagrad, Adam and Momentum, each updating N tensors at once
// (inputs R, T, then N of each per-tensor input; outputs N of each per-tensor output). Computed in double and
// stored in the tensors' type, as the ONNX reference does in float64 arithmetic on float32 data.
#include <cmath>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

struct Groups {
  size_t n = 0;  // tensors updated
  double rate = 0;
  int64_t step = 0;
};

// `per_tensor` inputs per tensor after R and T: the input count must divide.
Status groups_of(const KernelContext& ctx, size_t per_tensor, Groups* g) {
  const size_t rest = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  if (rest == 0 || rest % per_tensor != 0)
    return ctx.error("expects R, T and " + std::to_string(per_tensor) + " inputs per tensor, got " +
                     std::to_string(ctx.num_inputs()) + " inputs");
  g->n = rest / per_tensor;
  g->rate = scalar_as_double(ctx.in(0));
  g->step = to_int64s(ctx.in(1)).at(0);
  for (size_t k = 1; k < per_tensor; ++k)
    for (size_t i = 0; i < g->n; ++i)
      if (dims_of(ctx.in(2 + k * g->n + i)) != dims_of(ctx.in(2 + i)))
        return ctx.error("input " + std::to_string(2 + k * g->n + i) + " does not have the shape of input " +
                         std::to_string(2 + i));
  return Status::ok();
}

// Calls f(element index, per-tensor input values, outputs to write) for each element of tensor i.
template <class F>
Status update(KernelContext& ctx, const Groups& g, size_t per_tensor, size_t outputs_per_tensor, size_t i,
              F f) {
  const Tensor& x = ctx.in(2 + i);
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    std::vector<const T*> in(per_tensor);
    for (size_t k = 0; k < per_tensor; ++k) in[k] = data_as<T>(ctx.in(2 + k * g.n + i));
    std::vector<T*> out(outputs_per_tensor);
    for (size_t k = 0; k < outputs_per_tensor; ++k)
      out[k] = ctx.allocate_as<T>(k * g.n + i, dtype_of(x), dims_of(x));
    std::vector<double> a(per_tensor), r(outputs_per_tensor);
    for (int64_t e = 0, n = num_elements(dims_of(x)); e < n; ++e) {
      for (size_t k = 0; k < per_tensor; ++k) a[k] = static_cast<double>(static_cast<C>(in[k][e]));
      f(a, r);
      for (size_t k = 0; k < outputs_per_tensor; ++k) out[k][e] = T(static_cast<C>(r[k]));
    }
    return Status::ok();
  });
}

// Inputs per tensor X, G, H; outputs X', H'.
Status Adagrad(KernelContext& ctx) {
  Groups g;
  GS_RETURN_IF_ERROR(groups_of(ctx, 3, &g));
  const double decay = ctx.attr_float("decay_factor", 0.0f), eps = ctx.attr_float("epsilon", 1e-6f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const double r = g.rate / (1 + static_cast<double>(g.step) * decay);
  for (size_t i = 0; i < g.n; ++i)
    GS_RETURN_IF_ERROR(update(ctx, g, 3, 2, i, [&](const std::vector<double>& a, std::vector<double>& o) {
      const double grad = norm * a[0] + a[1];
      o[1] = a[2] + grad * grad;
      o[0] = a[0] - r * grad / (std::sqrt(o[1]) + eps);
    }));
  return Status::ok();
}

// Inputs per tensor X, G, V (first moment), H (second moment); outputs X', V', H'.
Status Adam(KernelContext& ctx) {
  Groups g;
  GS_RETURN_IF_ERROR(groups_of(ctx, 4, &g));
  const double alpha = ctx.attr_float("alpha", 0.9f), beta = ctx.attr_float("beta", 0.999f);
  const double eps = ctx.attr_float("epsilon", 1e-6f), norm = ctx.attr_float("norm_coefficient", 0.0f);
  const double post = ctx.attr_float("norm_coefficient_post", 0.0f);
  const auto t = static_cast<double>(g.step);
  const double r = g.step > 0 ? g.rate * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : g.rate;
  for (size_t i = 0; i < g.n; ++i)
    GS_RETURN_IF_ERROR(update(ctx, g, 4, 3, i, [&](const std::vector<double>& a, std::vector<double>& o) {
      const double grad = norm * a[0] + a[1];
      o[1] = alpha * a[2] + (1 - alpha) * grad;
      o[2] = beta * a[3] + (1 - beta) * grad * grad;
      o[0] = (1 - post) * (a[0] - r * o[1] / (std::sqrt(o[2]) + eps));
    }));
  return Status::ok();
}

// Inputs per tensor X, G, V; outputs X', V'. Modes "standard" and "nesterov".
Status Momentum(KernelContext& ctx) {
  Groups g;
  GS_RETURN_IF_ERROR(groups_of(ctx, 3, &g));
  const double alpha = ctx.attr_float("alpha", 0.0f), beta = ctx.attr_float("beta", 0.0f);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f);
  const std::string mode = ctx.attr_string("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return ctx.error("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  const double b = g.step > 0 ? beta : 1.0;
  for (size_t i = 0; i < g.n; ++i)
    GS_RETURN_IF_ERROR(update(ctx, g, 3, 2, i, [&](const std::vector<double>& a, std::vector<double>& o) {
      const double grad = norm * a[0] + a[1];
      o[1] = alpha * a[2] + b * grad;
      o[0] = mode == "standard" ? a[0] - g.rate * o[1] : a[0] - g.rate * (grad + alpha * o[1]);
    }));
  return Status::ok();
}

}  // namespace

void register_training(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"ai.onnx.preview.training::Adagrad", Adagrad},
                       {"ai.onnx.preview.training::Adam", Adam},
                       {"ai.onnx.preview.training::Momentum", Momentum}});
}

}  // namespace graphsplit::kernels
