#include <algorithm>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graphsplit/sdk/engine.h"
#include "placement.h"

namespace graphsplit::plugins::placement {
namespace {

using sdk::AttrValue;
using sdk::Status;

// Ops that only read shapes: their results exist on the host without any device work.
const std::set<std::string_view>& shape_readers() {
  static const auto* s = new std::set<std::string_view>{"Shape", "ShapeN", "Rank", "Size", "GatherShapes"};
  return *s;
}

// Asked of every node: the engine name is compared where it lies, not copied.
bool engine_is(const sdk::Node& n, std::string_view engine) {
  const AttrValue* v = n.attrs().get(sdk::attr::kOpEngineName);
  return v && v->as_string() && *v->as_string() == engine;
}

bool graph_is_dynamic(const sdk::Graph& g) {
  for (const sdk::Node* n : g.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      const sdk::TensorDesc& d = n->output_desc(o);
      if (d.kind == sdk::ValueKind::kTensor && !d.shape.is_static()) return true;
    }
  }
  return false;
}

int depth_of(const sdk::Graph* g) {
  int d = 0;
  for (; !g->is_root(); g = g->parent_graph()) ++d;
  return d;
}

class Updater {
 public:
  Updater(sdk::PassContext& ctx, const sdk::EngineRef& host, int64_t max_small)
      : ctx_(ctx), host_(host), max_small_(max_small) {}

  // A value the host may compute: at most max_small elements, or a 1-D vector of unknown length (a shape).
  bool small(const sdk::TensorDesc& d) const {
    if (d.kind != sdk::ValueKind::kTensor || d.shape.is_unknown_rank()) return false;
    if (d.shape.is_static()) return *d.shape.num_elements() <= max_small_;
    return d.shape.rank() == 1;
  }

  bool is_anchor(const sdk::Node& n) const {
    if (n.type() == sdk::op::kData) {
      if (n.attrs().get_bool(sdk::attr::kHostTensor, false)) return true;
      return fed_from_host(n);
    }
    return n.type() == sdk::op::kConst || shape_readers().count(n.type()) ||
           engine_is(n, sdk::engine::kHostCpu);
  }

  // A subgraph's Data whose parent input the host computes. If/Case/While/Loop bodies count only when
  // dynamic.
  bool fed_from_host(const sdk::Node& data) const {
    const sdk::Graph* g = data.owner();
    const sdk::Node* parent = g->parent_node();
    if (!parent) return false;
    if (parent->type() != sdk::op::kPartitionedCall && !is_dynamic(*g)) return false;
    const int64_t index = data.attrs().get_int(sdk::attr::kParentNodeIndex, -1);
    if (index < 0 || static_cast<size_t>(index) >= parent->num_inputs()) return false;
    const sdk::OutPort src = parent->input(static_cast<size_t>(index));
    return src.node && host_exec_.count(src.node);
  }

  // Once per graph: asked for every Data of a graph, the walk over the graph was quadratic (a gear's branch
  // has a Data per constant: 160 s of a compile with 50k constants and two gears).
  bool is_dynamic(const sdk::Graph& g) const {
    auto [it, fresh] = dynamic_.try_emplace(&g, false);
    if (fresh) it->second = graph_is_dynamic(g);
    return it->second;
  }

  bool qualifies(const sdk::Node& n) const {
    if (n.type() == sdk::op::kNetOutput || n.type() == "RandomUniform" || n.num_outputs() == 0 ||
        !n.subgraphs().empty()) {
      return false;
    }
    for (size_t o = 0; o < n.num_outputs(); ++o) {
      if (!small(n.output_desc(o))) return false;
    }
    for (size_t i = 0; i < n.num_inputs(); ++i) {
      const sdk::OutPort p = n.input(i);
      if (!p.node) continue;  // an omitted optional input
      if (!host_exec_.count(p.node) || !small(p.node->output_desc(p.index))) return false;
    }
    const std::string engine = n.attrs().get_string(sdk::attr::kOpEngineName);
    if (engine == sdk::engine::kGeLocal || engine == sdk::engine::kHostCpu) return true;
    return host_.engine->check_support(n).supported;
  }

