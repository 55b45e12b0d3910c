// Planning: every graph cut into engine segments (maximal runs of one engine's operators in topological
// order, control-flow nodes apart), each compiled once by its engine.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "graphsplit/sdk/ir/topo.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {
namespace runtime_detail {

bool is_framework_op(const std::string& type) {
  static const std::set<std::string_view, std::less<>> kOps = {
      sdk::op::kData, sdk::op::kConst,      sdk::op::kNetOutput, sdk::op::kPartitionedCall,
      sdk::op::kIf,   sdk::op::kCase,       sdk::op::kLoop,      sdk::op::kScan,
      sdk::op::kNoOp, sdk::op::kSequenceMap};
  return kOps.count(type) > 0;
}

int64_t elements(const sdk::Shape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims()) n *= d;
  return n;
}

std::string describe(const Node& n) {
  return "node '" + n.name() + "' (" + n.type() + ") in graph '" + n.owner()->name() + "'";
}

// The model's ai.onnx opset (root attribute `_onnx_opset_import`, "domain:version"); 17 when absent.
int onnx_opset(const Graph& root) {
  const sdk::AttrValue* v = root.attrs().get(sdk::attr::kOnnxOpsetImport);
  if (!v || !v->as_strings()) return 17;
  for (const std::string& e : *v->as_strings()) {
    const auto colon = e.rfind(':');
    if (colon != std::string::npos && (colon == 0 || e.compare(0, colon, "ai.onnx") == 0))
      return std::atoi(e.c_str() + colon + 1);
  }
  return 17;
}

Tensor make_scalar_i64(int64_t v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt64;
  d.shape = sdk::Shape(std::vector<int64_t>{});
  char* out = nullptr;
  Tensor t = Tensor::allocate(d, sizeof v, &out);
  std::memcpy(out, &v, sizeof v);
  return t;
}

Tensor make_scalar_bool(bool v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kBool;
  d.shape = sdk::Shape(std::vector<int64_t>{});
  char* out = nullptr;
  Tensor t = Tensor::allocate(d, 1, &out);
  *out = v ? 1 : 0;
  return t;
}

bool read_bool(const Tensor& t) {
  return t.size_bytes() > 0 && t.data()[0] != 0;
}

int64_t read_int(const Tensor& t) {
  switch (t.desc().dtype) {
    case sdk::DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, t.data(), 8);
      return v;
    }
    case sdk::DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, t.data(), 4);
      return v;
    }
    case sdk::DataType::kBool:
    case sdk::DataType::kUint8:
    case sdk::DataType::kInt8:
      return static_cast<unsigned char>(t.data()[0]);
    default:
      return 0;
  }
}

