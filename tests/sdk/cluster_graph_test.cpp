// The cluster engine against a brute-force oracle on thousands of seeded random DAGs: a merge is refused
// exactly when it would close a cycle, reachability is exact, merge_all_paths takes exactly the clusters on
// the paths, and the invariants (rank order, acyclic quotient, a partition of the nodes) hold after every
// step.
#include "graphsplit/sdk/cluster_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "graphsplit/sdk/union_find.h"
#include "test_graphs.h"

namespace graphsplit::sdk {
namespace {

using Id = ClusterGraph::Id;

struct Oracle {
  const Graph& g;
  const ClusterGraph& cg;
  std::vector<Node*> nodes;
  // reach[a][b]: a path of length >= 1 from cluster a to cluster b in the quotient graph.
  std::vector<std::vector<char>> reach;
  std::vector<std::set<Id>> adj, radj;  // the quotient graph's edges out of and into each cluster

  Oracle(const Graph& graph, const ClusterGraph& c) : g(graph), cg(c), nodes(graph.node_list()) { refresh(); }

  void refresh() {
    const size_t n = nodes.size();
    adj.assign(n, {});
    radj.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      const Id to = cg.cluster_of(nodes[i]);
      auto edge = [&](const Node* src) {
        const Id from = cg.cluster_of(src);
        if (from != to) {
          adj[from].insert(to);
          radj[to].insert(from);
        }
      };
      for (const OutPort& p : nodes[i]->inputs()) {
        if (p.node) edge(p.node);
      }
      for (const Node* c : nodes[i]->control_inputs()) edge(c);
    }
    reach.assign(n, std::vector<char>(n, 0));
    for (size_t s = 0; s < n; ++s) {
      std::vector<Id> stack(adj[s].begin(), adj[s].end());
      while (!stack.empty()) {
        const Id x = stack.back();
        stack.pop_back();
        if (reach[s][x]) continue;
        reach[s][x] = 1;
        stack.insert(stack.end(), adj[x].begin(), adj[x].end());
      }
    }
  }

  // Every live cluster's neighbours as the engine lists them (both forms of successors() and predecessors(),
  // the counts, has_edge) against the edges of the nodes: an edge lost on both sides would pass
  // check_invariants().
  ::testing::AssertionResult adjacency_matches() const {
    std::vector<Id> buffer{999, 998, 997};  // the overloads must replace what it holds
    for (Id c = 0; c < nodes.size(); ++c) {
      if (!cg.is_live(c)) continue;
      for (const bool out : {true, false}) {
        const std::set<Id>& want_set = out ? adj[c] : radj[c];
        std::vector<Id> want(want_set.begin(), want_set.end());
        std::sort(want.begin(), want.end(), [&](Id x, Id y) { return cg.rank(x) < cg.rank(y); });
        const std::vector<Id> got = out ? cg.successors(c) : cg.predecessors(c);
        out ? cg.successors(c, &buffer) : cg.predecessors(c, &buffer);
        if (got != want || buffer != want ||
            (out ? cg.num_successors(c) : cg.num_predecessors(c)) != want.size())
          return ::testing::AssertionFailure() << "cluster " << c << (out ? " successors" : " predecessors");
        for (Id x : want) {
          if (!(out ? cg.has_edge(c, x) : cg.has_edge(x, c)))
            return ::testing::AssertionFailure() << "has_edge misses " << c << " / " << x;
        }
      }
    }
    return ::testing::AssertionSuccess();
  }

