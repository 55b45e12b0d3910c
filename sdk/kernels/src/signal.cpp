// Signal operators: DFT (opsets 17 and 20), STFT and MelWeightMatrix. Transforms of any length go through
// FFTW (Debian's libfftw3-dev) in double precision; results are stored in the input's type.
#include <fftw3.h>

#include <cmath>
#include <complex>
#include <mutex>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

using Complex = std::complex<double>;

// FFTW's planner is not thread-safe; executing a plan is. FFTW_ESTIMATE plans without timing runs, so the
// same length always gets the same plan and the same bits.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

// In-place transform of `data` (length n): forward, or backward scaled by 1/n.
void transform(std::vector<Complex>& data, bool inverse) {
  const int n = static_cast<int>(data.size());
  if (n == 0) return;
  auto* buf = reinterpret_cast<fftw_complex*>(data.data());
  fftw_plan plan;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    plan = fftw_plan_dft_1d(n, buf, buf, inverse ? FFTW_BACKWARD : FFTW_FORWARD, FFTW_ESTIMATE);
  }
  fftw_execute(plan);
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    fftw_destroy_plan(plan);
  }
  if (inverse)
    for (Complex& c : data) c /= static_cast<double>(n);
}

int64_t scalar_int(const Tensor& t) {
  return to_int64s(t).at(0);
}

template <class F>
Status write_complex(KernelContext& ctx, DataType dtype, const Dims& dims, F value) {
  return visit_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, dtype, dims);
    for (int64_t i = 0, n = num_elements(dims) / 2; i < n; ++i) {
      const Complex c = value(i);
      out[2 * i] = T(static_cast<Compute<T>>(c.real()));
      out[2 * i + 1] = T(static_cast<Compute<T>>(c.imag()));
    }
    return Status::ok();
  });
}

// Input [..., n_axis, ..., 1 or 2] (real or complex pairs); the transform runs along `axis` on each line.
Status DFT(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const auto r = static_cast<int64_t>(d.size());
  if (r < 2 || (d.back() != 1 && d.back() != 2))
    return ctx.error("the input must end in a dimension of 1 (real) or 2 (complex), got " + dims_string(d));
  int64_t axis = ctx.opset >= 20 ? (ctx.has_input(2) ? scalar_int(ctx.in(2)) : -2) : ctx.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) return ctx.error("axis is out of range for rank " + std::to_string(r));
  const bool inverse = ctx.attr_int("inverse", 0) != 0, onesided = ctx.attr_int("onesided", 0) != 0;
  if (onesided && inverse) return ctx.error("onesided and inverse cannot both be set");
  const int64_t len = d[axis];
  const int64_t n = ctx.has_input(1) && num_elements(dims_of(ctx.in(1))) > 0 ? scalar_int(ctx.in(1)) : len;
  if (n < 1) return ctx.error("dft_length must be positive, got " + std::to_string(n));
  const int64_t kept = onesided ? n / 2 + 1 : n;
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[a];
  for (int64_t a = axis + 1; a < r - 1; ++a) inner *= d[a];
  const int64_t comps = d.back();
  const std::vector<double> v = to_doubles(x);
  Dims od = d;
  od[axis] = kept;
  od.back() = 2;
  std::vector<Complex> result(static_cast<size_t>(outer * kept * inner));
  std::vector<Complex> line(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = ((o * len + k) * inner + i) * comps;
        line[k] = k < len ? Complex(v[at], comps == 2 ? v[at + 1] : 0.0) : Complex();
      }
      transform(line, inverse);
      for (int64_t k = 0; k < kept; ++k) result[(o * kept + k) * inner + i] = line[k];
    }
  }
  return write_complex(ctx, dtype_of(x), od, [&](int64_t i) { return result[i]; });
}