const Node* constant_source(sdk::OutPort p) {
  for (int hops = 0; p.valid() && hops < 64; ++hops) {
    const Node* n = p.node;
    if (n->type() == sdk::op::kConst) return n->attrs().get(sdk::attr::kValue) ? n : nullptr;
    const Node* parent = n->owner()->parent_node();
    const bool fixed_inputs = parent && (parent->type() == sdk::op::kPartitionedCall ||
                                         parent->type() == sdk::op::kIf || parent->type() == sdk::op::kCase);
    if (n->type() == sdk::op::kData && fixed_inputs) {
      const int64_t i = n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (i < 0 || static_cast<size_t>(i) >= parent->num_inputs()) return nullptr;
      p = parent->input(static_cast<size_t>(i));
    } else if (n->type() == sdk::op::kPartitionedCall && !n->subgraphs().empty()) {
      const Node* net = nullptr;
      for (const Node* m : n->subgraphs()[0]->nodes())
        if (m->type() == sdk::op::kNetOutput) net = m;
      if (!net || static_cast<size_t>(p.index) >= net->num_inputs()) return nullptr;
      p = net->input(static_cast<size_t>(p.index));
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

}  // namespace runtime_detail

using namespace runtime_detail;

int Slots::add(const Node* n, int output) {
  const int s = static_cast<int>(plan->num_slots++);
  auto& [first, count] = node_slots[n->id()];
  if (count == 0) first = s;
  if (count != output || first + output != s)
    throw std::logic_error("runtime plan: output slots out of order");
  ++count;
  return s;
}

int Slots::slot(const Node* n, int index) const {
  const bool here = n->owner() == plan->graph;
  const auto [first, count] = here ? node_slots[n->id()] : std::pair<int, int>{-1, 0};
  if (index < 0 || index >= count)
    throw std::out_of_range("node '" + n->name() + "' output " + std::to_string(index) +
                            " has no value slot");
  return first + index;
}

// Whether the members are every operator of the graph, which holds nothing else but Data, Consts and one
// NetOutput fed by the members; `out` then gets the Data in `index` order, which must be 0..k-1 (the
// root's are, checked at create; a partition's subgraph's are its call's input positions). The engine then
// compiles the graph as it is: the standalone copy costs about 400 bytes and a microsecond a node, which a
// static model (one segment, however large) and every partition of one engine paid for nothing. A subgraph
// whose Data carries a constant from outside is copied, so that the weights become the segment's own
// (copy_segment).
bool Runtime::Impl::whole_graph(const Graph& g, size_t members, WholeGraph* out) const {
  if (g.is_root() && shape_data) return false;
  size_t operators = 0;
  const Node* net = nullptr;
  std::vector<Node*> data;
  for (Node* n : g.nodes()) {
    const std::string& type = n->type();
    if (type == sdk::op::kConst) continue;
    if (type == sdk::op::kData) {
      data.push_back(n);
    } else if (type == sdk::op::kNetOutput) {
      if (net) return false;
      net = n;
    } else {
      ++operators;
    }
  }
  if (!net || operators != members) return false;
  const bool from_members =
      std::all_of(net->inputs().begin(), net->inputs().end(), [](const sdk::OutPort& p) {
        return p.valid() && p.node->type() != sdk::op::kData && p.node->type() != sdk::op::kConst;
      });
  if (!from_members) return false;
  std::vector<const Node*>& inputs = out->inputs;
  inputs.assign(data.size(), nullptr);
  for (Node* d : data) {
    const int64_t index = d->attrs().get_int(sdk::attr::kIndex, -1);
    if (index < 0 || static_cast<size_t>(index) >= data.size() || inputs[index]) return false;
    if (!g.is_root() && constant_source({d, 0})) return false;
    inputs[index] = d;
  }
  out->net_output = net;
  return true;
}

// The members as a standalone graph: Data for the values they read from outside (index in order of first
// use), Consts for the weights, and a NetOutput of what leaves. slots->inside marks the members.
Status Runtime::Impl::copy_segment(const Graph& g, const std::vector<Node*>& members, Slots* slots,
                                   std::unique_ptr<Graph>* out) {
  *out = Graph::create(g.name() + "/" + members.front()->name());
  Graph& sg = **out;
  if (const sdk::AttrValue* v = root->attrs().get(sdk::attr::kOnnxOpsetImport))
    sg.attrs().set(sdk::attr::kOnnxOpsetImport, *v);
  sg.reserve_nodes(members.size() + 2);
  std::vector<Node*>& copy = slots->copy_of;
  copy.resize(g.id_bound());
  const std::vector<char>& inside = slots->inside;
  std::map<std::pair<const Node*, int>, Node*> boundary;  // external producer -> Data or Const copy
  int64_t next_index = 0;
  for (Node* n : members) {
    Node* c = sg.add_node(n->name(), n->type(), n->num_inputs(), 0);
    c->attrs() = n->attrs();
    for (size_t o = 0; o < n->num_outputs(); ++o) c->add_output(n->output_desc(o), n->output_name(o));
    copy[n->id()] = c;
  }
  for (Node* n : members) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (!p.valid()) continue;
      sdk::OutPort src;
      if (inside[p.node->id()]) {
        src = {copy[p.node->id()], p.index};
      } else {
        Node*& b = boundary[{p.node, p.index}];
        if (!b) {
          // Weights stay inside the segment, also those a branch or a partition reads from an enclosing
          // graph: kernels can then prepare them once (oneDNN's packed weights, recurrent layers).
          if (const Node* k = constant_source(p)) {
            b = sg.add_node(sg.unique_node_name(p.node->name()), sdk::op::kConst, 0, 0);
            b->attrs() = k->attrs();
          } else {
            b = sg.add_node(sg.unique_node_name("input_" + std::to_string(next_index)), sdk::op::kData, 0, 0);
            b->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(next_index++));
          }
          b->add_output(p.node->output_desc(p.index));
        }
        src = {b, 0};
      }
      GS_RETURN_IF_ERROR(sg.add_edge(src, {copy[n->id()], static_cast<int32_t>(i)}));
    }
  }
  std::vector<sdk::OutPort> results;
  for (Node* n : members) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const auto& consumers = n->consumers(o);
      const bool leaves = std::any_of(consumers.begin(), consumers.end(),
                                      [&](const sdk::InPort& c) { return !inside[c.node->id()]; });
      if (leaves) results.push_back({copy[n->id()], static_cast<int32_t>(o)});
    }
  }
  Node* net_output = sg.add_node("segment_output", sdk::op::kNetOutput, results.size(), 0);
  for (size_t k = 0; k < results.size(); ++k)
    GS_RETURN_IF_ERROR(sg.add_edge(results[k], {net_output, static_cast<int32_t>(k)}));
  return Status::ok();
}

