// Neural-network kernels: MatMul/Gemm/Conv/ConvTranspose through BLAS, and pooling (normalisation.cpp and
// resampling.cpp hold the rest of the former nn.cpp).
// Over 600 lines on purpose: MatMul, Gemm, Conv, ConvTranspose and pooling share the 16-bit widening, the
// GEMM wrapper and the convolution geometry and window walker defined here.
#include <cblas.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

#include "broadcast.h"
#include "dnnl.h"
#include "kernel.h"
#include "layout.h"

namespace graphsplit::kernels {
namespace {

// ---- 16-bit floats run through the float kernels: inputs widened, outputs narrowed.
class HeapAllocator final : public OutputAllocator {
 public:
  Tensor allocate(size_t, sdk::TensorDesc desc, size_t bytes, char** writable) override {
    return Tensor::allocate(std::move(desc), bytes, writable);
  }
};

Tensor convert_tensor(const Tensor& t, DataType to) {
  sdk::TensorDesc desc = t.desc();
  desc.dtype = to;
  const int64_t n = num_elements(dims_of(t));
  char* out = nullptr;
  Tensor r = Tensor::allocate(desc, static_cast<size_t>(n * sdk::element_size(to)), &out);
  (void)visit_float(dtype_of(t), [&](auto from_tag) {
    using From = decltype(from_tag);
    return visit_float(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* in = data_as<From>(t);
      To* o = reinterpret_cast<To*>(out);
      for (int64_t i = 0; i < n; ++i) o[i] = To(static_cast<Compute<To>>(static_cast<Compute<From>>(in[i])));
      return Status::ok();
    });
  });
  return r;
}

bool is_half(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16;
}

// Runs `fn` with every 16-bit float input widened to float and narrows its float outputs back.
Status widened(KernelContext& ctx, KernelFn fn) {
  DataType narrow = DataType::kUndefined;
  for (const Tensor* t : ctx.inputs)
    if (t && is_half(dtype_of(*t))) narrow = dtype_of(*t);
  if (narrow == DataType::kUndefined) return fn(ctx);
  std::vector<Tensor> wide;
  wide.reserve(ctx.inputs.size());
  KernelContext inner = ctx;
  inner.rule_checks_dtype = false;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (ctx.inputs[i] && is_half(dtype_of(*ctx.inputs[i]))) {
      wide.push_back(convert_tensor(*ctx.inputs[i], DataType::kFloat));
      inner.inputs[i] = &wide.back();
    }
  }
  HeapAllocator heap;
  std::vector<Tensor> produced;
  inner.outputs = &produced;
  inner.allocator = &heap;
  GS_RETURN_IF_ERROR(fn(inner));
  for (size_t o = 0; o < produced.size(); ++o) {
    if (dtype_of(produced[o]) == DataType::kFloat) {
      Tensor n = convert_tensor(produced[o], narrow);
      ctx.set_output_copy(o, n, dims_of(n));
    } else if (produced[o].data()) {
      ctx.set_output_copy(o, produced[o], dims_of(produced[o]));
    }
  }
  return Status::ok();
}

// Per-thread scratch memory reused across calls: im2col buffers are large, and allocating (and zeroing) them
// per call costs page faults and memset time comparable to the GEMM itself.
template <class T>
T* scratch(size_t count) {
  thread_local std::unique_ptr<char[]> buffer;
  thread_local size_t capacity = 0;
  const size_t bytes = count * sizeof(T);
  if (bytes > capacity) {
    buffer.reset(new char[bytes]);
    capacity = bytes;
  }
  return reinterpret_cast<T*>(buffer.get());
}

// ---- GEMM: C = alpha * op(A) * op(B) + beta * C, row-major.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
  } else {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        T sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
        c[i * ldc + j] = alpha * sum + (beta == T(0) ? T(0) : beta * c[i * ldc + j]);
      }
    }
  }
}

template <class F>
Status visit_gemm_type(DataType t, F&& f) {
  switch (t) {
    case DataType::kFloat:
      return f(float{});
    case DataType::kDouble:
      return f(double{});
    case DataType::kInt32:
      return f(int32_t{});
    case DataType::kInt64:
      return f(int64_t{});
    case DataType::kUint32:
      return f(uint32_t{});
    case DataType::kUint64:
      return f(uint64_t{});
    default:
      return Status::unsupported("data type " + std::string(sdk::to_string(t)) + " is not supported");
  }
}

Status MatMulImpl(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  Dims da = dims_of(a), db = dims_of(b);
  if (da.empty() || db.empty()) return ctx.error("inputs must have rank >= 1");
  const bool a_vec = da.size() == 1, b_vec = db.size() == 1;
  if (a_vec) da.insert(da.begin(), 1);
  if (b_vec) db.push_back(1);
  const int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  if (dtype_of(a) != dtype_of(b)) return ctx.error("input types differ");
  if (db[db.size() - 2] != k)
    return ctx.error("shapes " + dims_string(dims_of(a)) + " and " + dims_string(dims_of(b)) +
                     " do not multiply");
  Dims ba(da.begin(), da.end() - 2), bb(db.begin(), db.end() - 2), batch;
  if (!broadcast_shape(ba, bb, &batch)) return ctx.error("batch dimensions do not broadcast");
  Dims out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  return visit_gemm_type(dtype_of(a), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = data_as<T>(a);
    const T* pb = data_as<T>(b);
    T* pc = ctx.allocate_as<T>(0, dtype_of(a), out);
    const int64_t nb = num_elements(batch);
    if (nb == 0) return Status::ok();
    if constexpr (std::is_same_v<T, float>) {
      if (m > 0 && n > 0 && k > 0 && (ba == batch || num_elements(ba) == 1) &&
          (bb == batch || num_elements(bb) == 1)) {
        const dnnl_path::MatMulSpec spec{
            nb, m, n, k, num_elements(ba) == 1 ? 0 : m * k, num_elements(bb) == 1 ? 0 : k * n};
        if (dnnl_path::matmul_f32(ctx, spec, pa, pb, pc)) return Status::ok();
      }
    }
    // B shared by every batch of A: one GEMM with the batches stacked as rows.
    if (num_elements(bb) == 1 && ba == batch) {
      gemm<T>(false, false, nb * m, n, k, T(1), pa, k, pb, n, T(0), pc, n);
      return Status::ok();
    }
    Dims fake_out = batch;
    for_each_broadcast2(batch, ba, bb, [&](int64_t o, int64_t i, int64_t j) {
      gemm<T>(false, false, m, n, k, T(1), pa + i * m * k, k, pb + j * k * n, n, T(0), pc + o * m * n, n);
    });
    return Status::ok();
  });
}
Status MatMul(KernelContext& ctx) {
  return widened(ctx, MatMulImpl);
}

