#include "graphsplit/sdk/ir/topo.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>

#include "topo_internal.h"

namespace graphsplit::sdk {
namespace {

template <class F>
void for_each_successor(const Node* n, F&& f) {
  for (size_t o = 0; o < n->num_outputs(); ++o) {
    for (const InPort& c : n->consumers(o)) f(c.node);
  }
  if (!n->any_control_edges()) return;
  for (Node* c : n->control_outputs()) f(c);
}

template <class F>
void for_each_predecessor(const Node* n, F&& f) {
  for (const OutPort& p : n->inputs()) {
    if (p.node) f(p.node);
  }
  if (!n->any_control_edges()) return;
  for (Node* p : n->control_inputs()) f(p);
}

// Every edge runs from a lower id to a higher one, so the current order is already topological (and the graph
// acyclic). One pass over each node's own input list: imported graphs and graphs sorted before arrive this
// way, and a full sort of a million nodes costs a tenth of a second of cache misses.
bool order_is_topological(const Graph& g) {
  for (const Node* n : g.nodes()) {
    bool ok = true;
    for_each_predecessor(n, [&](const Node* p) { ok &= p->id() < n->id(); });
    if (!ok) return false;
  }
  return true;
}

// What Kahn's algorithm needs, from one pass over the graph in its order: every node's in-degree, the sources
// (data-like ones first, by their `index` attribute, the user's input order; then the others in node order),
// and every node's successors by id, in for_each_successor's order. The sort then runs on these arrays alone:
// reading each successor's id as it went chased a pointer per edge across the whole graph, two thirds of a
// million-node sort.
struct KahnInput {
  std::vector<uint32_t> deg;
  std::vector<Node*> by_id;          // the live nodes by id
  std::vector<uint32_t> succ_begin;  // successors of id k: succ[succ_begin[k], succ_begin[k + 1])
  std::vector<uint32_t> succ;
  std::vector<uint32_t> seeds;
  std::vector<Node*> data;  // the data-like sources, in seed order (seeds[0, data.size()))
};

KahnInput kahn_input(const Graph& g) {
  KahnInput in;
  const size_t bound = g.id_bound();
  in.deg.assign(bound, 0);
  in.by_id.assign(bound, nullptr);
  in.succ_begin.assign(bound + 1, 0);
  in.succ.reserve(g.num_nodes() * 2);
  std::vector<Node*>& data = in.data;
  std::vector<Node*> other;
  size_t next_id = 0;  // ids of removed nodes get empty successor ranges
  for (Node* n : g.nodes()) {
    const auto id = static_cast<size_t>(n->id());
    for (; next_id <= id; ++next_id) in.succ_begin[next_id] = static_cast<uint32_t>(in.succ.size());
    in.by_id[id] = n;
    uint32_t d = 0;
    for_each_predecessor(n, [&](Node*) { ++d; });
    in.deg[id] = d;
    if (d == 0) (is_data_like(n->type()) ? data : other).push_back(n);
    for_each_successor(n, [&](Node* s) { in.succ.push_back(static_cast<uint32_t>(s->id())); });
  }
  for (; next_id <= bound; ++next_id) in.succ_begin[next_id] = static_cast<uint32_t>(in.succ.size());
  std::stable_sort(data.begin(), data.end(), [](const Node* a, const Node* b) {
    return a->attrs().get_int(attr::kIndex, std::numeric_limits<int64_t>::max()) <
           b->attrs().get_int(attr::kIndex, std::numeric_limits<int64_t>::max());
  });
  for (const std::vector<Node*>* list : {&data, &other}) {
    for (const Node* n : *list) in.seeds.push_back(static_cast<uint32_t>(n->id()));
  }
  return in;
}

Status cycle_error(const Graph& g, const std::vector<uint32_t>& remaining_deg) {
  // Every node left with a positive in-degree has a predecessor that is also left; walking those backwards
  // must revisit a node, and the walk from that node on is a cycle.
  const Node* start = nullptr;
  for (const Node* n : g.nodes()) {
    if (remaining_deg[n->id()] > 0) {
      start = n;
      break;
    }
  }
  std::vector<int64_t> seen_at(g.id_bound(), -1);
  std::vector<const Node*> walk;
  const Node* cur = start;
  while (cur && seen_at[cur->id()] < 0) {
    seen_at[cur->id()] = static_cast<int64_t>(walk.size());
    walk.push_back(cur);
    const Node* next = nullptr;
    for_each_predecessor(cur, [&](Node* p) {
      if (!next && remaining_deg[p->id()] > 0) next = p;
    });
    cur = next;
  }
  std::string path;
  if (cur) {
    std::vector<const Node*> cycle(walk.begin() + seen_at[cur->id()], walk.end());
    std::reverse(cycle.begin(), cycle.end());
    // Start the path at the earliest node so that the message does not depend on where the walk began.
    std::rotate(cycle.begin(),
                std::min_element(cycle.begin(), cycle.end(),
                                 [](const Node* a, const Node* b) { return a->id() < b->id(); }),
                cycle.end());
    const size_t shown = std::min<size_t>(cycle.size(), 8);
    for (size_t i = 0; i < shown; ++i) path += "'" + cycle[i]->name() + "' -> ";
    if (shown < cycle.size()) path += "... -> ";
    path += "'" + cycle[0]->name() + "'";
  }
  return Status::invalid_argument("graph '" + g.name() + "' has a cycle through node '" +
                                  (start ? start->name() : std::string("?")) + "'" +
                                  (path.empty() ? "" : ": " + path));
}

// Kahn's algorithm; `lifo` selects DFS (stack) over BFS (queue). `data`, if given, receives the data-like
// sources in the order the sort puts them.
Status kahn(const Graph& g, bool lifo, std::vector<Node*>* order, std::vector<Node*>* data = nullptr) {
  KahnInput in = kahn_input(g);
  if (data) data->swap(in.data);
  std::vector<uint32_t>& deg = in.deg;
  order->clear();
  order->reserve(g.num_nodes());
  if (!lifo) {
    std::deque<uint32_t> queue(in.seeds.begin(), in.seeds.end());
    std::vector<uint32_t> ready;
    while (!queue.empty()) {
      const uint32_t n = queue.front();
      queue.pop_front();
      order->push_back(in.by_id[n]);
      ready.clear();
      for (uint32_t e = in.succ_begin[n]; e < in.succ_begin[n + 1]; ++e) {
        if (--deg[in.succ[e]] == 0) ready.push_back(in.succ[e]);
      }
      std::sort(ready.begin(), ready.end(),
                [&](uint32_t a, uint32_t b) { return in.by_id[a]->name() < in.by_id[b]->name(); });
      queue.insert(queue.end(), ready.begin(), ready.end());
    }
  } else {
    // The stack is sized for every node at once (each is pushed once), so a successor is written to the top
    // and the top moves by whether its last input came in: no branch on the in-degree, which was the sort's
    // most mispredicted one.
    const std::unique_ptr<uint32_t[]> stack(new uint32_t[g.num_nodes() + 1]);  // not zeroed: written first
    size_t top = 0;
    for (auto it = in.seeds.rbegin(); it != in.seeds.rend(); ++it) stack[top++] = *it;
    while (top > 0) {
      const uint32_t n = stack[--top];
      order->push_back(in.by_id[n]);
      for (uint32_t e = in.succ_begin[n]; e < in.succ_begin[n + 1]; ++e) {
        const uint32_t s = in.succ[e];
        stack[top] = s;
        top += --deg[s] == 0;
      }
    }
  }
  if (order->size() != g.num_nodes()) return cycle_error(g, deg);
  return Status::ok();
}

// Post-order reverse DFS from `root` over unvisited predecessors taken in ascending id order. The frames'
// predecessor lists share one stack-like buffer (a frame's list is the buffer's tail while it is on top), so
// a walk over a million nodes allocates nothing per node.
void reverse_dfs(Node* root, std::vector<char>& visited, std::vector<Node*>* order) {
  struct Frame {
    Node* node;
    size_t begin, end, next;  // its predecessors: preds[begin, end)
  };
  if (visited[root->id()]) return;
  std::vector<Node*> preds;
  std::vector<Frame> stack;
  auto push = [&](Node* n) {
    visited[n->id()] = 1;
    const size_t begin = preds.size();
    for_each_predecessor(n, [&](Node* x) { preds.push_back(x); });
    std::stable_sort(preds.begin() + static_cast<std::ptrdiff_t>(begin), preds.end(),
                     [](const Node* a, const Node* b) { return a->id() < b->id(); });
    stack.push_back({n, begin, preds.size(), begin});
  };
  push(root);
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next < f.end) {
      Node* p = preds[f.next++];
      if (!visited[p->id()]) push(p);  // may reallocate `stack`: `f` is not used after this
      continue;
    }
    order->push_back(f.node);
    preds.resize(f.begin);
    stack.pop_back();
  }
}