  bool merge_would_cycle(Id a, Id b) const {
    for (Id c = 0; c < nodes.size(); ++c) {
      if (c == a || c == b || !cg.is_live(c)) continue;
      if ((reach[a][c] && reach[c][b]) || (reach[b][c] && reach[c][a])) return true;
    }
    return false;
  }
};

std::unique_ptr<Graph> random_dag(std::mt19937& rng, int n) {
  auto g = Graph::create("g");
  std::vector<Node*> nodes;
  for (int i = 0; i < n; ++i) {
    const int fan_in = i == 0 ? 0 : static_cast<int>(rng() % 3);
    Node* node = g->add_node("n" + std::to_string(i), "Op", fan_in, 1);
    for (int k = 0; k < fan_in; ++k) (void)g->add_edge({nodes[rng() % nodes.size()], 0}, {node, k});
    if (i > 2 && rng() % 6 == 0) (void)g->add_control_edge(nodes[rng() % nodes.size()], node);
    nodes.push_back(node);
  }
  return g;
}

std::vector<Id> live_clusters(const ClusterGraph& cg, size_t n) {
  std::vector<Id> v;
  for (Id c = 0; c < n; ++c) {
    if (cg.is_live(c)) v.push_back(c);
  }
  return v;
}

TEST(ClusterGraphTest, RandomMergesMatchTheBruteForceOracle) {
  std::mt19937 rng(2024);
  size_t refused = 0, merged = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 30);
    auto g = random_dag(rng, n);
    std::unique_ptr<ClusterGraph> cg;
    ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
    Oracle oracle(*g, *cg);
    for (int step = 0; step < 25 && cg->num_clusters() > 1; ++step) {
      const std::vector<Id> live = live_clusters(*cg, n);
      const Id a = live[rng() % live.size()], b = live[rng() % live.size()];
      if (a == b) continue;
      // Reachability agrees with the oracle before the merge.
      ASSERT_EQ(cg->reachable(a, b), static_cast<bool>(oracle.reach[a][b])) << "trial " << trial;
      const bool cycle = oracle.merge_would_cycle(a, b);
      const Id result = cg->try_merge(a, b);
      ASSERT_EQ(result == ClusterGraph::kNone, cycle) << "trial " << trial << " step " << step;
      if (cycle) {
        ++refused;
        ASSERT_TRUE(cg->is_live(a) && cg->is_live(b));
      } else {
        ++merged;
        ASSERT_TRUE(result == a || result == b);
        ASSERT_EQ(cg->cluster_of_position(a), result);
        ASSERT_EQ(cg->cluster_of_position(b), result);
      }
      ASSERT_TRUE(cg->check_invariants().is_ok()) << cg->check_invariants().message();
      oracle.refresh();
      ASSERT_TRUE(oracle.adjacency_matches()) << "trial " << trial << " step " << step;
    }
    size_t total = 0;
    for (Id c : live_clusters(*cg, n)) total += cg->members(c).size();
    ASSERT_EQ(total, static_cast<size_t>(n));  // a partition of the nodes
  }
  EXPECT_GT(refused, 100u);  // the oracle exercised both outcomes
  EXPECT_GT(merged, 1000u);
}

// Larger graphs with wide fan-in, merged the way the engine partitioner merges (each cluster absorbs its
// predecessors): clusters grow long neighbour lists, so every path of a fold's list upkeep runs (one id
// inserted into a long list, a merge of two lists, a survivor holding an absorbed member or not).
TEST(ClusterGraphTest, ParentMergesKeepLongNeighbourListsExact) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 12; ++trial) {
    const int n = 150 + static_cast<int>(rng() % 100);
    auto g = Graph::create("g");
    std::vector<Node*> nodes;
    for (int i = 0; i < n; ++i) {
      const int fan_in = i == 0 ? 0 : 1 + static_cast<int>(rng() % 6);
      Node* node = g->add_node("n" + std::to_string(i), "Op", fan_in, 1);
      for (int k = 0; k < fan_in; ++k) {
        const int back = 1 + static_cast<int>(rng() % std::min(i, 40));  // mostly recent producers
        (void)g->add_edge({nodes[static_cast<size_t>(i - back)], 0}, {node, k});
      }
      nodes.push_back(node);
    }
    std::unique_ptr<ClusterGraph> cg;
    ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
    Oracle oracle(*g, *cg);
    size_t merged = 0, refused = 0, longest = 0;
    std::vector<Id> parents;
    for (Id c : cg->topological_order()) {
      if (!cg->is_live(c)) continue;
      cg->predecessors(c, &parents);
      Id cur = c;
      for (Id p : parents) {
        if (!cg->is_live(p) || rng() % 4 == 0) continue;  // some stay apart, so that lists grow long
        const bool cycle = oracle.merge_would_cycle(p, cur);
        const Id m = cg->try_merge(p, cur);
        ASSERT_EQ(m == ClusterGraph::kNone, cycle) << "trial " << trial;
        if (m == ClusterGraph::kNone) {
          ++refused;
          continue;
        }
        ++merged;
        cur = m;
        longest = std::max({longest, cg->num_successors(cur), cg->num_predecessors(cur)});
        oracle.refresh();
        ASSERT_TRUE(oracle.adjacency_matches()) << "trial " << trial << " merge " << merged;
      }
    }
    ASSERT_TRUE(cg->check_invariants().is_ok()) << cg->check_invariants().message();
    EXPECT_GT(merged, 20u);
    EXPECT_GT(refused, 0u);
    EXPECT_GE(longest, 12u) << "trial " << trial;  // lists long enough for the one-by-one insert path
  }
}