// Float Gemm without transA on oneDNN's matrix product: c = alpha * a * op(b) + beta * C (C broadcast).
bool dnnl_gemm(KernelContext& ctx, bool tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
               const float* a, const float* b, float* c) {
  if (m == 0 || n == 0 || k == 0) return false;
  const Tensor* bias = ctx.has_input(2) && beta != 0.0f ? &ctx.in(2) : nullptr;
  Dims bc;
  if (bias && (dtype_of(*bias) != DataType::kFloat || !broadcast_shape(dims_of(*bias), {m, n}, &bc) ||
               bc != Dims{m, n}))
    return false;  // the reference path names the error
  const dnnl_path::MatMulSpec spec{1, m, n, k, 0, 0, tb};
  if (!dnnl_path::matmul_f32(ctx, spec, a, b, c)) return false;
  if (alpha != 1.0f)
    for (int64_t i = 0; i < m * n; ++i) c[i] *= alpha;
  if (bias) {
    const float* pc = data_as<float>(*bias);
    for_each_broadcast2(Dims{m, n}, dims_of(*bias), Dims{m, n},
                        [&](int64_t o, int64_t i, int64_t) { c[o] += beta * pc[i]; });
  }
  return true;
}

Status GemmImpl(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const float alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  const Dims& da = dims_of(a);
  const Dims& db = dims_of(b);
  if (da.size() != 2 || db.size() != 2) return ctx.error("Gemm takes 2-D inputs");
  const int64_t m = ta ? da[1] : da[0], k = ta ? da[0] : da[1], n = tb ? db[0] : db[1];
  if ((tb ? db[1] : db[0]) != k) return ctx.error("inner dimensions differ");
  if (dtype_of(a) != dtype_of(b)) return ctx.error("input types differ");
  return visit_gemm_type(dtype_of(a), [&](auto tag) {
    using T = decltype(tag);
    T* pc = ctx.allocate_as<T>(0, dtype_of(a), {m, n});
    if constexpr (std::is_same_v<T, float>) {
      if (!ta && dnnl_gemm(ctx, tb, m, n, k, alpha, beta, data_as<float>(a), data_as<float>(b), pc))
        return Status::ok();
    }
    T b2 = T(0);
    if (ctx.has_input(2) && beta != 0.0f) {
      const Tensor& c = ctx.in(2);
      if (dtype_of(c) != dtype_of(a)) return ctx.error("C differs from A in type");
      Dims bc;
      if (!broadcast_shape(dims_of(c), {m, n}, &bc) || bc != Dims{m, n})
        return ctx.error("C does not broadcast");
      const T* cc = data_as<T>(c);
      for_each_broadcast2(Dims{m, n}, dims_of(c), Dims{m, n},
                          [&](int64_t o, int64_t i, int64_t) { pc[o] = cc[i]; });
      b2 = static_cast<T>(beta);
    } else {
      std::fill(pc, pc + m * n, T(0));
    }
    gemm<T>(ta, tb, m, n, k, static_cast<T>(alpha), data_as<T>(a), da[1], data_as<T>(b), db[1], b2, pc, n);
    return Status::ok();
  });
}
Status Gemm(KernelContext& ctx) {
  return widened(ctx, GemmImpl);
}

// ---- convolution geometry shared by Conv, ConvTranspose and pooling.
struct Window {
  size_t spatial = 0;
  Dims kernel, strides, dilations, pad_begin, pad_end, in, out;
};

Status conv_window(KernelContext& ctx, const Dims& x, const Dims& kernel, Window* w) {
  w->spatial = x.size() - 2;
  w->in.assign(x.begin() + 2, x.end());
  w->kernel = kernel;
  w->strides = ctx.attr_ints("strides").value_or(Dims(w->spatial, 1));
  w->dilations = ctx.attr_ints("dilations").value_or(Dims(w->spatial, 1));
  Dims pads = ctx.attr_ints("pads").value_or(Dims(2 * w->spatial, 0));
  if (w->kernel.size() != w->spatial || w->strides.size() != w->spatial ||
      w->dilations.size() != w->spatial || pads.size() != 2 * w->spatial)
    return ctx.error("kernel, strides, dilations or pads do not match the input rank");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  w->pad_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(w->spatial));
  w->pad_end.assign(pads.begin() + static_cast<int64_t>(w->spatial), pads.end());
  w->out.resize(w->spatial);
  for (size_t i = 0; i < w->spatial; ++i) {
    const int64_t eff = (w->kernel[i] - 1) * w->dilations[i] + 1;
    if (w->strides[i] <= 0 || w->dilations[i] <= 0)
      return ctx.error("strides and dilations must be positive");
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (w->in[i] + w->strides[i] - 1) / w->strides[i];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w->strides[i] + eff - w->in[i]);
      w->pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w->pad_end[i] = total - w->pad_begin[i];
    } else if (auto_pad == "VALID") {
      w->pad_begin[i] = w->pad_end[i] = 0;
    }
    if (w->in[i] + w->pad_begin[i] + w->pad_end[i] < eff)
      return ctx.error("the kernel is larger than the padded input");
  }
  // The output size (floor or ceil mode) is the shape rule's: one formula for compile and run time. Any
  // size is memory-safe here, because the taps bound-check every input position.
  const Dims y = ctx.channels_last ? layout::to_first(ctx.rule_dims(0)) : ctx.rule_dims(0);
  if (y.size() != x.size()) return ctx.error("the shape rule's output rank is not the input's");
  w->out.assign(y.begin() + 2, y.end());
  return Status::ok();
}