// Moves every node to just before its first consumer. Built back to front: each node is inserted before the
// consumer that currently comes first, which is also its first consumer in the final order because insertions
// never change the relative order of nodes already placed. Positions are order-maintenance labels.
std::vector<Node*> delay_to_first_consumer(const Graph& g, const std::vector<Node*>& order) {
  const size_t n = order.size();
  const size_t bound = g.id_bound();
  constexpr int64_t kNone = -1;
  std::vector<int64_t> prev(bound, kNone), next(bound, kNone);
  std::vector<int64_t> label(bound, 0);
  std::vector<Node*> by_id(bound, nullptr);
  for (Node* x : order) by_id[x->id()] = x;
  int64_t head = kNone;
  constexpr int64_t kGap = int64_t{1} << 32;

  auto relabel = [&] {
    int64_t l = 0;
    for (int64_t c = head; c != kNone; c = next[c]) {
      label[c] = l;
      l += int64_t{1} << 20;
    }
  };
  auto link_before = [&](int64_t x, int64_t c) {  // c == kNone means "at the front"
    if (c == kNone || c == head) {
      next[x] = head;
      prev[x] = kNone;
      if (head != kNone) {
        prev[head] = x;
        label[x] = label[head] - kGap;
      } else {
        label[x] = 0;
      }
      head = x;
      return;
    }
    int64_t p = prev[c];
    prev[x] = p;
    next[x] = c;
    next[p] = x;
    prev[c] = x;
    if (label[c] - label[p] < 2) relabel();
    label[x] = label[p] + (label[c] - label[p]) / 2;
  };

  for (size_t i = n; i-- > 0;) {
    Node* x = order[i];
    int64_t first = kNone;
    for_each_successor(x, [&](Node* s) {
      if (first == kNone || label[s->id()] < label[first]) first = s->id();
    });
    link_before(x->id(), first);
  }
  std::vector<Node*> out;
  out.reserve(n);
  for (int64_t c = head; c != kNone; c = next[c]) out.push_back(by_id[c]);
  return out;
}