TEST(ClusterGraphTest, MergeAllPathsTakesExactlyTheClustersOnThePaths) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 400; ++trial) {
    const int n = 3 + static_cast<int>(rng() % 30);
    auto g = random_dag(rng, n);
    std::unique_ptr<ClusterGraph> cg;
    ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
    for (int step = 0; step < 6 && cg->num_clusters() > 1; ++step) {
      Oracle oracle(*g, *cg);
      const std::vector<Id> live = live_clusters(*cg, n);
      Id from = live[rng() % live.size()], to = live[rng() % live.size()];
      if (from == to) continue;
      if (oracle.reach[to][from]) std::swap(from, to);
      std::set<Id> expected{from, to};
      if (oracle.reach[from][to]) {
        for (Id c : live) {
          if (oracle.reach[from][c] && oracle.reach[c][to]) expected.insert(c);
        }
      }
      const Id result = cg->merge_all_paths(from, to);
      ASSERT_NE(result, ClusterGraph::kNone);
      std::set<Id> got;
      for (Id c : live) {
        if (cg->cluster_of_position(c) == result) got.insert(c);
      }
      ASSERT_EQ(got, expected) << "trial " << trial;
      ASSERT_TRUE(cg->check_invariants().is_ok()) << cg->check_invariants().message();
    }
  }
}