// Walks every (channel, kernel tap, output position) of a convolution window in column order:
// f(column index, input offset), the offset -1 where the tap reads padding.
template <class F>
void for_each_tap(int64_t channels, const Window& w, F&& f) {
  const int64_t outs = num_elements(w.out), ks = num_elements(w.kernel), ins = num_elements(w.in);
  const size_t s = w.spatial;
  Dims kidx(s), oidx(s);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < ks; ++k) {
      int64_t rem = k;
      for (size_t d = s; d-- > 0;) {
        kidx[d] = rem % w.kernel[d];
        rem /= w.kernel[d];
      }
      std::fill(oidx.begin(), oidx.end(), 0);
      const int64_t column = (c * ks + k) * outs;
      for (int64_t o = 0; o < outs; ++o) {
        int64_t at = 0;
        for (size_t d = 0; d < s; ++d) {
          const int64_t i = oidx[d] * w.strides[d] - w.pad_begin[d] + kidx[d] * w.dilations[d];
          if (i < 0 || i >= w.in[d]) {
            at = -1;
            break;
          }
          at = at * w.in[d] + i;
        }
        f(column + o, at < 0 ? -1 : c * ins + at);
        for (size_t d = s; d-- > 0;) {
          if (++oidx[d] < w.out[d]) break;
          oidx[d] = 0;
        }
      }
    }
  }
}

// col[(c * K + kidx) * outs + o] for one image and one group's channels.
template <class T>
void im2col(const T* x, int64_t channels, const Window& w, T* col) {
  if (w.spatial != 2) {
    for_each_tap(channels, w, [&](int64_t i, int64_t at) { col[i] = at < 0 ? T(0) : x[at]; });
    return;
  }
  // The common 2-D case, row by row without the odometer.
  const int64_t outs = num_elements(w.out), ks = num_elements(w.kernel), ins = num_elements(w.in);
  const int64_t oh = w.out[0], ow = w.out[1];
  for (int64_t c = 0; c < channels; ++c) {
    const T* xc = x + c * ins;
    for (int64_t k = 0; k < ks; ++k) {
      const int64_t ky = k / w.kernel[1], kx = k % w.kernel[1];
      T* dst = col + (c * ks + k) * outs;
      for (int64_t y = 0; y < oh; ++y) {
        const int64_t iy = y * w.strides[0] - w.pad_begin[0] + ky * w.dilations[0];
        if (iy < 0 || iy >= w.in[0]) {
          std::fill(dst + y * ow, dst + (y + 1) * ow, T(0));
          continue;
        }
        const T* row = xc + iy * w.in[1];
        for (int64_t xo = 0; xo < ow; ++xo) {
          const int64_t ix = xo * w.strides[1] - w.pad_begin[1] + kx * w.dilations[1];
          dst[y * ow + xo] = ix >= 0 && ix < w.in[1] ? row[ix] : T(0);
        }
      }
    }
  }
}

// The adjoint of im2col: accumulates col into x.
template <class T>
void col2im(const T* col, int64_t channels, const Window& w, T* x) {
  for_each_tap(channels, w, [&](int64_t i, int64_t at) {
    if (at >= 0) x[at] += col[i];
  });
}

// Conv and ConvTranspose: the weight has the input's type, and the optional bias one such value per output
// channel.
Status check_weight_and_bias(KernelContext& ctx, const Tensor& x, const Tensor& weight,
                             int64_t out_channels) {
  if (dtype_of(weight) != dtype_of(x)) return ctx.error("input and weight types differ");
  if (ctx.has_input(2) &&
      (num_elements(dims_of(ctx.in(2))) != out_channels || dtype_of(ctx.in(2)) != dtype_of(x)))
    return ctx.error("the bias needs one value of the input's type per output channel");
  return Status::ok();
}

// y[n, m, :] += bias[m]
template <class T>
void add_channel_bias(T* y, int64_t N, int64_t M, int64_t per_channel, const T* bias) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      T* row = y + (n * M + m) * per_channel;
      for (int64_t o = 0; o < per_channel; ++o) row[o] += bias[m];
    }
}

template <class F>
Status visit_blas_float(KernelContext& ctx, DataType t, F&& f) {
  if (t == DataType::kFloat) return f(float{});
  if (t == DataType::kDouble) return f(double{});
  return ctx.error("data type " + std::string(sdk::to_string(t)) + " is not supported");
}