// The segment compiled by its engine: the graph itself when `whole` (whole_graph), else a copy.
Status Runtime::Impl::build_segment(const Graph& g, const std::vector<Node*>& members,
                                    const std::string& engine_name, sdk::Engine* engine, Slots* slots,
                                    bool whole, Segment** out) {
  auto seg = std::make_unique<Segment>();
  if (!whole) GS_RETURN_IF_ERROR(copy_segment(g, members, slots, &seg->graph));
  const Graph& sg = whole ? g : *seg->graph;
  Status s;
  try {
    s = engine->compile(sg, &seg->executable);
  } catch (const std::exception& e) {
    s = Status::internal(std::string("threw: ") + e.what());
  } catch (...) {
    s = Status::internal("threw a non-standard exception");
  }
  if (!s.is_ok()) {
    return {s.code(), source + ": engine " + engine_name + " could not compile the segment of graph '" +
                          g.name() + "' starting at node '" + members.front()->name() + "': " + s.message()};
  }
  if (!seg->executable)
    return Status::internal(source + ": engine " + engine_name + " returned no executable");
  SegmentStats st;
  st.graph = g.name();
  st.engine = engine_name;
  st.first_node = members.front()->name();
  st.nodes = members.size();
  st.arena_bytes = seg->executable->arena_bytes();
  st.static_shape = st.arena_bytes >= 0;
  st.whole_graph = whole;
  seg->stats_index = stats.size();
  stats.push_back(st);
  *out = seg.get();
  segments.push_back(std::move(seg));
  return Status::ok();
}

Status Runtime::Impl::check_value_kinds(const std::vector<Node*>& order) const {
  for (const Node* n : order) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const sdk::ValueKind kind = n->output_desc(o).kind;
      if (kind == sdk::ValueKind::kSparseTensor)
        return Status::unsupported(source + ": " + describe(*n) + " produces a " +
                                   std::string(sdk::to_string(kind)) +
                                   " value; the runtime executes tensors, sequences, optionals and maps");
    }
  }
  return Status::ok();
}