TEST(ClusterGraphTest, SecondPathBlocksAMergeAndMembersStayInNodeOrder) {
  // a -> b -> c and a -> c: merging a and c would swallow the path through b.
  auto g = Graph::create("g");
  testing::add(*g, "a", "Op");
  testing::add(*g, "b", "Op", {"a"});
  testing::add(*g, "c", "Op", {"a", "b"});
  std::unique_ptr<ClusterGraph> cg;
  ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
  const Id a = cg->cluster_of(g->find_node("a")), b = cg->cluster_of(g->find_node("b")),
           c = cg->cluster_of(g->find_node("c"));
  EXPECT_EQ(cg->try_merge(a, c), ClusterGraph::kNone);
  EXPECT_TRUE(cg->reachable(a, c));
  EXPECT_FALSE(cg->reachable(c, a));
  const Id ab = cg->try_merge(b, a);
  ASSERT_NE(ab, ClusterGraph::kNone);
  const Id abc = cg->try_merge(ab, c);  // now the edge is the only path
  ASSERT_NE(abc, ClusterGraph::kNone);
  EXPECT_EQ(cg->num_clusters(), 1u);
  EXPECT_EQ(testing::names(cg->members(abc)), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ClusterGraphTest, OrderFollowsMergesAgainstTheInitialRanks) {
  // x and y unrelated, x ranked first; z after y. Merging x with z forces y before the merged cluster only if
  // y reaches z, which it does, so the order must be repaired.
  auto g = Graph::create("g");
  testing::add(*g, "x", "Op");
  testing::add(*g, "y", "Op");
  testing::add(*g, "z", "Op", {"y"});
  testing::add(*g, "w", "Op", {"x"});
  std::unique_ptr<ClusterGraph> cg;
  ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
  const Id x = cg->cluster_of(g->find_node("x")), z = cg->cluster_of(g->find_node("z"));
  const Id xz = cg->try_merge(x, z);
  ASSERT_NE(xz, ClusterGraph::kNone);
  EXPECT_TRUE(cg->check_invariants().is_ok());
  const auto order = cg->topological_order();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_LT(cg->rank(cg->cluster_of(g->find_node("y"))), cg->rank(xz));
  EXPECT_LT(cg->rank(xz), cg->rank(cg->cluster_of(g->find_node("w"))));
}

TEST(ClusterGraphTest, RepeatedMovesIntoOneGapRelabelTheNeighbourhood) {
  // z, a, then for each i: q_i1 -> q_i2 fed by a, p_i, and b_i fed by a and p_i. Merging a with b_i moves p_i
  // (the smaller side of the window) right before a, into the gap p_(i-1) left: the gap halves every time
  // until the labels must be spread out again. The order must stay exact through that.
  constexpr int kRounds = 60;
  auto g = Graph::create("g");
  testing::add(*g, "z", "Op");
  testing::add(*g, "a", "Op");
  for (int i = 0; i < kRounds; ++i) {
    const std::string k = std::to_string(i);
    testing::add(*g, "q1_" + k, "Op", {"a"});
    testing::add(*g, "q2_" + k, "Op", {"q1_" + k});
    testing::add(*g, "p" + k, "Op");
    testing::add(*g, "b" + k, "Op", {"a", "p" + k});
  }
  std::unique_ptr<ClusterGraph> cg;
  ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
  Id a = cg->cluster_of(g->find_node("a"));
  for (int i = 0; i < kRounds; ++i) {
    a = cg->try_merge(a, cg->cluster_of(g->find_node("b" + std::to_string(i))));
    ASSERT_NE(a, ClusterGraph::kNone) << i;
    ASSERT_TRUE(cg->check_invariants().is_ok()) << i << ": " << cg->check_invariants().message();
  }
  // z, then every p in merge order, then the merged cluster, then the q chains.
  std::vector<std::string> order;
  for (Id c : cg->topological_order()) order.push_back(cg->first_member(c)->name());
  ASSERT_EQ(order.size(), static_cast<size_t>(2 + 3 * kRounds));
  EXPECT_EQ(order[0], "z");
  for (int i = 0; i < kRounds; ++i) EXPECT_EQ(order[1 + i], "p" + std::to_string(i));
  EXPECT_EQ(order[1 + kRounds], "a");
  int64_t previous = INT64_MIN;
  for (Id c : cg->topological_order()) {
    EXPECT_GT(cg->rank(c), previous);
    previous = cg->rank(c);
  }
}

// A hub whose list is kept in chunks absorbing a cluster with hundreds of neighbours of its own: the
// survivor's list is then merged whole (the one-by-one inserts are for a few additions), with the absorbed
// cluster taken out of it when an edge joined them. Some of the other cluster's readers also read the hub, so
// the merge must drop repeats too.
TEST(ClusterGraphTest, AHubInChunksAbsorbsAClusterWithHundredsOfNeighbours) {
  for (const bool joined : {false, true}) {
    auto g = Graph::create("g");
    Node* hub = g->add_node("hub", "Op", 0, 1);
    Node* other = g->add_node("other", "Op", joined ? 1 : 0, 1);
    if (joined) {
      ASSERT_TRUE(g->add_edge({hub, 0}, {other, 0}).is_ok());
    }
    std::vector<Node*> readers;
    for (int i = 0; i < 3000; ++i) {  // the hub's list passes the flat limit (2,048 ids)
      Node* r = g->add_node("h" + std::to_string(i), "Op", 1, 1);
      ASSERT_TRUE(g->add_edge({hub, 0}, {r, 0}).is_ok());
      readers.push_back(r);
    }
    for (int i = 0; i < 1000;
         ++i) {  // 1,000 more: a quarter of the hub's list or more, so no one-by-one path
      Node* r = g->add_node("o" + std::to_string(i), "Op", 1, 1);
      ASSERT_TRUE(g->add_edge({other, 0}, {r, 0}).is_ok());
      readers.push_back(r);
    }
    for (int i = 0; i < 3000; i += 10) {  // readers of both
      Node* r = readers[static_cast<size_t>(i)];
      r->add_input();
      ASSERT_TRUE(g->add_edge({other, 0}, {r, 1}).is_ok());
    }
    std::unique_ptr<ClusterGraph> cg;
    ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
    const Id h = cg->cluster_of(hub), o = cg->cluster_of(other);
    const Id m = cg->try_merge(h, o);
    ASSERT_EQ(m, h) << "joined " << joined;  // the cluster with more edges survives
    ASSERT_TRUE(cg->check_invariants().is_ok()) << cg->check_invariants().message();
    std::vector<Id> want;
    for (Node* r : readers) want.push_back(cg->cluster_of(r));
    std::sort(want.begin(), want.end(), [&](Id x, Id y) { return cg->rank(x) < cg->rank(y); });
    EXPECT_EQ(cg->successors(m), want) << "joined " << joined;
    EXPECT_EQ(cg->num_successors(m), readers.size());
    EXPECT_FALSE(cg->has_edge(m, m));
  }
}

// Hubs: a source every node reads and a sink that reads half of them have neighbour lists longer than the
// flat limit, which the cluster engine keeps in chunks. Through hundreds of merges (of neighbours, of
// unrelated clusters, of whole path sets) every list must stay exactly the quotient graph's edges, in order,
// and the hub lists must shrink through chunks emptying out to few entries.
TEST(ClusterGraphTest, HubListsStayExactThroughMerges) {
  std::mt19937 rng(5);
  const int n = 5000;  // the source's list passes the flat limit (2,048 ids) more than twice over
  auto g = Graph::create("g");
  Node* source = g->add_node("source", "Op", 0, 1);
  std::vector<Node*> nodes{source};
  for (int i = 1; i < n; ++i) {
    Node* node = g->add_node("n" + std::to_string(i), "Op", 2, 1);
    ASSERT_TRUE(g->add_edge({source, 0}, {node, 0}).is_ok());
    ASSERT_TRUE(g->add_edge({nodes[rng() % nodes.size()], 0}, {node, 1}).is_ok());
    nodes.push_back(node);
  }
  Node* sink = g->add_node("sink", "Op", n / 2, 1);
  for (int k = 0; k < n / 2; ++k) ASSERT_TRUE(g->add_edge({nodes[1 + 2 * k], 0}, {sink, k}).is_ok());
  nodes.push_back(sink);
  std::unique_ptr<ClusterGraph> cg;
  ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
  const Id hub = cg->cluster_of(source), drain = cg->cluster_of(sink);
  ASSERT_EQ(cg->num_successors(hub), static_cast<size_t>(n - 1));
  ASSERT_EQ(cg->num_predecessors(drain), static_cast<size_t>(n / 2));

  // The quotient graph's edges from the nodes, in rank order as successors() and predecessors() give them.
  auto expected = [&](Id c, bool out) {
    std::set<Id> ids;
    for (Node* node : nodes) {
      const Id mine = cg->cluster_of(node);
      for (const OutPort& p : node->inputs()) {
        const Id theirs = cg->cluster_of(p.node);
        if (mine == theirs) continue;
        if (out && theirs == c) ids.insert(mine);
        if (!out && mine == c) ids.insert(theirs);
      }
    }
    std::vector<Id> v(ids.begin(), ids.end());
    std::sort(v.begin(), v.end(), [&](Id a, Id b) { return cg->rank(a) < cg->rank(b); });
    return v;
  };
  size_t merged = 0;
  for (int step = 0; step < 20000 && cg->num_clusters() > 40; ++step) {
    const std::vector<Id> live = live_clusters(*cg, nodes.size());
    Id a = live[rng() % live.size()];
    const std::vector<Id> next = cg->successors(a);
    Id b = step % 3 == 0 || next.empty() ? live[rng() % live.size()] : next[rng() % next.size()];
    if (a == b || a == hub || b == hub || a == drain || b == drain) continue;
    const Id m = step % 2 == 0 ? cg->merge_all_paths(a, b) : cg->try_merge(a, b);
    if (m != ClusterGraph::kNone) ++merged;
    ASSERT_TRUE(cg->check_invariants().is_ok())
        << "step " << step << ": " << cg->check_invariants().message();
    if (step % 100 == 0) {
      ASSERT_EQ(cg->successors(hub), expected(hub, true)) << "step " << step;
      ASSERT_EQ(cg->predecessors(drain), expected(drain, false)) << "step " << step;
      for (Id c : {a, b}) {
        if (!cg->is_live(c)) continue;
        ASSERT_EQ(cg->successors(c), expected(c, true)) << "step " << step;
        ASSERT_EQ(cg->predecessors(c), expected(c, false)) << "step " << step;
        ASSERT_EQ(cg->has_edge(hub, c), cg->num_predecessors(c) > 0 && expected(c, false).front() == hub);
      }
    }
  }
  EXPECT_GT(merged, 3000u);
  EXPECT_LT(cg->num_successors(hub), 64u);  // the hub's list shrank through chunks emptying out
  EXPECT_EQ(cg->successors(hub), expected(hub, true));
  EXPECT_EQ(cg->predecessors(drain), expected(drain, false));
}

// The partitioners' shortcuts take the smallest member as a component's name: it must not depend on the order
// the pairs were joined in, and joining a set with itself reports that nothing changed.
TEST(UnionFindTest, RepresentativeIsTheSmallestMemberWhateverTheJoinOrder) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    for (int k = 0; k < 40; ++k)
      pairs.push_back({static_cast<uint32_t>(rng() % 60), static_cast<uint32_t>(rng() % 60)});
    UnionFind a(60), b(60);
    size_t joined_a = 0, joined_b = 0;
    for (const auto& [x, y] : pairs) joined_a += a.unite(x, y);
    std::shuffle(pairs.begin(), pairs.end(), rng);
    for (const auto& [x, y] : pairs) joined_b += b.unite(y, x);
    EXPECT_EQ(joined_a, joined_b);
    for (uint32_t v = 0; v < 60; ++v) {
      ASSERT_EQ(a.find(v), b.find(v)) << "trial " << trial;
      ASSERT_LE(a.find(v), v);
      ASSERT_EQ(a.find(a.find(v)), a.find(v));
    }
    for (const auto& [x, y] : pairs) EXPECT_FALSE(a.unite(x, y));
  }
}

}  // namespace
}  // namespace graphsplit::sdk
