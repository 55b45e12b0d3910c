// Over 600 lines on purpose: one class holds GE's whole DynamicShapePartitioner (classify, cluster, merge,
// frame) so that the order of its rules reads top to bottom as in the reference.
#include "dynamic_shape_partitioner.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graphsplit/sdk/cluster_graph.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/partition_frames.h"
#include "graphsplit/sdk/union_find.h"

namespace graphsplit::plugins::dynamic_shape {
namespace {

using sdk::AttrValue;
using sdk::ClusterGraph;
using sdk::Graph;
using sdk::Node;
using sdk::Status;

enum class Kind { kData, kNetOutput, kInputNode, kStage, kKnown, kUnknown };

// Whether the node takes or produces a container (sequences and optionals have no static shape to plan memory
// for, whatever their elements' shapes) or a tensor of unknown shape: one walk over its descriptors.
struct ValueFlags {
  bool container = false, unknown = false;
};
ValueFlags value_flags(const Node& n) {
  ValueFlags f;
  const auto look = [&](const sdk::TensorDesc& d) {
    if (d.kind == sdk::ValueKind::kSequence || d.kind == sdk::ValueKind::kOptional ||
        d.kind == sdk::ValueKind::kMap) {
      f.container = true;
    } else if (d.kind == sdk::ValueKind::kTensor) {
      // Shape::is_static() inline: the SDK's is a call, made for every value of every node.
      for (int64_t dim : d.shape.dims()) f.unknown = f.unknown || dim < 0;
    }
  };
  for (const sdk::OutPort& p : n.inputs())
    if (p.node) look(p.node->output_desc(static_cast<size_t>(p.index)));
  for (size_t o = 0; o < n.num_outputs(); ++o) look(n.output_desc(o));
  return f;
}

bool has_unknown_tensor(const Node& n) {
  return value_flags(n).unknown;
}

// Whether `type` is one of a handful of names. Asked of every node: a std::set of them walked a tree of
// string comparisons each time, where most names here differ from the type in length.
template <size_t N>
bool one_of(std::string_view type, const std::array<std::string_view, N>& names) {
  return std::find(names.begin(), names.end(), type) != names.end();
}

constexpr std::array<std::string_view, 4> kStackOps = {"Stack", "StackPush", "StackPop", "StackClose"};

// Nodes GE treats as special for the host-scheduling decision.
bool is_special(const Node& n) {
  static constexpr std::array<std::string_view, 13> kTypes = {
      "PartitionedCall",  "Case",        "If",    "While",    "StreamActive",
      "StreamSwitch",     "StreamMerge", "Enter", "RefEnter", "NextIteration",
      "RefNextIteration", "Loop",        "Scan"};
  return !n.subgraphs().empty() || one_of(n.type(), kTypes);
}

// A set of the nodes of one graph, by node id: the classification asks "is it dynamic?" for every node and
// every edge, and a hash set made that a third of the partitioner's time on large graphs. Sorting the graph
// renumbers its nodes, hence rekey().
class NodeFlags {
 public:
  void reset(size_t id_bound) {
    bits_.assign(id_bound, 0);
    members_.clear();
  }
  void rekey(size_t id_bound) {
    bits_.assign(id_bound, 0);
    for (const Node* n : members_) bits_[static_cast<size_t>(n->id())] = 1;
  }
  bool count(const Node* n) const {
    const auto id = static_cast<size_t>(n->id());
    return id < bits_.size() && bits_[id];
  }
  void insert(const Node* n) {
    const auto id = static_cast<size_t>(n->id());
    if (id >= bits_.size()) bits_.resize(id + 1, 0);
    if (!bits_[id]) members_.push_back(n);
    bits_[id] = 1;
  }
  bool empty() const { return members_.empty(); }

 private:
  std::vector<char> bits_;
  std::vector<const Node*> members_;
};

class Partition {
 public:
  Partition(Graph& graph, sdk::PassContext& ctx) : graph_(graph), tree_(*graph.root()), ctx_(ctx) {}

  Status run(bool* changed) {
    read_options();
    if (graph_.attrs().get_bool(sdk::attr::kNoNeedDynamicShapePartition, false)) {
      ctx_.log(sdk::LogLevel::kInfo, "skipped '" + graph_.name() + "': _no_need_dynamic_shape_partition");
      return Status::ok();
    }
    mark_tiling_dependency();
    if (whole_graph_early_exit()) {
      *changed = true;
      return Status::ok();
    }
    classify();
    *changed = true;
    if (unknown_.empty()) {
      all_static();
      return Status::ok();
    }
    graph_.attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(true));
    if (graph_.attrs().get_bool(sdk::attr::kSingleOpScene, false)) {
      single_op_scene();
      return Status::ok();
    }
    graph_.attrs().set(sdk::attr::kDynamicShapePartitioned, AttrValue::Bool(true));
    GS_RETURN_IF_ERROR(sort_graph());
    unknown_.rekey(graph_.id_bound());
    if (!one_dynamic_frame()) {
      GS_RETURN_IF_ERROR(cluster());
      GS_RETURN_IF_ERROR(clusters_->check_invariants());
      plan_from_clusters();
      // The plan holds everything build() needs. Freed now, the cluster graph's memory (about 90 bytes a
      // node) is reused by the frames, where kept it added to the peak: 778 -> 691 MB on the 1M-node
      // transformer-like bench model, and on this machine each MB first touched costs about 1-2 ms.
      clusters_.reset();
    }
    GS_RETURN_IF_ERROR(build());
    // What stayed in the graph (Data, NetOutput, stage calls) and the new calls live in a dynamic graph; the
    // framed nodes got their frame's flag (written once, not twice: on large graphs this is a second's work).
    for (Node* n : graph_.nodes()) n->attrs().set(sdk::attr::kOwnerGraphIsUnknown, AttrValue::Bool(true));
    mark_subgraphs();
    transfer_const_control_edges();
    return Status::ok();
  }