// The stack variant: same answer as BFS, without sorting ready successors by name.
Status acyclic_by_kahn(const Graph& g) {
  std::vector<Node*> scratch;
  return kahn(g, true, &scratch);
}

}  // namespace

// The order the last BFS or DFS sort left (Graph::sorted_mode_). Either sort of a graph it sorted leaves it
// as it is: the sort emits its seeds in seed order (each seed waits under everything the ones before it
// release), so the sources come out as the seeds were ordered, data ones by `index` (ties in node order) and
// then the others in node order; seeded alike, with the same edges in the same consumer order, it emits the
// same sequence. The seeds are ordered alike again unless a data source's `index` changed, which no graph
// edit reports; so the memo holds only while those indexes still read in order.
struct SortMemo {
  static bool holds(const Graph& g, TopoSortMode mode) {
    if (g.sorted_mode_ != static_cast<int>(mode)) return false;
    int64_t last = std::numeric_limits<int64_t>::min();
    for (const Node* n : g.sorted_data_) {
      const int64_t index = n->attrs().get_int(attr::kIndex, std::numeric_limits<int64_t>::max());
      if (index < last) return false;
      last = index;
    }
    return true;
  }
  static void record(Graph& g, TopoSortMode mode, std::vector<Node*> data) {
    g.sorted_mode_ = static_cast<int>(mode);
    g.sorted_data_ = std::move(data);
  }
};

