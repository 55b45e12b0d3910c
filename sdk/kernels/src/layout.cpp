// Channels-last regions (layout.h): which operators may run in one, and the conversions at their edges.
#include "layout.h"

#include <set>
#include <string_view>

#include "dnnl.h"

namespace graphsplit::kernels::layout {

Dims to_last(const Dims& d) {
  return {d[0], d[2], d[3], d[1]};
}
Dims to_first(const Dims& d) {
  return {d[0], d[3], d[1], d[2]};
}
Dims padded4(const Dims& dims) {
  Dims out(4 - dims.size(), 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}
bool relabel_only(const Dims& d) {
  return d[1] == 1 || d[2] * d[3] == 1;
}

namespace {

// Operators whose every output element depends only on the same-index (broadcast) input elements, with no
// attribute naming an axis: holding all their inputs and their output channels-last changes nothing in what
// they compute.
bool elementwise(std::string_view type) {
  static const std::set<std::string_view, std::less<>> ops = {"Abs",         "Add",        "Ceil",
                                                              "Celu",        "Clip",       "Cos",
                                                              "Div",         "Elu",        "Erf",
                                                              "Exp",         "Floor",      "Gelu",
                                                              "HardSigmoid", "HardSwish",  "Identity",
                                                              "LeakyRelu",   "Log",        "Max",
                                                              "Mean",        "Min",        "Mish",
                                                              "Mul",         "Neg",        "Pow",
                                                              "PRelu",       "Reciprocal", "Relu",
                                                              "Round",       "Selu",       "Sigmoid",
                                                              "Sign",        "Sin",        "Softplus",
                                                              "Softsign",    "Sqrt",       "Sub",
                                                              "Sum",         "Tanh",       "ThresholdedRelu"};
  return ops.count(type) != 0;
}

// Moves `count` elements of `size` bytes from [outer, a, b] to [outer, b, a] order.
void permute_bytes(const char* in, char* out, int64_t outer, int64_t a, int64_t b, size_t size) {
  for (int64_t n = 0; n < outer; ++n) {
    const char* src = in + static_cast<size_t>(n * a * b) * size;
    char* dst = out + static_cast<size_t>(n * a * b) * size;
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        std::memcpy(dst + static_cast<size_t>(j * a + i) * size, src + static_cast<size_t>(i * b + j) * size,
                    size);
  }
}

Status convert(KernelContext& ctx, bool to_last_order) {
  const Tensor& x = ctx.in(0);
  const Dims& in = dims_of(x);
  if (in.size() != 4 || dtype_of(x) != DataType::kFloat)
    return ctx.error("a layout conversion takes a rank-4 float value, got " + dims_string(in));
  const Dims nchw = to_last_order ? in : to_first(in);
  const Dims out = to_last_order ? to_last(in) : to_first(in);
  float* y = ctx.allocate_as<float>(0, DataType::kFloat, out);
  const float* px = data_as<float>(x);
  if (relabel_only(nchw)) {
    std::memcpy(y, px, static_cast<size_t>(num_elements(in)) * sizeof(float));
    return Status::ok();
  }
  if (dnnl_path::reorder_f32(ctx, nchw, to_last_order, px, y)) return Status::ok();
  const int64_t hw = nchw[2] * nchw[3];
  if (to_last_order) {
    permute_bytes(x.data(), reinterpret_cast<char*>(y), nchw[0], nchw[1], hw, sizeof(float));
  } else {
    permute_bytes(x.data(), reinterpret_cast<char*>(y), nchw[0], hw, nchw[1], sizeof(float));
  }
  return Status::ok();
}

}  // namespace

Role role_of(const sdk::Node& node, int opset) {
  if (!node.subgraphs().empty() || opset < 7 || !node.attrs().get_string(sdk::attr::kDomain).empty())
    return Role::kNone;
  const std::string& type = node.type();
  if (type == "Conv") return Role::kConv;
  if (type == "GlobalAveragePool" || type == "GlobalMaxPool") return Role::kGlobalPool;
  if (type == "MaxPool") return Role::kMaxPool;
  if (elementwise(type) && node.num_outputs() == 1) return Role::kElementwise;
  return Role::kNone;
}

Status to_channels_last(KernelContext& ctx) {
  return convert(ctx, true);
}
Status to_channels_first(KernelContext& ctx) {
  return convert(ctx, false);
}

Tensor permute_constant(const Tensor& t, bool to_last_order) {
  const Dims nchw = to_last_order ? padded4(dims_of(t)) : to_first(dims_of(t));
  const Dims out = to_last_order ? to_last(nchw) : nchw;
  sdk::TensorDesc desc = t.desc();
  desc.shape = sdk::Shape(out);
  std::string bytes(t.size_bytes(), '\0');
  const size_t size = sdk::element_size(t.desc().dtype);
  const int64_t hw = nchw[2] * nchw[3];
  if (relabel_only(nchw) || size == 0) {
    bytes.assign(t.data(), t.size_bytes());
  } else if (to_last_order) {
    permute_bytes(t.data(), bytes.data(), nchw[0], nchw[1], hw, size);
  } else {
    permute_bytes(t.data(), bytes.data(), nchw[0], hw, nchw[1], size);
  }
  return Tensor(std::move(desc), std::move(bytes));
}

}  // namespace graphsplit::kernels::layout
