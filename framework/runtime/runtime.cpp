#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/ir/verify.h"

namespace graphsplit {

using sdk::Graph;
using sdk::Node;
using sdk::Status;
using sdk::Tensor;

namespace {

bool is_framework_op(const std::string& type) {
  static const std::set<std::string_view, std::less<>> kOps = {
      sdk::op::kData, sdk::op::kConst, sdk::op::kNetOutput, sdk::op::kPartitionedCall,
      sdk::op::kIf,   sdk::op::kCase,  sdk::op::kLoop,      sdk::op::kScan,
      sdk::op::kNoOp};
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

}  // namespace

// ---------------------------------------------------------------- plan
struct Segment {
  std::unique_ptr<Graph> graph;  // the standalone subgraph the engine compiled (kept for its node pointers)
  std::unique_ptr<sdk::Executable> executable;
  size_t stats_index = 0;
};

struct GraphPlan;

struct Step {
  Segment* segment = nullptr;  // an engine segment, or
  const Node* node = nullptr;  // a control-flow node run here
  std::vector<const GraphPlan*> subplans;
  std::vector<int> in_slots;   // -1: omitted optional input
  std::vector<int> out_slots;  // one per output
  std::vector<int> release;
};

struct GraphPlan {
  const Graph* graph = nullptr;
  size_t num_slots = 0;
  std::vector<std::pair<int64_t, int>> data;  // (parent input index or root `index`, slot)
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<Step> steps;
  std::vector<int> results;  // NetOutput inputs
};

struct Runtime::Impl {
  std::unique_ptr<Graph> root;
  std::string source;
  int64_t max_loop_iterations = 100'000'000;
  std::vector<std::unique_ptr<Segment>> segments;
  std::map<const Graph*, std::unique_ptr<GraphPlan>> plans;
  std::vector<SegmentStats> stats;
  std::vector<RuntimeIo> inputs, outputs;
  std::vector<const Node*> root_data;  // by index
  const Node* shape_data = nullptr;    // the multi-batch gear shape input, filled in here
  int64_t shape_data_index = -1;

  Status plan_graph(const Graph& g, const EngineLookup& engines);
  Status build_segment(const Graph& g, const std::vector<Node*>& members, const std::string& engine_name,
                       sdk::Engine* engine, Segment** out);
  Status run_plan(const GraphPlan& plan, const std::vector<const Tensor*>& parent_inputs,
                  std::vector<Tensor>* results);
  Status run_control(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status fill_shape_data(const std::vector<Tensor>& user_inputs, Tensor* shape);
};

Status Runtime::Impl::build_segment(const Graph& g, const std::vector<Node*>& members,
                                    const std::string& engine_name, sdk::Engine* engine, Segment** out) {
  auto seg = std::make_unique<Segment>();
  seg->graph = Graph::create(g.name() + "/" + members.front()->name());
  Graph& sg = *seg->graph;
  if (const sdk::AttrValue* v = root->attrs().get(sdk::attr::kOnnxOpsetImport))
    sg.attrs().set(sdk::attr::kOnnxOpsetImport, *v);
  std::unordered_map<const Node*, Node*> copy;
  std::set<const Node*> inside(members.begin(), members.end());
  std::map<std::pair<const Node*, int>, Node*> boundary;  // external producer -> Data or Const copy
  int64_t next_index = 0;
  for (Node* n : members) {
    Node* c = sg.add_node(n->name(), n->type(), n->num_inputs(), 0);
    c->attrs() = n->attrs();
    for (size_t o = 0; o < n->num_outputs(); ++o) c->add_output(n->output_desc(o), n->output_name(o));
    copy[n] = c;
  }
  for (Node* n : members) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (!p.valid()) continue;
      sdk::OutPort src;
      if (inside.count(p.node)) {
        src = {copy.at(p.node), p.index};
      } else {
        Node*& b = boundary[{p.node, p.index}];
        if (!b) {
          if (p.node->type() == sdk::op::kConst) {  // weights stay inside the segment
            b = sg.add_node(sg.unique_node_name(p.node->name()), sdk::op::kConst, 0, 0);
            b->attrs() = p.node->attrs();
          } else {
            b = sg.add_node(sg.unique_node_name("input_" + std::to_string(next_index)), sdk::op::kData, 0, 0);
            b->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(next_index++));
          }
          b->add_output(p.node->output_desc(p.index));
        }
        src = {b, 0};
      }
      GS_RETURN_IF_ERROR(sg.add_edge(src, {copy.at(n), static_cast<int32_t>(i)}));
    }
  }
  std::vector<sdk::OutPort> results;
  for (Node* n : members) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const auto& consumers = n->consumers(o);
      const bool leaves = std::any_of(consumers.begin(), consumers.end(),
                                      [&](const sdk::InPort& c) { return !inside.count(c.node); });
      if (leaves) results.push_back({copy.at(n), static_cast<int32_t>(o)});
    }
  }
  Node* net_output = sg.add_node("segment_output", sdk::op::kNetOutput, results.size(), 0);
  for (size_t k = 0; k < results.size(); ++k)
    GS_RETURN_IF_ERROR(sg.add_edge(results[k], {net_output, static_cast<int32_t>(k)}));
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
  seg->stats_index = stats.size();
  stats.push_back(st);
  *out = seg.get();
  segments.push_back(std::move(seg));
  return Status::ok();
}

