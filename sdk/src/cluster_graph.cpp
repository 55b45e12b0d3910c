#include "graphsplit/sdk/cluster_graph.h"

#include <algorithm>
#include <numeric>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::sdk {

using Id = ClusterGraph::Id;

struct ClusterGraph::Impl {
  std::vector<Node*> nodes;          // position -> node
  std::vector<uint32_t> position;    // node id -> position
  mutable std::vector<Id> parent;    // union-find over positions
  std::vector<int64_t> rank;         // per cluster; a permutation consistent with every edge
  std::vector<std::vector<Id>> out;  // sorted
  std::vector<std::vector<Id>> in;   // sorted
  // Members as intrusive lists (next position, per-cluster head/tail/size): merging concatenates in O(1) and
  // allocates nothing.
  std::vector<uint32_t> next_member, head, tail, count;
  std::vector<char> live;
  size_t live_count = 0;
  // DFS scratch: a cluster is visited in the current search when mark == epoch.
  mutable std::vector<uint32_t> mark;
  mutable uint32_t epoch = 0;
  mutable std::vector<uint32_t> mark2;  // the backward half of a bidirectional search
  mutable uint32_t epoch2 = 0;
  mutable std::vector<Id> stack2;
  std::vector<Id> deltaf, deltab;
  mutable std::vector<Id> stack;