Status check_acyclic(const Graph& g) {
  return order_is_topological(g) ? Status::ok() : acyclic_by_kahn(g);
}

std::optional<TopoSortMode> parse_topo_sorting_mode(std::string_view text) {
  if (text == "0") return TopoSortMode::kBFS;
  if (text == "1") return TopoSortMode::kDFS;
  if (text == "2") return TopoSortMode::kRDFS;
  if (text == "3") return TopoSortMode::kStableRDFS;
  return std::nullopt;
}

std::string_view to_string(TopoSortMode mode) {
  switch (mode) {
    case TopoSortMode::kBFS:
      return "BFS";
    case TopoSortMode::kDFS:
      return "DFS";
    case TopoSortMode::kRDFS:
      return "RDFS";
    case TopoSortMode::kStableRDFS:
      return "StableRDFS";
  }
  return "invalid";
}

Status topological_order(const Graph& graph, TopoSortMode mode, std::vector<Node*>* order) {
  if (SortMemo::holds(graph, mode)) {
    *order = graph.node_list();
    return Status::ok();
  }
  switch (mode) {
    case TopoSortMode::kBFS:
      return kahn(graph, false, order);
    case TopoSortMode::kDFS:
      return kahn(graph, true, order);
    case TopoSortMode::kRDFS: {
      GS_RETURN_IF_ERROR(check_acyclic(graph));
      std::vector<char> visited(graph.id_bound(), 0);
      std::vector<Node*> rdfs;
      rdfs.reserve(graph.num_nodes());
      for (Node* n : graph.nodes()) {
        if (!n->has_consumers()) reverse_dfs(n, visited, &rdfs);
      }
      *order = delay_to_first_consumer(graph, rdfs);
      return Status::ok();
    }
    case TopoSortMode::kStableRDFS: {
      // A valid order is its own stable order: each node's reverse DFS finds its inputs already emitted.
      if (order_is_topological(graph)) {
        *order = graph.node_list();
        return Status::ok();
      }
      GS_RETURN_IF_ERROR(acyclic_by_kahn(graph));
      std::vector<char> visited(graph.id_bound(), 0);
      order->clear();
      order->reserve(graph.num_nodes());
      for (Node* n : graph.nodes()) reverse_dfs(n, visited, order);
      return Status::ok();
    }
  }
  return Status::invalid_argument("unknown topological sort mode");
}

Status topological_sort(Graph& graph, TopoSortMode mode) {
  if (SortMemo::holds(graph, mode)) return Status::ok();
  std::vector<Node*> order;
  if (mode != TopoSortMode::kBFS && mode != TopoSortMode::kDFS) {
    GS_RETURN_IF_ERROR(topological_order(graph, mode, &order));
    return graph.reorder(order);
  }
  std::vector<Node*> data;
  GS_RETURN_IF_ERROR(kahn(graph, mode == TopoSortMode::kDFS, &order, &data));
  GS_RETURN_IF_ERROR(graph.reorder(order));
  SortMemo::record(graph, mode, std::move(data));
  return Status::ok();
}

bool is_topologically_sorted(const Graph& graph, TopoSortMode mode) {
  return SortMemo::holds(graph, mode);
}

Status topological_sort_all(Graph& root, TopoSortMode mode) {
  GS_RETURN_IF_ERROR(topological_sort(root, mode));
  for (Graph* g : root.subgraphs()) GS_RETURN_IF_ERROR(topological_sort(*g, mode));
  return Status::ok();
}

}  // namespace graphsplit::sdk