Status Runtime::Impl::plan_graph(const Graph& g, const EngineLookup& engines) {
  if (plans.count(&g)) return Status::ok();
  auto plan = std::make_unique<GraphPlan>();
  plan->graph = &g;
  std::vector<Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(g, sdk::TopoSortMode::kStableRDFS, &order));
  std::map<std::pair<const Node*, int>, int> slot_of;
  auto new_slot = [&](const Node* n, int o) {
    const int s = static_cast<int>(plan->num_slots++);
    slot_of[{n, o}] = s;
    return s;
  };
  auto input_slots = [&](const Node* n) {
    std::vector<int> in;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      in.push_back(p.valid() ? slot_of.at({p.node, p.index}) : -1);
    }
    return in;
  };
  const Node* net_output = nullptr;
  for (const Node* n : order) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const sdk::ValueKind kind = n->output_desc(o).kind;
      if (kind != sdk::ValueKind::kTensor && kind != sdk::ValueKind::kUnknown)
        return Status::unsupported(source + ": " + describe(*n) + " produces a " +
                                   std::string(sdk::to_string(kind)) +
                                   " value; the runtime executes tensors only");
    }
  }
  // Data and Const first (they have no inputs, so this stays a topological order): constants then never cut a
  // run of one engine's operators into two segments.
  for (Node* n : order) {
    if (n->type() == sdk::op::kData) {
      const int64_t index = g.is_root() ? n->attrs().get_int(sdk::attr::kIndex, -1)
                                        : n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (index < 0) return Status::invalid_argument(source + ": " + describe(*n) + " has no input index");
      plan->data.emplace_back(index, new_slot(n, 0));
    } else if (n->type() == sdk::op::kConst) {
      const sdk::AttrValue* v = n->attrs().get(sdk::attr::kValue);
      if (!v || !v->as_tensor())
        return Status::invalid_argument(source + ": " + describe(*n) + " has no value");
      plan->constants.emplace_back(new_slot(n, 0), *v->as_tensor());
    }
  }
  // NoOps only order other nodes, and the topological order already does: they neither run nor cut segments.
  std::erase_if(order, [](const Node* n) {
    return n->type() == sdk::op::kData || n->type() == sdk::op::kConst || n->type() == sdk::op::kNoOp;
  });
  size_t k = 0;
  while (k < order.size()) {
    Node* n = order[k];
    const std::string& type = n->type();
    if (type == sdk::op::kNetOutput) {
      net_output = n;
      ++k;
      continue;
    }
    if (type == sdk::op::kScan && onnx_opset(*root) < 9)
      return Status::unsupported(source + ": " + describe(*n) +
                                 ": Scan before opset 9 (batched, with sequence_lens) is not supported");
    if (is_framework_op(type)) {
      Step step;
      step.node = n;
      step.in_slots = input_slots(n);
      for (size_t o = 0; o < n->num_outputs(); ++o)
        step.out_slots.push_back(new_slot(n, static_cast<int>(o)));
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
      plan->steps.push_back(std::move(step));
      ++k;
      continue;
    }
    // An engine segment: this node and the following ones of the same engine.
    const std::string engine_name = n->attrs().get_string(sdk::attr::kOpEngineName);
    if (engine_name.empty())
      return Status::failed_precondition(
          source + ": " + describe(*n) +
          " has no engine (_op_engine_name); compile the model with atc first");
    sdk::Engine* engine = engines(engine_name);
    if (!engine)
      return Status::not_found(source + ": " + describe(*n) + " is placed on engine " + engine_name +
                               ", which is not loaded");
    std::vector<Node*> members;
    while (k < order.size() && !is_framework_op(order[k]->type()) &&
           order[k]->attrs().get_string(sdk::attr::kOpEngineName) == engine_name) {
      members.push_back(order[k]);
      ++k;
    }
    Segment* seg = nullptr;
    GS_RETURN_IF_ERROR(build_segment(g, members, engine_name, engine, &seg));
    Step step;
    step.segment = seg;
    // Segment inputs in Data index order, outputs in NetOutput order (build_segment's order).
    std::set<const Node*> inside(members.begin(), members.end());
    std::set<std::pair<const Node*, int>> seen;
    for (Node* m : members) {
      for (size_t i = 0; i < m->num_inputs(); ++i) {
        const sdk::OutPort p = m->input(i);
        if (!p.valid() || inside.count(p.node) || p.node->type() == sdk::op::kConst) continue;
        if (seen.insert({p.node, p.index}).second) step.in_slots.push_back(slot_of.at({p.node, p.index}));
      }
    }
    for (Node* m : members) {
      for (size_t o = 0; o < m->num_outputs(); ++o) {
        const int s = new_slot(m, static_cast<int>(o));
        const auto& consumers = m->consumers(o);
        if (std::any_of(consumers.begin(), consumers.end(),
                        [&](const sdk::InPort& c) { return !inside.count(c.node); }))
          step.out_slots.push_back(s);
      }
    }
    plan->steps.push_back(std::move(step));
  }
  if (!net_output) return Status::invalid_argument(source + ": graph '" + g.name() + "' has no NetOutput");
  for (const sdk::OutPort& p : net_output->inputs()) {
    if (!p.valid())
      return Status::invalid_argument(source + ": graph '" + g.name() +
                                      "': NetOutput has an unconnected input");
    plan->results.push_back(slot_of.at({p.node, p.index}));
  }
  // Release each value after its last reader (results are never released).
  std::vector<int> last(plan->num_slots, -1);
  for (size_t s = 0; s < plan->steps.size(); ++s)
    for (int in : plan->steps[s].in_slots)
      if (in >= 0) last[in] = static_cast<int>(s);
  for (int r : plan->results) last[r] = -2;
  for (size_t s = 0; s < plan->num_slots; ++s)
    if (last[s] >= 0) plan->steps[last[s]].release.push_back(static_cast<int>(s));
  plans[&g] = std::move(plan);
  return Status::ok();
}