  static bool contains(const std::vector<Id>& v, Id x) { return std::binary_search(v.begin(), v.end(), x); }
  static void insert_sorted(std::vector<Id>& v, Id x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it == v.end() || *it != x) v.insert(it, x);
  }
  static void erase_sorted(std::vector<Id>& v, Id x) {
    auto it = std::lower_bound(v.begin(), v.end(), x);
    if (it != v.end() && *it == x) v.erase(it);
  }

  Id find(Id x) const {
    Id root = x;
    while (parent[root] != root) root = parent[root];
    while (parent[x] != root) {
      Id next = parent[x];
      parent[x] = root;
      x = next;
    }
    return root;
  }

  uint32_t new_epoch() const {
    if (++epoch == 0) {  // wrapped: reset the marks once
      std::fill(mark.begin(), mark.end(), 0);
      epoch = 1;
    }
    return epoch;
  }
  uint32_t new_epoch2() const {
    if (++epoch2 == 0) {
      std::fill(mark2.begin(), mark2.end(), 0);
      epoch2 = 1;
    }
    return epoch2;
  }

  // Bidirectional search inside the rank window (rank[from], rank[to]): a forward search from `from` and a
  // backward search from `to` grow one node at a time, so the work is bounded by the smaller side. Returns
  // whether they meet; `forward_finished` says which side ran out first when they do not... or when asked to
  // run to completion (complete = true), which side completed, with its marks left in place.
  bool bidirectional(Id from, Id to, bool complete, bool* forward_finished) const {
    const int64_t lo = rank[from], hi = rank[to];
    const uint32_t ef = new_epoch(), eb = new_epoch2();
    stack.assign(1, from);
    stack2.assign(1, to);
    mark[from] = ef;
    mark2[to] = eb;
    bool met = false;
    while (true) {
      if (stack.empty()) {
        *forward_finished = true;
        return met;
      }
      {
        const Id n = stack.back();
        stack.pop_back();
        for (Id w : out[n]) {
          if (w == to || mark2[w] == eb) {
            met = true;
            if (!complete) return true;
          }
          if (w != to && mark[w] != ef && rank[w] < hi) {
            mark[w] = ef;
            stack.push_back(w);
          }
        }
      }
      if (stack2.empty()) {
        *forward_finished = false;
        return met;
      }
      {
        const Id n = stack2.back();
        stack2.pop_back();
        for (Id w : in[n]) {
          if (w == from || mark[w] == ef) {
            met = true;
            if (!complete) return true;
          }
          if (w != from && mark2[w] != eb && rank[w] > lo) {
            mark2[w] = eb;
            stack2.push_back(w);
          }
        }
      }
    }
  }

  // Every cluster on a path from `from` to `to`, both included, sorted; empty when there is no path.
  std::vector<Id> on_paths(Id from, Id to) const {
    if (from == to || rank[from] > rank[to]) return {};
    bool forward_finished = false;
    if (!bidirectional(from, to, true, &forward_finished)) return {};
    // The finished side holds every cluster that side can reach in the window; the path set is the part of it
    // that the other endpoint reaches too, found by a search restricted to those marks.
    std::vector<Id> result;
    if (forward_finished) {
      const uint32_t ef = epoch, eb = new_epoch2();
      stack2.assign(1, to);
      mark2[to] = eb;
      result.push_back(to);
      while (!stack2.empty()) {
        const Id n = stack2.back();
        stack2.pop_back();
        for (Id w : in[n]) {
          if (mark[w] == ef && mark2[w] != eb) {
            mark2[w] = eb;
            stack2.push_back(w);
            result.push_back(w);
          }
        }
      }
    } else {
      const uint32_t eb = epoch2, ef = new_epoch();
      stack.assign(1, from);
      mark[from] = ef;
      result.push_back(from);
      while (!stack.empty()) {
        const Id n = stack.back();
        stack.pop_back();
        for (Id w : out[n]) {
          if ((mark2[w] == eb || w == to) && mark[w] != ef) {
            mark[w] = ef;
            stack.push_back(w);
            result.push_back(w);
          }
        }
      }
    }
    std::sort(result.begin(), result.end());
    return result;
  }

  // Forward search from `start` over clusters ranked below `upper`; false if it reaches the cluster ranked
  // `upper` (that is, the new edge would close a cycle).
  bool forward(Id start, int64_t upper) {
    stack.assign(1, start);
    mark[start] = epoch;
    while (!stack.empty()) {
      const Id n = stack.back();
      stack.pop_back();
      deltaf.push_back(n);
      for (Id w : out[n]) {
        if (rank[w] == upper) return false;
        if (mark[w] != epoch && rank[w] < upper) {
          mark[w] = epoch;
          stack.push_back(w);
        }
      }
    }
    return true;
  }

  void backward(Id start, int64_t lower) {
    stack.assign(1, start);
    mark[start] = epoch;
    while (!stack.empty()) {
      const Id n = stack.back();
      stack.pop_back();
      deltab.push_back(n);
      for (Id w : in[n]) {
        if (mark[w] != epoch && rank[w] > lower) {
          mark[w] = epoch;
          stack.push_back(w);
        }
      }
    }
  }

  // Pearce-Kelly: the affected clusters keep their pool of ranks, reassigned so that everything that reaches
  // the new edge's source comes before everything its target reaches.
  void reorder() {
    auto by_rank = [&](Id a, Id b) { return rank[a] < rank[b]; };
    std::sort(deltab.begin(), deltab.end(), by_rank);
    std::sort(deltaf.begin(), deltaf.end(), by_rank);
    std::vector<int64_t> pool;
    pool.reserve(deltab.size() + deltaf.size());
    for (Id n : deltab) pool.push_back(rank[n]);
    for (Id n : deltaf) pool.push_back(rank[n]);
    std::sort(pool.begin(), pool.end());
    size_t i = 0;
    for (Id n : deltab) rank[n] = pool[i++];
    for (Id n : deltaf) rank[n] = pool[i++];
  }

  // Adds x -> y; false (and no change) if that would close a cycle.
  bool insert_edge(Id x, Id y) {
    if (x == y || contains(out[x], y)) return x != y;
    insert_sorted(out[x], y);
    insert_sorted(in[y], x);
    if (rank[x] < rank[y]) return true;
    deltaf.clear();
    deltab.clear();
    new_epoch();
    if (!forward(y, rank[x])) {
      erase_sorted(out[x], y);
      erase_sorted(in[y], x);
      return false;
    }
    backward(x, rank[y]);
    reorder();
    return true;
  }

  void remove_edge(Id x, Id y) {
    erase_sorted(out[x], y);
    erase_sorted(in[y], x);
  }

  bool reachable(Id from, Id to) const {
    if (from == to || rank[from] > rank[to]) return false;
    bool forward_finished = false;
    return bidirectional(from, to, false, &forward_finished);
  }

  // Folds every cluster of `set` (sorted) into one. The caller guarantees the set is convex (no path leaves
  // it and comes back), so re-inserting edges on the survivor can never close a cycle. The survivor is the
  // member with the most edges and keeps them in place; only the others' edges move, so an edge moves O(log
  // n) times in all.
  Id fold(const std::vector<Id>& set) {
    Id survivor = set.front();
    for (Id c : set) {
      const size_t deg = in[c].size() + out[c].size(), best = in[survivor].size() + out[survivor].size();
      if (deg > best || (deg == best && c < survivor)) survivor = c;
    }
    auto in_set = [&](Id c) { return std::binary_search(set.begin(), set.end(), c); };
    // Edges between members disappear.
    for (Id c : set) {
      for (auto it = out[c].begin(); it != out[c].end();) {
        if (in_set(*it)) {
          erase_sorted(in[*it], c);
          it = out[c].erase(it);
        } else {
          ++it;
        }
      }
    }
    std::vector<Id> preds, succs;
    for (Id c : set) {
      if (c == survivor) continue;
      for (Id p : in[c]) {
        erase_sorted(out[p], c);
        preds.push_back(p);
      }
      for (Id q : out[c]) {
        erase_sorted(in[q], c);
        succs.push_back(q);
      }
      in[c].clear();
      out[c].clear();
      in[c].shrink_to_fit();
      out[c].shrink_to_fit();
      parent[c] = survivor;
      live[c] = 0;
      --live_count;
      next_member[tail[survivor]] = head[c];
      tail[survivor] = tail[c];
      count[survivor] += count[c];
      count[c] = 0;
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    std::sort(succs.begin(), succs.end());
    succs.erase(std::unique(succs.begin(), succs.end()), succs.end());
    for (Id p : preds) (void)insert_edge(p, survivor);
    for (Id q : succs) (void)insert_edge(survivor, q);
    return survivor;
  }
};