  void process(sdk::Graph& g, bool* changed) {
    std::deque<sdk::Node*> queue;
    for (sdk::Node* n : g.nodes()) {
      if (is_anchor(*n)) {
        host_exec_.insert(n);
        queue.push_back(n);
      }
    }
    while (!queue.empty()) {
      sdk::Node* n = queue.front();
      queue.pop_front();
      for (size_t o = 0; o < n->num_outputs(); ++o) {
        for (const sdk::InPort& c : n->consumers(o)) {
          if (host_exec_.count(c.node) || !qualifies(*c.node)) continue;
          host_exec_.insert(c.node);
          queue.push_back(c.node);
        }
      }
    }
    for (sdk::Node* n : g.nodes()) {
      if (!host_exec_.count(n)) continue;
      const std::string engine = n->attrs().get_string(sdk::attr::kOpEngineName);
      if (engine.empty() || engine == sdk::engine::kGeLocal || engine == sdk::engine::kHostCpu)
        continue;  // GE-local ops are only marked
      n->attrs().set(sdk::attr::kOpEngineName, AttrValue::String(host_.name));
      n->attrs().set(sdk::attr::kOpKernelLibName, AttrValue::String(host_.table->kernel_lib()));
      n->attrs().set("SmallShapeHostcpu", AttrValue::Bool(true));
      sdk::Decision d;
      d.graph = g.name();
      d.nodes = {n->name()};
      d.node_count = 1;
      d.engine = host_.name;
      d.code = sdk::ReasonCode::kOk;
      d.detail = "small shape computation moved from " + engine;
      d.final = false;
      ctx_.record(d);
      d.code = sdk::ReasonCode::kHostCpuUpdate;
      d.detail = "kernel library " + host_.table->kernel_lib();
      d.final = true;
      ctx_.record(d);
      ++moved_;
      *changed = true;
    }
    for (sdk::Node* n : g.nodes()) {
      if (n->type() != sdk::op::kData) continue;
      bool any = false, all = true;
      for (size_t o = 0; o < n->num_outputs(); ++o) {
        for (const sdk::InPort& c : n->consumers(o)) {
          any = true;
          all = all && host_exec_.count(c.node);
        }
      }
      if (any && all && !n->attrs().get_bool(sdk::attr::kHostTensorAsModelInput, false)) {
        n->attrs().set(sdk::attr::kHostTensorAsModelInput, AttrValue::Bool(true));
        *changed = true;
      }
    }
  }

  size_t moved() const { return moved_; }

 private:
  sdk::PassContext& ctx_;
  const sdk::EngineRef& host_;
  int64_t max_small_;
  std::unordered_set<const sdk::Node*> host_exec_;
  mutable std::unordered_map<const sdk::Graph*, bool> dynamic_;  // the pass changes no shape
  size_t moved_ = 0;
};

}  // namespace

HostcpuEngineUpdate::HostcpuEngineUpdate(const sdk::PluginContext& ctx)
    : max_small_elements_(ctx.options().get_int("max_small_elements", 8)) {}

Status HostcpuEngineUpdate::run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  const std::vector<sdk::EngineRef> engines = ctx.engines();
  auto host = std::find_if(engines.begin(), engines.end(),
                           [](const sdk::EngineRef& e) { return e.name == sdk::engine::kHostCpu; });
  if (host == engines.end()) {
    ctx.log(sdk::LogLevel::kInfo, "skipped: no DNN_VM_HOST_CPU engine is loaded");
    return Status::ok();
  }
  std::vector<sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  if (std::none_of(graphs.begin(), graphs.end(), [](const sdk::Graph* g) { return graph_is_dynamic(*g); })) {
    ctx.log(sdk::LogLevel::kInfo, "skipped: the graph has no dynamic shapes");
    return Status::ok();
  }
  // Parents before children, so that a subgraph's Data sees whether the host computes its parent input.
  std::stable_sort(graphs.begin(), graphs.end(),
                   [](const sdk::Graph* a, const sdk::Graph* b) { return depth_of(a) < depth_of(b); });
  Updater updater(ctx, *host, max_small_elements_);
  for (sdk::Graph* g : graphs) updater.process(*g, changed);
  if (updater.moved())
    ctx.log(sdk::LogLevel::kInfo, "moved " + std::to_string(updater.moved()) + " nodes to DNN_VM_HOST_CPU");
  return Status::ok();
}

}  // namespace graphsplit::plugins::placement
