// Integer and quantised kernels (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv,
// DynamicQuantizeLinear), Det and MaxUnpool. The integer products run as float64 GEMMs through the float
// kernels: exact while sums stay below 2^53, far beyond any int8/uint8 dot product.
#include <algorithm>
#include <cmath>

#include "dnnl.h"
#include "kernel.h"

namespace graphsplit::kernels {

Status matmul_kernel(KernelContext& ctx);  // nn.cpp
Status conv_kernel(KernelContext& ctx);    // nn.cpp

namespace {

class HeapOutputs final : public OutputAllocator {
 public:
  Tensor allocate(size_t, sdk::TensorDesc desc, size_t bytes, char** writable) override {
    return Tensor::allocate(std::move(desc), bytes, writable);
  }
};

Tensor doubles(const Dims& dims, const std::vector<double>& v) {
  sdk::TensorDesc d;
  d.dtype = DataType::kDouble;
  d.shape = sdk::Shape(dims);
  char* out = nullptr;
  Tensor t = Tensor::allocate(d, v.size() * 8, &out);
  std::memcpy(out, v.data(), v.size() * 8);
  return t;
}

// x - zero_point as doubles; the zero point is a scalar or one value per slice along `axis`.
Status centred(KernelContext& ctx, const Tensor& x, const Tensor* zp, int64_t axis,
               std::vector<double>* out) {
  const Dims& d = dims_of(x);
  const int64_t n = num_elements(d);
  out->resize(static_cast<size_t>(n));
  const int64_t nz = zp ? num_elements(dims_of(*zp)) : 0;
  int64_t inner = 1;
  if (nz > 1) {
    if (axis < 0 || axis >= static_cast<int64_t>(d.size()) || d[axis] != nz)
      return ctx.error("the zero point must be a scalar or hold one value per row/column");
    for (size_t a = axis + 1; a < d.size(); ++a) inner *= d[a];
  }
  for (int64_t i = 0; i < n; ++i) {
    const double z =
        nz == 0 ? 0.0 : scalar_as_double(*zp, static_cast<size_t>(nz > 1 ? (i / inner) % nz : 0));
    (*out)[i] = scalar_as_double(x, static_cast<size_t>(i)) - z;
  }
  return Status::ok();
}

// Runs `fn` (a float kernel) on double inputs and returns its output 0.
Status run_double(KernelContext& ctx, Status (*fn)(KernelContext&), std::vector<Tensor> inputs, Tensor* out) {
  KernelContext inner = ctx;
  inner.rule_checks_dtype = false;
  inner.constant_inputs = 0;  // the inputs are converted copies
  inner.state = nullptr;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs)
    ptrs.push_back(t.data() || t.desc().dtype != DataType::kUndefined ? &t : nullptr);
  inner.inputs = ptrs;
  HeapOutputs heap;
  std::vector<Tensor> produced;
  inner.outputs = &produced;
  inner.allocator = &heap;
  GS_RETURN_IF_ERROR(fn(inner));
  *out = produced.at(0);
  return Status::ok();
}

const Tensor* optional(KernelContext& ctx, size_t i) {
  return ctx.has_input(i) && num_elements(dims_of(ctx.in(i))) > 0 ? &ctx.in(i) : nullptr;
}

template <class Q>
Q saturate(double v) {
  return static_cast<Q>(std::clamp(v, static_cast<double>(std::numeric_limits<Q>::lowest()),
                                   static_cast<double>(std::numeric_limits<Q>::max())));
}

Status write_int32(KernelContext& ctx, const Tensor& acc) {
  const int64_t n = num_elements(dims_of(acc));
  auto* o = ctx.allocate_as<int32_t>(0, DataType::kInt32, dims_of(acc));
  const auto* a = data_as<double>(acc);
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<int32_t>(a[i]);
  return Status::ok();
}

// ---- the int8 matrix product: exact int32 sums on oneDNN where it has them (dnnl.h), else the double path
// below. Convolutions keep the double path: oneDNN 2.6's int8 convolutions pass their sums through float
// (149 of 504 sums of a 96-channel 3x3 ConvInteger came out rounded here).

// x's zero point when it is one value for every element (absent: 0).
std::optional<int32_t> common_zero(const Tensor* zp) {
  if (!zp) return 0;
  const std::vector<int64_t> v = to_int64s(*zp);
  if (v.empty() || std::any_of(v.begin(), v.end(), [&](int64_t z) { return z != v[0]; })) return std::nullopt;
  return static_cast<int32_t>(v[0]);
}

// The weights as s8 with zero point 0: s8 weights whose zero points are all 0 as they are, or u8 weights
// whose zero points are all 128 shifted by 128 (exactly) into `shifted`; nullptr otherwise.
const int8_t* s8_weights(const Tensor& w, const Tensor* zp, std::vector<int8_t>* shifted) {
  const std::optional<int32_t> z = common_zero(zp);
  if (dtype_of(w) == DataType::kInt8 && z == 0) return data_as<int8_t>(w);
  if (dtype_of(w) != DataType::kUint8 || z != 128) return nullptr;
  const auto* p = data_as<uint8_t>(w);
  shifted->resize(static_cast<size_t>(num_elements(dims_of(w))));
  for (size_t i = 0; i < shifted->size(); ++i)
    (*shifted)[i] = static_cast<int8_t>(static_cast<int32_t>(p[i]) - 128);
  return shifted->data();
}

// sum_k (a - a_zero) * (b - b_zero) for a MatMulInteger/QLinearMatMul whose second operand is a matrix; false
// where oneDNN cannot give it exactly.
bool int8_sums(KernelContext& ctx, const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp,
               std::vector<int32_t>* acc, Dims* out) {
  const DataType at = dtype_of(a);
  if ((at != DataType::kUint8 && at != DataType::kInt8) || (a_zp && dtype_of(*a_zp) != at)) return false;
  const Dims& ad = dims_of(a);
  const Dims& bd = dims_of(b);
  // Up to 2^16 products of at most 255 x 128 stay within int32, as the double path's sums do.
  if (ad.size() < 2 || bd.size() != 2 || ad.back() != bd[0] || num_elements(ad) == 0 || bd[1] == 0 ||
      bd[0] > (int64_t{1} << 16))
    return false;
  const std::optional<int32_t> zero = common_zero(a_zp);
  if (!zero) return false;
  std::vector<int8_t> shifted;
  const int8_t* weights = s8_weights(b, b_zp, &shifted);
  if (!weights) return false;
  dnnl_path::Int8Spec spec;
  spec.k = bd[0];
  spec.n = bd[1];
  spec.m = num_elements(ad) / spec.k;
  spec.a_signed = at == DataType::kInt8;
  spec.a_zero = *zero;
  *out = Dims(ad.begin(), ad.end() - 1);
  out->push_back(spec.n);
  acc->resize(static_cast<size_t>(num_elements(*out)));
  return dnnl_path::int8_matmul(ctx, spec, a.data(), weights, acc->data());
}

Status write_int32(KernelContext& ctx, const std::vector<int32_t>& acc, const Dims& dims) {
  auto* o = ctx.allocate_as<int32_t>(0, DataType::kInt32, dims);
  std::copy(acc.begin(), acc.end(), o);
  return Status::ok();
}

// The sums as the doubles requantize() reads.
Tensor double_sums(const std::vector<int32_t>& acc, const Dims& dims) {
  return doubles(dims, std::vector<double>(acc.begin(), acc.end()));
}

Status MatMulInteger(KernelContext& ctx) {
  std::vector<int32_t> sums;
  Dims out;
  if (int8_sums(ctx, ctx.in(0), optional(ctx, 2), ctx.in(1), optional(ctx, 3), &sums, &out))
    return write_int32(ctx, sums, out);
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (dims_of(a).size() < 2 || dims_of(b).size() < 2)
    return ctx.unsupported("MatMulInteger on vectors is not supported");
  std::vector<double> av, bv;
  GS_RETURN_IF_ERROR(centred(ctx, a, optional(ctx, 2), static_cast<int64_t>(dims_of(a).size()) - 2, &av));
  GS_RETURN_IF_ERROR(centred(ctx, b, optional(ctx, 3), static_cast<int64_t>(dims_of(b).size()) - 1, &bv));
  Tensor acc;
  GS_RETURN_IF_ERROR(
      run_double(ctx, matmul_kernel, {doubles(dims_of(a), av), doubles(dims_of(b), bv)}, &acc));
  return write_int32(ctx, acc);
}

Status ConvInteger(KernelContext& ctx) {
  std::vector<double> xv, wv;
  GS_RETURN_IF_ERROR(centred(ctx, ctx.in(0), optional(ctx, 2), 1, &xv));
  GS_RETURN_IF_ERROR(centred(ctx, ctx.in(1), optional(ctx, 3), 0, &wv));
  Tensor acc;
  GS_RETURN_IF_ERROR(
      run_double(ctx, conv_kernel, {doubles(dims_of(ctx.in(0)), xv), doubles(dims_of(ctx.in(1)), wv)}, &acc));
  return write_int32(ctx, acc);
}

// y = saturate(round(acc * scale_in / y_scale) + y_zp); scale_in is per-tensor or per slice of `axis` of acc.
Status requantize(KernelContext& ctx, const Tensor& acc, const std::vector<double>& scale, int64_t axis,
                  const Tensor& y_scale, const Tensor* y_zp) {
  const Dims& d = dims_of(acc);
  const int64_t n = num_elements(d);
  int64_t inner = 1;
  if (scale.size() > 1)
    for (size_t a = axis + 1; a < d.size(); ++a) inner *= d[a];
  const double ys = scalar_as_double(y_scale);
  const double zp = y_zp ? scalar_as_double(*y_zp) : 0.0;
  const DataType qt = y_zp ? dtype_of(*y_zp) : DataType::kUint8;
  const auto* a = data_as<double>(acc);
  auto value = [&](int64_t i) {
    const double s = scale.size() > 1 ? scale[(i / inner) % static_cast<int64_t>(scale.size())] : scale[0];
    // float32 arithmetic, as ONNX's reference computes the requantisation
    const float real = static_cast<float>(a[i]) * static_cast<float>(s) / static_cast<float>(ys);
    return static_cast<double>(std::nearbyint(real)) + zp;
  };
  if (qt == DataType::kUint8) {
    auto* o = ctx.allocate_as<uint8_t>(0, qt, d);
    for (int64_t i = 0; i < n; ++i) o[i] = saturate<uint8_t>(value(i));
  } else if (qt == DataType::kInt8) {
    auto* o = ctx.allocate_as<int8_t>(0, qt, d);
    for (int64_t i = 0; i < n; ++i) o[i] = saturate<int8_t>(value(i));
  } else {
    return ctx.unsupported("quantised type " + std::string(sdk::to_string(qt)) + " is not supported");
  }
  return Status::ok();
}

Status QLinearMatMul(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(3);
  if (dims_of(a).size() < 2 || dims_of(b).size() < 2)
    return ctx.unsupported("QLinearMatMul on vectors is not supported");
  std::vector<double> av, bv;
  GS_RETURN_IF_ERROR(centred(ctx, a, optional(ctx, 2), static_cast<int64_t>(dims_of(a).size()) - 2, &av));
  GS_RETURN_IF_ERROR(centred(ctx, b, optional(ctx, 5), static_cast<int64_t>(dims_of(b).size()) - 1, &bv));
  const std::vector<double> as = to_doubles(ctx.in(1)), bs = to_doubles(ctx.in(4));
  if (as.size() > 1 || bs.size() > 1)
    return ctx.unsupported("per-row/column QLinearMatMul scales are not supported");
  std::vector<int32_t> sums;
  Dims out;
  if (int8_sums(ctx, a, optional(ctx, 2), b, optional(ctx, 5), &sums, &out))
    return requantize(ctx, double_sums(sums, out), {as[0] * bs[0]}, 0, ctx.in(6), optional(ctx, 7));
  Tensor acc;
  GS_RETURN_IF_ERROR(
      run_double(ctx, matmul_kernel, {doubles(dims_of(a), av), doubles(dims_of(b), bv)}, &acc));
  return requantize(ctx, acc, {as[0] * bs[0]}, 0, ctx.in(6), optional(ctx, 7));
}

Status QLinearConv(KernelContext& ctx) {
  std::vector<double> xv, wv;
  GS_RETURN_IF_ERROR(centred(ctx, ctx.in(0), optional(ctx, 2), 1, &xv));
  GS_RETURN_IF_ERROR(centred(ctx, ctx.in(3), optional(ctx, 5), 0, &wv));
  std::vector<Tensor> inputs = {doubles(dims_of(ctx.in(0)), xv), doubles(dims_of(ctx.in(3)), wv)};
  if (const Tensor* bias = optional(ctx, 8)) inputs.push_back(doubles(dims_of(*bias), to_doubles(*bias)));
  Tensor acc;
  GS_RETURN_IF_ERROR(run_double(ctx, conv_kernel, inputs, &acc));
  const double xs = scalar_as_double(ctx.in(1));
  std::vector<double> scale = to_doubles(ctx.in(4));
  for (double& s : scale) s *= xs;
  return requantize(ctx, acc, scale, 1, ctx.in(6), optional(ctx, 7));
}

Status DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (dtype_of(x) != DataType::kFloat) return ctx.error("input must be float32");
  const int64_t n = num_elements(dims_of(x));
  const float* p = data_as<float>(x);
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, p[i]);
    hi = std::max(hi, p[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  const float zp = scale == 0 ? 0.0f : std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  auto* y = ctx.allocate_as<uint8_t>(0, DataType::kUint8, dims_of(x));
  for (int64_t i = 0; i < n; ++i)
    y[i] = scale == 0 ? static_cast<uint8_t>(zp) : saturate<uint8_t>(std::nearbyint(p[i] / scale) + zp);
  *ctx.allocate_as<float>(1, DataType::kFloat, {}) = scale;
  *ctx.allocate_as<uint8_t>(2, DataType::kUint8, {}) = static_cast<uint8_t>(zp);
  return Status::ok();
}

// Determinants of [..., M, M] by LU with partial pivoting.
Status Det(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() < 2 || d[d.size() - 1] != d[d.size() - 2]) return ctx.error("input must be [..., M, M]");
  const int64_t m = d.back(), count = num_elements(Dims(d.begin(), d.end() - 2));
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), Dims(d.begin(), d.end() - 2));
    std::vector<double> a(static_cast<size_t>(m * m));
    for (int64_t k = 0; k < count; ++k) {
      for (int64_t i = 0; i < m * m; ++i) a[i] = scalar_as_double(x, static_cast<size_t>(k * m * m + i));
      double det = 1;
      for (int64_t c = 0; c < m && det != 0; ++c) {
        int64_t pivot = c;
        for (int64_t r = c + 1; r < m; ++r)
          if (std::abs(a[r * m + c]) > std::abs(a[pivot * m + c])) pivot = r;
        if (a[pivot * m + c] == 0) {
          det = 0;
          break;
        }
        if (pivot != c) {
          for (int64_t j = 0; j < m; ++j) std::swap(a[c * m + j], a[pivot * m + j]);
          det = -det;
        }
        det *= a[c * m + c];
        for (int64_t r = c + 1; r < m; ++r) {
          const double f = a[r * m + c] / a[c * m + c];
          for (int64_t j = c; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
        }
      }
      out[k] = T(static_cast<Compute<T>>(det));
    }
    return Status::ok();
  });
}

