// The recurrent layers LSTM, GRU and RNN (float and double; ONNX gate orders: LSTM i,o,f,c; GRU z,r,h).
#include <algorithm>
#include <cmath>
#include <string>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

struct Activation {
  std::string name;
  float alpha = 0, beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return std::max(0.0, x);
    if (name == "LeakyRelu") return x < 0 ? alpha * x : x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "Elu") return x < 0 ? alpha * (std::exp(x) - 1) : x;
    if (name == "Softsign") return x / (1 + std::abs(x));
    if (name == "Softplus") return std::log1p(std::exp(x));
    if (name == "Affine") return alpha * x + beta;
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

// One recurrent layer's inputs and attributes, and the cell updates of one batch row at one time step. h and
// c are that row's hidden and cell state; gate holds W x + Wb (+ R h + Rb, except GRU's h gate) on entry.
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
  static double val(const Tensor& t, int64_t i) { return scalar_as_double(t, static_cast<size_t>(i)); }
  double clipped(double v) const {
    return clip > 0 ? std::clamp(v, -static_cast<double>(clip), static_cast<double>(clip)) : v;
  }

  // The weights as doubles, W and R transposed per direction ([I][gates * H], [H][gates * H]) so that the
  // gate sums below run across gates in the inner loop, which vectorises; each gate's sum still adds its
  // terms in input order.
  struct Prepared {
    std::vector<double> wt, rt, rd, bias;
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
    made->rd = to_doubles(*R);
    made->wt = transposed(to_doubles(W), dirs, G, I);
    made->rt = transposed(made->rd, dirs, G, H);
    if (Bias) made->bias = to_doubles(*Bias);
    made->w = W;
    made->r = *R;
    if (Bias) made->b = *Bias;
    if (cache) *ctx.state = made;
    prep = std::move(made);
  }

  // [dirs][rows][cols] -> [dirs][cols][rows], in tiles so that reads and writes both stay in cache.
  static std::vector<double> transposed(const std::vector<double>& m, int64_t dirs, int64_t rows,
                                        int64_t cols) {
    std::vector<double> t(m.size());
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
  void gate_inputs(int d, int gates, const double* x, int64_t I, const double* h,
                   std::vector<double>* gate) const {
    const int64_t G = gates * H, recurrent = cell == Cell::kGru ? 2 * H : G;
    double* __restrict s = gate->data();
    std::fill(s, s + G, 0.0);
    for (int64_t i = 0; i < I; ++i) {
      const double* __restrict row = prep->wt.data() + (d * I + i) * G;
      const double xi = x[i];
      for (int64_t j = 0; j < G; ++j) s[j] += row[j] * xi;
    }
    if (Bias)
      for (int64_t j = 0; j < G; ++j) s[j] += prep->bias[d * 2 * G + j];
    for (int64_t k = 0; k < H; ++k) {
      const double* __restrict row = prep->rt.data() + (d * H + k) * G;
      const double hk = h[k];
      for (int64_t j = 0; j < recurrent; ++j) s[j] += row[j] * hk;
    }
    if (Bias)
      for (int64_t j = 0; j < recurrent; ++j) s[j] += prep->bias[d * 2 * G + G + j];
  }

  void lstm(int d, const Activation& f, const Activation& g, const Activation& hact,
            std::vector<double>& gate, double* h, double* c) const {
    for (int64_t k = 0; k < H; ++k) {
      double gi = gate[k], go = gate[H + k], gf = gate[2 * H + k], gc = gate[3 * H + k];
      if (P) {
        gi += val(*P, d * 3 * H + k) * c[k];
        gf += val(*P, d * 3 * H + 2 * H + k) * c[k];
      }
      const double it = f(clipped(gi));
      const double ft = input_forget ? 1 - it : f(clipped(gf));
      const double ct = g(clipped(gc));
      const double cn = ft * c[k] + it * ct;
      if (P) go += val(*P, d * 3 * H + H + k) * cn;
      const double ot = f(clipped(go));
      c[k] = cn;
      gate[k] = ot * hact(cn);  // reuse as the new h
    }
    for (int64_t k = 0; k < H; ++k) h[k] = gate[k];
  }

  void gru(int d, const Activation& f, const Activation& g, const std::vector<double>& gate,
           double* h) const {
    std::vector<double> hn(static_cast<size_t>(H));
    for (int64_t k = 0; k < H; ++k) {
      const double z = f(clipped(gate[k])), r = f(clipped(gate[H + k]));
      double rh = 0;
      for (int64_t m = 0; m < H; ++m)
        rh += prep->rd[(d * 3 * H + 2 * H + k) * H + m] * (linear_before_reset ? 1.0 : r) * h[m];
      if (Bias) rh += prep->bias[d * 6 * H + 5 * H + k];
      if (linear_before_reset) rh *= r;
      const double ht = g(clipped(gate[2 * H + k] + rh));
      hn[k] = (1 - z) * ht + z * h[k];
    }
    for (int64_t k = 0; k < H; ++k) h[k] = hn[k];
  }
};

