// Fused elementwise chains (fused.h).
#include "fused.h"

#include <array>
#include <string_view>

#include "scalar_ops.h"

namespace graphsplit::kernels::fused {
namespace {

// Values per tile: every register of a chain stays in the first-level cache.
constexpr int64_t kTile = 512;
// Elements per thread below which more threads cost more than they save (as the elementwise kernels).
constexpr int64_t kParallelGrain = 64 * 1024;
constexpr size_t kMaxInstructions = 16;

// A source within the current tile: `stride` 1 walks n values, 0 repeats one.
struct Source {
  const float* data;
  int64_t stride;
};

template <class F>
void binary_loop(float* __restrict y, Source a, Source b, int64_t n, F f) {
  const float* __restrict x0 = a.data;
  const float* __restrict x1 = b.data;
  if (a.stride && b.stride) {
    for (int64_t k = 0; k < n; ++k) y[k] = f(x0[k], x1[k]);
  } else if (a.stride) {
    const float v = x1[0];
    for (int64_t k = 0; k < n; ++k) y[k] = f(x0[k], v);
  } else if (b.stride) {
    const float u = x0[0];
    for (int64_t k = 0; k < n; ++k) y[k] = f(u, x1[k]);
  } else {
    const float r = f(x0[0], x1[0]);
    for (int64_t k = 0; k < n; ++k) y[k] = r;
  }
}

template <class F>
void unary_loop(float* __restrict y, Source a, int64_t n, F f) {
  const float* __restrict x = a.data;
  if (a.stride) {
    for (int64_t k = 0; k < n; ++k) y[k] = f(x[k]);
  } else {
    const float r = f(x[0]);
    for (int64_t k = 0; k < n; ++k) y[k] = r;
  }
}

struct Bounds {
  float lo = 0, hi = 0;
};

void execute(const Instruction& in, float* y, const Source* s, const Bounds& b, int64_t n) {
  switch (in.op) {
    case Op::kAdd:
      return binary_loop(y, s[0], s[1], n, [](float u, float v) { return u + v; });
    case Op::kSub:
      return binary_loop(y, s[0], s[1], n, [](float u, float v) { return u - v; });
    case Op::kMul:
      return binary_loop(y, s[0], s[1], n, [](float u, float v) { return u * v; });
    case Op::kDiv:
      return binary_loop(y, s[0], s[1], n, [](float u, float v) { return u / v; });
    case Op::kRelu:
      return unary_loop(y, s[0], n, [](float v) { return scalar::relu(v); });
    case Op::kSigmoid:
      return unary_loop(y, s[0], n, [](float v) { return scalar::sigmoid(v); });
    case Op::kHardSigmoid:
      return unary_loop(y, s[0], n,
                        [a = in.alpha, c = in.beta](float v) { return scalar::hard_sigmoid(v, a, c); });
    case Op::kHardSwish:
      return unary_loop(y, s[0], n, [](float v) { return scalar::hard_swish(v); });
    case Op::kLeakyRelu:
      return unary_loop(y, s[0], n, [a = in.alpha](float v) { return scalar::leaky_relu(v, a); });
    case Op::kClip:
      return unary_loop(y, s[0], n, [lo = b.lo, hi = b.hi](float v) { return scalar::clip(v, lo, hi); });
    case Op::kTanh:
      return unary_loop(y, s[0], n, [](float v) { return std::tanh(v); });
    case Op::kNone:
      return;
  }
}

// Clip's bounds for this run, read from its inputs as the Clip kernel reads them. Its operand (often the
// register of the instruction before) stands in as a float tensor without data: the kernel only reads its
// type.
Bounds clip_bounds(const Instruction& in, const KernelContext& ctx) {
  sdk::TensorDesc float_desc;
  float_desc.dtype = DataType::kFloat;
  const Tensor operand(float_desc, std::string());
  KernelContext c;
  c.node = in.node;
  c.opset = in.opset;
  c.inputs = {&operand};
  for (int p : in.params) c.inputs.push_back(p >= 0 ? ctx.inputs[p] : nullptr);
  const auto [lo, hi] = clip_bounds_f32(c);
  return {lo, hi};
}

}  // namespace

Op op_of(const sdk::Node& node, int opset) {
  if (!node.subgraphs().empty() || opset < 7 || !node.attrs().get_string(sdk::attr::kDomain).empty() ||
      node.num_outputs() != 1)
    return Op::kNone;
  static const std::pair<std::string_view, Op> kOps[] = {{"Add", Op::kAdd},
                                                         {"Sub", Op::kSub},
                                                         {"Mul", Op::kMul},
                                                         {"Div", Op::kDiv},
                                                         {"Relu", Op::kRelu},
                                                         {"Sigmoid", Op::kSigmoid},
                                                         {"HardSigmoid", Op::kHardSigmoid},
                                                         {"HardSwish", Op::kHardSwish},
                                                         {"LeakyRelu", Op::kLeakyRelu},
                                                         {"Clip", Op::kClip},
                                                         {"Tanh", Op::kTanh}};
  for (const auto& [type, op] : kOps)
    if (node.type() == type) return op;
  return Op::kNone;
}

size_t operands_of(Op op) {
  switch (op) {
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kDiv:
      return 2;
    default:
      return 1;
  }
}

Status run(KernelContext& ctx) {
  if (!ctx.state || !*ctx.state) return Status::internal("a fused elementwise step without its program");
  const Program& p = *static_cast<const Program*>(ctx.state->get());
  const int64_t n = num_elements(p.dims);
  for (const Tensor* t : ctx.inputs) {
    const int64_t count = t ? num_elements(dims_of(*t)) : 0;
    if (!t || dtype_of(*t) != DataType::kFloat || (count != n && count != 1))
      return ctx.error("a fused elementwise input is not a float of the chain's size or a single value");
  }
  std::vector<Bounds> bounds(p.code.size());
  for (size_t k = 0; k < p.code.size(); ++k)
    if (p.code[k].op == Op::kClip) bounds[k] = clip_bounds(p.code[k], ctx);
  // Each input as a source at element 0: all n values (stride 1) or one for every element (stride 0).
  std::vector<Source> inputs;
  for (const Tensor* t : ctx.inputs)
    inputs.push_back({data_as<float>(*t), num_elements(dims_of(*t)) == n && n != 1 ? 1 : 0});
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, p.dims);
  parallel_for(n, kParallelGrain, [&](int64_t begin, int64_t end) {
    std::array<std::array<float, kTile>, kMaxInstructions> regs;
    std::array<Source, 2> src;
    for (int64_t at = begin; at < end; at += kTile) {
      const int64_t len = std::min(kTile, end - at);
      for (size_t k = 0; k < p.code.size(); ++k) {
        const Instruction& in = p.code[k];
        for (size_t o = 0; o < in.operands.size(); ++o) {
          const Operand& op = in.operands[o];
          if (!op.from_input) {
            src[o] = {regs[op.index].data(), 1};
          } else {
            const Source& s = inputs[op.index];
            src[o] = {s.data + s.stride * at, s.stride};
          }
        }
        float* y = k + 1 == p.code.size() ? out + at : regs[k].data();
        execute(in, y, src.data(), bounds[k], len);
      }
    }
  });
  return Status::ok();
}

}  // namespace graphsplit::kernels::fused