ClusterGraph::ClusterGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClusterGraph::~ClusterGraph() = default;

Status ClusterGraph::build(const Graph& graph, std::unique_ptr<ClusterGraph>* out) {
  auto m = std::make_unique<Impl>();
  m->nodes = graph.node_list();
  const size_t n = m->nodes.size();
  m->position.assign(graph.id_bound(), UINT32_MAX);
  for (size_t i = 0; i < n; ++i) m->position[m->nodes[i]->id()] = static_cast<uint32_t>(i);
  m->parent.resize(n);
  std::iota(m->parent.begin(), m->parent.end(), 0);
  m->out.resize(n);
  m->in.resize(n);
  m->next_member.assign(n, UINT32_MAX);
  m->head.resize(n);
  m->tail.resize(n);
  m->count.assign(n, 1);
  m->live.assign(n, 1);
  m->live_count = n;
  m->mark.assign(n, 0);
  m->mark2.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    m->head[i] = m->tail[i] = static_cast<uint32_t>(i);
    const Node* node = m->nodes[i];
    auto link = [&](const Node* src) {
      const Id s = m->position[src->id()];
      m->out[s].push_back(static_cast<Id>(i));
      m->in[i].push_back(s);
    };
    for (const OutPort& p : node->inputs()) {
      if (p.node) link(p.node);
    }
    for (const Node* c : node->control_inputs()) link(c);
  }
  for (size_t i = 0; i < n; ++i) {
    for (auto* v : {&m->out[i], &m->in[i]}) {
      std::sort(v->begin(), v->end());
      v->erase(std::unique(v->begin(), v->end()), v->end());
    }
  }
  // Ranks: the node order when it is topological (the usual case: partitioners sort first), else a topological
  // order of the graph.
  bool ordered = true;
  for (size_t i = 0; i < n && ordered; ++i) {
    for (Id p : m->in[i]) ordered = ordered && p < i;
  }
  m->rank.resize(n);
  if (ordered) {
    for (size_t r = 0; r < n; ++r) m->rank[r] = static_cast<int64_t>(r);
  } else {
    std::vector<Node*> order;
    GS_RETURN_IF_ERROR(sdk::topological_order(graph, TopoSortMode::kStableRDFS, &order));
    for (size_t r = 0; r < n; ++r) m->rank[m->position[order[r]->id()]] = static_cast<int64_t>(r);
  }
  *out = std::unique_ptr<ClusterGraph>(new ClusterGraph(std::move(m)));
  return Status::ok();
}

size_t ClusterGraph::num_clusters() const {
  return impl_->live_count;
}
bool ClusterGraph::is_live(Id c) const {
  return c < impl_->live.size() && impl_->live[c];
}
ClusterGraph::Id ClusterGraph::cluster_of(const Node* node) const {
  return impl_->find(impl_->position.at(node->id()));
}
ClusterGraph::Id ClusterGraph::cluster_of_position(size_t p) const {
  return impl_->find(static_cast<Id>(p));
}
size_t ClusterGraph::size(Id c) const {
  return impl_->count[c];
}
int64_t ClusterGraph::rank(Id c) const {
  return impl_->rank[c];
}
bool ClusterGraph::has_edge(Id from, Id to) const {
  return Impl::contains(impl_->out[from], to);
}

