// The kernels' oneDNN path (Debian's libdnnl): float convolutions and matrix products on the library's JIT
// kernels, primitives prepared once per step and shape. Internal to libgraphsplit_kernels; nothing of oneDNN
// leaks into a header beyond this one.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel.h"

namespace graphsplit::kernels::dnnl_path {

// A convolution in ONNX's conventions (dilation 1 = dense; the weight [M, C / group, k...]), or with
// `transposed` a ConvTranspose (the weight [C, M / group, k...]; pads as oneDNN's deconvolution needs them
// for y's size).
struct ConvSpec {
  Dims x, w, y;
  Dims strides, dilations, pad_begin, pad_end;
  int64_t group = 1;
  bool bias = false;
  bool transposed = false;
  // x and y held [N, H, W, C] (layout.h); the primitive is the one the plain layout gets, so are the bits.
  bool channels_last = false;
  // The thread budget the primitive is made for: oneDNN fixes a primitive's work split when it creates it.
  int threads = 1;
  bool operator==(const ConvSpec&) const = default;
};

// Runs a float convolution on oneDNN. False, with nothing written, when oneDNN has no implementation for this
// geometry: the caller takes the reference path. The choice depends on the geometry alone, so the same node
// gives the same bits whatever the segmenting.
bool conv_f32(KernelContext& ctx, ConvSpec spec, const float* x, const float* w, const float* b, float* y);
// Whether conv_f32 would take this geometry (compile time: a channels-last convolution has no other path).
bool conv_supported(ConvSpec spec);

// A rank-4 float value from [N, C, H, W] (`nchw`) to [N, H, W, C] order, or back; a plain copy of bytes.
bool reorder_f32(KernelContext& ctx, const Dims& nchw, bool to_last, const float* x, float* y);

// Max or average pooling (NC + spatial, plain layout); pad_end as the rule's output size needs it (ceil
// mode).
struct PoolSpec {
  Dims x, y, kernel, strides, dilations, pad_begin, pad_end;
  bool max = true, include_pad = false;
  bool channels_last = false;  // x and y held [N, H, W, C] (layout.h)
  int threads = 1;
  bool operator==(const PoolSpec&) const = default;
};
bool pool_f32(KernelContext& ctx, PoolSpec spec, const float* x, float* y);
bool pool_supported(const PoolSpec& spec);

// Softmax or LogSoftmax of x along `axis` (plain layout).
struct SoftmaxSpec {
  Dims x;
  int64_t axis = 0;
  bool log = false;
  int threads = 1;
  bool operator==(const SoftmaxSpec&) const = default;
};
bool softmax_f32(KernelContext& ctx, SoftmaxSpec spec, const float* x, float* y);

// c[m, n] = a[m, k] * b[k, n], dense row-major, `batch` times; stride_a / stride_b are the element strides
// between consecutive matrices (0: the same matrix for every batch). Rows are cut into blocks of a fixed
// size, each a single-threaded oneDNN call, and the threads share out the blocks: every value is summed in
// the same order whatever the thread count.
struct MatMulSpec {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t stride_a = 0, stride_b = 0;
  bool trans_b = false;  // b holds [n, k] (Gemm's transB)
  bool operator==(const MatMulSpec&) const = default;
};
bool matmul_f32(KernelContext& ctx, MatMulSpec spec, const float* a, const float* b, float* c);

// Exact int32 sums c[m, n] = sum_k (a[m, k] - a_zero) * b[k, n], a u8 or s8 and b s8, on oneDNN's int8 matrix
// product. Only where it accumulates in 32 bits without saturating and stores the sums as they are (its
// brgemm kernels on VNNI and AMX machines: older int8 kernels saturate 16-bit pair sums, and its int8
// convolutions pass sums through float, both measured wrong here); false otherwise, nothing written.
struct Int8Spec {
  int64_t m = 0, n = 0, k = 0;
  bool a_signed = false;
  int32_t a_zero = 0;
  bool operator==(const Int8Spec&) const = default;
};
bool int8_matmul(KernelContext& ctx, Int8Spec spec, const void* a, const int8_t* b, int32_t* c);

// The thread budget of every oneDNN call (0: the machine's processors).
void set_threads(int threads);
int threads();

}  // namespace graphsplit::kernels::dnnl_path
