// The recurrent layers LSTM, GRU and RNN (float and double; ONNX gate orders: LSTM i,o,f,c; GRU z,r,h).
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  template <class T>
  T operator()(T x) const {
    const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(T(0), x);
    if (name == "LeakyRelu") return x < 0 ? a * x : x;
    if (name == "ThresholdedRelu") return x > a ? x : 0;
    if (name == "ScaledTanh") return a * std::tanh(b * x);
    if (name == "HardSigmoid") return std::clamp(a * x + b, T(0), T(1));
    if (name == "Elu") return x < 0 ? a * (std::exp(x) - 1) : x;
    if (name == "Softsign") return x / (1 + std::abs(x));
    if (name == "Softplus") return std::log1p(std::exp(x));
    if (name == "Affine") return a * x + b;
    return x;
  }
};

Status activations(KernelContext& ctx, std::vector<std::string> defaults, int dirs,
                   std::vector<Activation>* out) {
  static const char* kKnown[] = {"Sigmoid",         "Tanh",       "Relu",        "LeakyRelu",
                                 "ThresholdedRelu", "ScaledTanh", "HardSigmoid", "Elu",
                                 "Softsign",        "Softplus",   "Affine"};
  std::vector<std::string> names;
  if (const sdk::AttrValue* v = ctx.node->attrs().get("activations"); v && v->as_strings())
    names = *v->as_strings();
  const size_t per = defaults.size();
  if (names.empty()) {
    for (int d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != per * static_cast<size_t>(dirs)) return ctx.error("wrong number of activations");
  auto alphas = ctx.attr_floats("activation_alpha").value_or(std::vector<float>{});
  auto betas = ctx.attr_floats("activation_beta").value_or(std::vector<float>{});
  size_t ai = 0, bi = 0;
  for (const std::string& n : names) {
    if (std::find(std::begin(kKnown), std::end(kKnown), n) == std::end(kKnown))
      return ctx.unsupported("activation '" + n + "' is not supported");
    Activation a{n};
    const bool takes_alpha = n == "LeakyRelu" || n == "ThresholdedRelu" || n == "ScaledTanh" ||
                             n == "HardSigmoid" || n == "Elu" || n == "Affine";
    const bool takes_beta = n == "ScaledTanh" || n == "HardSigmoid" || n == "Affine";
    if (takes_alpha)
      a.alpha = ai < alphas.size() ? alphas[ai++]
                                   : (n == "LeakyRelu"     ? 0.01f
                                      : n == "HardSigmoid" ? 0.2f
                                                           : 1.0f);
    if (takes_beta) a.beta = bi < betas.size() ? betas[bi++] : (n == "HardSigmoid" ? 0.5f : 0.0f);
    out->push_back(a);
  }
  return Status::ok();
}

enum class Cell { kLstm, kGru, kRnn };

// s[j] += sum over k of rows[k][j] * c[k], for j < n (rows `stride` apart), each sum in k order. Columns go
// in blocks of 64 held in registers while k runs, so the weights stream through once and the sums never leave
// the core; compiled for AVX-512, AVX2 and the baseline, picked at load time by the processor (same machine,
// same bits).
template <class T>
inline __attribute__((always_inline)) void accumulate_rows(T* __restrict s, const T* __restrict rows,
                                                           const T* __restrict c, int64_t count, int64_t n,
                                                           int64_t stride) {
  constexpr int64_t kBlock = 128;
  int64_t j0 = 0;
  for (; j0 + kBlock <= n; j0 += kBlock) {
    T acc[kBlock];
    for (int64_t j = 0; j < kBlock; ++j) acc[j] = s[j0 + j];
    for (int64_t k = 0; k < count; ++k) {
      const T* __restrict row = rows + k * stride + j0;
      const T ck = c[k];
      for (int64_t j = 0; j < kBlock; ++j) acc[j] += row[j] * ck;
    }
    for (int64_t j = 0; j < kBlock; ++j) s[j0 + j] = acc[j];
  }
  for (int64_t k = 0; k < count; ++k)
    for (int64_t j = j0; j < n; ++j) s[j] += rows[k * stride + j] * c[k];
}

__attribute__((target_clones("avx512f", "arch=haswell", "default"))) void accumulate(
    float* s, const float* rows, const float* c, int64_t count, int64_t n, int64_t stride) {
  accumulate_rows(s, rows, c, count, n, stride);
}
__attribute__((target_clones("avx512f", "arch=haswell", "default"))) void accumulate(
    double* s, const double* rows, const double* c, int64_t count, int64_t n, int64_t stride) {
  accumulate_rows(s, rows, c, count, n, stride);
}

// The values of a tensor in the computation's type.
template <class T>
std::vector<T> values_as(const Tensor& t) {
  if constexpr (std::is_same_v<T, double>) {
    return to_doubles(t);
  } else {
    const std::vector<double> d = to_doubles(t);
    return std::vector<T>(d.begin(), d.end());
  }
}

// One recurrent layer's inputs and attributes, and the cell updates of one batch row at one time step. h and
// c are that row's hidden and cell state; gate holds W x + Wb (+ R h + Rb, except GRU's h gate) on entry.
// T is the computation's type: float for float, float16 and bfloat16 layers (as ONNX Runtime computes them;
// the weights then stay in cache across time steps), double for double ones.
template <class T>
struct Layer {
  Cell cell = Cell::kRnn;
  const Tensor* R = nullptr;
  const Tensor* Bias = nullptr;
  const Tensor* P = nullptr;
  int64_t H = 0;
  float clip = 0;
  bool input_forget = false, linear_before_reset = false;

  Layer(KernelContext& ctx, Cell c, const Tensor& r, int64_t hidden)
      : cell(c),
        R(&r),
        Bias(optional_input(ctx, 3)),
        P(c == Cell::kLstm ? optional_input(ctx, 7) : nullptr),
        H(hidden),
        clip(ctx.attr_float("clip", 0.0f)),
        input_forget(ctx.attr_int("input_forget", 0) != 0),
        linear_before_reset(ctx.attr_int("linear_before_reset", 0) != 0) {}

  // An input that is present and not empty, or nullptr.
  static const Tensor* optional_input(KernelContext& ctx, size_t i) {
    return ctx.has_input(i) && num_elements(dims_of(ctx.in(i))) > 0 ? &ctx.in(i) : nullptr;
  }
  static T val(const Tensor& t, int64_t i) {
    return static_cast<T>(scalar_as_double(t, static_cast<size_t>(i)));
  }
  T clipped(T v) const { return clip > 0 ? std::clamp(v, -static_cast<T>(clip), static_cast<T>(clip)) : v; }

  // The weights as doubles, W and R transposed per direction ([I][gates * H], [H][gates * H]) so that the
  // gate sums below run across gates in the inner loop, which vectorises; each gate's sum still adds its
  // terms in input order.
  struct Prepared {
    std::vector<T> wt, rt, rd, bias;
    Tensor w, r, b;  // the constants prepared, held so their bytes stay the ones converted
  };
  std::shared_ptr<const Prepared> prep;

  // Converts and transposes once per executable when W, R and B are constants (kept in the step's state),
  // else on every call.
  void prepare(KernelContext& ctx, const Tensor& W, int dirs, int gates, int64_t I) {
    const bool cache = ctx.state && ctx.input_is_constant(1) && ctx.input_is_constant(2) &&
                       (!Bias || ctx.input_is_constant(3));
    if (cache) {
      auto cached = std::static_pointer_cast<const Prepared>(*ctx.state);
      if (cached && cached->w.data() == W.data() && cached->r.data() == R->data() &&
          cached->b.data() == (Bias ? Bias->data() : nullptr)) {
        prep = std::move(cached);
        return;
      }
    }
    auto made = std::make_shared<Prepared>();
    const int64_t G = gates * H;
    made->rd = values_as<T>(*R);
    made->wt = transposed(values_as<T>(W), dirs, G, I);
    made->rt = transposed(made->rd, dirs, G, H);
    if (Bias) made->bias = values_as<T>(*Bias);
    made->w = W;
    made->r = *R;
    if (Bias) made->b = *Bias;
    if (cache) *ctx.state = made;
    prep = std::move(made);
  }

  // [dirs][rows][cols] -> [dirs][cols][rows], in tiles so that reads and writes both stay in cache.
  static std::vector<T> transposed(const std::vector<T>& m, int64_t dirs, int64_t rows, int64_t cols) {
    std::vector<T> t(m.size());
    constexpr int64_t kTile = 16;
    for (int64_t d = 0; d < dirs; ++d)
      for (int64_t r0 = 0; r0 < rows; r0 += kTile)
        for (int64_t c0 = 0; c0 < cols; c0 += kTile)
          for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r)
            for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
              t[(d * cols + c) * rows + r] = m[(d * rows + r) * cols + c];
    return t;
  }

  // gate[j] = W x + Wb (+ R h + Rb, except GRU's h gate) for one input row x.
  void gate_inputs(int d, int gates, const T* x, int64_t I, const T* h, std::vector<T>* gate) const {
    const int64_t G = gates * H, recurrent = cell == Cell::kGru ? 2 * H : G;
    T* s = gate->data();
    std::fill(s, s + G, T(0));
    accumulate(s, prep->wt.data() + d * I * G, x, I, G, G);
    if (Bias)
      for (int64_t j = 0; j < G; ++j) s[j] += prep->bias[d * 2 * G + j];
    accumulate(s, prep->rt.data() + d * H * G, h, H, recurrent, G);
    if (Bias)
      for (int64_t j = 0; j < recurrent; ++j) s[j] += prep->bias[d * 2 * G + G + j];
  }

  void lstm(int d, const Activation& f, const Activation& g, const Activation& hact, std::vector<T>& gate,
            T* h, T* c) const {
    for (int64_t k = 0; k < H; ++k) {
      T gi = gate[k], go = gate[H + k], gf = gate[2 * H + k], gc = gate[3 * H + k];
      if (P) {
        gi += val(*P, d * 3 * H + k) * c[k];
        gf += val(*P, d * 3 * H + 2 * H + k) * c[k];
      }
      const T it = f(clipped(gi));
      const T ft = input_forget ? 1 - it : f(clipped(gf));
      const T ct = g(clipped(gc));
      const T cn = ft * c[k] + it * ct;
      if (P) go += val(*P, d * 3 * H + H + k) * cn;
      const T ot = f(clipped(go));
      c[k] = cn;
      gate[k] = ot * hact(cn);  // reuse as the new h
    }
    for (int64_t k = 0; k < H; ++k) h[k] = gate[k];
  }

  void gru(int d, const Activation& f, const Activation& g, const std::vector<T>& gate, T* h) const {
    std::vector<T> hn(static_cast<size_t>(H));
    for (int64_t k = 0; k < H; ++k) {
      const T z = f(clipped(gate[k])), r = f(clipped(gate[H + k]));
      T rh = 0;
      for (int64_t m = 0; m < H; ++m)
        rh += prep->rd[(d * 3 * H + 2 * H + k) * H + m] * (linear_before_reset ? T(1) : r) * h[m];
      if (Bias) rh += prep->bias[d * 6 * H + 5 * H + k];
      if (linear_before_reset) rh *= r;
      const T ht = g(clipped(gate[2 * H + k] + rh));
      hn[k] = (1 - z) * ht + z * h[k];
    }
    for (int64_t k = 0; k < H; ++k) h[k] = hn[k];
  }
};

