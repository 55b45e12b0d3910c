// The per-element arithmetic of the activations that both their kernels and the fused elementwise step
// (fused.h) compute: one definition, so a fused chain gives the bits of the operators run one by one.
#pragma once

#include <algorithm>
#include <cmath>

namespace graphsplit::kernels::scalar {

template <class C>
C relu(C v) {
  return v > 0 ? v : C(0);
}
template <class C>
C sigmoid(C v) {
  return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v));
}
template <class C>
C hard_sigmoid(C v, float alpha, float beta) {
  return std::max<C>(0, std::min<C>(1, alpha * v + beta));
}
template <class C>
C hard_swish(C v) {
  return v * std::max<C>(0, std::min<C>(1, v / 6 + C(0.5)));
}
template <class C>
C leaky_relu(C v, float alpha) {
  return v < 0 ? v * alpha : v;
}
template <class C>
C clip(C v, C lo, C hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

}  // namespace graphsplit::kernels::scalar
