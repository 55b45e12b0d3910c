#include "jit/inferred_set.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "graphsplit/kernels/shape_inference.h"
#include "graphsplit/sdk/ir/names.h"
#include "graphsplit/sdk/ir/topo.h"
#include "jit/binary_partition.h"

namespace graphsplit::jit {
namespace {

using sdk::Graph;
using sdk::Node;
using sdk::Status;

// Inputs whose values decide an output shape.
const std::unordered_map<std::string_view, std::vector<int>>& value_positions() {
  static const std::unordered_map<std::string_view, std::vector<int>> table = {
      {"Reshape", {1}},
      {"Expand", {1}},
      {"Tile", {1}},
      {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},
      {"Slice", {1, 2, 3, 4}},
      {"Pad", {1, 3}},
      {"Resize", {1, 2, 3}},
      {"Upsample", {1}},
      {"TopK", {1}},
      {"Squeeze", {1}},
      {"Unsqueeze", {1}},
      {"OneHot", {1}},
      {"Split", {1}},
      {"ReduceSum", {1}},
      {"ReduceMean", {1}},
      {"ReduceMax", {1}},
      {"ReduceMin", {1}},
      {"ReduceProd", {1}},
      {"ReduceL1", {1}},
      {"ReduceL2", {1}},
      {"ReduceLogSum", {1}},
      {"ReduceLogSumExp", {1}},
      {"ReduceSumSquare", {1}},
      {"NonMaxSuppression", {2}},
      {"Loop", {0, 1}},
      {"If", {0}},
      {"CenterCropPad", {1}},
      {"BlackmanWindow", {0}},
      {"HannWindow", {0}},
      {"HammingWindow", {0}},
      {"MelWeightMatrix", {0, 1}},
      {"DFT", {1}},
      {"STFT", {1, 3}},
  };
  return table;
}

// Operators that carry a value from their inputs to their output (shape arithmetic).
bool passes_values(std::string_view type) {
  static const std::unordered_set<std::string_view> ops = {"Cast",        "Concat",
                                                           "Gather",      "Unsqueeze",
                                                           "Squeeze",     "Identity",
                                                           "Add",         "Sub",
                                                           "Mul",         "Div",
                                                           "Neg",         "Abs",
                                                           "Max",         "Min",
                                                           "Slice",       "Reshape",
                                                           "Equal",       "Less",
                                                           "Greater",     "Not",
                                                           "And",         "Or",
                                                           "Where",       "ReduceProd",
                                                           "ReduceSum",   "ReduceMax",
                                                           "ReduceMin",   "Clip",
                                                           "Mod",         "Sum",
                                                           "Flatten",     "Expand",
                                                           "Tile",        "Floor",
                                                           "Ceil",        "Round",
                                                           "Sign",        "GreaterOrEqual",
                                                           "LessOrEqual", "CastLike",
                                                           "Range"};
  return ops.count(type) != 0;
}

bool keyable(sdk::DataType t) {
  return t == sdk::DataType::kInt64 || t == sdk::DataType::kInt32 || t == sdk::DataType::kBool;
}

enum class State : uint8_t { kKnown, kDynamic, kCut };

struct Classifier {
  CutPolicy policy;
  const std::set<std::string>& collapsed;
  std::unordered_map<const Node*, std::vector<State>> states;  // per output
  std::unordered_set<const Node*> waiting;
  InferredSet* out;

  bool input_waits(const Node* n) const {
    for (const sdk::OutPort& p : n->inputs()) {
      if (!p.node) continue;
      if (waiting.count(p.node) || states.at(p.node)[p.index] == State::kCut) return true;
    }
    for (const Node* c : n->control_inputs())
      if (waiting.count(c)) return true;
    return false;
  }

  bool any_input(const Node* n, State s) const {
    for (const sdk::OutPort& p : n->inputs())
      if (p.node && states.at(p.node)[p.index] == s) return true;
    return false;
  }