Status Runtime::Impl::run_plan(const GraphPlan& plan, const std::vector<const Tensor*>& parent_inputs,
                               std::vector<Tensor>* results) {
  std::vector<Tensor> values(plan.num_slots);
  for (const auto& [index, slot] : plan.data) {
    if (index < 0 || static_cast<size_t>(index) >= parent_inputs.size() || !parent_inputs[index])
      return Status::invalid_argument(source + ": graph '" + plan.graph->name() + "' reads input " +
                                      std::to_string(index) + ", which its caller does not provide");
    values[slot] = *parent_inputs[index];
  }
  for (const auto& [slot, t] : plan.constants) values[slot] = t;
  std::vector<Tensor> in, out;
  std::vector<const Tensor*> in_ptrs;
  for (const Step& step : plan.steps) {
    out.clear();
    if (step.segment) {
      in.clear();
      for (int s : step.in_slots) in.push_back(values[s]);
      SegmentStats& st = stats[step.segment->stats_index];
      const auto t0 = std::chrono::steady_clock::now();
      Status s;
      try {
        s = step.segment->executable->run(in, &out);
      } catch (const std::exception& e) {
        s = Status::internal(std::string("threw: ") + e.what());
      }
      st.milliseconds +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++st.calls;
      if (!s.is_ok())
        return {s.code(), source + ": engine " + st.engine + ", graph '" + st.graph + "': " + s.message()};
      if (out.size() != step.out_slots.size())
        return Status::internal(source + ": engine " + st.engine + " returned " + std::to_string(out.size()) +
                                " outputs for a segment with " + std::to_string(step.out_slots.size()));
    } else {
      in_ptrs.clear();
      for (int s : step.in_slots) in_ptrs.push_back(s >= 0 ? &values[s] : nullptr);
      GS_RETURN_IF_ERROR(run_control(step, in_ptrs, &out));
      if (out.size() < step.out_slots.size())
        return Status::internal(source + ": " + describe(*step.node) + " produced too few outputs");
    }
    for (size_t o = 0; o < step.out_slots.size(); ++o) values[step.out_slots[o]] = std::move(out[o]);
    for (int r : step.release) values[r] = Tensor();
  }
  results->clear();
  for (int r : plan.results) results->push_back(values[r]);
  return Status::ok();
}

namespace {

// Slice `index` of `t` along `axis` (rank drops by one).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t index) {
  const auto& d = t.desc().shape.dims();
  const int64_t es = sdk::element_size(t.desc().dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[a];
  for (size_t a = axis + 1; a < d.size(); ++a) inner *= d[a];
  std::vector<int64_t> od = d;
  od.erase(od.begin() + axis);
  sdk::TensorDesc desc = t.desc();
  desc.shape = sdk::Shape(od);
  char* out = nullptr;
  Tensor r = Tensor::allocate(desc, static_cast<size_t>(outer * inner * es), &out);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * inner * es, t.data() + ((o * d[axis] + index) * inner) * es,
                static_cast<size_t>(inner * es));
  return r;
}

// Stacks equal-shaped tensors along a new `axis`.
Status stack_along(const std::vector<Tensor>& parts, int64_t axis, const sdk::TensorDesc& empty_desc,
                   Tensor* out) {
  if (parts.empty()) {
    sdk::TensorDesc d = empty_desc;
    std::vector<int64_t> dims;
    if (!d.shape.is_unknown_rank()) dims = d.shape.dims();
    for (int64_t& v : dims) v = std::max<int64_t>(v, 0);
    dims.insert(dims.begin() + std::min<int64_t>(axis, static_cast<int64_t>(dims.size())), 0);
    d.shape = sdk::Shape(dims);
    char* p = nullptr;
    *out = Tensor::allocate(d, 0, &p);
    return Status::ok();
  }
  const auto& d = parts[0].desc().shape.dims();
  for (const Tensor& p : parts)
    if (p.desc().shape.dims() != d || p.desc().dtype != parts[0].desc().dtype)
      return Status::invalid_argument("scan outputs differ in shape between iterations");
  const int64_t es = sdk::element_size(parts[0].desc().dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[a];
  for (size_t a = axis; a < d.size(); ++a) inner *= d[a];
  std::vector<int64_t> od = d;
  od.insert(od.begin() + axis, static_cast<int64_t>(parts.size()));
  sdk::TensorDesc desc = parts[0].desc();
  desc.shape = sdk::Shape(od);
  char* o = nullptr;
  const auto n = static_cast<int64_t>(parts.size());
  *out = Tensor::allocate(desc, static_cast<size_t>(outer * n * inner * es), &o);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(o + ((r * n + k) * inner) * es, parts[k].data() + r * inner * es,
                  static_cast<size_t>(inner * es));
  return Status::ok();
}

}  // namespace

