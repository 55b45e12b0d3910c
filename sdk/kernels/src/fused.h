// Fused elementwise chains: inside a static segment, a run of float elementwise operators each reading the
// one before (an activation spelled out as Add, Clip, Mul, Div; a scale and shift after it) runs as one step
// that walks the data once in cache-sized tiles instead of once per operator. Each operator keeps its own
// per-element arithmetic (scalar_ops.h and the plain + - * /), so the chain gives the bits of the operators
// run one by one.
#pragma once

#include <memory>

#include "kernel.h"

namespace graphsplit::kernels::fused {

enum class Op {
  kNone,
  kAdd,
  kSub,
  kMul,
  kDiv,
  kRelu,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kLeakyRelu,
  kClip,
  kTanh
};

// The operator a node computes in a chain, or kNone. Clip's bounds (inputs 1 and 2 from opset 11, attributes
// before) are parameters.
Op op_of(const sdk::Node& node, int opset);
// The operand inputs of such an operator (the others are parameters).
size_t operands_of(Op op);

// An operand: one of the step's inputs (all n values, or one value for every element), or the result of an
// earlier instruction of the chain.
struct Operand {
  bool from_input = true;
  int index = 0;
};

struct Instruction {
  Op op = Op::kNone;
  const sdk::Node* node = nullptr;  // attributes; Clip's bounds read as its kernel reads them
  int opset = 17;
  std::vector<Operand> operands;
  std::vector<int> params;  // Clip: the step inputs holding min and max (-1: none)
  float alpha = 0, beta = 0;
};

struct Program {
  std::vector<Instruction> code;  // the last one writes the step's output
  Dims dims;                      // the output's (every full operand's) dims
};

// The fused step's kernel: its program is the step's state (KernelContext::state).
Status run(KernelContext& ctx);

}  // namespace graphsplit::kernels::fused

namespace graphsplit::kernels {
// The attributes and bounds of the activations, as their kernels read them (elementwise.cpp).
std::pair<float, float> clip_bounds_f32(const KernelContext& ctx);
float leaky_relu_alpha(const KernelContext& ctx);
std::pair<float, float> hard_sigmoid_params(const KernelContext& ctx);
}  // namespace graphsplit::kernels
