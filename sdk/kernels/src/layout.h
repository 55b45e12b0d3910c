// Channels-last regions: inside a static segment, the float values that flow between oneDNN convolutions
// through elementwise operators are held as [N, H, W, C] (oneDNN's fastest layout for them on this class of
// machine) instead of ONNX's [N, C, H, W], so a chain of convolutions is not reordered at every operator's
// edges. Conversions are explicit steps (ToChannelsLast, ToChannelsFirst) where a region meets the rest of
// the graph. Every kernel computes each element exactly as in the plain layout, so the bits do not depend on
// where the regions end (segmenting, stress partitioning) nor on whether the pass runs.
#pragma once

#include "kernel.h"

namespace graphsplit::kernels::layout {

// [N, C, H, W] -> [N, H, W, C] and back.
Dims to_last(const Dims& nchw);
Dims to_first(const Dims& nhwc);
// A rank <= 4 value's dims as rank 4 (leading 1s: how broadcasting aligns it).
Dims padded4(const Dims& dims);
// True when holding the value channels-last moves no byte: one channel, or one pixel per channel.
bool relabel_only(const Dims& nchw4);

// What a node can do in a channels-last region.
enum class Role {
  kNone,         // reads the plain layout: a region ends before it
  kConv,         // a 2-D float convolution oneDNN takes (decided by the caller with conv_channels_last)
  kElementwise,  // each output element from the same-index elements of its (broadcast) inputs
  kGlobalPool,   // GlobalAveragePool / GlobalMaxPool: a channels-last implementation of the same sums
  kMaxPool,      // MaxPool on oneDNN (decided by the caller with max_pool_channels_last): maxima are exact
};
Role role_of(const sdk::Node& node, int opset);

// The conversion steps' kernels (input 0 to output 0, float).
Status to_channels_last(KernelContext& ctx);
Status to_channels_first(KernelContext& ctx);

// A constant's bytes permuted once at compile time (any element type; rank <= 4, padded to 4).
Tensor permute_constant(const Tensor& t, bool to_last);

}  // namespace graphsplit::kernels::layout

namespace graphsplit::kernels {
// Whether this Conv node, with these static dims (y: what its shape rule gives), runs on oneDNN (nn.cpp): a
// channels-last convolution has no reference path.
bool conv_channels_last(const sdk::Node& node, int opset, const Dims& x, const Dims& w, const Dims& y,
                        bool bias);
// Whether this MaxPool node, with these static dims, runs on oneDNN (nn.cpp).
bool max_pool_channels_last(const sdk::Node& node, int opset, const Dims& x, const Dims& y);
}  // namespace graphsplit::kernels