Status Runtime::Impl::run_control(const Step& step, const std::vector<const Tensor*>& in,
                                  std::vector<Tensor>* out) {
  const Node& n = *step.node;
  const std::string& type = n.type();
  auto need = [&](size_t i) -> Status {
    if (i >= in.size() || !in[i])
      return Status::invalid_argument(source + ": " + describe(n) + ": input " + std::to_string(i) +
                                      " is missing");
    return Status::ok();
  };
  if (type == sdk::op::kNoOp) return Status::ok();
  if (type == sdk::op::kPartitionedCall) return run_plan(*step.subplans.at(0), in, out);
  if (type == sdk::op::kIf) {
    GS_RETURN_IF_ERROR(need(0));
    const bool cond = read_bool(*in[0]);
    const sdk::AttrValue* branch = n.attrs().get(cond ? "then_branch" : "else_branch");
    if (!branch || !branch->as_graph())
      return Status::invalid_argument(source + ": " + describe(n) + " has no branch");
    return run_plan(*plans.at(branch->as_graph()), in, out);
  }
  if (type == sdk::op::kCase) {
    GS_RETURN_IF_ERROR(need(0));
    const int64_t index = read_int(*in[0]);
    if (index < 0 || static_cast<size_t>(index) >= step.subplans.size())
      return Status::invalid_argument(source + ": " + describe(n) + ": branch index " +
                                      std::to_string(index) + " is outside the " +
                                      std::to_string(step.subplans.size()) + " branches");
    return run_plan(*step.subplans[index], in, out);
  }
  if (type == sdk::op::kLoop) {
    // Body inputs: iteration number, condition, carried values, then captured values (the node's own inputs,
    // appended by the importer; their body Data carry `_outer_value`). Body outputs: condition, carried,
    // scans.
    const GraphPlan& body = *step.subplans.at(0);
    int64_t max_trip = -1;
    if (in.size() > 0 && in[0] && in[0]->size_bytes() > 0) max_trip = read_int(*in[0]);
    bool cond = true;
    const bool has_cond = in.size() > 1 && in[1] && in[1]->size_bytes() > 0;
    if (has_cond) cond = read_bool(*in[1]);
    const size_t num_results = body.results.size();
    if (num_results < 1)
      return Status::invalid_argument(source + ": " + describe(n) + ": the body has no outputs");
    size_t captured = 0;
    for (const Node* d : n.subgraphs().at(0)->nodes())
      if (d->type() == sdk::op::kData && d->attrs().has(sdk::attr::kOuterValue)) ++captured;
    if (n.num_inputs() < 2 + captured)
      return Status::invalid_argument(source + ": " + describe(n) +
                                      ": fewer inputs than the Loop contract needs");
    const size_t formal_carried = n.num_inputs() - 2 - captured;
    if (formal_carried > num_results - 1)
      return Status::invalid_argument(source + ": " + describe(n) +
                                      ": more carried values than body outputs");
    const size_t n_scan = num_results - 1 - formal_carried;
    std::vector<Tensor> state;
    for (size_t i = 0; i < formal_carried; ++i) {
      GS_RETURN_IF_ERROR(need(2 + i));
      state.push_back(*in[2 + i]);
    }
    std::vector<std::vector<Tensor>> scans(n_scan);
    std::vector<Tensor> body_out;
    Tensor iter_t, cond_t;
    std::vector<const Tensor*> body_in(in.begin(), in.end());
    for (int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
      if (max_trip < 0 && !has_cond)
        return Status::invalid_argument(source + ": " + describe(n) +
                                        ": the loop has neither a trip count nor a condition");
      if (i >= max_loop_iterations)
        return Status::resource_exhausted(source + ": " + describe(n) + ": more than " +
                                          std::to_string(max_loop_iterations) + " iterations");
      iter_t = make_scalar_i64(i);
      cond_t = make_scalar_bool(cond);
      body_in[0] = &iter_t;
      if (body_in.size() > 1) body_in[1] = &cond_t;
      for (size_t c = 0; c < formal_carried; ++c) body_in[2 + c] = &state[c];
      GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
      cond = read_bool(body_out[0]);
      for (size_t c = 0; c < formal_carried; ++c) state[c] = body_out[1 + c];
      for (size_t s = 0; s < n_scan; ++s) scans[s].push_back(body_out[1 + formal_carried + s]);
    }
    *out = state;
    for (size_t s = 0; s < n_scan; ++s) {
      Tensor stacked;
      sdk::TensorDesc elem =
          formal_carried + s < n.num_outputs() ? n.output_desc(formal_carried + s) : sdk::TensorDesc{};
      if (!elem.shape.is_unknown_rank() && !elem.shape.dims().empty())
        elem.shape = sdk::Shape(std::vector<int64_t>(elem.shape.dims().begin() + 1, elem.shape.dims().end()));
      if (Status st = stack_along(scans[s], 0, elem, &stacked); !st.is_ok())
        return {st.code(), source + ": " + describe(n) + ": " + st.message()};
      out->push_back(stacked);
    }
    return Status::ok();
  }
  if (type == sdk::op::kScan) {
    const GraphPlan& body = *step.subplans.at(0);
    const int64_t m = n.attrs().get_int("num_scan_inputs", 0);
    size_t outer_captured = 0;
    for (const Node* d : n.subgraphs().at(0)->nodes())
      if (d->type() == sdk::op::kData && d->attrs().has(sdk::attr::kOuterValue)) ++outer_captured;
    const size_t formal = n.num_inputs() - outer_captured;
    if (m <= 0 || static_cast<size_t>(m) > formal)
      return Status::invalid_argument(source + ": " + describe(n) + ": bad num_scan_inputs");
    const size_t n_state = formal - static_cast<size_t>(m);
    auto ints = [&](const char* key) {
      const sdk::AttrValue* v = n.attrs().get(key);
      return v && v->as_ints() ? *v->as_ints() : std::vector<int64_t>{};
    };
    std::vector<int64_t> in_axes = ints("scan_input_axes"), in_dirs = ints("scan_input_directions"),
                         out_axes = ints("scan_output_axes"), out_dirs = ints("scan_output_directions");
    int64_t length = -1;
    std::vector<int64_t> axis(static_cast<size_t>(m), 0);
    for (int64_t j = 0; j < m; ++j) {
      GS_RETURN_IF_ERROR(need(n_state + j));
      const auto rank = static_cast<int64_t>(in[n_state + j]->desc().shape.rank());
      int64_t a = j < static_cast<int64_t>(in_axes.size()) ? in_axes[j] : 0;
      if (a < 0) a += rank;
      if (a < 0 || a >= rank)
        return Status::invalid_argument(source + ": " + describe(n) + ": scan axis out of range");
      axis[j] = a;
      const int64_t len = in[n_state + j]->desc().shape.dims()[a];
      if (length >= 0 && len != length)
        return Status::invalid_argument(source + ": " + describe(n) + ": scan inputs differ in length");
      length = len;
    }
    std::vector<Tensor> state;
    for (size_t i = 0; i < n_state; ++i) {
      GS_RETURN_IF_ERROR(need(i));
      state.push_back(*in[i]);
    }
    const size_t n_scan_out = body.results.size() - n_state;
    std::vector<std::vector<Tensor>> scans(n_scan_out);
    std::vector<const Tensor*> body_in(in.begin(), in.end());
    std::vector<Tensor> slices(static_cast<size_t>(m)), body_out;
    for (int64_t t = 0; t < length; ++t) {
      for (size_t i = 0; i < n_state; ++i) body_in[i] = &state[i];
      for (int64_t j = 0; j < m; ++j) {
        const bool reverse = j < static_cast<int64_t>(in_dirs.size()) && in_dirs[j] == 1;
        slices[j] = slice_along(*in[n_state + j], axis[j], reverse ? length - 1 - t : t);
        body_in[n_state + j] = &slices[j];
      }
      GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
      for (size_t i = 0; i < n_state; ++i) state[i] = body_out[i];
      for (size_t s = 0; s < n_scan_out; ++s) scans[s].push_back(body_out[n_state + s]);
    }
    *out = state;
    for (size_t s = 0; s < n_scan_out; ++s) {
      if (s < out_dirs.size() && out_dirs[s] == 1) std::reverse(scans[s].begin(), scans[s].end());
      int64_t a = s < out_axes.size() ? out_axes[s] : 0;
      const int64_t rank = scans[s].empty() ? 0 : static_cast<int64_t>(scans[s][0].desc().shape.rank()) + 1;
      if (a < 0) a += rank;
      Tensor stacked;
      if (Status st = stack_along(scans[s], a, sdk::TensorDesc{}, &stacked); !st.is_ok())
        return {st.code(), source + ": " + describe(n) + ": " + st.message()};
      out->push_back(stacked);
    }
    return Status::ok();
  }
  return Status::unsupported(source + ": " + describe(n) + ": the runtime cannot execute this node type");
}