Status ConvImpl(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& wt = ctx.in(1);
  const Dims xd = ctx.channels_last ? layout::to_first(dims_of(x)) : dims_of(x);
  const Dims& wd = dims_of(wt);
  if (xd.size() < 3 || wd.size() != xd.size()) return ctx.error("input and weight ranks must match (>= 3)");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t N = xd[0], C = xd[1], M = wd[0];
  if (group <= 0 || C % group || M % group || wd[1] != C / group)
    return ctx.error("channels " + std::to_string(C) + ", weight " + dims_string(wd) + " and group " +
                     std::to_string(group) + " do not match");
  Window w;
  Dims kernel(wd.begin() + 2, wd.end());
  GS_RETURN_IF_ERROR(conv_window(ctx, xd, kernel, &w));
  Dims out = {N, M};
  out.insert(out.end(), w.out.begin(), w.out.end());
  GS_RETURN_IF_ERROR(check_weight_and_bias(ctx, x, wt, M));
  return visit_blas_float(ctx, dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    const T* px = data_as<T>(x);
    const T* pw = data_as<T>(wt);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), ctx.channels_last ? layout::to_last(out) : out);
    if constexpr (std::is_same_v<T, float>) {
      if (num_elements(out) > 0 && num_elements(xd) > 0) {
        dnnl_path::ConvSpec spec{xd,          wd,        out,   w.strides,       w.dilations,
                                 w.pad_begin, w.pad_end, group, ctx.has_input(2)};
        spec.channels_last = ctx.channels_last;
        if (dnnl_path::conv_f32(ctx, std::move(spec), px, pw,
                                ctx.has_input(2) ? data_as<T>(ctx.in(2)) : nullptr, py))
          return Status::ok();
      }
    }
    if (ctx.channels_last) return Status::internal("oneDNN refused a convolution it took at compile time");
    const int64_t outs = num_elements(w.out), ks = num_elements(kernel), ins = num_elements(w.in);
    const int64_t cg = C / group, mg = M / group;
    if (cg == 1 && mg == 1 && w.spatial == 2) {
      // Depthwise: one filter per channel; direct loops beat im2col + a GEMM with one row.
      const int64_t ih = w.in[0], iw = w.in[1], oh = w.out[0], ow = w.out[1], kh = kernel[0], kw = kernel[1];
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const T* xc = px + (n * C + c) * ins;
          const T* wc = pw + c * ks;
          T* yc = py + (n * M + c) * outs;
          const T bias = ctx.has_input(2) ? data_as<T>(ctx.in(2))[c] : T(0);
          for (int64_t y = 0; y < oh; ++y) {
            T* row = yc + y * ow;
            std::fill(row, row + ow, bias);
            for (int64_t i = 0; i < kh; ++i) {
              const int64_t iy = y * w.strides[0] - w.pad_begin[0] + i * w.dilations[0];
              if (iy < 0 || iy >= ih) continue;
              const T* xr = xc + iy * iw;
              for (int64_t j = 0; j < kw; ++j) {
                const T k = wc[i * kw + j];
                const int64_t off = j * w.dilations[1] - w.pad_begin[1], st = w.strides[1];
                // x range with 0 <= xo * st + off < iw
                const int64_t lo = off >= 0 ? 0 : (-off + st - 1) / st;
                const int64_t hi = std::min(ow, iw - off <= 0 ? 0 : (iw - off + st - 1) / st);
                for (int64_t xo = lo; xo < hi; ++xo) row[xo] += k * xr[xo * st + off];
              }
            }
          }
        }
      return Status::ok();
    }
    bool direct = true;  // 1x1, stride 1, no padding: the input is already the column matrix
    for (size_t i = 0; i < w.spatial; ++i)
      direct = direct && kernel[i] == 1 && w.strides[i] == 1 && w.pad_begin[i] == 0 && w.pad_end[i] == 0;
    T* col = direct ? nullptr : scratch<T>(static_cast<size_t>(cg * ks * outs));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        const T* xg = px + (n * C + g * cg) * ins;
        const T* cols = xg;
        if (!direct) {
          im2col(xg, cg, w, col);
          cols = col;
        }
        gemm<T>(false, false, mg, outs, cg * ks, T(1), pw + g * mg * cg * ks, cg * ks, cols, outs, T(0),
                py + (n * M + g * mg) * outs, outs);
      }
    }
    if (ctx.has_input(2)) add_channel_bias(py, N, M, outs, data_as<T>(ctx.in(2)));
    return Status::ok();
  });
}
Status Conv(KernelContext& ctx) {
  return widened(ctx, ConvImpl);
}

// ConvTranspose on oneDNN's deconvolution when its padding is expressible there (no negative pads).
bool dnnl_conv_transpose(KernelContext& ctx, const Window& w, const Dims& xd, const Dims& wd, const Dims& out,
                         int64_t group, const float* px, const float* pw, float* py) {
  if (num_elements(out) == 0 || num_elements(xd) == 0) return false;
  dnnl_path::ConvSpec spec{xd,          wd,        out,   w.strides,        w.dilations,
                           w.pad_begin, w.pad_end, group, ctx.has_input(2), true};
  for (size_t i = 0; i < w.spatial; ++i) {
    const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    spec.pad_end[i] = (xd[2 + i] - 1) * w.strides[i] + eff - w.pad_begin[i] - out[2 + i];
    if (spec.pad_begin[i] < 0 || spec.pad_end[i] < 0) return false;
  }
  return dnnl_path::conv_f32(ctx, std::move(spec), px, pw,
                             ctx.has_input(2) ? data_as<float>(ctx.in(2)) : nullptr, py);
}

// A 2-D ConvTranspose whose windows do not overlap (stride = kernel, no dilation, group or padding: the
// upsampling heads of detectors) is one matrix product per image, col[M * kh * kw, H * W] = W^T x X, each
// column scattered to its kh x kw output block. oneDNN's deconvolution is 20x slower here for few output
// channels (it pads them to 16). The choice depends on the geometry alone.
bool tiled_conv_transpose(KernelContext& ctx, const Window& w, const Dims& xd, const Dims& wd, int64_t group,
                          const float* px, const float* pw, float* py) {
  if (w.spatial != 2 || group != 1 || num_elements(xd) == 0) return false;
  for (size_t i = 0; i < 2; ++i)
    if (w.strides[i] != w.kernel[i] || w.dilations[i] != 1 || w.pad_begin[i] != 0 ||
        w.in[i] != xd[2 + i] * w.strides[i])
      return false;
  const int64_t N = xd[0], C = xd[1], M = wd[1], kh = wd[2], kw = wd[3], H = xd[2], W = xd[3];
  const int64_t rows = M * kh * kw, hw = H * W;
  // W [C, rows] to [rows, C]: small next to the product.
  std::vector<float> wt(static_cast<size_t>(rows * C));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < rows; ++r) wt[r * C + c] = pw[c * rows + r];
  std::vector<float> col(static_cast<size_t>(rows * hw));
  const float* bias = ctx.has_input(2) ? data_as<float>(ctx.in(2)) : nullptr;
  for (int64_t n = 0; n < N; ++n) {
    dnnl_path::MatMulSpec spec{1, rows, hw, C};
    if (!dnnl_path::matmul_f32(ctx, spec, wt.data(), px + n * C * hw, col.data())) return false;
    float* image = py + n * M * hw * kh * kw;
    for (int64_t m = 0; m < M; ++m) {
      const float b = bias ? bias[m] : 0.0f;
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t c = 0; c < kw; ++c) {
          const float* src = col.data() + ((m * kh + a) * kw + c) * hw;
          float* dst = image + m * hw * kh * kw + a * W * kw + c;
          for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < W; ++j) dst[i * kh * W * kw + j * kw] = src[i * W + j] + b;
        }
    }
  }
  return true;
}