// Signal [batch, length, 1 or 2]; frames of frame_length every frame_step samples, windowed, transformed.
Status STFT(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() != 3 || (d[2] != 1 && d[2] != 2))
    return ctx.error("the signal must be [batch, length, 1 or 2], got " + dims_string(d));
  const int64_t step = scalar_int(ctx.in(1));
  std::vector<double> window;
  if (ctx.has_input(2)) window = to_doubles(ctx.in(2));
  int64_t frame = ctx.has_input(3) ? scalar_int(ctx.in(3)) : static_cast<int64_t>(window.size());
  if (window.empty()) window.assign(static_cast<size_t>(std::max<int64_t>(frame, 0)), 1.0);
  if (frame < 1 || step < 1 || static_cast<int64_t>(window.size()) != frame || frame > d[1])
    return ctx.error("frame_step, frame_length and the window do not fit the signal");
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  if (onesided && d[2] == 2) return ctx.error("a complex signal cannot be transformed onesided");
  const int64_t frames = (d[1] - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  const std::vector<double> v = to_doubles(x);
  std::vector<Complex> result(static_cast<size_t>(d[0] * frames * bins)), line(static_cast<size_t>(frame));
  for (int64_t b = 0; b < d[0]; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t k = 0; k < frame; ++k) {
        const int64_t at = (b * d[1] + f * step + k) * d[2];
        line[k] = Complex(v[at], d[2] == 2 ? v[at + 1] : 0.0) * window[k];
      }
      transform(line, false);
      for (int64_t k = 0; k < bins; ++k) result[(b * frames + f) * bins + k] = line[k];
    }
  }
  return write_complex(ctx, dtype_of(x), {d[0], frames, bins, 2}, [&](int64_t i) { return result[i]; });
}

// Triangular filters evenly spaced on the mel scale, as the ONNX reference lays them out.
Status MelWeightMatrix(KernelContext& ctx) {
  const int64_t mels = scalar_int(ctx.in(0)), dft = scalar_int(ctx.in(1)), rate = scalar_int(ctx.in(2));
  const double low = scalar_as_double(ctx.in(3)), high = scalar_as_double(ctx.in(4));
  if (mels < 1 || dft < 1 || rate < 1 || !(low >= 0 && low < high))
    return ctx.error("needs num_mel_bins, dft_length, sample_rate >= 1 and 0 <= lower_edge < upper_edge");
  const int64_t spectrum = dft / 2 + 1;
  const auto mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double step = (mel(high) - mel(low)) / static_cast<double>(mels + 2);
  std::vector<int64_t> bins(static_cast<size_t>(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (static_cast<double>(i) * step + mel(low)) / 2595) - 1);
    bins[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  if (bins.back() >= spectrum + 1 || bins.front() < 0)
    return ctx.error("upper_edge_hertz is above the Nyquist rate");
  std::vector<double> w(static_cast<size_t>(spectrum * mels), 0.0);
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t left = bins[i], center = bins[i + 1], right = bins[i + 2];
    if (center >= spectrum) return ctx.error("upper_edge_hertz is above the Nyquist rate");
    if (center == left) {
      w[center * mels + i] = 1;
    } else {
      for (int64_t j = left; j <= center; ++j)
        w[j * mels + i] = static_cast<double>(j - left) / static_cast<double>(center - left);
    }
    for (int64_t j = center; j < right && j < spectrum; ++j)
      w[j * mels + i] = static_cast<double>(right - j) / static_cast<double>(right - center);
  }
  const auto to =
      static_cast<DataType>(ctx.attr_int("output_datatype", static_cast<int64_t>(DataType::kFloat)));
  return visit_numeric(to, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, to, {spectrum, mels});
    for (size_t k = 0; k < w.size(); ++k) out[k] = T(static_cast<Compute<T>>(w[k]));
    return Status::ok();
  });
}

}  // namespace

void register_signal(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"DFT", DFT}, {"MelWeightMatrix", MelWeightMatrix}, {"STFT", STFT}});
}

}  // namespace graphsplit::kernels