Status MaxUnpool(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() < 3) return ctx.error("input must have rank >= 3");
  const size_t s = d.size() - 2;
  auto kernel = ctx.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != s)
    return ctx.error("kernel_shape must have one entry per spatial dimension");
  Dims strides = ctx.attr_ints("strides").value_or(Dims(s, 1)),
       pads = ctx.attr_ints("pads").value_or(Dims(2 * s, 0));
  if (strides.size() != s || pads.size() != 2 * s)
    return ctx.error("strides or pads do not match the input rank");
  // Indices address the shape MaxPool saw (inferred here); an explicit output_shape keeps each value's
  // coordinates and pads at the end, as ONNX's reference does.
  Dims inferred = {d[0], d[1]};
  for (size_t i = 0; i < s; ++i)
    inferred.push_back((d[2 + i] - 1) * strides[i] - pads[i] - pads[s + i] + (*kernel)[i]);
  Dims out = inferred;
  if (ctx.has_input(2) && num_elements(dims_of(ctx.in(2))) > 0) {
    out = to_int64s(ctx.in(2));
    if (out.size() != d.size()) return ctx.error("output_shape has the wrong rank");
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i] < inferred[i]) return ctx.error("output_shape is smaller than the unpooled shape");
  }
  const int64_t es = sdk::element_size(dtype_of(x));
  const std::vector<int64_t> idx = to_int64s(ctx.in(1));
  if (static_cast<int64_t>(idx.size()) != num_elements(d)) return ctx.error("indices do not match the input");
  const int64_t total = num_elements(out), inferred_total = num_elements(inferred);
  const Dims is = strides_of(inferred), os = strides_of(out);
  char* o = ctx.allocate(0, dtype_of(x), out);
  std::memset(o, 0, static_cast<size_t>(total * es));
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= inferred_total)
      return ctx.error("index " + std::to_string(idx[i]) + " is outside the unpooled shape");
    int64_t rem = idx[i], at = 0;
    for (size_t a = 0; a < inferred.size(); ++a) {
      at += (rem / is[a]) * os[a];
      rem %= is[a];
    }
    std::memcpy(o + at * es, x.data() + static_cast<int64_t>(i) * es, static_cast<size_t>(es));
  }
  return Status::ok();
}

}  // namespace

void register_quantized(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"ConvInteger", ConvInteger},
                          {"Det", Det},
                          {"DynamicQuantizeLinear", DynamicQuantizeLinear},
                          {"MatMulInteger", MatMulInteger},
                          {"MaxUnpool", MaxUnpool},
                          {"QLinearConv", QLinearConv},
                          {"QLinearMatMul", QLinearMatMul},
                      });
}

}  // namespace graphsplit::kernels