Status recurrent(KernelContext& ctx, Cell cell) {
  const Tensor& X = ctx.in(0);
  const Tensor& W = ctx.in(1);
  const Tensor& R = ctx.in(2);
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const Dims& xd = dims_of(X);
  if (xd.size() != 3) return ctx.error("X must be 3-D");
  const int64_t T = batch_first ? xd[1] : xd[0], B = batch_first ? xd[0] : xd[1], I = xd[2];
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
  auto opt = [&](size_t i) { return Layer::optional_input(ctx, i); };
  Layer layer(ctx, cell, R, H);
  const Tensor* lens = opt(4);
  const Tensor* h0 = opt(5);
  const Tensor* c0 = cell == Cell::kLstm ? opt(6) : nullptr;
  auto size_is = [&](const Tensor* t, int64_t n) { return !t || num_elements(dims_of(*t)) == n; };
  if (!size_is(layer.Bias, dirs * 2 * gates * H) || !size_is(lens, B) || !size_is(h0, dirs * B * H) ||
      !size_is(c0, dirs * B * H) || !size_is(layer.P, dirs * 3 * H))
    return ctx.error("B, sequence_lens, initial_h, initial_c or P has the wrong size");
  std::vector<int64_t> seq_len(static_cast<size_t>(B), T);
  if (lens) seq_len = to_int64s(*lens);
  for (int64_t& l : seq_len) l = std::clamp<int64_t>(l, 0, T);
  const auto val = Layer::val;
  layer.prepare(ctx, W, dirs, gates, I);
  const std::vector<double> x = to_doubles(X);
  std::vector<double> Y(static_cast<size_t>(T * dirs * B * H), 0.0), Yh(static_cast<size_t>(dirs * B * H)),
      Yc(static_cast<size_t>(dirs * B * H));
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    std::vector<double> h(static_cast<size_t>(B * H), 0.0), c(static_cast<size_t>(B * H), 0.0);
    for (int64_t i = 0; i < B * H; ++i) {
      const int64_t b = i / H, k = i % H;
      if (h0) h[i] = val(*h0, batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k);
      if (c0) c[i] = val(*c0, batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k);
    }
    const Activation& f = act[d * per];
    const Activation& g = act[d * per + (per > 1 ? 1 : 0)];
    const Activation& hact = act[d * per + (per > 2 ? 2 : 0)];
    std::vector<double> gate(static_cast<size_t>(gates * H));
    for (int64_t step = 0; step < T; ++step) {
      for (int64_t b = 0; b < B; ++b) {
        if (step >= seq_len[b]) continue;
        const int64_t t = reverse ? seq_len[b] - 1 - step : step;
        const int64_t xoff = batch_first ? (b * T + t) * I : (t * B + b) * I;
        layer.gate_inputs(d, gates, x.data() + xoff, I, &h[b * H], &gate);
        if (cell == Cell::kLstm)
          layer.lstm(d, f, g, hact, gate, &h[b * H], &c[b * H]);
        else if (cell == Cell::kGru)
          layer.gru(d, f, g, gate, &h[b * H]);
        else
          for (int64_t k = 0; k < H; ++k) h[b * H + k] = f(layer.clipped(gate[k]));
        for (int64_t k = 0; k < H; ++k)
          Y[batch_first ? ((b * T + t) * dirs + d) * H + k : ((t * dirs + d) * B + b) * H + k] = h[b * H + k];
      }
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < H; ++k) {
        const int64_t at = batch_first ? (b * dirs + d) * H + k : (d * B + b) * H + k;
        Yh[at] = h[b * H + k];
        Yc[at] = c[b * H + k];
      }
  }
  const Dims ydims = batch_first ? Dims{B, T, dirs, H} : Dims{T, dirs, B, H};
  const Dims hdims = batch_first ? Dims{B, dirs, H} : Dims{dirs, B, H};
  return visit_float(dtype_of(X), [&](auto tag) {
    using Ty = decltype(tag);
    using C = Compute<Ty>;
    auto emit = [&](size_t i, const Dims& dims, const std::vector<double>& v) {
      Ty* o = ctx.allocate_as<Ty>(i, dtype_of(X), dims);
      for (size_t k = 0; k < v.size(); ++k) o[k] = Ty(static_cast<C>(v[k]));
    };
    if (ctx.num_outputs() > 0) emit(0, ydims, Y);
    if (ctx.num_outputs() > 1) emit(1, hdims, Yh);
    if (ctx.num_outputs() > 2 && cell == Cell::kLstm) emit(2, hdims, Yc);
    return Status::ok();
  });
}
Status LSTM(KernelContext& ctx) {
  return recurrent(ctx, Cell::kLstm);
}
Status GRU(KernelContext& ctx) {
  return recurrent(ctx, Cell::kGru);
}
Status RNN(KernelContext& ctx) {
  return recurrent(ctx, Cell::kRnn);
}

}  // namespace

void register_recurrent(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"GRU", GRU}, {"LSTM", LSTM}, {"RNN", RNN}});
}

}  // namespace graphsplit::kernels