Status ConvTransposeImpl(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& wt = ctx.in(1);
  const Dims& xd = dims_of(x);
  const Dims& wd = dims_of(wt);
  if (xd.size() < 3 || wd.size() != xd.size()) return ctx.error("input and weight ranks must match (>= 3)");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t N = xd[0], C = xd[1];
  if (group <= 0 || C % group || wd[0] != C) return ctx.error("weight does not match the input channels");
  const int64_t mg = wd[1], M = mg * group;
  const size_t s = xd.size() - 2;
  Dims kernel(wd.begin() + 2, wd.end());
  Dims strides = ctx.attr_ints("strides").value_or(Dims(s, 1));
  Dims dil = ctx.attr_ints("dilations").value_or(Dims(s, 1));
  Dims pads = ctx.attr_ints("pads").value_or(Dims(2 * s, 0));
  Dims out_pad = ctx.attr_ints("output_padding").value_or(Dims(s, 0));
  auto out_shape = ctx.attr_ints("output_shape");
  if (strides.size() != s || dil.size() != s || pads.size() != 2 * s || out_pad.size() != s)
    return ctx.error("strides, dilations, pads or output_padding do not match the input rank");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  Window w;  // the geometry of the equivalent Conv from output to input
  w.spatial = s;
  w.kernel = kernel;
  w.strides = strides;
  w.dilations = dil;
  w.out.assign(xd.begin() + 2, xd.end());
  w.in.resize(s);
  w.pad_begin.resize(s);
  w.pad_end.resize(s);
  for (size_t i = 0; i < s; ++i) {
    const int64_t eff = (kernel[i] - 1) * dil[i] + 1;
    const int64_t full = strides[i] * (xd[2 + i] - 1) + out_pad[i] + eff;
    // An explicit output_shape or SAME_* padding fixes the output size; the padding is what is left over,
    // split with the extra unit at the end for SAME_UPPER (floor division, as ONNX's reference).
    const bool explicit_shape = out_shape && out_shape->size() >= s;
    if (explicit_shape || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t want = explicit_shape ? (*out_shape)[out_shape->size() - s + i] : xd[2 + i] * strides[i];
      const int64_t total = explicit_shape ? full - want : std::max<int64_t>(0, full - want);
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? half : total - half;
      w.pad_end[i] = total - w.pad_begin[i];
      w.in[i] = want;
    } else {
      w.pad_begin[i] = auto_pad == "VALID" ? 0 : pads[i];
      w.pad_end[i] = auto_pad == "VALID" ? 0 : pads[s + i];
      w.in[i] = full - w.pad_begin[i] - w.pad_end[i];
    }
    if (w.in[i] < 0) return ctx.error("negative output size");
  }
  Dims out = {N, M};
  out.insert(out.end(), w.in.begin(), w.in.end());
  GS_RETURN_IF_ERROR(check_weight_and_bias(ctx, x, wt, M));
  return visit_blas_float(ctx, dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    const T* px = data_as<T>(x);
    const T* pw = data_as<T>(wt);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), out);
    if constexpr (std::is_same_v<T, float>) {
      if (tiled_conv_transpose(ctx, w, xd, wd, group, px, pw, py)) return Status::ok();
      if (dnnl_conv_transpose(ctx, w, xd, wd, out, group, px, pw, py)) return Status::ok();
    }
    const int64_t ins = num_elements(w.out), ks = num_elements(kernel), outs = num_elements(w.in);
    const int64_t cg = C / group;
    std::fill(py, py + N * M * outs, T(0));
    T* col = scratch<T>(static_cast<size_t>(mg * ks * ins));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t g = 0; g < group; ++g) {
        // col = W_g^T [mg*ks, cg] x X_g [cg, ins]
        gemm<T>(true, false, mg * ks, ins, cg, T(1), pw + g * cg * mg * ks, mg * ks,
                px + (n * C + g * cg) * ins, ins, T(0), col, ins);
        col2im(col, mg, w, py + (n * M + g * mg) * outs);
      }
    }
    if (ctx.has_input(2)) add_channel_bias(py, N, M, outs, data_as<T>(ctx.in(2)));
    return Status::ok();
  });
}
Status ConvTranspose(KernelContext& ctx) {
  return widened(ctx, ConvTransposeImpl);
}

// ---- pooling
// The flat position `arg` (row-major over the spatial dims `in`) as a column-major index (MaxPool's
// storage_order = 1).
int64_t column_major_index(int64_t arg, const Dims& in_strides, const Dims& in) {
  int64_t rem = arg, col = 0, mul = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t c = rem / in_strides[d];
    rem %= in_strides[d];
    col += c * mul;
    mul *= in[d];
  }
  return col;
}