Status Runtime::Impl::fill_shape_data(const std::vector<Tensor>& user_inputs, Tensor* shape) {
  // The gear shape: the unknown dimensions of the gear inputs, in input order (GE's
  // ascend_mbatch_shape_data).
  const sdk::AttrValue* which = shape_data->attrs().get(sdk::attr::kDynamicBatchUnknownDataIndex);
  std::vector<int32_t> dims;
  if (which && which->as_ints()) {
    for (int64_t i : *which->as_ints()) {
      const Node* d = root_data.at(static_cast<size_t>(i));
      const sdk::AttrValue* where = d->attrs().get(sdk::attr::kDynamicBatchUnknownDimIndex);
      if (!where || !where->as_ints()) continue;
      const auto& actual = user_inputs.at(static_cast<size_t>(i)).desc().shape.dims();
      for (int64_t a : *where->as_ints()) {
        if (a < 0 || static_cast<size_t>(a) >= actual.size())
          return Status::invalid_argument(source + ": input '" + inputs[i].name + "' has rank " +
                                          std::to_string(actual.size()) + ", the gears need dimension " +
                                          std::to_string(a));
        dims.push_back(static_cast<int32_t>(actual[a]));
      }
    }
  }
  sdk::TensorDesc desc;
  desc.dtype = sdk::DataType::kInt32;
  desc.shape = sdk::Shape({static_cast<int64_t>(dims.size())});
  char* out = nullptr;
  *shape = Tensor::allocate(desc, dims.size() * 4, &out);
  if (!dims.empty()) std::memcpy(out, dims.data(), dims.size() * 4);
  return Status::ok();
}

