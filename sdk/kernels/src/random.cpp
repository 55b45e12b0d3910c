// Random generators (RandomUniform/Normal and their Like forms, Bernoulli, Multinomial) and Dropout's
// training mode. Reproducible: a node's generator is seeded from its `seed` attribute, or from its name when
// it has none, and mixed with how many times this executable has called the node, so the same run sequence
// draws the same numbers whatever the thread count or partitioning, and a node inside a Loop draws anew each
// iteration.
#include <random>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

uint64_t mix(uint64_t z) {  // splitmix64's finaliser
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::mt19937_64 node_generator(const KernelContext& ctx) {
  uint64_t seed = 0xcbf29ce484222325ull;  // FNV-1a of the name
  if (const sdk::AttrValue* v = ctx.node->attrs().get("seed"); v && v->as_float()) {
    seed = static_cast<uint64_t>(static_cast<int64_t>(*v->as_float()));
  } else {
    for (char c : ctx.node->name()) seed = (seed ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  }
  return std::mt19937_64(mix(seed ^ mix(ctx.call)));
}

namespace {

// The output type: the `dtype` attribute, else the input's (Like forms), else float.
DataType output_type(const KernelContext& ctx) {
  const int64_t dt = ctx.attr_int("dtype", 0);
  if (dt != 0) return static_cast<DataType>(dt);
  return ctx.has_input(0) ? dtype_of(ctx.in(0)) : DataType::kFloat;
}

Status shape_of_node(const KernelContext& ctx, Dims* dims) {
  if (ctx.has_input(0)) {
    *dims = dims_of(ctx.in(0));
    return Status::ok();
  }
  auto shape = ctx.attr_ints("shape");
  if (!shape) return ctx.error("the shape attribute is required");
  for (int64_t d : *shape)
    if (d < 0) return ctx.error("shape " + dims_string(*shape) + " has a negative dimension");
  *dims = *shape;
  return Status::ok();
}

Status RandomUniform(KernelContext& ctx) {
  Dims dims;
  GS_RETURN_IF_ERROR(shape_of_node(ctx, &dims));
  const double low = ctx.attr_float("low", 0.0f), high = ctx.attr_float("high", 1.0f);
  if (!(low <= high)) return ctx.error("low must not exceed high");
  auto rng = node_generator(ctx);
  std::uniform_real_distribution<double> dist(low, high);
  return write_float_output(ctx, 0, output_type(ctx), dims, [&](int64_t) { return dist(rng); });
}

Status RandomNormal(KernelContext& ctx) {
  Dims dims;
  GS_RETURN_IF_ERROR(shape_of_node(ctx, &dims));
  const double mean = ctx.attr_float("mean", 0.0f), scale = ctx.attr_float("scale", 1.0f);
  if (!(scale > 0)) return ctx.error("scale must be positive");
  auto rng = node_generator(ctx);
  std::normal_distribution<double> dist(mean, scale);
  return write_float_output(ctx, 0, output_type(ctx), dims, [&](int64_t) { return dist(rng); });
}

// 1 with the input's probability, per element.
Status Bernoulli(KernelContext& ctx) {
  const std::vector<double> p = to_doubles(ctx.in(0));
  auto rng = node_generator(ctx);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const DataType to = output_type(ctx);
  return visit_numeric(to, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, to, dims_of(ctx.in(0)));
    for (size_t i = 0; i < p.size(); ++i) out[i] = T(unit(rng) < p[i] ? 1.0f : 0.0f);
    return Status::ok();
  });
}

// Input [batch, classes] of unnormalised log-probabilities; `sample_size` class indices drawn per row.
Status Multinomial(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  if (d.size() != 2) return ctx.error("the input must be [batch, classes]");
  const int64_t samples = ctx.attr_int("sample_size", 1);
  if (samples < 0) return ctx.error("sample_size must not be negative");
  const std::vector<double> logits = to_doubles(ctx.in(0));
  const auto to = static_cast<DataType>(ctx.attr_int("dtype", static_cast<int64_t>(DataType::kInt32)));
  if (to != DataType::kInt32 && to != DataType::kInt64) return ctx.error("dtype must be int32 or int64");
  auto rng = node_generator(ctx);
  std::vector<int64_t> picks;
  for (int64_t b = 0; b < d[0]; ++b) {
    std::vector<double> w(logits.begin() + b * d[1], logits.begin() + (b + 1) * d[1]);
    const double top = w.empty() ? 0 : *std::max_element(w.begin(), w.end());
    for (double& v : w) v = std::exp(v - top);
    std::discrete_distribution<int64_t> dist(w.begin(), w.end());
    for (int64_t s = 0; s < samples; ++s) picks.push_back(dist(rng));
  }
  const Dims od{d[0], samples};
  if (to == DataType::kInt64) {
    std::copy(picks.begin(), picks.end(), ctx.allocate_as<int64_t>(0, to, od));
  } else {
    int32_t* out = ctx.allocate_as<int32_t>(0, to, od);
    for (size_t i = 0; i < picks.size(); ++i) out[i] = static_cast<int32_t>(picks[i]);
  }
  return Status::ok();
}

}  // namespace

Status dropout_training(KernelContext& ctx, double ratio) {
  const Tensor& x = ctx.in(0);
  if (!(ratio >= 0 && ratio < 1)) return ctx.error("ratio must be in [0, 1), got " + std::to_string(ratio));
  const int64_t n = num_elements(dims_of(x));
  std::vector<bool> keep(static_cast<size_t>(n), true);
  if (ratio > 0) {
    auto rng = node_generator(ctx);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int64_t i = 0; i < n; ++i) keep[i] = unit(rng) >= ratio;
  }
  const double scale = 1.0 / (1.0 - ratio);
  GS_RETURN_IF_ERROR(visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), dims_of(x));
    for (int64_t i = 0; i < n; ++i)
      out[i] = keep[i] ? T(static_cast<C>(static_cast<double>(static_cast<C>(in[i])) * scale)) : T(C(0));
    return Status::ok();
  }));
  if (ctx.num_outputs() > 1) {
    bool* mask = ctx.allocate_as<bool>(1, DataType::kBool, dims_of(x));
    for (int64_t i = 0; i < n; ++i) mask[i] = keep[i];
  }
  return Status::ok();
}

void register_random(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"Bernoulli", Bernoulli},
                       {"Multinomial", Multinomial},
                       {"RandomNormal", RandomNormal},
                       {"RandomNormalLike", RandomNormal},
                       {"RandomUniform", RandomUniform},
                       {"RandomUniformLike", RandomUniform}});
}

}  // namespace graphsplit::kernels