  void read_options() {
    const sdk::OptionValues& ge = ctx_.ge_options();
    limit_ = ge.get_int("ge.exec.static_model_ops_lower_limit", 4);
    stable_ = ge.get_string("ge.topoSortingMode") == "3";
    // GE's known-first strategy (selected when ffts+ is on) has its own default limit, 6.
    known_first_ = !stable_ && ctx_.options().get_string("strategy") == "known_first";
    no_shortcut_ = ctx_.options().get_bool("always_cluster", false);
    if (known_first_ && limit_ != -1) limit_ = ctx_.options().get_int("known_first_limit", 6);
  }

  // The early exits: the whole graph is dynamic and nothing is split.
  bool whole_graph_early_exit() {
    std::string why;
    if (ctx_.ge_options().get_string("ge.exec.placement") == "HOST")
      why = "ge.exec.placement is HOST";
    else if (limit_ == -1)
      why = "ge.exec.static_model_ops_lower_limit is -1";
    else if (only_io_with_unknown_tensor())
      why = "the graph holds only Data and NetOutput, with an unknown tensor";
    if (why.empty()) return false;
    whole_graph_unknown();
    graph_.attrs().set(sdk::attr::kDynamicShapePartitioned, AttrValue::Bool(false));
    decide(sdk::ReasonCode::kWholeGraphDynamic, {}, why);
    return true;
  }

  // Nothing dynamic: no split; a small enough graph is scheduled on the host as a whole.
  void all_static() {
    graph_.attrs().set(sdk::attr::kDynamicShapePartitioned, AttrValue::Bool(false));
    const int64_t threshold = ctx_.ge_options().get_int("ge.host_scheduling_max_threshold", 0);
    const size_t known = graph_.num_nodes();
    // The special nodes matter only below the threshold (0, and so never, by default): no walk otherwise.
    const auto any_special = [&] {
      for (const Node* n : graph_.nodes())
        if (is_special(*n)) return true;
      return false;
    };
    if (static_cast<int64_t>(known) < threshold && !any_special()) {
      graph_.attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(true));
      decide(sdk::ReasonCode::kHostScheduling, {},
             std::to_string(known) + " static nodes < ge.host_scheduling_max_threshold " +
                 std::to_string(threshold));
    }
  }

  // Single-op scene: dynamic, but never split.
  void single_op_scene() {
    graph_.attrs().set(sdk::attr::kDynamicShapePartitioned, AttrValue::Bool(false));
    bool any = false;
    for (const Node* n : graph_.nodes())
      any = any || unknown_.count(const_cast<Node*>(n)) ||
            n->attrs().get_bool(sdk::attr::kForceUnknownShape, false);
    if (any) graph_.attrs().set(sdk::attr::kMemoryDiscontiguousAllocation, AttrValue::Bool(true));
    for (Node* n : graph_.nodes()) n->attrs().set(sdk::attr::kOwnerGraphIsUnknown, AttrValue::Bool(true));
    mark_subgraphs();
  }

  // GE's Stack re-partition loop: ops sharing a data-flow handle must all land on one side; when they do not,
  // they are forced dynamic and the graph is classified and merged again. Each round only adds marks.
  Status cluster() {
    for (int round = 0;; ++round) {
      GS_RETURN_IF_ERROR(ClusterGraph::build(graph_, &clusters_));
      init_kinds();
      merge_control_flow_groups();
      if (stable_)
        stable_merge();
      else if (known_first_)
        known_first_merge();
      else
        normal_merge();
      if (!split_handles() || round > 64) return Status::ok();
      no_tiling_.clear();
      subgraph_unknown_.clear();
      kind_.clear();
      classify();
    }
  }

  void decide(sdk::ReasonCode code, const std::vector<const Node*>& nodes, const std::string& detail) {
    if (!ctx_.keeps_decisions()) return;  // a record per dynamic node, strings and all, for nobody
    sdk::Decision d;
    d.code = code;
    d.graph = graph_.name();
    for (size_t i = 0; i < nodes.size() && i < sdk::kMaxDecisionNodes; ++i)
      d.nodes.push_back(nodes[i]->name());
    d.node_count = nodes.size();
    d.detail = detail;
    ctx_.record(d);
  }

