#include "fusion_passes.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/ir/names.h"

namespace graphsplit::plugins::fusion {
namespace {

using sdk::AttrValue;
using sdk::DataType;
using sdk::Graph;
using sdk::Node;
using sdk::Status;
using sdk::Tensor;

const Tensor* float_constant(const Node* n) {
  if (!n || (n->type() != sdk::op::kConst && n->type() != sdk::op::kConstant)) return nullptr;
  const AttrValue* v = n->attrs().get(sdk::attr::kValue);
  const Tensor* t = v ? v->as_tensor() : nullptr;
  if (!t || t->desc().kind != sdk::ValueKind::kTensor || t->desc().dtype != DataType::kFloat) return nullptr;
  const int64_t count = t->desc().shape.num_elements().value_or(-1);
  return count >= 0 && t->size_bytes() == static_cast<size_t>(count) * 4 ? t : nullptr;
}

std::vector<double> values(const Tensor& t) {
  std::vector<float> f(t.size_bytes() / 4);
  if (!f.empty()) std::memcpy(f.data(), t.data(), f.size() * 4);
  return {f.begin(), f.end()};
}

Tensor float_tensor(const std::vector<int64_t>& dims, const std::vector<double>& v) {
  sdk::TensorDesc d;
  d.dtype = DataType::kFloat;
  d.shape = sdk::Shape(dims);
  std::string bytes(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const auto f = static_cast<float>(v[i]);
    std::memcpy(bytes.data() + i * 4, &f, 4);
  }
  return Tensor(d, std::move(bytes));
}

// A Conv's float weights with output channel c's `per` elements scaled by factor[c] (in double, then rounded
// to float), as a new tensor of `dims`; unchanged when `factor` is null. One pass from bytes to bytes:
// through vectors of float and double, each weight was copied four times (a fifth of compiling PP-OCRv4 det).
Tensor scaled_weights(const Tensor& w, const std::vector<int64_t>& dims, int64_t m, int64_t per,
                      const std::vector<double>* factor) {
  sdk::TensorDesc d;
  d.dtype = DataType::kFloat;
  d.shape = sdk::Shape(dims);
  if (!factor) {  // the same bytes, shared
    Tensor same = w;
    same.mutable_desc() = d;
    return same;
  }
  char* out = nullptr;
  Tensor t = Tensor::allocate(d, w.size_bytes(), &out);
  const auto scaled = static_cast<size_t>(m * per) * 4;
  for (int64_t c = 0; c < m; ++c) {
    const double a = (*factor)[static_cast<size_t>(c)];
    for (int64_t k = 0; k < per; ++k) {
      const size_t at = static_cast<size_t>(c * per + k) * 4;
      float f;
      std::memcpy(&f, w.data() + at, 4);
      f = static_cast<float>(static_cast<double>(f) * a);
      std::memcpy(out + at, &f, 4);
    }
  }
  if (w.size_bytes() > scaled) std::memcpy(out + scaled, w.data() + scaled, w.size_bytes() - scaled);
  return t;
}

// Asked of every Add and Mul of a graph: the domain is read without a copy.
bool is_onnx(const Node& n, std::string_view type) {
  if (n.type() != type) return false;
  const AttrValue* domain = n.attrs().get(sdk::attr::kDomain);
  return !domain || !domain->as_string() || domain->as_string()->empty();
}

// The Conv a BatchNormalization can be folded into, or nullptr. ONNX's epsilon is a float attribute, read as
// the double the IR keeps.
Node* foldable_conv(const Node& bn) {
  if (!is_onnx(bn, "BatchNormalization") || bn.num_inputs() != 5 ||
      bn.attrs().get_int("training_mode", 0) != 0 || bn.attrs().get_int("spatial", 1) != 1)
    return nullptr;
  for (size_t o = 1; o < bn.num_outputs(); ++o)
    if (!bn.consumers(o).empty()) return nullptr;  // running statistics are read: not an inference node
  Node* conv = bn.input(0).node;
  if (!conv || !is_onnx(*conv, "Conv") || bn.input(0).index != 0 || conv->num_outputs() != 1 ||
      conv->consumers(0).size() != 1 || conv->num_inputs() < 2 || conv->num_inputs() > 3)
    return nullptr;
  const Tensor* w = float_constant(conv->input(1).node);
  if (!w || w->desc().shape.rank() < 3) return nullptr;
  const int64_t m = w->desc().shape.dims()[0];
  if (conv->num_inputs() == 3 && conv->input(2).valid()) {
    const Tensor* b = float_constant(conv->input(2).node);
    if (!b || b->desc().shape.num_elements().value_or(-1) != m) return nullptr;
  }
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* p = float_constant(bn.input(i).node);
    if (!p || p->desc().shape.num_elements().value_or(-1) != m) return nullptr;
  }
  return conv;
}

Node* add_constant(Graph& g, const std::string& base, Tensor value) {
  Node* c = g.add_node(g.unique_node_name(base), sdk::op::kConst, 0, 0);
  c->add_output(value.desc(), c->name());
  c->attrs().set(sdk::attr::kValue, AttrValue::OfTensor(std::move(value)));
  return c;
}

// The Conv gets new constant weights and bias and now computes `folded`'s value: its consumers, name and
// descriptor move over, and `folded` goes.
Status take_over(Graph& g, Node* conv, Node* folded, Tensor weights, Tensor bias) {
  Node* new_w = add_constant(g, conv->name() + "_folded_weight", std::move(weights));
  Node* new_b = add_constant(g, conv->name() + "_folded_bias", std::move(bias));
  g.disconnect_input({conv, 1});
  GS_RETURN_IF_ERROR(g.add_edge({new_w, 0}, {conv, 1}));
  if (conv->num_inputs() < 3) conv->add_input();
  g.disconnect_input({conv, 2});
  GS_RETURN_IF_ERROR(g.add_edge({new_b, 0}, {conv, 2}));
  const std::vector<sdk::InPort> readers = folded->consumers(0);
  for (const sdk::InPort& r : readers) {
    GS_RETURN_IF_ERROR(g.remove_edge({folded, 0}, r));
    GS_RETURN_IF_ERROR(g.add_edge({conv, 0}, r));
  }
  conv->set_output_name(0, folded->output_name(0));
  conv->mutable_output_desc(0) = folded->output_desc(0);
  for (Node* c : std::vector<Node*>(folded->control_outputs()))
    GS_RETURN_IF_ERROR(g.add_control_edge(conv, c));
  g.remove_node(folded);
  return Status::ok();
}

Status fold(Graph& g, Node* conv, Node* bn) {
  const Tensor& w = *float_constant(conv->input(1).node);
  const std::vector<int64_t> wdims = w.desc().shape.dims();
  const int64_t m = wdims[0],
                per_channel = static_cast<int64_t>(w.size_bytes() / 4) / std::max<int64_t>(1, m);
  const std::vector<double> gamma = values(*float_constant(bn->input(1).node)),
                            beta = values(*float_constant(bn->input(2).node)),
                            mean = values(*float_constant(bn->input(3).node)),
                            var = values(*float_constant(bn->input(4).node));
  std::vector<double> bias(static_cast<size_t>(m), 0.0);
  if (conv->num_inputs() == 3 && conv->input(2).valid()) bias = values(*float_constant(conv->input(2).node));
  const AttrValue* e = bn->attrs().get("epsilon");
  const double eps = e && e->as_float() ? *e->as_float() : 1e-5;
  std::vector<double> factor(static_cast<size_t>(m));
  for (int64_t c = 0; c < m; ++c) {
    const double a = gamma[c] / std::sqrt(var[c] + eps);
    factor[c] = a;
    bias[c] = (bias[c] - mean[c]) * a + beta[c];
  }
  return take_over(g, conv, bn, scaled_weights(w, wdims, m, per_channel, &factor), float_tensor({m}, bias));
}

Status fold_graph(Graph& g, size_t* folded) {
  std::vector<Node*> bns;
  for (Node* n : g.nodes())
    if (foldable_conv(*n)) bns.push_back(n);
  for (Node* bn : bns) {
    Node* conv = foldable_conv(*bn);
    if (!conv) continue;
    GS_RETURN_IF_ERROR(fold(g, conv, bn));
    ++*folded;
  }
  return Status::ok();
}

// ---- ConvScale

// A Conv whose only reader is `n`, with constant float weights (rank >= 3) and bias (or none); nullptr
// otherwise.
Node* sole_conv(const sdk::OutPort& p, const Node& n) {
  Node* conv = p.node;
  if (!conv || !is_onnx(*conv, "Conv") || p.index != 0 || conv->num_outputs() != 1 ||
      conv->consumers(0).size() != 1 || conv->consumers(0)[0].node != &n || conv->num_inputs() < 2 ||
      conv->num_inputs() > 3)
    return nullptr;
  const Tensor* w = float_constant(conv->input(1).node);
  if (!w || w->desc().shape.rank() < 3) return nullptr;
  if (conv->num_inputs() == 3 && conv->input(2).valid()) {
    const Tensor* b = float_constant(conv->input(2).node);
    if (!b || b->desc().shape.num_elements().value_or(-1) != w->desc().shape.dims()[0]) return nullptr;
  }
  return conv;
}

// The per-output-channel values of constant `c` broadcast against a Conv output of `rank` dims and `m`
// channels: one value, or m values on the channel axis; nullopt when it broadcasts any other way.
std::optional<std::vector<double>> per_channel(const Tensor& c, size_t rank, int64_t m) {
  const std::vector<int64_t>& d = c.desc().shape.dims();
  if (d.size() > rank) return std::nullopt;
  const std::vector<double> v = values(c);
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(m), v[0]);
  if (d.size() + 1 < rank) return std::nullopt;     // d ends before the channel axis
  const size_t channel_axis = d.size() + 1 - rank;  // where the output's axis 1 falls in d
  if (channel_axis >= d.size() || d[channel_axis] != m || static_cast<int64_t>(v.size()) != m)
    return std::nullopt;
  return v;
}