  // Why a node with known inputs and an unknown output shape does not cut; empty: it cuts.
  std::string pull_reason(const Node* n) const {
    if (policy == CutPolicy::kNever) return "cut policy never: compiled with dynamic segments";
    for (size_t o = 0; o < n->num_outputs(); ++o)
      if (n->output_desc(o).kind != sdk::ValueKind::kTensor)
        return std::string("its output is a ") + std::string(sdk::to_string(n->output_desc(o).kind)) +
               ", which stays in its slice";
    const bool control_flow = !n->subgraphs().empty();
    if (!control_flow && !kernels::has_shape_rule(n->type(), n->attrs().get_string(sdk::attr::kDomain)))
      return "no shape rule (GE: no callback registered): pulled into the slice";
    if (collapsed.count(n->name())) return "cut collapsed: its output size changed too often";
    return {};
  }

  void visit(const Node* n) {
    std::vector<State>& s = states[n];
    s.assign(n->num_outputs(), State::kKnown);
    if (n->type() == sdk::op::kNetOutput) return;
    if (sdk::is_data_like(n->type())) {
      if (!n->output_desc(0).is_static()) {
        s[0] = State::kDynamic;
        out->notes.push_back({n->name(), "input left dynamic: " + n->output_desc(0).to_string()});
      }
      return;
    }
    if (input_waits(n)) {
      waiting.insert(n);
      if (any_input(n, State::kCut)) out->notes.push_back({n->name(), "waits for the values of a cut"});
      return;
    }
    const bool dynamic_in = any_input(n, State::kDynamic);
    bool unknown = false;
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      if (n->output_desc(o).is_static()) continue;
      unknown = true;
      s[o] = State::kDynamic;
    }
    if (!unknown || dynamic_in) return;
    if (std::string why = pull_reason(n); !why.empty()) {
      out->notes.push_back({n->name(), why});
      return;
    }
    for (size_t o = 0; o < n->num_outputs(); ++o)
      if (!n->output_desc(o).is_static()) s[o] = State::kCut;
    std::string shapes;
    for (size_t o = 0; o < n->num_outputs(); ++o) shapes += (o ? ", " : "") + n->output_desc(o).to_string();
    out->notes.push_back({n->name(), "cut: data-dependent output " + shapes});
  }
};

// A Const feeding only waiting nodes goes with them.
bool only_feeds(const Node* n, const std::unordered_set<const Node*>& waiting) {
  if (!sdk::is_const_like(n->type()) || !n->has_consumers()) return false;
  for (size_t o = 0; o < n->num_outputs(); ++o)
    for (const sdk::InPort& c : n->consumers(o))
      if (!waiting.count(c.node)) return false;
  return true;
}

}  // namespace

const char* to_string(CutPolicy p) {
  switch (p) {
    case CutPolicy::kAuto:
      return "auto";
    case CutPolicy::kData:
      return "data";
    case CutPolicy::kNever:
      return "never";
  }
  return "auto";
}

Status bind_inputs(Graph& g, const std::vector<InputBinding>& inputs) {
  std::vector<Node*> data;
  for (Node* n : g.nodes())
    if (sdk::is_data_like(n->type())) data.push_back(n);
  for (Node* d : data) {
    const int64_t i = d->attrs().get_int(sdk::attr::kIndex, -1);
    if (i < 0 || static_cast<size_t>(i) >= inputs.size()) continue;
    const InputBinding& b = inputs[i];
    if (!b.value) {
      d->mutable_output_desc(0) = b.desc;
      continue;
    }
    const std::string name = d->name(), value = d->output_name(0);
    std::vector<sdk::InPort> consumers = d->consumers(0);
    g.remove_node(d);
    Node* c = g.add_node(name, sdk::op::kConst, 0, 0);
    c->add_output(b.value->desc(), value);
    c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(*b.value));
    for (const sdk::InPort& p : consumers) GS_RETURN_IF_ERROR(g.add_edge({c, 0}, p));
  }
  // The Data left are numbered again from 0, in their order (a runtime wants no gaps).
  std::vector<Node*> left;
  for (Node* n : g.nodes())
    if (sdk::is_data_like(n->type())) left.push_back(n);
  std::stable_sort(left.begin(), left.end(), [](const Node* a, const Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  for (size_t i = 0; i < left.size(); ++i)
    left[i]->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(static_cast<int64_t>(i)));
  return Status::ok();
}