  // The node's row in its engine's table. Rows are kept per op type (the interned type string's address),
  // one per engine: a table lookup is a binary search over strings, asked several times per node.
  const sdk::OpSupportRow* row_of(const Node& n) const {
    return row_of(n, n.attrs().get(sdk::attr::kOpEngineName));
  }
  // The same with the engine attribute already found. Neighbouring nodes mostly share type and engine, so the
  // last answer is checked first.
  const sdk::OpSupportRow* row_of(const Node& n, const AttrValue* attr) const {
    const std::string* name = attr ? attr->as_string() : nullptr;
    const std::string_view engine = name ? std::string_view(*name) : std::string_view();
    if (last_.type != &n.type() || last_.engine != engine) {
      last_.type = &n.type();
      last_.engine.assign(engine);
      last_.row = find_row(n.type(), engine);
    }
    return last_.row;
  }
  const sdk::OpSupportRow* find_row(const std::string& type, std::string_view engine) const {
    size_t e = 0;
    while (e < engines_.size() && !(engines_[e].table && engines_[e].name == engine)) ++e;
    if (e == engines_.size()) return nullptr;
    auto [it, fresh] = rows_.try_emplace(&type);
    if (fresh) {
      it->second.resize(engines_.size());
      for (size_t i = 0; i < engines_.size(); ++i)
        it->second[i] = engines_[i].table ? engines_[i].table->find(type) : nullptr;
    }
    return it->second[e];
  }

  // GE step 2: an op whose engine row needs run-time tiling, fed by a non-constant input or holding an
  // unknown tensor, depends on tiling data.
  void mark_tiling_dependency() {
    engines_ = ctx_.engines();
    rows_.clear();
    last_ = {};
    std::vector<Graph*> graphs{&tree_};
    graphs.insert(graphs.end(), tree_.subgraphs().begin(), tree_.subgraphs().end());
    for (Graph* g : graphs) {
      for (Node* n : g->nodes()) {
        const sdk::OpSupportRow* row = row_of(*n);
        if (!row || !row->tiling || n->attrs().has(sdk::attr::kDynamicTilingDependOp)) continue;
        bool non_const_input = false;
        for (const sdk::OutPort& p : n->inputs())
          non_const_input = non_const_input || (p.node && p.node->type() != sdk::op::kConst);
        if (has_unknown_tensor(*n) && non_const_input) {
          n->attrs().set(sdk::attr::kDynamicTilingDependOp, AttrValue::Bool(true));
        }
      }
    }
  }

  bool only_io_with_unknown_tensor() const {
    bool unknown = false;
    for (const Node* n : graph_.nodes()) {
      if (!sdk::is_data_like(n->type()) && n->type() != sdk::op::kNetOutput) return false;
      unknown = unknown || has_unknown_tensor(*n);
    }
    return unknown;
  }

  // The graph being split and every subgraph nested under it.
  std::vector<Graph*> with_descendants() const {
    std::vector<Graph*> out{&graph_};
    for (Graph* g : tree_.subgraphs()) {
      for (const Graph* up = g->parent_graph(); up; up = up->is_root() ? nullptr : up->parent_graph()) {
        if (up == &graph_) {
          out.push_back(g);
          break;
        }
      }
    }
    return out;
  }

