#include "std_passes.h"

#include <algorithm>
#include <vector>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::plugins::std_passes {

namespace {

// Marks every node from which a NetOutput can be reached, from the back of the graph's order: each node's
// readers come after it in a topological order (as imported or sorted) and are settled first, and they sit
// close in memory. False when the order is not topological (a reader comes first): mark_live_by_walk then.
// `any_output`: whether the graph has a NetOutput.
bool mark_live_in_order(const sdk::Graph& g, std::vector<char>* live, bool* any_output) {
  const std::vector<sdk::Node*> order = g.node_list();
  for (size_t k = order.size(); k-- > 0;) {
    const sdk::Node* n = order[k];
    bool reached = n->type() == sdk::op::kNetOutput, ordered = true;
    *any_output = *any_output || reached;
    const auto reader = [&](const sdk::Node* c) {
      ordered &= c->id() > n->id();
      reached |= (*live)[c->id()] != 0;
    };
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      for (const sdk::InPort& c : n->consumers(o)) reader(c.node);
    }
    if (n->any_control_edges()) {
      for (const sdk::Node* c : n->control_outputs()) reader(c);
    }
    if (!ordered) return false;
    (*live)[n->id()] = reached ? 1 : 0;
  }
  return true;
}

// The same by a walk back from the NetOutputs, for any order; false when there is none.
bool mark_live_by_walk(const sdk::Graph& g, std::vector<char>* live) {
  live->assign(g.id_bound(), 0);
  std::vector<const sdk::Node*> stack;
  for (const sdk::Node* n : g.nodes()) {
    if (n->type() == sdk::op::kNetOutput) {
      (*live)[n->id()] = 1;
      stack.push_back(n);
    }
  }
  if (stack.empty()) return false;
  while (!stack.empty()) {
    const sdk::Node* n = stack.back();
    stack.pop_back();
    auto visit = [&](const sdk::Node* p) {
      if (p && !(*live)[p->id()]) {
        (*live)[p->id()] = 1;
        stack.push_back(p);
      }
    };
    for (const sdk::OutPort& p : n->inputs()) visit(p.node);
    for (const sdk::Node* p : n->control_inputs()) visit(p);
  }
  return true;
}

// Marks every node from which the graph's NetOutput can be reached; returns false if the graph has no
// NetOutput (nothing is then known to be unused).
bool mark_live(const sdk::Graph& g, std::vector<char>* live) {
  live->assign(g.id_bound(), 0);
  bool any_output = false;
  if (mark_live_in_order(g, live, &any_output)) return any_output;
  return mark_live_by_walk(g, live);
}

}  // namespace

sdk::Status PruneUnused::run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  size_t removed = 0;
  std::vector<sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (sdk::Graph* g : graphs) {
    // Gone with a dead node's subgraphs: the address is compared, never followed (no graph is made here, so
    // none can take a freed one's address).
    if (g != &root && !root.owns_graph(g)) continue;
    std::vector<char> live;
    if (!mark_live(*g, &live)) continue;
    std::vector<sdk::Node*> dead;
    std::vector<sdk::Graph*> subgraphs;  // removed together, with everything nested in them
    for (sdk::Node* n : g->nodes()) {
      if (live[n->id()] || n->type() == sdk::op::kData) continue;
      for (sdk::Graph* sub : n->subgraphs()) subgraphs.push_back(sub);
      dead.push_back(n);
    }
    root.remove_subgraphs(subgraphs);
    g->remove_nodes(dead);  // at once: the dead readers of one hub would each search its consumer list
    removed += dead.size();
  }
  if (removed) {
    ctx.log(sdk::LogLevel::kInfo, "removed " + std::to_string(removed) + " unused nodes");
    *changed = true;
  }
  return sdk::Status::ok();
}

TopologicalSort::TopologicalSort(const sdk::PluginContext& ctx)
    : mode_(ctx.options().get_string("mode", "auto")) {}

sdk::Status TopologicalSort::run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) {
  sdk::TopoSortMode mode = sdk::kDefaultTopoSortMode;
  if (mode_ == "auto") {
    const std::string ge = ctx.ge_options().get_string(std::string(sdk::kTopoSortingModeOption));
    if (!ge.empty()) {
      auto parsed = sdk::parse_topo_sorting_mode(ge);
      if (!parsed)
        return sdk::Status::invalid_argument("ge.topoSortingMode '" + ge + "' is not 0, 1, 2 or 3");
      mode = *parsed;
    }
  } else if (mode_ == "bfs") {
    mode = sdk::TopoSortMode::kBFS;
  } else if (mode_ == "dfs") {
    mode = sdk::TopoSortMode::kDFS;
  } else if (mode_ == "rdfs") {
    mode = sdk::TopoSortMode::kRDFS;
  } else {
    mode = sdk::TopoSortMode::kStableRDFS;
  }
  *changed = false;
  std::vector<sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  // topological_sort, not topological_order and reorder: the SDK remembers the order a sort left, and a
  // partitioner's sort of the graph that no pass changed since is then skipped.
  for (sdk::Graph* g : graphs) {
    const std::vector<sdk::Node*> before = g->node_list();
    GS_RETURN_IF_ERROR(sdk::topological_sort(*g, mode));
    if (g->node_list() != before) *changed = true;
  }
  return sdk::Status::ok();
}

}  // namespace graphsplit::plugins::std_passes
