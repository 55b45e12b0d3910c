#include "runtime/compare.h"

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

namespace graphsplit {

namespace {

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  const uint32_t x =
      exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp + 112) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

// Element i as a double; false for types compared bytewise.
bool as_double(const sdk::Tensor& t, int64_t i, double* out) {
  const char* p = t.data();
  switch (t.desc().dtype) {
    case sdk::DataType::kFloat: {
      float v;
      std::memcpy(&v, p + i * 4, 4);
      *out = v;
      return true;
    }
    case sdk::DataType::kDouble: {
      double v;
      std::memcpy(&v, p + i * 8, 8);
      *out = v;
      return true;
    }
    case sdk::DataType::kFloat16: {
      uint16_t v;
      std::memcpy(&v, p + i * 2, 2);
      *out = half_to_float(v);
      return true;
    }
    case sdk::DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, p + i * 2, 2);
      const uint32_t x = static_cast<uint32_t>(v) << 16;
      float f;
      std::memcpy(&f, &x, 4);
      *out = f;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

namespace {

std::string kind_of(const sdk::Tensor& t) {
  return t.is_container() ? std::string(sdk::to_string(t.desc().kind)) : "tensor";
}

// Sequences and optionals: the same kind and element count, then element by element.
CompareResult compare_containers(const sdk::Tensor& got, const sdk::Tensor& want, double rtol, double atol) {
  CompareResult r;
  if (kind_of(got) != kind_of(want)) {
    r.equal = false;
    r.detail = "a " + kind_of(got) + ", expected a " + kind_of(want);
    return r;
  }
  const auto& g = got.elements();
  const auto& w = want.elements();
  if (g.size() != w.size()) {
    r.equal = false;
    r.detail = std::to_string(g.size()) + " elements, expected " + std::to_string(w.size());
    return r;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    CompareResult e = compare_tensors(g[i], w[i], rtol, atol);
    r.max_abs_error = std::max(r.max_abs_error, e.max_abs_error);
    if (!e.equal) {
      r.equal = false;
      r.detail = "element " + std::to_string(i) + ": " + e.detail;
      return r;
    }
  }
  return r;
}

}  // namespace

CompareResult compare_tensors(const sdk::Tensor& got, const sdk::Tensor& want, double rtol, double atol) {
  if (got.is_container() || want.is_container()) return compare_containers(got, want, rtol, atol);
  CompareResult r;
  if (got.desc().dtype != want.desc().dtype) {
    r.equal = false;
    r.detail = "data type " + std::string(sdk::to_string(got.desc().dtype)) + ", expected " +
               std::string(sdk::to_string(want.desc().dtype));
    return r;
  }
  if (got.desc().shape.dims() != want.desc().shape.dims()) {
    r.equal = false;
    r.detail = "shape " + got.desc().shape.to_string() + ", expected " + want.desc().shape.to_string();
    return r;
  }
  if (got.desc().dtype == sdk::DataType::kString || sdk::element_size(got.desc().dtype) == 0) {
    r.equal = got.bytes() == want.bytes();
    if (!r.equal) r.detail = "string contents differ";
    return r;
  }
  const int64_t es = sdk::element_size(got.desc().dtype);
  const auto n = static_cast<int64_t>(want.size_bytes()) / es;
  if (static_cast<int64_t>(got.size_bytes()) != n * es) {
    r.equal = false;
    r.detail =
        "size " + std::to_string(got.size_bytes()) + " bytes, expected " + std::to_string(want.size_bytes());
    return r;
  }
  double worst_excess = 0;
  int64_t worst = -1;
  double worst_got = 0, worst_want = 0;
  for (int64_t i = 0; i < n; ++i) {
    double g, w;
    if (as_double(got, i, &g) && as_double(want, i, &w)) {
      if (std::isnan(g) && std::isnan(w)) continue;
      if (g == w) continue;  // equal infinities too
      const double err = std::abs(g - w);
      if (!(err <= atol + rtol * std::abs(w))) {
        const double excess =
            std::isnan(err) || std::isinf(err) ? INFINITY : err - (atol + rtol * std::abs(w));
        if (worst < 0 || excess > worst_excess) {
          worst_excess = excess;
          worst = i;
          worst_got = g;
          worst_want = w;
        }
      }
      if (!std::isnan(err)) r.max_abs_error = std::max(r.max_abs_error, err);
    } else if (std::memcmp(got.data() + i * es, want.data() + i * es, static_cast<size_t>(es)) != 0) {
      if (worst < 0) {
        worst = i;
        int64_t gi = 0, wi = 0;
        std::memcpy(&gi, got.data() + i * es, static_cast<size_t>(std::min<int64_t>(es, 8)));
        std::memcpy(&wi, want.data() + i * es, static_cast<size_t>(std::min<int64_t>(es, 8)));
        worst_got = static_cast<double>(gi);
        worst_want = static_cast<double>(wi);
      }
    }
  }
  if (worst >= 0) {
    r.equal = false;
    std::ostringstream os;
    os.precision(9);
    os << "element " << worst << ": got " << worst_got << ", expected " << worst_want << " (rtol " << rtol
       << ", atol " << atol << ")";
    r.detail = os.str();
  }
  return r;
}

sdk::Tensor random_tensor(const sdk::TensorDesc& desc, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t n = desc.shape.num_elements().value_or(0);
  const int64_t es = sdk::element_size(desc.dtype);
  char* out = nullptr;
  sdk::Tensor t = sdk::Tensor::allocate(desc, static_cast<size_t>(n * es), &out);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = rng();
    const double unit = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    switch (desc.dtype) {
      case sdk::DataType::kFloat: {
        const auto v = static_cast<float>(unit * 2 - 1);
        std::memcpy(out + i * 4, &v, 4);
        break;
      }
      case sdk::DataType::kDouble: {
        const double v = unit * 2 - 1;
        std::memcpy(out + i * 8, &v, 8);
        break;
      }
      case sdk::DataType::kBool:
        out[i] = static_cast<char>(bits & 1);
        break;
      case sdk::DataType::kFloat16: {
        // multiples of 1/1024 in [-1, 1) are exact in half precision
        const auto k = static_cast<int>(unit * 2048) - 1024;
        float f = static_cast<float>(k) / 1024.0f;
        uint32_t x;
        std::memcpy(&x, &f, 4);
        uint16_t h = 0;
        if (k != 0)
          h = static_cast<uint16_t>(((x >> 16) & 0x8000u) | ((((x >> 23) & 0xffu) - 112) << 10) |
                                    ((x >> 13) & 0x3ffu));
        std::memcpy(out + i * 2, &h, 2);
        break;
      }
      default: {
        const int64_t v = static_cast<int64_t>(unit * 10);
        std::memcpy(out + i * es, &v, static_cast<size_t>(std::min<int64_t>(es, 8)));
        if (es > 8) std::memset(out + i * es + 8, 0, static_cast<size_t>(es - 8));
        break;
      }
    }
  }
  return t;
}

}  // namespace graphsplit