struct ScaleFold {
  Node* conv = nullptr;
  std::vector<double> values;
};

std::optional<ScaleFold> scale_fold(const Node& n) {
  const bool mul = is_onnx(n, "Mul");
  if ((!mul && !is_onnx(n, "Add")) || n.num_inputs() != 2 || n.num_outputs() != 1) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    // The constant first: most Adds and Muls have none, and that test reads one node's type.
    const Tensor* c = float_constant(n.input(1 - i).node);
    Node* conv = c ? sole_conv(n.input(i), n) : nullptr;
    if (!conv) continue;
    const std::vector<int64_t>& w = float_constant(conv->input(1).node)->desc().shape.dims();
    auto v = per_channel(*c, w.size(), w[0]);
    if (v) return ScaleFold{conv, std::move(*v)};
  }
  return std::nullopt;
}

Status fold_scale(Graph& g, Node* n, const ScaleFold& f) {
  const Tensor& w = *float_constant(f.conv->input(1).node);
  const std::vector<int64_t> wdims = w.desc().shape.dims();
  const int64_t m = wdims[0], per_out = static_cast<int64_t>(w.size_bytes() / 4) / std::max<int64_t>(1, m);
  std::vector<double> bias(static_cast<size_t>(m), 0.0);
  if (f.conv->num_inputs() == 3 && f.conv->input(2).valid())
    bias = values(*float_constant(f.conv->input(2).node));
  const bool mul = n->type() == "Mul";
  for (int64_t c = 0; c < m; ++c) bias[c] = mul ? bias[c] * f.values[c] : bias[c] + f.values[c];
  return take_over(g, f.conv, n, scaled_weights(w, wdims, m, per_out, mul ? &f.values : nullptr),
                   float_tensor({m}, bias));
}