// One output position of a pooling window: the maximum (and where it is) or the sum and the count to divide
// by (padding counts with count_include_pad).
struct PoolResult {
  double acc = 0;
  int64_t count = 0, arg = -1;
};
template <class T, class C>
PoolResult pool_one(const T* plane, const Window& w, const Dims& oidx, Dims& kidx, bool max, bool include_pad,
                    double lp) {
  PoolResult r;
  if (max) r.acc = -std::numeric_limits<double>::infinity();
  const size_t s = w.spatial;
  const int64_t ks = num_elements(w.kernel);
  for (int64_t k = 0; k < ks; ++k) {
    int64_t rem = k;
    for (size_t d = s; d-- > 0;) {
      kidx[d] = rem % w.kernel[d];
      rem /= w.kernel[d];
    }
    int64_t at = 0;
    bool inside = true, in_padded = true;
    for (size_t d = 0; d < s; ++d) {
      const int64_t i = oidx[d] * w.strides[d] - w.pad_begin[d] + kidx[d] * w.dilations[d];
      if (i < 0 || i >= w.in[d]) inside = false;
      if (i >= w.in[d] + w.pad_end[d]) in_padded = false;
      at = at * w.in[d] + i;
    }
    if (!inside) {
      if (!max && include_pad && in_padded) ++r.count;
      continue;
    }
    const double v = static_cast<double>(static_cast<C>(plane[at]));
    if (max) {
      if (v > r.acc || r.arg < 0) {
        r.acc = v;
        r.arg = at;
      }
    } else {
      r.acc += lp > 0 ? std::pow(std::abs(v), lp) : v;
      ++r.count;
    }
  }
  return r;
}

// MaxPool also takes 8-bit integers (opset 12); averages are floating point only.
template <class F>
Status visit_pool_type(DataType dtype, bool max, F&& f) {
  if (max && dtype == DataType::kInt8) return f(int8_t{});
  if (max && dtype == DataType::kUint8) return f(uint8_t{});
  return visit_float(dtype, f);
}

// Max and average pooling on oneDNN where its semantics are ONNX's: not LpPool, not MaxPool's Indices output,
// and an average that counts padding only when no ceil-mode padding lies beyond the declared pads (oneDNN
// would count it; ONNX does not).
// The oneDNN spec of a pooling it takes with ONNX's semantics; nullopt otherwise.
std::optional<dnnl_path::PoolSpec> dnnl_pool_spec(const KernelContext& ctx, const Window& w, bool max,
                                                  bool include_pad, double lp, const Dims& xd,
                                                  const Dims& out) {
  if (lp > 0 || (max && ctx.num_outputs() > 1) || num_elements(out) == 0) return std::nullopt;
  dnnl_path::PoolSpec spec{xd,          out,       w.kernel, w.strides,  w.dilations,
                           w.pad_begin, w.pad_end, max,      include_pad};
  spec.channels_last = ctx.channels_last;
  for (size_t i = 0; i < w.spatial; ++i) {
    const int64_t eff = (w.kernel[i] - 1) * w.dilations[i] + 1;
    spec.pad_end[i] = (w.out[i] - 1) * w.strides[i] + eff - w.in[i] - w.pad_begin[i];
    if (spec.pad_end[i] < 0 || (!max && include_pad && spec.pad_end[i] != w.pad_end[i])) return std::nullopt;
    // A window wholly in the padding has no element: the reference path gives ONNX's value for it.
    if ((w.out[i] - 1) * w.strides[i] - w.pad_begin[i] >= w.in[i] || w.pad_begin[i] >= eff)
      return std::nullopt;
  }
  return spec;
}

bool dnnl_pool(KernelContext& ctx, const Window& w, bool max, bool include_pad, double lp, const Dims& xd,
               const Dims& out, const float* px, float* py) {
  std::optional<dnnl_path::PoolSpec> spec = dnnl_pool_spec(ctx, w, max, include_pad, lp, xd, out);
  return spec && dnnl_path::pool_f32(ctx, std::move(*spec), px, py);
}

// `lp` > 0: LpPool, the lp-norm of each window.
Status pool(KernelContext& ctx, bool max, double lp = 0) {
  const Tensor& x = ctx.in(0);
  const Dims xd = ctx.channels_last ? layout::to_first(dims_of(x)) : dims_of(x);
  if (xd.size() < 3) return ctx.error("input must have rank >= 3");
  auto kernel = ctx.attr_ints("kernel_shape");
  if (!kernel) return ctx.error("kernel_shape is required");
  Window w;
  GS_RETURN_IF_ERROR(conv_window(ctx, xd, *kernel, &w));
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const bool row_major_indices = ctx.attr_int("storage_order", 0) == 0;
  Dims out = {xd[0], xd[1]};
  out.insert(out.end(), w.out.begin(), w.out.end());
  return visit_pool_type(dtype_of(x), max, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), ctx.channels_last ? layout::to_last(out) : out);
    if constexpr (std::is_same_v<T, float>) {
      if (dnnl_pool(ctx, w, max, include_pad, lp, xd, out, px, py)) return Status::ok();
    }
    if (ctx.channels_last) return Status::internal("oneDNN refused a pooling it took at compile time");
    int64_t* pi = max && ctx.num_outputs() > 1 ? ctx.allocate_as<int64_t>(1, DataType::kInt64, out) : nullptr;
    const int64_t planes = xd[0] * xd[1], ins = num_elements(w.in), outs = num_elements(w.out);
    const size_t s = w.spatial;
    Dims oidx(s), kidx(s), in_strides = strides_of(w.in);
    for (int64_t p = 0; p < planes; ++p) {
      std::fill(oidx.begin(), oidx.end(), 0);
      for (int64_t o = 0; o < outs; ++o) {
        const PoolResult r = pool_one<T, C>(px + p * ins, w, oidx, kidx, max, include_pad, lp);
        const double avg = r.count ? r.acc / static_cast<double>(r.count) : 0.0;
        py[p * outs + o] = T(static_cast<C>(max ? r.acc : (lp > 0 ? std::pow(r.acc, 1 / lp) : avg)));
        if (pi) {
          const int64_t index =
              !row_major_indices && r.arg >= 0 ? column_major_index(r.arg, in_strides, w.in) : r.arg;
          pi[p * outs + o] = p * ins + index;
        }
        for (size_t d = s; d-- > 0;) {
          if (++oidx[d] < w.out[d]) break;
          oidx[d] = 0;
        }
      }
    }
    return Status::ok();
  });
}
// Bilinear sample of one plane at (y, x), zero outside (torchvision's deform_conv2d convention, which ONNX
// follows).
double bilinear_zero(const double* plane, int64_t H, int64_t W, double y, double x) {
  if (y <= -1 || y >= static_cast<double>(H) || x <= -1 || x >= static_cast<double>(W)) return 0;
  const auto y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  const double fy = y - static_cast<double>(y0), fx = x - static_cast<double>(x0);
  const auto at = [&](int64_t yy, int64_t xx) {
    return yy < 0 || yy >= H || xx < 0 || xx >= W ? 0.0 : plane[yy * W + xx];
  };
  return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) +
         fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
}