std::vector<bool> value_inputs(const Graph& g) {
  size_t count = 0;
  for (const Node* n : g.nodes())
    if (sdk::is_data_like(n->type())) ++count;
  std::vector<bool> out(count, false);
  std::deque<sdk::OutPort> work;
  std::unordered_set<const Node*> seen;
  for (const Node* n : g.nodes()) {
    auto it = value_positions().find(n->type());
    if (it == value_positions().end()) continue;
    for (int i : it->second)
      if (static_cast<size_t>(i) < n->num_inputs() && n->input(i).node) work.push_back(n->input(i));
  }
  while (!work.empty()) {
    const sdk::OutPort p = work.front();
    work.pop_front();
    if (!seen.insert(p.node).second) continue;
    if (sdk::is_data_like(p.node->type())) {
      const int64_t i = p.node->attrs().get_int(sdk::attr::kIndex, -1);
      if (i >= 0 && static_cast<size_t>(i) < count && keyable(p.node->output_desc(0).dtype)) out[i] = true;
      continue;
    }
    if (!passes_values(p.node->type())) continue;
    for (const sdk::OutPort& q : p.node->inputs())
      if (q.node) work.push_back(q);
  }
  return out;
}

Status compute_inferred_set(const Graph& g, const std::vector<InputBinding>& inputs, CutPolicy policy,
                            const std::set<std::string>& collapsed, InferredSet* out,
                            std::unique_ptr<Graph>* bound) {
  *out = InferredSet{};
  std::unique_ptr<Graph> copy;
  std::vector<Node*> twin;
  GS_RETURN_IF_ERROR(copy_graph(g, &copy, &twin));
  // Originals and copies by id, not by name (two lookups a node in million-name indexes). bind_inputs
  // replaces bound Data with Consts of the same name and a new id: those are found by name.
  std::vector<const Node*> original_of(copy->id_bound(), nullptr);
  for (const Node* n : g.nodes()) original_of[twin[n->id()]->id()] = n;
  const auto original = [&](const Node* c) {
    const auto id = static_cast<size_t>(c->id());
    return id < original_of.size() && original_of[id] ? original_of[id] : g.find_node(c->name());
  };
  const auto copy_of = [&](const Node* n) -> const Node* {
    return sdk::is_data_like(n->type()) ? copy->find_node(n->name()) : twin[n->id()];
  };
  GS_RETURN_IF_ERROR(bind_inputs(*copy, inputs));
  kernels::ShapeInferenceOptions options;
  options.fold_constants = false;
  kernels::ShapeInferenceStats stats;
  GS_RETURN_IF_ERROR(kernels::infer_shapes(*copy, options, &stats));
  std::vector<Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(*copy, sdk::TopoSortMode::kStableRDFS, &order));
  Classifier c{policy, collapsed, {}, {}, out};
  for (const Node* n : order) c.visit(n);
  for (const Node* n : order) {
    if (c.waiting.count(n) || n->type() == sdk::op::kNetOutput) continue;
    const Node* o = original(n);
    if (only_feeds(n, c.waiting) && !(o && sdk::is_data_like(o->type()))) {
      c.waiting.insert(n);
      continue;
    }
    bool feeds_waiting = false;
    for (size_t o = 0; o < n->num_outputs(); ++o)
      for (const sdk::InPort& p : n->consumers(o)) feeds_waiting |= c.waiting.count(p.node) != 0;
    const std::vector<State>& st = c.states[n];
    if (feeds_waiting && std::find(st.begin(), st.end(), State::kCut) != st.end())
      out->cuts.push_back(n->name());
  }
  for (const Node* n : g.nodes()) {
    const Node* t = copy_of(n);
    if (n->type() != sdk::op::kNetOutput && t && !c.waiting.count(t)) out->nodes.insert(n);
  }
  out->waiting = c.waiting.size();
  if (bound) *bound = std::move(copy);
  return Status::ok();
}

}  // namespace graphsplit::jit
