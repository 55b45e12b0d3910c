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

// Calls row(out_index, a_index, a_step, b_index, b_step, count) for runs of output elements whose inputs
// advance by a fixed step (1, or 0 where broadcast). Adjacent dimensions that both inputs walk alike are
// merged first, so a per-channel operand against [N, C, H, W] gives rows of H * W and a same-shape pair one
// row.
template <class Row>
void for_each_broadcast_row(const Dims& out, const Dims& a, const Dims& b, Row&& row, int64_t grain = 0) {
  const int64_t total = num_elements(out);
  if (total == 0) return;
  const size_t rank = out.size();
  Dims shape, sa, sb;  // merged, outermost first
  if (a == out && b == out) {
    shape = {total};
    sa = sb = {1};
  } else if (rank > 0) {
    const Dims sa0 = broadcast_strides(a, rank), sb0 = broadcast_strides(b, rank);
    for (size_t d = 0; d < rank; ++d) {
      if (out[d] == 1) continue;
      if (!shape.empty() && sa.back() == sa0[d] * out[d] && sb.back() == sb0[d] * out[d]) {
        shape.back() *= out[d];
        sa.back() = sa0[d];
        sb.back() = sb0[d];
        continue;
      }
      shape.push_back(out[d]);
      sa.push_back(sa0[d]);
      sb.push_back(sb0[d]);
    }
  }
  if (shape.empty()) {
    row(0, 0, 0, 0, 0, 1);
    return;
  }
  const size_t r = shape.size();
  const int64_t inner = shape[r - 1], rows = total / inner;
  // grain > 0: split over threads, by rows, or within the row when there is one.
  if (rows == 1) {
    auto part = [&](int64_t begin, int64_t end) {
      row(begin, begin * sa[0], sa[0], begin * sb[0], sb[0], end - begin);
    };
    if (grain > 0)
      parallel_for(inner, grain, part);
    else
      part(0, inner);
    return;
  }
  auto run_rows = [&](int64_t first, int64_t last) {
    Dims idx(r, 0);
    int64_t pa = 0, pb = 0, rest = first;
    for (size_t d = r - 1; d-- > 0;) {  // the odometer's position at row `first`
      idx[d] = rest % shape[d];
      rest /= shape[d];
      pa += idx[d] * sa[d];
      pb += idx[d] * sb[d];
    }
    for (int64_t k = first; k < last; ++k) {
      row(k * inner, pa, sa[r - 1], pb, sb[r - 1], inner);
      for (size_t d = r - 1; d-- > 0;) {
        ++idx[d];
        pa += sa[d];
        pb += sb[d];
        if (idx[d] < shape[d]) break;
        pa -= sa[d] * shape[d];
        pb -= sb[d] * shape[d];
        idx[d] = 0;
      }
    }
  };
  if (grain > 0)
    parallel_for(rows, std::max<int64_t>(1, grain / inner), run_rows);
  else
    run_rows(0, rows);
}

// Calls f(out_index, a_index, b_index) for every output element, innermost dimension in a tight loop.
template <class F>
void for_each_broadcast2(const Dims& out, const Dims& a, const Dims& b, F&& f) {
  for_each_broadcast_row(out, a, b, [&](int64_t o, int64_t i, int64_t ia, int64_t j, int64_t ib, int64_t n) {
    for (int64_t k = 0; k < n; ++k) f(o + k, i + k * ia, j + k * ib);
  });
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
