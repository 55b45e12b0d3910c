// Numpy-style broadcasting loops shared by the elementwise kernels.
#pragma once

#include "kernel.h"

namespace graphsplit::kernels {

// Strides of `in` aligned to an output of rank `rank`: 0 where the input is broadcast.
inline Dims broadcast_strides(const Dims& in, size_t rank) {
  Dims s(rank, 0);
  const Dims own = strides_of(in);
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t j = rank - in.size() + i;
    s[j] = in[i] == 1 ? 0 : own[i];
  }
  return s;
}

// Calls f(out_index, a_index, b_index) for every output element, innermost dimension in a tight loop.
template <class F>
void for_each_broadcast2(const Dims& out, const Dims& a, const Dims& b, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  if (a == out && b == out) {
    for (int64_t i = 0; i < total; ++i) f(i, i, i);
    return;
  }
  const size_t rank = out.size();
  if (rank == 0) {
    f(0, 0, 0);
    return;
  }
  const Dims sa = broadcast_strides(a, rank), sb = broadcast_strides(b, rank);
  const int64_t inner = out[rank - 1], ia = sa[rank - 1], ib = sb[rank - 1];
  Dims idx(rank, 0);
  int64_t pa = 0, pb = 0;
  for (int64_t o = 0; o < total; o += inner) {
    for (int64_t k = 0; k < inner; ++k) f(o + k, pa + k * ia, pb + k * ib);
    for (size_t d = rank - 1; d-- > 0;) {  // odometer over the outer dimensions
      ++idx[d];
      pa += sa[d];
      pb += sb[d];
      if (idx[d] < out[d]) break;
      pa -= sa[d] * out[d];
      pb -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

template <class F>
void for_each_broadcast3(const Dims& out, const Dims& a, const Dims& b, const Dims& c, F&& f) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const size_t rank = out.size();
  if (rank == 0) {
    f(0, 0, 0, 0);
    return;
  }
  const Dims sa = broadcast_strides(a, rank), sb = broadcast_strides(b, rank),
             sc = broadcast_strides(c, rank);
  Dims idx(rank, 0);
  int64_t pa = 0, pb = 0, pc = 0;
  for (int64_t o = 0; o < total; ++o) {
    f(o, pa, pb, pc);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      pa += sa[d];
      pb += sb[d];
      pc += sc[d];
      if (idx[d] < out[d]) break;
      pa -= sa[d] * out[d];
      pb -= sb[d] * out[d];
      pc -= sc[d] * out[d];
      idx[d] = 0;
    }
  }
}

}  // namespace graphsplit::kernels