// Data and Const first (they have no inputs, so this stays a topological order): constants then never cut a
// run of one engine's operators into two segments. NoOps only order other nodes, and the topological order
// already does: they neither run nor cut segments. What is left in `order` is what runs.
Status Runtime::Impl::plan_inputs(const Graph& g, std::vector<Node*>* order, Slots* slots) {
  for (Node* n : *order) {
    if (n->type() == sdk::op::kData) {
      const int64_t index = g.is_root() ? n->attrs().get_int(sdk::attr::kIndex, -1)
                                        : n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (index < 0) return Status::invalid_argument(source + ": " + describe(*n) + " has no input index");
      slots->plan->data.emplace_back(index, slots->add(n, 0));
    } else if (n->type() == sdk::op::kConst) {
      const sdk::AttrValue* v = n->attrs().get(sdk::attr::kValue);
      if (!v || !v->as_tensor())
        return Status::invalid_argument(source + ": " + describe(*n) + " has no value");
      slots->plan->constants.emplace_back(slots->add(n, 0), *v->as_tensor());
    }
  }
  std::erase_if(*order, [](const Node* n) {
    return n->type() == sdk::op::kData || n->type() == sdk::op::kConst || n->type() == sdk::op::kNoOp;
  });
  return Status::ok();
}

// A control-flow node, run by the interpreter, with the plans of its subgraphs.
Status Runtime::Impl::plan_control(Node* n, const EngineLookup& engines, Slots* slots) {
  const std::string& type = n->type();
  Step step;
  step.node = n;
  step.scan8 = type == sdk::op::kScan && onnx_opset(*root) < 9;
  step.control = control_kind(type);
  step.in_slots = slots->inputs_of(n);
  for (size_t o = 0; o < n->num_outputs(); ++o) step.out_slots.push_back(slots->add(n, static_cast<int>(o)));
  for (Graph* sub : n->subgraphs()) {
    GS_RETURN_IF_ERROR(plan_graph(*sub, engines));
    step.subplans.push_back(plans.at(sub).get());
  }
  // The subgraphs each control-flow node needs (a corrupt model may have lost one: found by fuzzing).
  const size_t need = type == sdk::op::kIf ? 2 : (type == sdk::op::kNoOp ? 0 : 1);
  if (step.subplans.size() < need ||
      (type == sdk::op::kIf && (!n->attrs().get("then_branch") || !n->attrs().get("else_branch"))))
    return Status::invalid_argument(source + ": " + describe(*n) + " lacks its subgraph" +
                                    (need > 1 ? "s" : ""));
  slots->step_of[n->id()] = static_cast<int>(slots->plan->steps.size());
  slots->plan->steps.push_back(std::move(step));
  return Status::ok();
}

namespace {

std::vector<int> slots_of(const std::vector<const Node*>& data, const Slots& slots) {
  std::vector<int> in;
  for (const Node* d : data) in.push_back(slots.slot(d, 0));
  return in;
}

// The values a copied segment reads from outside, in the order copy_segment numbers its Data: first use, each
// once, constants left out (they are copied in). slots.inside marks the members.
std::vector<int> copied_segment_inputs(const std::vector<Node*>& members, const Slots& slots) {
  std::vector<int> in;
  std::set<std::pair<const Node*, int>> seen;
  for (const Node* m : members) {
    for (size_t i = 0; i < m->num_inputs(); ++i) {
      const sdk::OutPort p = m->input(i);
      if (!p.valid() || slots.inside[p.node->id()] || constant_source(p)) continue;
      if (seen.insert({p.node, p.index}).second) in.push_back(slots.slot(p.node, p.index));
    }
  }
  return in;
}

}  // namespace