std::vector<Node*> ClusterGraph::members(Id c) const {
  std::vector<uint32_t> p;
  p.reserve(impl_->count[c]);
  for (uint32_t i = impl_->head[c]; i != UINT32_MAX; i = impl_->next_member[i]) p.push_back(i);
  std::sort(p.begin(), p.end());
  std::vector<Node*> out;
  out.reserve(p.size());
  for (uint32_t i : p) out.push_back(impl_->nodes[i]);
  return out;
}

std::vector<ClusterGraph::Id> ClusterGraph::successors(Id c) const {
  std::vector<Id> v = impl_->out[c];
  std::sort(v.begin(), v.end(), [&](Id a, Id b) { return impl_->rank[a] < impl_->rank[b]; });
  return v;
}

std::vector<ClusterGraph::Id> ClusterGraph::predecessors(Id c) const {
  std::vector<Id> v = impl_->in[c];
  std::sort(v.begin(), v.end(), [&](Id a, Id b) { return impl_->rank[a] < impl_->rank[b]; });
  return v;
}

std::vector<ClusterGraph::Id> ClusterGraph::topological_order() const {
  std::vector<Id> v;
  v.reserve(impl_->live_count);
  for (Id c = 0; c < impl_->live.size(); ++c) {
    if (impl_->live[c]) v.push_back(c);
  }
  std::sort(v.begin(), v.end(), [&](Id a, Id b) { return impl_->rank[a] < impl_->rank[b]; });
  return v;
}

bool ClusterGraph::reachable(Id from, Id to) const {
  return impl_->reachable(from, to);
}

ClusterGraph::Id ClusterGraph::try_merge(Id a, Id b) {
  if (a == b) return a;
  Impl& m = *impl_;
  if (m.rank[a] > m.rank[b]) std::swap(a, b);  // a before b
  if (Impl::contains(m.out[a], b)) {
    // The edge must be the only path: take it away and look for another.
    m.remove_edge(a, b);
    const bool other_path = m.reachable(a, b);
    Impl::insert_sorted(m.out[a], b);
    Impl::insert_sorted(m.in[b], a);
    if (other_path) return kNone;
  } else if (m.reachable(a, b)) {
    return kNone;  // b cannot reach a: a comes first in the order
  }
  std::vector<Id> set{a, b};
  std::sort(set.begin(), set.end());
  return m.fold(set);
}

ClusterGraph::Id ClusterGraph::merge_all_paths(Id from, Id to) {
  if (from == to) return from;
  Impl& m = *impl_;
  if (m.rank[from] > m.rank[to]) std::swap(from, to);
  if (!Impl::contains(m.out[from], to) && !m.reachable(from, to)) {
    std::vector<Id> pair{std::min(from, to), std::max(from, to)};
    return m.fold(pair);  // unrelated: no cycle possible
  }
  return m.fold(m.on_paths(from, to));
}

Status ClusterGraph::check_invariants() const {
  const Impl& m = *impl_;
  std::vector<uint32_t> indeg(m.live.size(), 0);
  size_t live = 0;
  for (Id c = 0; c < m.live.size(); ++c) {
    if (!m.live[c]) {
      if (!m.out[c].empty() || !m.in[c].empty())
        return Status::internal("cluster graph: a merged cluster keeps edges");
      continue;
    }
    ++live;
    for (Id s : m.out[c]) {
      if (!m.live[s]) return Status::internal("cluster graph: an edge points at a merged cluster");
      if (m.rank[c] >= m.rank[s])
        return Status::internal("cluster graph: an edge goes against the rank order");
      if (!Impl::contains(m.in[s], c)) return Status::internal("cluster graph: an edge is not mirrored");
      ++indeg[s];
    }
  }
  if (live != m.live_count) return Status::internal("cluster graph: live count is off");
  std::vector<Id> ready;
  for (Id c = 0; c < m.live.size(); ++c) {
    if (m.live[c] && indeg[c] == 0) ready.push_back(c);
  }
  size_t sorted = 0;
  while (!ready.empty()) {
    const Id c = ready.back();
    ready.pop_back();
    ++sorted;
    for (Id s : m.out[c]) {
      if (--indeg[s] == 0) ready.push_back(s);
    }
  }
  if (sorted != live) return Status::internal("cluster graph: the quotient graph has a cycle");
  // Every node's cluster is live and lists it.
  for (size_t p = 0; p < m.nodes.size(); ++p) {
    if (!m.live[m.find(static_cast<Id>(p))])
      return Status::internal("cluster graph: a node maps to a merged cluster");
  }
  return Status::ok();
}

}  // namespace graphsplit::sdk