// 2-D deformable convolution (opset 19): each kernel tap samples X at its regular position plus a learned
// (dy, dx) offset per output position, optionally scaled by a mask; offsets in offset_group channel groups.
Status DeformConv(KernelContext& ctx) {
  const Dims& xd = dims_of(ctx.in(0));
  const Dims& wd = dims_of(ctx.in(1));
  if (xd.size() != 4 || wd.size() != 4) return ctx.error("only 2-D deformable convolution is supported");
  Window w;
  GS_RETURN_IF_ERROR(conv_window(ctx, xd, {wd[2], wd[3]}, &w));
  const int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], M = wd[0], kh = wd[2], kw = wd[3];
  const int64_t group = ctx.attr_int("group", 1), og = ctx.attr_int("offset_group", 1);
  const int64_t OH = w.out[0], OW = w.out[1], K = kh * kw;
  if (group < 1 || og < 1 || C % group != 0 || C % og != 0 || M % group != 0 || wd[1] != C / group)
    return ctx.error("channels, group and offset_group do not agree");
  if (dims_of(ctx.in(2)) != Dims{N, og * 2 * K, OH, OW})
    return ctx.error("offset must be " + dims_string({N, og * 2 * K, OH, OW}) + ", got " +
                     dims_string(dims_of(ctx.in(2))));
  const bool masked = ctx.has_input(4);
  if (masked && dims_of(ctx.in(4)) != Dims{N, og * K, OH, OW}) return ctx.error("mask has the wrong shape");
  const std::vector<double> x = to_doubles(ctx.in(0)), wt = to_doubles(ctx.in(1)),
                            off = to_doubles(ctx.in(2));
  const std::vector<double> mask = masked ? to_doubles(ctx.in(4)) : std::vector<double>{};
  const std::vector<double> bias = ctx.has_input(3) ? to_doubles(ctx.in(3)) : std::vector<double>(M, 0.0);
  if (static_cast<int64_t>(bias.size()) != M)
    return ctx.error("the bias must hold one value per output channel");
  std::vector<double> y(static_cast<size_t>(N * M * OH * OW));
  std::vector<double> cols(static_cast<size_t>(C * K));  // the sampled inputs of one output position
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        for (int64_t c = 0; c < C; ++c) {
          const int64_t g = c / (C / og);
          for (int64_t k = 0; k < K; ++k) {
            const int64_t oc = ((n * og + g) * 2 * K + 2 * k) * OH * OW + oh * OW + ow;
            const double py =
                static_cast<double>(oh * w.strides[0] - w.pad_begin[0] + (k / kw) * w.dilations[0]) + off[oc];
            const double px =
                static_cast<double>(ow * w.strides[1] - w.pad_begin[1] + (k % kw) * w.dilations[1]) +
                off[oc + OH * OW];
            const double m = masked ? mask[((n * og + g) * K + k) * OH * OW + oh * OW + ow] : 1.0;
            cols[c * K + k] = m * bilinear_zero(x.data() + (n * C + c) * H * W, H, W, py, px);
          }
        }
        for (int64_t o = 0; o < M; ++o) {
          const int64_t g = o / (M / group), cpg = C / group;
          double acc = bias[o];
          for (int64_t c = 0; c < cpg; ++c)
            for (int64_t k = 0; k < K; ++k) acc += wt[(o * cpg + c) * K + k] * cols[(g * cpg + c) * K + k];
          y[((n * M + o) * OH + oh) * OW + ow] = acc;
        }
      }
  return write_float_output(ctx, 0, dtype_of(ctx.in(0)), {N, M, OH, OW}, [&](int64_t i) { return y[i]; });
}

Status MaxPool(KernelContext& ctx) {
  return pool(ctx, true);
}
Status AveragePool(KernelContext& ctx) {
  return pool(ctx, false);
}
Status LpPool(KernelContext& ctx) {
  const int64_t p = ctx.attr_int("p", 2);
  if (p < 1) return ctx.error("p must be positive, got " + std::to_string(p));
  return pool(ctx, false, static_cast<double>(p));
}

// Eight running sums per channel, element i of a plane into sum i % 8, combined in a fixed order:
// vectorisable, the same bits on every run, and the same bits in both layouts.
constexpr int64_t kPoolLanes = 8;
double combine_lanes(const double* l, int64_t stride) {
  return ((l[0] + l[4 * stride]) + (l[stride] + l[5 * stride])) +
         ((l[2 * stride] + l[6 * stride]) + (l[3 * stride] + l[7 * stride]));
}

// x held [N, H, W, C] (layout.h): the channels are the inner loop.
Status global_pool_channels_last(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  if (xd.size() != 4 || dtype_of(x) != DataType::kFloat) return ctx.error("expects a rank-4 float input");
  const int64_t n = xd[0], ins = xd[1] * xd[2], c = xd[3];
  const float* px = data_as<float>(x);
  float* py = ctx.allocate_as<float>(0, DataType::kFloat, {n, 1, 1, c});
  std::vector<double> lanes(static_cast<size_t>(kPoolLanes * c));
  for (int64_t b = 0; b < n; ++b) {
    const float* image = px + b * ins * c;
    if (max) {
      for (int64_t k = 0; k < c; ++k) lanes[k] = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < ins; ++i)
        for (int64_t k = 0; k < c; ++k) lanes[k] = std::max(lanes[k], static_cast<double>(image[i * c + k]));
      for (int64_t k = 0; k < c; ++k) py[b * c + k] = static_cast<float>(lanes[k]);
      continue;
    }
    std::fill(lanes.begin(), lanes.end(), 0.0);
    for (int64_t i = 0; i < ins; ++i) {
      double* lane = lanes.data() + (i % kPoolLanes) * c;
      for (int64_t k = 0; k < c; ++k) lane[k] += static_cast<double>(image[i * c + k]);
    }
    for (int64_t k = 0; k < c; ++k)
      py[b * c + k] = static_cast<float>(combine_lanes(lanes.data() + k, c) / static_cast<double>(ins));
  }
  return Status::ok();
}