  void whole_graph_unknown() {
    graph_.attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(true));
    for (Graph* g : with_descendants()) {
      g->attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(true));
      for (Node* n : g->nodes()) n->attrs().set(sdk::attr::kOwnerGraphIsUnknown, AttrValue::Bool(true));
    }
  }

  // Rules 1-8 of the reference's section 3.2, first match wins; the code's order, not the docs'.
  struct Why {
    sdk::ReasonCode code = sdk::ReasonCode::kOk;
    std::string_view text;  // a fixed reason: no string built per dynamic node
    std::string owned;      // or one that names something
    std::string detail() const { return owned.empty() ? std::string(text) : owned; }
  };
  // A fixed reason, set in place: assigning a whole Why made and destroyed a string per dynamic node.
  static bool because(Why* why, sdk::ReasonCode code, std::string_view text) {
    why->code = code;
    why->text = text;
    return true;
  }
  // The attributes is_unknown() reads, found in one walk over the node's short list instead of a lookup each
  // (asked of every node, most of them static). The first entry of a key counts, as for AttrMap::get.
  struct Flags {
    const AttrValue* unknown = nullptr;  // _is_unknown_shape
    const AttrValue* forced = nullptr;   // _force_unknown_shape
    const AttrValue* engine = nullptr;   // _op_engine_name
    const AttrValue* tiling = nullptr;   // _dynamic_tiling_depend_op
    const AttrValue* refresh = nullptr;  // _is_support_addr_refresh
  };
  // The keys, interned once per graph: compared as pointers, five per attribute cost less than five string
  // compares (and function-local statics cost a guard check each per call).
  struct FlagKeys {
    sdk::AttrKey unknown{sdk::attr::kIsUnknownShape}, forced{sdk::attr::kForceUnknownShape},
        engine{sdk::attr::kOpEngineName}, tiling{sdk::attr::kDynamicTilingDependOp},
        refresh{sdk::attr::kIsSupportAddrRefresh}, owner_unknown{sdk::attr::kOwnerGraphIsUnknown};
  };
  Flags flags_of(const Node& n) const {
    Flags f;
    for (const sdk::AttrMap::Entry& e : n.attrs().entries()) {
      const AttrValue* v = &e.second;
      const auto take = [&](const AttrValue*& slot, sdk::AttrKey key) {
        if (!slot && e.first == key) slot = v;
      };
      take(f.unknown, keys_.unknown);
      take(f.forced, keys_.forced);
      take(f.engine, keys_.engine);
      take(f.tiling, keys_.tiling);
      take(f.refresh, keys_.refresh);
    }
    return f;
  }
  static bool is_true(const AttrValue* v) { return v && v->as_bool() && *v->as_bool(); }

  bool is_unknown(Node& n, Why* why) {
    Flags f = flags_of(n);
    if (is_true(f.unknown) || is_true(f.forced)) {
      return because(why, sdk::ReasonCode::kForced, "_is_unknown_shape or _force_unknown_shape is set");
    }
    if (f.engine && f.engine->as_string() && *f.engine->as_string() == sdk::engine::kHostCpu) {
      return because(why, sdk::ReasonCode::kHostCpu, "runs on DNN_VM_HOST_CPU");
    }
    const ValueFlags values = value_flags(n);
    if (values.container) {
      return because(why, sdk::ReasonCode::kNotATensor, "it takes or produces a sequence or optional value");
    }
    if (values.unknown) {
      if (no_tiling_capable(n)) {
        no_tiling_.insert(&n);
      } else {
        return because(why, sdk::ReasonCode::kShapeUnknown, "a tensor has an unknown dimension or rank");
      }
    }
    for (const Graph* sub : n.subgraphs()) {
      if (subgraph_has_unknown(*sub)) {
        *why = {sdk::ReasonCode::kSubgraphUnknown, {}, "subgraph '" + sub->name() + "' holds a dynamic node"};
        return true;
      }
    }
    if (is_true(f.tiling)) {
      const sdk::OpSupportRow* row = row_of(n, f.engine);
      const sdk::OptionValues& ge = ctx_.ge_options();
      const bool sink = ge.get_string("ge.tiling_schedule_optimize") == "1" &&
                        ge.get_string("ge.buildGraphMode") == "offline" && row && row->tiling_sink;
      if (sink) {
        n.attrs().set(sdk::attr::kTilingSinkOp, AttrValue::Bool(true));
        f = flags_of(n);  // the list may have moved
      } else {
        n.attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
        return because(why, sdk::ReasonCode::kTilingDepend,
                       "needs run-time tiling data and cannot sink its tiling to AI CPU");
      }
    }
    const sdk::AttrValue* refresh = f.refresh;
    if (refresh ? refresh->as_bool() && !*refresh->as_bool() : no_addr_refresh(n, f.engine)) {
      n.attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
      return because(why, sdk::ReasonCode::kNoAddrRefresh, "its kernel cannot repoint addresses");
    }
    return false;
  }

  // No _is_support_addr_refresh on the node: its table row decides.
  bool no_addr_refresh(const Node& n, const AttrValue* engine) const {
    const sdk::OpSupportRow* row = row_of(n, engine);
    return row && !row->addr_refresh;
  }

  // GE's no-tiling capability, reduced to what the graph can say: the op types GE always allows and ops
  // marked _op_no_tiling. (GE's engine export-shape lists have no counterpart here.)
  static bool no_tiling_capable(const Node& n) {
    static constexpr std::array<std::string_view, 2> kAlways = {"MemcpyAsync", "StreamMerge"};
    return one_of(n.type(), kAlways) || n.attrs().get_bool(sdk::attr::kOpNoTiling, false);
  }

  bool subgraph_has_unknown(const Graph& g) {
    if (auto it = subgraph_unknown_.find(&g); it != subgraph_unknown_.end())
      return it->second;  // R4: memoised
    bool unknown = false;
    for (Node* n : g.nodes()) {
      Why why;
      if (is_unknown(*n, &why)) {
        unknown = true;
        break;
      }
    }
    subgraph_unknown_[&g] = unknown;
    return unknown;
  }

  void classify() {
    unknown_.reset(graph_.id_bound());
    for (Node* n : graph_.nodes()) {
      Why why;
      if (is_unknown(*n, &why)) {
        unknown_.insert(n);
        // decide() returns at once when nobody keeps decisions, but its arguments (a list and a string for
        // each dynamic node) were built first.
        if (ctx_.keeps_decisions()) decide(why.code, {n}, why.detail());
      }
    }
    // Mixed no-tiling is not supported: with any unknown node, every no-tiling node goes dynamic too.
    // (Walks in node order, never in set order, so that decisions come out the same every run.)
    if (!unknown_.empty() && !no_tiling_.empty()) {
      for (Node* n : graph_.nodes()) {
        if (!no_tiling_.count(n) || unknown_.count(n)) continue;
        n->attrs().set(sdk::attr::kOpNoTiling, AttrValue::Bool(false));
        unknown_.insert(n);
        decide(sdk::ReasonCode::kNoTilingReverted, {n},
               "mixed no-tiling and dynamic nodes are not supported");
      }
    }
    // An unknown node pulls in its direct Const producers.
    std::vector<Node*> pulled;
    for (Node* n : graph_.nodes()) {
      if (!unknown_.count(n)) continue;
      for (const sdk::OutPort& p : n->inputs()) {
        if (p.node && p.node->type() == sdk::op::kConst && !unknown_.count(p.node)) pulled.push_back(p.node);
      }
    }
    for (Node* c : pulled) unknown_.insert(c);
  }

  Status sort_graph() {
    const std::string mode = ctx_.ge_options().get_string("ge.topoSortingMode");
    sdk::TopoSortMode m = sdk::kDefaultTopoSortMode;
    if (auto parsed = sdk::parse_topo_sorting_mode(mode)) m = *parsed;
    return sdk::topological_sort(graph_, m);
  }

  Kind node_kind(Node* n) {
    bool has_data_in = false;
    for (const sdk::OutPort& p : n->inputs()) has_data_in = has_data_in || p.node;
    if (sdk::is_data_like(n->type()) && !has_data_in) return Kind::kData;
    if (n->type() == sdk::op::kConst && !has_data_in && n->control_inputs().empty()) return Kind::kInputNode;
    if (n->type() == sdk::op::kNetOutput) return Kind::kNetOutput;
    if (n->type() == sdk::op::kPartitionedCall && n->attrs().has(sdk::attr::kStageLevel)) return Kind::kStage;
    return unknown_.count(n) ? Kind::kUnknown : Kind::kKnown;
  }

  void init_kinds() {
    const std::vector<Node*> nodes = graph_.node_list();
    kind_.assign(nodes.size(), Kind::kKnown);
    for (Node* n : nodes) kind_[clusters_->cluster_of(n)] = node_kind(n);
  }

  // GE's normal merge when every node that can be framed is dynamic (a model with a dynamic batch, say) and
  // they form one connected whole: path absorption merges each dynamic node with all its dynamic inputs, and
  // nothing can stop it, since Data and input Consts have no inputs and NetOutput no consumers, so that no
  // path between two dynamic nodes runs through another kind. The result is one dynamic frame, after the
  // input Consts' frame when one of them feeds it, as the cluster engine orders them. False (and nothing
  // done) for any other graph, or where a rule this does not follow could apply: control-flow groups, ref
  // variables, data-flow handles, another merge strategy. The partitioner tests check it against the
  // cluster engine.
  bool one_dynamic_frame() {
    if (stable_ || known_first_ || no_shortcut_) return false;
    static constexpr std::array<std::string_view, 3> kRefs = {"Variable", "VariableV2", "RefData"};
    std::vector<Node*> unknown, inputs;
    std::vector<Kind> kinds(graph_.id_bound(), Kind::kKnown);
    for (Node* n : graph_.nodes()) {
      if (one_of(n->type(), kStackOps) || one_of(n->type(), kRefs) ||
          n->attrs().has(sdk::attr::kControlFlowGroup))
        return false;
      const Kind k = kinds[static_cast<size_t>(n->id())] = node_kind(n);
      if (k == Kind::kKnown || k == Kind::kStage) return false;
      if (k == Kind::kInputNode) inputs.push_back(n);
      if (k == Kind::kUnknown) unknown.push_back(n);
    }
    auto dynamic = [&](const Node* n) { return kinds[static_cast<size_t>(n->id())] == Kind::kUnknown; };
    sdk::UnionFind components(graph_.id_bound());
    size_t count = unknown.size();
    for (Node* n : unknown) {
      auto join = [&](const Node* p) {
        if (dynamic(p) && components.unite(static_cast<uint32_t>(n->id()), static_cast<uint32_t>(p->id())))
          --count;
      };
      for (const sdk::OutPort& p : n->inputs()) {
        if (p.node) join(p.node);
      }
      for (const Node* c : n->control_inputs()) join(c);
    }
    if (count != 1) return false;
    bool inputs_first = inputs.empty();
    for (const Node* c : inputs) {
      for (size_t o = 0; o < c->num_outputs(); ++o) {
        for (const sdk::InPort& use : c->consumers(o)) inputs_first = inputs_first || dynamic(use.node);
      }
      for (const Node* r : c->control_outputs()) inputs_first = inputs_first || dynamic(r);
    }
    if (!inputs_first) return false;  // their order would need the cluster engine
    if (!inputs.empty()) planned_.push_back({Kind::kInputNode, std::move(inputs)});
    planned_.push_back({Kind::kUnknown, std::move(unknown)});
    return true;
  }

  // The frames the cluster engine found, in its order.
  void plan_from_clusters() {
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      const Kind k = kind(c);
      if (k == Kind::kKnown || k == Kind::kUnknown || k == Kind::kInputNode)
        planned_.push_back({k, clusters_->members(c)});
    }
  }

  Kind kind(ClusterGraph::Id c) const { return kind_[c]; }

  void set_merged(ClusterGraph::Id survivor, Kind k) { kind_[survivor] = k; }

  bool mergeable(ClusterGraph::Id c) const {
    const Kind k = kind(c);
    return k == Kind::kKnown || k == Kind::kUnknown || k == Kind::kInputNode;
  }

  void merge_control_flow_groups() {
    std::map<int64_t, std::vector<Node*>> groups;
    for (Node* n : graph_.nodes()) {
      if (const AttrValue* g = n->attrs().get(sdk::attr::kControlFlowGroup); g && g->as_int())
        groups[*g->as_int()].push_back(n);
    }
    for (auto& [group, members] : groups) {
      for (size_t i = 1; i < members.size(); ++i) {
        const ClusterGraph::Id a = clusters_->cluster_of(members[0]), b = clusters_->cluster_of(members[i]);
        if (a == b) continue;
        const bool unknown = any_unknown_on_paths(a, b);
        const ClusterGraph::Id m = clusters_->merge_all_paths(a, b);
        set_merged(m, unknown ? Kind::kUnknown : Kind::kKnown);
      }
    }
  }

  // Whether any cluster on the paths between a and b (both included) is UNKNOWN; for typing the merged
  // cluster.
  bool any_unknown_on_paths(ClusterGraph::Id a, ClusterGraph::Id b) {
    std::vector<ClusterGraph::Id> live = clusters_->topological_order();
    bool unknown = kind(a) == Kind::kUnknown || kind(b) == Kind::kUnknown;
    if (clusters_->rank(a) > clusters_->rank(b)) std::swap(a, b);
    for (ClusterGraph::Id c : live) {
      if (kind(c) == Kind::kUnknown && clusters_->reachable(a, c) && clusters_->reachable(c, b))
        unknown = true;
    }
    return unknown;
  }

  // A TryMerge pass: every cluster C passing `visit` in rank order absorbs each input I passing `input` whose
  // edge is the only path between them.
  // A ref-variable cluster: one Variable/VariableV2/RefData node with `ref_var_src_var_name`, fed by one
  // cluster. GE merges it into that input (its producer), whatever the kinds (reference 3.4).
  bool merge_ref_variable(ClusterGraph::Id c) {
    if (clusters_->size(c) != 1) return false;
    const Node* n = clusters_->first_member(c);
    if ((n->type() != sdk::op::kVariable && n->type() != sdk::op::kVariableV2 &&
         n->type() != sdk::op::kRefData) ||
        n->attrs().get_string("ref_var_src_var_name").empty()) {
      return false;
    }
    const std::vector<ClusterGraph::Id> inputs = clusters_->predecessors(c);
    if (inputs.size() != 1 || !mergeable(inputs[0])) return false;
    const Kind merged =
        kind(inputs[0]) == Kind::kUnknown || kind(c) == Kind::kUnknown ? Kind::kUnknown : kind(inputs[0]);
    const ClusterGraph::Id m =
        clusters_->try_merge(inputs[0], c);  // a single input: the edge is the only path
    if (m == ClusterGraph::kNone) return false;
    set_merged(m, merged);
    return true;
  }

  template <class VisitFilter, class InputFilter>
  void try_merge_pass(VisitFilter visit, InputFilter input) {
    std::vector<ClusterGraph::Id> inputs;  // one buffer for every cluster's inputs
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (!clusters_->is_live(c)) continue;
      if (merge_ref_variable(c)) continue;
      if (!visit(kind(c))) continue;
      ClusterGraph::Id cur = c;
      clusters_->predecessors(cur, &inputs);
      for (ClusterGraph::Id i : inputs) {
        if (!clusters_->is_live(i) || !input(kind(i))) continue;
        const Kind merged =
            (kind(cur) == Kind::kUnknown || kind(i) == Kind::kUnknown) ? Kind::kUnknown : kind(cur);
        const ClusterGraph::Id m = clusters_->try_merge(cur, i);
        if (m == ClusterGraph::kNone) {
          ++refused_;
          const Node* a = clusters_->first_member(i);
          const Node* b = clusters_->first_member(cur);
          decide(sdk::ReasonCode::kCycle, {a, b},
                 "not merged: another path joins the cluster of '" + a->name() + "' to that of '" +
                     b->name() + "'");
          continue;
        }
        set_merged(m, merged);
        cur = m;
      }
    }
  }

  void merge_input_nodes() {
    ClusterGraph::Id first = ClusterGraph::kNone;
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (kind(c) != Kind::kInputNode) continue;
      if (first == ClusterGraph::kNone) {
        first = c;
        continue;
      }
      const ClusterGraph::Id m = clusters_->try_merge(first, c);  // input-less consts never reach each other
      if (m != ClusterGraph::kNone) {
        set_merged(m, Kind::kInputNode);
        first = m;
      }
    }
  }

  void demote() {
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (kind(c) != Kind::kKnown || static_cast<int64_t>(clusters_->size(c)) >= limit_) continue;
      set_merged(c, Kind::kUnknown);
      const std::vector<Node*> nodes = clusters_->members(c);
      decide(sdk::ReasonCode::kSizeBelowLimit, std::vector<const Node*>(nodes.begin(), nodes.end()),
             "static cluster of " + std::to_string(clusters_->size(c)) +
                 " nodes < ge.exec.static_model_ops_lower_limit " + std::to_string(limit_));
    }
  }

  void normal_merge() {
    // Path absorption: an unknown cluster absorbs every cluster on a path from an adjacent unknown input.
    std::vector<ClusterGraph::Id> inputs;
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (!clusters_->is_live(c) || kind(c) != Kind::kUnknown) continue;
      ClusterGraph::Id cur = c;
      clusters_->predecessors(cur, &inputs);
      for (ClusterGraph::Id i : inputs) {
        if (!clusters_->is_live(i) || kind(i) != Kind::kUnknown) continue;
        const ClusterGraph::Id m = clusters_->merge_all_paths(i, cur);
        set_merged(m, Kind::kUnknown);
        cur = m;
      }
    }
    try_merge_pass([](Kind k) { return k == Kind::kKnown; }, [](Kind k) { return k == Kind::kKnown; });
    merge_input_nodes();
    demote();
    try_merge_pass([](Kind k) { return k == Kind::kUnknown; }, [](Kind k) { return k == Kind::kUnknown; });
  }

  // Known-first (GE's ffts+ strategy): static clusters grow first, then small ones are demoted and the
  // dynamic ones merge; there is no path absorption, so a static run between two dynamic clusters stays
  // static when it is large enough.
  void known_first_merge() {
    try_merge_pass([](Kind k) { return k == Kind::kKnown; }, [](Kind k) { return k == Kind::kKnown; });
    demote();
    merge_input_nodes();
    try_merge_pass([](Kind k) { return k == Kind::kUnknown; }, [](Kind k) { return k == Kind::kUnknown; });
  }

  // Stable mode (ge.topoSortingMode = 3): runs of one kind in node order merge; a short static run between
  // dynamic ones goes dynamic and joins both neighbours. Unlike GE, every merge goes through the cycle check
  // (R9), and a lone static cluster at the end of a dynamic run is demoted too (R13); runs count nodes (R14).
  void stable_merge() {
    std::vector<ClusterGraph::Id> runs;  // representative of each run, in order
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (kind(c) != Kind::kKnown && kind(c) != Kind::kUnknown) continue;
      if (!runs.empty() && kind(runs.back()) == kind(c)) {
        const ClusterGraph::Id m = clusters_->try_merge(runs.back(), c);
        if (m != ClusterGraph::kNone) {
          set_merged(m, kind(c));
          runs.back() = m;
          continue;
        }
        ++refused_;
      }
      runs.push_back(c);
    }
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (clusters_->is_live(c)) merge_ref_variable(c);
    }
    // Demote short static runs and glue them to their dynamic neighbours.
    for (ClusterGraph::Id r : runs) {
      if (clusters_->is_live(r) && kind(r) == Kind::kKnown &&
          static_cast<int64_t>(clusters_->size(r)) < limit_) {
        set_merged(r, Kind::kUnknown);
        std::vector<Node*> m = clusters_->members(r);
        decide(sdk::ReasonCode::kSizeBelowLimit, std::vector<const Node*>(m.begin(), m.end()),
               "static run of " + std::to_string(m.size()) +
                   " nodes < ge.exec.static_model_ops_lower_limit " + std::to_string(limit_));
      }
    }
    ClusterGraph::Id prev = ClusterGraph::kNone;
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (kind(c) != Kind::kUnknown && kind(c) != Kind::kKnown) continue;
      if (prev != ClusterGraph::kNone && clusters_->is_live(prev) && kind(prev) == Kind::kUnknown &&
          kind(c) == Kind::kUnknown) {
        const ClusterGraph::Id m = clusters_->try_merge(prev, c);
        if (m != ClusterGraph::kNone) {
          set_merged(m, Kind::kUnknown);
          prev = m;
          continue;
        }
        ++refused_;
      }
      prev = c;
    }
    merge_input_nodes();
  }

  Status build() {
    std::vector<sdk::FrameSpec> specs;
    std::vector<bool> unknown_frame;
    int counter = 0;
    for (Planned& p : planned_) {
      const Kind k = p.kind;
      const bool unknown = k == Kind::kUnknown;
      sdk::FrameSpec s;
      s.members = std::move(p.members);
      const std::string suffix = k == Kind::kInputNode ? "input" : unknown ? "unknow" : "know";
      s.subgraph_name =
          tree_.unique_subgraph_name(graph_.name() + "_sub_" + std::to_string(counter) + "_" + suffix);
      s.call_name = graph_.unique_node_name(s.subgraph_name + "_PartitionedCall_" + std::to_string(counter));
      ++counter;
      s.call_attrs.set(sdk::attr::kIsUnknownShape, AttrValue::Bool(unknown));
      s.subgraph_attrs.set(sdk::attr::kIsUnknownShape, AttrValue::Bool(unknown));
      if (unknown) s.subgraph_attrs.set(sdk::attr::kMemoryDiscontiguousAllocation, AttrValue::Bool(true));
      specs.push_back(std::move(s));
      unknown_frame.push_back(unknown);
    }
    std::vector<sdk::Frame> frames;
    GS_RETURN_IF_ERROR(sdk::build_frames(graph_, specs, {}, &frames));
    for (size_t i = 0; i < frames.size(); ++i) {
      framed_.insert(frames[i].subgraph);
      for (Node* n : frames[i].subgraph->nodes()) {
        if (n->type() == sdk::op::kData) continue;
        // Room for exactly these two, the last the pipeline adds, where doubling a full list would leave
        // slack: a dynamic node's five entries took eight slots (448 bytes), now five (280).
        const size_t size = n->attrs().size(), room = n->attrs().entries().capacity();
        if (size + 2 > room && size + 2 < 2 * room) n->attrs().reserve(size + 2);
        n->attrs().set(keys_.unknown, AttrValue::Bool(unknown_frame[i]));
        if (n->type() != sdk::op::kNetOutput)
          n->attrs().set(keys_.owner_unknown, AttrValue::Bool(unknown_frame[i]));
      }
    }
    ctx_.log(sdk::LogLevel::kInfo, std::to_string(frames.size()) + " subgraphs, " + std::to_string(refused_) +
                                       " merges refused for a second path");
    return Status::ok();
  }

  // Subgraphs of function nodes (If branches, Loop bodies, nested calls): unknown when a direct node is, else
  // a PartitionedCall's subgraph takes its parent's status.
  void mark_subgraphs() {
    std::vector<Graph*> order = with_descendants();
    order.erase(order.begin());  // the graph itself is marked by the decision
    auto depth = [](const Graph* g) {
      int d = 0;
      for (; !g->is_root(); g = g->parent_graph()) ++d;
      return d;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](const Graph* a, const Graph* b) { return depth(a) < depth(b); });
    for (Graph* g : order) {
      if (framed_.count(g) || g->attrs().has(sdk::attr::kIsUnknownShape)) continue;
      bool unknown = subgraph_has_unknown(*g);
      if (!unknown) {
        for (const Node* n : g->nodes()) {
          unknown = unknown || n->attrs().get_string(sdk::attr::kOpEngineName) == sdk::engine::kHostCpu ||
                    n->attrs().get_bool(sdk::attr::kForceUnknownShape, false);
        }
      }
      const Node* parent = g->parent_node();
      if (!unknown && parent && parent->type() == sdk::op::kPartitionedCall) {
        unknown = parent->owner()->attrs().get_bool(sdk::attr::kIsUnknownShape, false) ||
                  parent->attrs().get_bool(sdk::attr::kIsUnknownShape, false);
      }
      g->attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(unknown));
      for (Node* n : g->nodes()) n->attrs().set(sdk::attr::kOwnerGraphIsUnknown, AttrValue::Bool(unknown));
    }
  }

  // True (and the handle's ops forced dynamic) when the Stack ops of some data-flow handle sit in clusters of
  // different kinds.
  bool split_handles() {
    std::map<int64_t, std::vector<Node*>> handles;
    for (Node* n : graph_.nodes()) {
      if (!one_of(n->type(), kStackOps)) continue;
      if (const AttrValue* h = n->attrs().get("_data_flow_handle"); h && h->as_int())
        handles[*h->as_int()].push_back(n);
    }
    bool split = false;
    for (auto& [handle, ops] : handles) {
      if (ops.size() < 2) continue;
      std::set<bool> sides;
      for (Node* n : ops) sides.insert(kind(clusters_->cluster_of(n)) == Kind::kUnknown);
      if (sides.size() < 2) continue;
      split = true;
      for (Node* n : ops) n->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
      decide(sdk::ReasonCode::kStackRepartition, std::vector<const Node*>(ops.begin(), ops.end()),
             "data-flow handle " + std::to_string(handle) + " was split across static and dynamic clusters");
    }
    return split;
  }

  // GE 3.6: inside every subgraph of the tree (not the root's own nodes), a Const with in-nodes hands its
  // in-control edges on to its consumers.
  void transfer_const_control_edges() {
    for (Graph* g : tree_.subgraphs()) {
      for (Node* c : g->node_list()) {
        if (c->type() != sdk::op::kConst || c->control_inputs().empty()) continue;
        std::vector<Node*> consumers;
        for (size_t o = 0; o < c->num_outputs(); ++o) {
          for (const sdk::InPort& p : c->consumers(o)) consumers.push_back(p.node);
        }
        for (Node* x : std::vector<Node*>(c->control_inputs())) {
          (void)g->remove_control_edge(x, c);
          for (Node* consumer : consumers) (void)g->add_control_edge(x, consumer);
        }
      }
    }
  }

  Graph& graph_;  // the independent graph being split
  Graph& tree_;   // its root, which owns every subgraph
  sdk::PassContext& ctx_;
  std::vector<sdk::EngineRef> engines_;
  mutable std::unordered_map<const std::string*, std::vector<const sdk::OpSupportRow*>> rows_;  // row_of's
  struct LastRow {
    const std::string* type = nullptr;  // nullptr: none yet
    std::string engine;
    const sdk::OpSupportRow* row = nullptr;
  };
  mutable LastRow last_;
  const FlagKeys keys_;
  int64_t limit_ = 4;
  bool stable_ = false;
  bool known_first_ = false;
  NodeFlags unknown_;                    // nodes of graph_ classified dynamic
  std::unordered_set<Node*> no_tiling_;  // may hold nodes of nested graphs
  std::unordered_map<const Graph*, bool> subgraph_unknown_;
  std::unique_ptr<ClusterGraph> clusters_;
  std::vector<Kind> kind_;  // by cluster id
  struct Planned {
    Kind kind;
    std::vector<Node*> members;  // in node order
  };
  std::vector<Planned> planned_;  // the frames to build, in order
  bool no_shortcut_ = false;      // the cluster engine even for one_dynamic_frame()'s graphs (for tests)
  std::unordered_set<const Graph*> framed_;
  size_t refused_ = 0;
};

}  // namespace