// Until nothing folds: a Conv's Mul then Add fold one after the other.
Status fold_scales(Graph& g, size_t* folded) {
  for (bool again = true; again;) {
    again = false;
    std::vector<Node*> candidates;
    for (Node* n : g.nodes())
      if (scale_fold(*n)) candidates.push_back(n);
    for (Node* n : candidates) {
      const std::optional<ScaleFold> f = scale_fold(*n);
      if (!f) continue;
      GS_RETURN_IF_ERROR(fold_scale(g, n, *f));
      ++*folded;
      again = true;
    }
  }
  return Status::ok();
}

}  // namespace

Status ConvScale::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  size_t folded = 0;
  GS_RETURN_IF_ERROR(fold_scales(root, &folded));
  for (Graph* sub : root.subgraphs()) GS_RETURN_IF_ERROR(fold_scales(*sub, &folded));
  *changed = folded > 0;
  if (folded)
    ctx.log(sdk::LogLevel::kInfo, "folded " + std::to_string(folded) + " constant Mul/Add into Conv");
  return Status::ok();
}

Status ConvBatchNorm::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  size_t folded = 0;
  GS_RETURN_IF_ERROR(fold_graph(root, &folded));
  for (Graph* sub : root.subgraphs())
    GS_RETURN_IF_ERROR(fold_graph(*sub, &folded));  // the root owns them all
  *changed = folded > 0;
  if (folded)
    ctx.log(sdk::LogLevel::kInfo, "folded " + std::to_string(folded) + " BatchNormalization into Conv");
  return Status::ok();
}

}  // namespace graphsplit::plugins::fusion