Status global_pool(KernelContext& ctx, bool max) {
  if (ctx.channels_last) return global_pool_channels_last(ctx, max);
  const Tensor& x = ctx.in(0);
  const Dims& xd = dims_of(x);
  if (xd.size() < 2) return ctx.error("input must have rank >= 2");
  Dims out(xd.size(), 1);
  out[0] = xd[0];
  out[1] = xd[1];
  const int64_t planes = xd[0] * xd[1], ins = num_elements(Dims(xd.begin() + 2, xd.end()));
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* px = data_as<T>(x);
    T* py = ctx.allocate_as<T>(0, dtype_of(x), out);
    for (int64_t p = 0; p < planes; ++p) {
      const T* plane = px + p * ins;
      if (max) {
        double acc = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < ins; ++i) acc = std::max(acc, static_cast<double>(static_cast<C>(plane[i])));
        py[p] = T(static_cast<C>(acc));
        continue;
      }
      double lanes[kPoolLanes] = {};
      int64_t i = 0;
      for (; i + kPoolLanes <= ins; i += kPoolLanes)
        for (int64_t l = 0; l < kPoolLanes; ++l)
          lanes[l] += static_cast<double>(static_cast<C>(plane[i + l]));
      for (; i < ins; ++i) lanes[i % kPoolLanes] += static_cast<double>(static_cast<C>(plane[i]));
      py[p] = T(static_cast<C>(combine_lanes(lanes, 1) / static_cast<double>(ins)));
    }
    return Status::ok();
  });
}
Status GlobalAveragePool(KernelContext& ctx) {
  return global_pool(ctx, false);
}
Status GlobalMaxPool(KernelContext& ctx) {
  return global_pool(ctx, true);
}

}  // namespace

bool conv_channels_last(const sdk::Node& node, int opset, const Dims& x, const Dims& w, const Dims& y,
                        bool bias) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || num_elements(x) == 0 || num_elements(y) == 0)
    return false;
  KernelContext ctx;
  ctx.node = &node;
  ctx.opset = opset;
  const std::vector<RuleShape> rule = {{true, DataType::kFloat, y}};
  ctx.rule = &rule;
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0 || x[1] % group || w[0] % group || w[1] != x[1] / group) return false;
  Window win;
  if (!conv_window(ctx, x, Dims(w.begin() + 2, w.end()), &win).is_ok()) return false;
  Dims out = {x[0], w[0]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  if (out != y) return false;
  dnnl_path::ConvSpec spec{x, w, y, win.strides, win.dilations, win.pad_begin, win.pad_end, group, bias};
  return dnnl_path::conv_supported(spec);
}

bool max_pool_channels_last(const sdk::Node& node, int opset, const Dims& x, const Dims& y) {
  if (x.size() != 4 || y.size() != 4 || node.num_outputs() != 1) return false;
  KernelContext ctx;
  ctx.node = &node;
  ctx.opset = opset;
  const std::vector<RuleShape> rule = {{true, DataType::kFloat, y}};
  ctx.rule = &rule;
  auto kernel = ctx.attr_ints("kernel_shape");
  Window w;
  if (!kernel || !conv_window(ctx, x, *kernel, &w).is_ok()) return false;
  ctx.channels_last = true;
  std::optional<dnnl_path::PoolSpec> spec = dnnl_pool_spec(ctx, w, true, false, 0, x, y);
  return spec && dnnl_path::pool_supported(*spec);
}

// The float/double implementations without the 16-bit widening, for the integer kernels (quant.cpp).
Status matmul_kernel(KernelContext& ctx) {
  return MatMulImpl(ctx);
}
Status conv_kernel(KernelContext& ctx) {
  return ConvImpl(ctx);
}

void register_nn(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"AveragePool", AveragePool},
                          {"Conv", Conv},
                          {"ConvTranspose", ConvTranspose},
                          {"Gemm", Gemm},
                          {"GlobalAveragePool", GlobalAveragePool},
                          {"GlobalMaxPool", GlobalMaxPool},
                          {"MatMul", MatMul},
                          {"DeformConv", DeformConv},
                          {"LpPool", LpPool},
                          {"MaxPool", MaxPool},
                      });
}

}  // namespace graphsplit::kernels

namespace graphsplit::kernels {

// The budget goes to oneDNN, whose kernels split work over outputs; OpenBLAS stays on one thread, because its
// threaded GEMM sums in an order that depends on the thread count.
void set_blas_threads(int threads) {
  quiet_blas();
  dnnl_path::set_threads(threads);
}

}  // namespace graphsplit::kernels

// OpenBLAS's threaded build (Debian's default) starts a pool when it loads; the pool's threads spin on
// sched_yield for about 0.1 s before they sleep. Weak: the serial and OpenMP builds have no pool and no such
// function.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));

namespace graphsplit::kernels {

// The kernels call OpenBLAS on one thread only, so its pool is stopped the first time they are used. On a
// 2-vCPU machine its spinning thread made the OpenMP teams of the first ~0.1 s of a process wait for a core:
// silero VAD legacy with two threads ran 4-16 ms per run instead of 0.3 ms in short processes. Should a
// caller ask OpenBLAS for threads later, it starts the pool again itself.
void quiet_blas() {
  static std::once_flag once;
  std::call_once(once, [] {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
  });
}

}  // namespace graphsplit::kernels