Status DynamicShapePartitioner::partition(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  // Independent graphs (reference 3.1, step 4): multi-batch Case branches, then the root or, when the root is
  // pipeline-partitioned, each root PartitionedCall's subgraph.
  std::vector<Graph*> independent;
  if (root.attrs().get_bool(sdk::attr::kEnableDynamicBatch, false)) {
    std::vector<Graph*> graphs{&root};
    graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
    for (Graph* g : graphs) {
      for (Node* n : g->nodes()) {
        if (n->type() == sdk::op::kCase && n->attrs().get_bool(sdk::attr::kMbatchInsertedNode, false)) {
          for (Graph* branch : n->subgraphs()) independent.push_back(branch);
        }
      }
    }
  }
  if (root.attrs().get_bool(sdk::attr::kPipelinePartitioned, false)) {
    for (Node* n : root.nodes()) {
      if (n->type() == sdk::op::kPartitionedCall) {
        for (Graph* sub : n->subgraphs()) independent.push_back(sub);
      }
    }
  } else {
    independent.push_back(&root);
  }
  for (Graph* g : independent) {
    bool c = false;
    GS_RETURN_IF_ERROR(Partition(*g, ctx).run(&c));
    *changed = *changed || c;
  }
  return Status::ok();
}

}  // namespace graphsplit::plugins::dynamic_shape