// An engine segment: order[*k] and the following operators of the same engine, compiled by that engine.
// Segment inputs in Data index order, outputs in NetOutput order (build_segment's order).
Status Runtime::Impl::plan_segment(const Graph& g, const std::vector<Node*>& order, size_t* k,
                                   const EngineLookup& engines, Slots* slots) {
  const Node* first = order[*k];
  const std::string engine_name = first->attrs().get_string(sdk::attr::kOpEngineName);
  if (engine_name.empty())
    return Status::failed_precondition(source + ": " + describe(*first) +
                                       " has no engine (_op_engine_name); compile the model with atc first");
  sdk::Engine* engine = engines(engine_name);
  if (!engine)
    return Status::not_found(source + ": " + describe(*first) + " is placed on engine " + engine_name +
                             ", which is not loaded");
  std::vector<Node*> members;
  while (*k < order.size() && !is_framework_op(order[*k]->type()) &&
         order[*k]->attrs().get_string(sdk::attr::kOpEngineName) == engine_name)
    members.push_back(order[(*k)++]);
  std::vector<char>& inside = slots->inside;
  inside.resize(g.id_bound(), 0);
  for (const Node* m : members) inside[m->id()] = 1;
  WholeGraph whole_io;
  // Only a segment that is all of `order` but its NetOutput can be the whole graph: the full check then runs
  // at most once per graph, not once per segment (a graph of many segments would be quadratic).
  const bool whole = members.size() + 1 >= order.size() && whole_graph(g, members.size(), &whole_io);
  Segment* seg = nullptr;
  GS_RETURN_IF_ERROR(build_segment(g, members, engine_name, engine, slots, whole, &seg));
  Step step;
  step.segment = seg;
  step.in_slots = whole ? slots_of(whole_io.inputs, *slots) : copied_segment_inputs(members, *slots);
  for (Node* m : members) {
    slots->step_of[m->id()] = static_cast<int>(slots->plan->steps.size());
    for (size_t o = 0; o < m->num_outputs(); ++o) {
      const int s = slots->add(m, static_cast<int>(o));
      const auto& consumers = m->consumers(o);
      if (!whole && std::any_of(consumers.begin(), consumers.end(),
                                [&](const sdk::InPort& c) { return !inside[c.node->id()]; }))
        step.out_slots.push_back(s);
    }
  }
  if (whole) {
    for (const sdk::OutPort& p : whole_io.net_output->inputs())
      step.out_slots.push_back(slots->slot(p.node, p.index));
  }
  for (const Node* m : members) inside[m->id()] = 0;
  slots->plan->steps.push_back(std::move(step));
  return Status::ok();
}

// The NetOutput's inputs are the results; each other value is released after its last reader.
Status Runtime::Impl::plan_results(const Graph& g, const Node* net_output, Slots* slots) {
  GraphPlan& plan = *slots->plan;
  if (!net_output) return Status::invalid_argument(source + ": graph '" + g.name() + "' has no NetOutput");
  for (const sdk::OutPort& p : net_output->inputs()) {
    if (!p.valid())
      return Status::invalid_argument(source + ": graph '" + g.name() +
                                      "': NetOutput has an unconnected input");
    plan.results.push_back(slots->slot(p.node, p.index));
  }
  std::vector<int> last(plan.num_slots, -1);
  for (size_t s = 0; s < plan.steps.size(); ++s)
    for (int in : plan.steps[s].in_slots)
      if (in >= 0) last[in] = static_cast<int>(s);
  for (int r : plan.results) last[r] = -2;
  for (size_t s = 0; s < plan.num_slots; ++s)
    if (last[s] >= 0) plan.steps[last[s]].release.push_back(static_cast<int>(s));
  return Status::ok();
}

Status Runtime::Impl::plan_graph(const Graph& g, const EngineLookup& engines) {
  if (plans.count(&g)) return Status::ok();
  auto plan = std::make_unique<GraphPlan>();
  plan->graph = &g;
  std::vector<Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(g, sdk::TopoSortMode::kStableRDFS, &order));
  GS_RETURN_IF_ERROR(check_value_kinds(order));
  Slots slots(plan.get(), g);
  GS_RETURN_IF_ERROR(plan_inputs(g, &order, &slots));
  const Node* net_output = nullptr;
  for (size_t k = 0; k < order.size();) {
    Node* n = order[k];
    if (n->type() == sdk::op::kNetOutput) {
      net_output = n;
      ++k;
    } else if (is_framework_op(n->type())) {
      GS_RETURN_IF_ERROR(plan_control(n, engines, &slots));
      ++k;
    } else {
      GS_RETURN_IF_ERROR(plan_segment(g, order, &k, engines, &slots));
    }
  }
  GS_RETURN_IF_ERROR(plan_results(g, net_output, &slots));
  plan->parallel = make_step_graph(*plan, slots.step_of);
  plans[&g] = std::move(plan);
  return Status::ok();
}

}  // namespace graphsplit