// ---------------------------------------------------------------- expansion (reference section 9, R18)
namespace {

Status expand_one(Graph& root, Node* call) {
  Graph& parent = *call->owner();
  const sdk::AttrValue* f = call->attrs().get("f");
  Graph* sub = f ? f->as_graph() : nullptr;
  if (!sub) return Status::invalid_argument("PartitionedCall '" + call->name() + "' has no subgraph");
  // Checked before anything changes, so a refused expansion leaves the graph as it was.
  for (const Node* n : sub->nodes()) {
    if (n->type() != sdk::op::kData && n->type() != sdk::op::kNetOutput && parent.find_node(n->name()))
      return Status::failed_precondition("cannot expand PartitionedCall '" + call->name() + "': its node '" +
                                         n->name() + "' has the name of a node of graph '" + parent.name() +
                                         "'");
  }
  Node* pre = parent.add_node(parent.unique_node_name(call->name() + "_pre_noop"), sdk::op::kNoOp, 0, 0);
  Node* post = parent.add_node(parent.unique_node_name(call->name() + "_post_noop"), sdk::op::kNoOp, 0, 0);
  // In-control edges go to pre_noop, out-control edges leave from post_noop (GE drops both; R18).
  for (Node* c : std::vector<Node*>(call->control_inputs()))
    GS_RETURN_IF_ERROR(parent.add_control_edge(c, pre));
  for (Node* c : std::vector<Node*>(call->control_outputs()))
    GS_RETURN_IF_ERROR(parent.add_control_edge(post, c));
  // Inner Data: remember the outer source and the inner consumers.
  std::map<std::pair<Node*, int>, sdk::OutPort> data_source;  // inner (Data, 0) -> outer producer
  std::vector<std::pair<sdk::OutPort, std::vector<sdk::InPort>>> feeds;
  std::vector<Node*> doomed;
  Node* net_output = nullptr;
  for (Node* n : sub->nodes()) {
    if (n->type() == sdk::op::kData) {
      const int64_t index = n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (index < 0 || static_cast<size_t>(index) >= call->num_inputs() || !call->input(index).valid())
        return Status::invalid_argument("PartitionedCall '" + call->name() + "': inner Data '" + n->name() +
                                        "' names no connected input");
      const sdk::OutPort src = call->input(index);
      data_source[{n, 0}] = src;
      feeds.emplace_back(src, n->consumers(0));
      doomed.push_back(n);
    } else if (n->type() == sdk::op::kNetOutput) {
      net_output = n;
    }
  }
  if (!net_output)
    return Status::invalid_argument("PartitionedCall '" + call->name() + "': the subgraph has no NetOutput");
  std::vector<sdk::OutPort> producers;
  for (const sdk::OutPort& p : net_output->inputs()) producers.push_back(p);
  std::vector<Node*> finishing(net_output->control_inputs().begin(), net_output->control_inputs().end());
  std::vector<std::vector<sdk::InPort>> call_consumers;
  for (size_t o = 0; o < call->num_outputs(); ++o) call_consumers.push_back(call->consumers(o));
  doomed.push_back(net_output);
  for (Node* d : doomed) sub->remove_node(d);
  std::vector<Node*> rest = sub->node_list();
  GS_RETURN_IF_ERROR(sub->move_nodes_to(rest, &parent));
  root.remove_subgraph(sub);  // empty now; this also clears the call's reference to it
  parent.remove_node(call);
  for (const auto& [src, consumers] : feeds) {
    for (const sdk::InPort& c : consumers) {
      GS_RETURN_IF_ERROR(parent.add_edge(src, c));
      if (std::find(pre->control_outputs().begin(), pre->control_outputs().end(), c.node) ==
          pre->control_outputs().end())
        GS_RETURN_IF_ERROR(parent.add_control_edge(pre, c.node));
    }
  }
  for (size_t o = 0; o < call_consumers.size() && o < producers.size(); ++o) {
    sdk::OutPort p = producers[o];
    if (auto it = data_source.find({p.node, p.index}); it != data_source.end())
      p = it->second;  // pass-through
    for (const sdk::InPort& c : call_consumers[o]) GS_RETURN_IF_ERROR(parent.add_edge(p, c));
  }
  for (Node* f2 : finishing) GS_RETURN_IF_ERROR(parent.add_control_edge(f2, post));
  return Status::ok();
}

}  // namespace