template <class T>
Status recurrent(KernelContext& ctx, Cell cell) {
  const Tensor& X = ctx.in(0);
  const Tensor& W = ctx.in(1);
  const Tensor& R = ctx.in(2);
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const Dims& xd = dims_of(X);
  if (xd.size() != 3) return ctx.error("X must be 3-D");
  const int64_t steps = batch_first ? xd[1] : xd[0], B = batch_first ? xd[0] : xd[1], I = xd[2];
  const std::string direction = ctx.attr_string("direction", "forward");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  if (dims_of(W).size() != 3 || dims_of(R).size() != 3) return ctx.error("W and R must be 3-D");
  const int64_t H = ctx.attr_int("hidden_size", dims_of(R).back());
  const int gates = cell == Cell::kLstm ? 4 : cell == Cell::kGru ? 3 : 1;
  if (dims_of(W) != Dims{dirs, gates * H, I} || dims_of(R) != Dims{dirs, gates * H, H})
    return ctx.error("W or R has the wrong shape for hidden_size " + std::to_string(H));
  std::vector<Activation> act;
  GS_RETURN_IF_ERROR(activations(ctx,
                                 cell == Cell::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                 : cell == Cell::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                      : std::vector<std::string>{"Tanh"},
                                 dirs, &act));
  const size_t per = act.size() / static_cast<size_t>(dirs);
  auto opt = [&](size_t i) { return Layer<T>::optional_input(ctx, i); };
  Layer<T> layer(ctx, cell, R, H);
  const Tensor* lens = opt(4);
  const Tensor* h0 = opt(5);
  const Tensor* c0 = cell == Cell::kLstm ? opt(6) : nullptr;
  auto size_is = [&](const Tensor* t, int64_t n) { return !t || num_elements(dims_of(*t)) == n; };
  if (!size_is(layer.Bias, dirs * 2 * gates * H) || !size_is(lens, B) || !size_is(h0, dirs * B * H) ||
      !size_is(c0, dirs * B * H) || !size_is(layer.P, dirs * 3 * H))
    return ctx.error("B, sequence_lens, initial_h, initial_c or P has the wrong size");
  std::vector<int64_t> seq_len(static_cast<size_t>(B), steps);
  if (lens) seq_len = to_int64s(*lens);
  for (int64_t& l : seq_len) l = std::clamp<int64_t>(l, 0, steps);
  const auto val = Layer<T>::val;
  layer.prepare(ctx, W, dirs, gates, I);
  const std::vector<T> x = values_as<T>(X);
  std::vector<T> Y(static_cast<size_t>(steps * dirs * B * H), T(0)), Yh(static_cast<size_t>(dirs * B * H)),
      Yc(static_cast<size_t>(dirs * B * H));
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    std::vector<T> h(static_cast<size_t>(B * H), T(0)), c(static_cast<size_t>(B * H), T(0));
    for (int64_t i = 0; i < B * H; ++i) {
      const int64_t b = i / H, k = i % H;
      if (h0) h[i] = val(*h0, batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k);
      if (c0) c[i] = val(*c0, batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k);
    }
    const Activation& f = act[d * per];
    const Activation& g = act[d * per + (per > 1 ? 1 : 0)];
    const Activation& hact = act[d * per + (per > 2 ? 2 : 0)];
    std::vector<T> gate(static_cast<size_t>(gates * H));
    for (int64_t step = 0; step < steps; ++step) {
      for (int64_t b = 0; b < B; ++b) {
        if (step >= seq_len[b]) continue;
        const int64_t t = reverse ? seq_len[b] - 1 - step : step;
        const int64_t xoff = batch_first ? (b * steps + t) * I : (t * B + b) * I;
        layer.gate_inputs(d, gates, x.data() + xoff, I, &h[b * H], &gate);
        if (cell == Cell::kLstm)
          layer.lstm(d, f, g, hact, gate, &h[b * H], &c[b * H]);
        else if (cell == Cell::kGru)
          layer.gru(d, f, g, gate, &h[b * H]);
        else
          for (int64_t k = 0; k < H; ++k) h[b * H + k] = f(layer.clipped(gate[k]));
        for (int64_t k = 0; k < H; ++k)
          Y[batch_first ? ((b * steps + t) * dirs + d) * H + k : ((t * dirs + d) * B + b) * H + k] =
              h[b * H + k];
      }
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < H; ++k) {
        const int64_t at = batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k;
        Yh[at] = h[b * H + k];
        Yc[at] = c[b * H + k];
      }
  }
  const Dims ydims = batch_first ? Dims{B, steps, dirs, H} : Dims{steps, dirs, B, H};
  const Dims hdims = batch_first ? Dims{B, dirs, H} : Dims{dirs, B, H};
  return visit_float(dtype_of(X), [&](auto tag) {
    using Ty = decltype(tag);
    auto emit = [&](size_t i, const Dims& dims, const std::vector<T>& v) {
      Ty* o = ctx.allocate_as<Ty>(i, dtype_of(X), dims);
      for (size_t k = 0; k < v.size(); ++k) o[k] = Ty(v[k]);
    };
    if (ctx.num_outputs() > 0) emit(0, ydims, Y);
    if (ctx.num_outputs() > 1) emit(1, hdims, Yh);
    if (ctx.num_outputs() > 2 && cell == Cell::kLstm) emit(2, hdims, Yc);
    return Status::ok();
  });
}
Status run_cell(KernelContext& ctx, Cell cell) {
  if (dtype_of(ctx.in(0)) == DataType::kDouble) return recurrent<double>(ctx, cell);
  return recurrent<float>(ctx, cell);
}
Status LSTM(KernelContext& ctx) {
  return run_cell(ctx, Cell::kLstm);
}
Status GRU(KernelContext& ctx) {
  return run_cell(ctx, Cell::kGru);
}
Status RNN(KernelContext& ctx) {
  return run_cell(ctx, Cell::kRnn);
}

}  // namespace

void register_recurrent(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"GRU", GRU}, {"LSTM", LSTM}, {"RNN", RNN}});
}

}  // namespace graphsplit::kernels