Status expand_partitioned_calls(Graph& root, size_t* expanded) {
  *expanded = 0;
  for (;;) {
    Node* call = nullptr;
    std::vector<Graph*> graphs = {&root};
    for (Graph* g : root.subgraphs()) graphs.push_back(g);
    for (Graph* g : graphs) {
      for (Node* n : g->nodes()) {
        if (n->type() == sdk::op::kPartitionedCall) {
          call = n;
          break;
        }
      }
      if (call) break;
    }
    if (!call) break;
    GS_RETURN_IF_ERROR(expand_one(root, call));
    ++*expanded;
  }
  return sdk::verify(root);
}

// ---------------------------------------------------------------- Runtime
Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() {
  // Executables go before anything else (they may come from plugins whose engines the caller owns).
  if (impl_) impl_->segments.clear();
}

Status Runtime::create(std::unique_ptr<Graph> root, const std::string& source, const EngineLookup& engines,
                       const RuntimeOptions& options, std::unique_ptr<Runtime>* out) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->max_loop_iterations = options.max_loop_iterations;
  if (options.expand_partitioned_calls) {
    size_t expanded = 0;
    Status s = expand_partitioned_calls(*root, &expanded);
    if (!s.is_ok()) return {s.code(), source + ": " + s.message()};
  }
  impl->root = std::move(root);
  const Graph& g = *impl->root;
  for (const Node* n : g.nodes()) {
    if (n->type() != sdk::op::kData) continue;
    const int64_t index = n->attrs().get_int(sdk::attr::kIndex, -1);
    if (index < 0) return Status::invalid_argument(source + ": root Data '" + n->name() + "' has no index");
    if (impl->root_data.size() <= static_cast<size_t>(index)) impl->root_data.resize(index + 1, nullptr);
    if (impl->root_data[index])
      return Status::invalid_argument(source + ": two root Data nodes have index " + std::to_string(index));
    impl->root_data[index] = n;
  }
  for (size_t i = 0; i < impl->root_data.size(); ++i) {
    const Node* d = impl->root_data[i];
    if (!d) return Status::invalid_argument(source + ": no root Data has index " + std::to_string(i));
    if (d->attrs().get_bool(sdk::attr::kIsMultiBatchShapeData, false)) {
      impl->shape_data = d;
      impl->shape_data_index = static_cast<int64_t>(i);
      continue;
    }
    RuntimeIo io{d->output_name(0).empty() ? d->name() : d->output_name(0), d->output_desc(0)};
    // A gear input accepts any gear: its dynamic dimensions are unknown to the caller.
    if (const sdk::AttrValue* origin = d->attrs().get(sdk::attr::kMbatchOriginInputDims);
        origin && origin->as_ints())
      io.desc.shape = sdk::Shape(*origin->as_ints());
    impl->inputs.push_back(io);
  }
  for (const Node* n : g.nodes()) {
    if (n->type() != sdk::op::kNetOutput) continue;
    const sdk::AttrValue* names = n->attrs().get(sdk::attr::kOutputNames);
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      RuntimeIo io;
      io.name = names && names->as_strings() && i < names->as_strings()->size()
                    ? (*names->as_strings())[i]
                    : "output_" + std::to_string(i);
      if (const sdk::TensorDesc* d = n->input_desc(i)) io.desc = *d;
      impl->outputs.push_back(io);
    }
  }
  try {
    GS_RETURN_IF_ERROR(impl->plan_graph(g, engines));
  } catch (const std::exception& e) {
    return Status::internal(source + ": loading failed: " + e.what());
  }
  out->reset(new Runtime(std::move(impl)));
  return Status::ok();
}

const std::vector<RuntimeIo>& Runtime::inputs() const {
  return impl_->inputs;
}
const std::vector<RuntimeIo>& Runtime::outputs() const {
  return impl_->outputs;
}
const std::vector<SegmentStats>& Runtime::segment_stats() const {
  return impl_->stats;
}
const sdk::Graph& Runtime::graph() const {
  return *impl_->root;
}

Status Runtime::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.inputs.size())
    return Status::invalid_argument(m.source + ": the model takes " + std::to_string(m.inputs.size()) +
                                    " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const sdk::TensorDesc& want = m.inputs[i].desc;
    const sdk::TensorDesc& got = inputs[i].desc();
    const std::string who = m.source + ": input " + std::to_string(i) + " '" + m.inputs[i].name + "'";
    if (want.dtype != sdk::DataType::kUndefined && got.dtype != want.dtype)
      return Status::invalid_argument(who + " must be " + std::string(sdk::to_string(want.dtype)) + ", got " +
                                      std::string(sdk::to_string(got.dtype)));
    if (!want.shape.is_unknown_rank()) {
      if (got.shape.rank() != want.shape.rank())
        return Status::invalid_argument(who + " must have shape " + want.shape.to_string() + ", got rank " +
                                        std::to_string(got.shape.rank()) + " " + got.shape.to_string());
      for (size_t a = 0; a < want.shape.rank(); ++a) {
        if (want.shape.dims()[a] >= 0 && want.shape.dims()[a] != got.shape.dims()[a])
          return Status::invalid_argument(who + " must have shape " + want.shape.to_string() + ", got " +
                                          got.shape.to_string());
      }
    }
    const int64_t es = sdk::element_size(got.dtype);
    if (got.dtype == sdk::DataType::kString) {
      std::vector<std::string> values;
      if (!inputs[i].strings(&values) || static_cast<int64_t>(values.size()) != elements(got.shape))
        return Status::invalid_argument(who + " holds strings that do not match " + got.to_string());
    } else if (es == 0 || static_cast<int64_t>(inputs[i].size_bytes()) != elements(got.shape) * es)
      return Status::invalid_argument(who + " holds " + std::to_string(inputs[i].size_bytes()) +
                                      " bytes, which does not match " + got.to_string());
  }
  std::vector<Tensor> all;
  std::vector<const Tensor*> ptrs(m.root_data.size(), nullptr);
  Tensor shape;
  size_t k = 0;
  for (size_t i = 0; i < m.root_data.size(); ++i) {
    if (static_cast<int64_t>(i) == m.shape_data_index) continue;
    ptrs[i] = &inputs[k++];
  }
  if (m.shape_data) {
    std::vector<Tensor> by_index(m.root_data.size());
    for (size_t i = 0; i < m.root_data.size(); ++i)
      if (ptrs[i]) by_index[i] = *ptrs[i];
    GS_RETURN_IF_ERROR(m.fill_shape_data(by_index, &shape));
    ptrs[m.shape_data_index] = &shape;
  }
  try {
    return m.run_plan(*m.plans.at(m.root.get()), ptrs, outputs);
  } catch (const std::exception& e) {  // a bug or a corrupt model: an error, never a crash
    return Status::internal(m.source + ": the run failed: " + e.what());
  }
}

std::string Runtime::timing_summary() const {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-18s %6s %8s %10s %10s %12s\n", "segment (graph/first node)",
                "engine", "nodes", "calls", "total ms", "mean ms", "arena bytes");
  os << line;
  std::map<std::string, std::pair<uint64_t, double>> per_engine;
  for (const SegmentStats& s : impl_->stats) {
    std::string label = (s.graph == impl_->root->name() ? "" : s.graph + "/") + s.first_node;
    if (label.size() > 28) label = label.substr(0, 25) + "...";
    std::snprintf(line, sizeof line, "%-28s %-18s %6zu %8llu %10.3f %10.3f %12s\n", label.c_str(),
                  s.engine.c_str(), s.nodes, static_cast<unsigned long long>(s.calls), s.milliseconds,
                  s.calls ? s.milliseconds / static_cast<double>(s.calls) : 0.0,
                  s.static_shape ? std::to_string(s.arena_bytes).c_str() : "dynamic");
    os << line;
    auto& e = per_engine[s.engine];
    e.first += s.calls;
    e.second += s.milliseconds;
  }
  // Per graph (the root and each subgraph: PartitionedCall, branches, bodies), in first-seen order.
  struct GraphTotal {
    std::string name;
    size_t segments = 0;
    bool all_static = true;
    int64_t arena = 0;
    uint64_t calls = 0;
    double ms = 0;
  };
  std::vector<GraphTotal> per_graph;
  for (const SegmentStats& s : impl_->stats) {
    auto it = std::find_if(per_graph.begin(), per_graph.end(),
                           [&](const GraphTotal& g) { return g.name == s.graph; });
    if (it == per_graph.end()) it = per_graph.insert(per_graph.end(), GraphTotal{s.graph});
    ++it->segments;
    it->all_static = it->all_static && s.static_shape;
    it->arena += std::max<int64_t>(s.arena_bytes, 0);
    it->ms += s.milliseconds;
    it->calls += s.calls;
  }
  os << "per graph:\n";
  for (const GraphTotal& g : per_graph) {
    std::string label = g.name.size() > 40 ? g.name.substr(0, 37) + "..." : g.name;
    std::snprintf(line, sizeof line, "  %-40s %4zu segments %-8s %8llu calls %10.3f ms  arena %lld bytes\n",
                  label.c_str(), g.segments, g.all_static ? "static" : "dynamic",
                  static_cast<unsigned long long>(g.calls), g.ms, static_cast<long long>(g.arena));
    os << line;
  }
  os << "per engine:\n";
  for (const auto& [engine, e] : per_engine) {
    std::snprintf(line, sizeof line, "  %-18s %8llu calls %10.3f ms\n", engine.c_str(),
                  static_cast<unsigned long long>(e.first), e.second);
    os << line;
  }
  return os.str();
}

}  // namespace graphsplit
