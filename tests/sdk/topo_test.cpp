#include "graphsplit/sdk/ir/topo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "test_graphs.h"

namespace graphsplit::sdk {
namespace {

using testing::add;
using testing::is_topological;
using testing::names;
using Names = std::vector<std::string>;

std::vector<Node*> order_of(const Graph& g, TopoSortMode mode) {
  std::vector<Node*> order;
  Status s = topological_order(g, mode, &order);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return order;
}

// d1 (index 1) and d0 (index 0) are created out of order; d0 feeds z, y, x (created in that order).
std::unique_ptr<Graph> fan_out_graph() {
  auto g = Graph::create("g");
  add(*g, "d1", "Data")->attrs().set(sdk::attr::kIndex, AttrValue::Int(1));
  add(*g, "d0", "Data")->attrs().set(sdk::attr::kIndex, AttrValue::Int(0));
  add(*g, "c", "Const");
  add(*g, "z", "Relu", {"d0"});
  add(*g, "y", "Relu", {"d0"});
  add(*g, "x", "Relu", {"d0"});
  return g;
}

TEST(TopoSortTest, BfsSeedsDataByIndexAndEnqueuesReadySuccessorsByName) {
  auto g = fan_out_graph();
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kBFS)), (Names{"d0", "d1", "c", "x", "y", "z"}));
}

TEST(TopoSortTest, DfsUsesAStackAndPushesSuccessorsInOutputOrder) {
  auto g = fan_out_graph();
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kDFS)), (Names{"d0", "x", "y", "z", "d1", "c"}));
}

TEST(TopoSortTest, DfsPushesDataPeersBeforeControlPeers) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  add(*g, "data_peer", "Relu", {"a"});
  Node* ctrl = add(*g, "ctrl_peer", "NoOp");
  ASSERT_TRUE(g->add_control_edge(a, ctrl).is_ok());
  // Pushed data peer first, control peer second, so the control peer pops first.
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kDFS)), (Names{"a", "ctrl_peer", "data_peer"}));
}

TEST(TopoSortTest, RdfsDelaysEachNodeToJustBeforeItsFirstConsumer) {
  auto g = Graph::create("g");
  add(*g, "c", "Const");
  add(*g, "d", "Data");
  add(*g, "r1", "Relu", {"d"});
  add(*g, "r2", "Relu", {"r1"});
  add(*g, "add", "Add", {"r2", "c"});
  // The reverse DFS alone would emit c first (smallest id among add's inputs); the delay pass moves it down.
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kRDFS)), (Names{"d", "r1", "r2", "c", "add"}));
}

TEST(TopoSortTest, RdfsDelayKeepsEveryConsumerAfterItsProducer) {
  // p feeds c1 and c2; c2's first consumer is a sink that the reverse DFS reaches before c1's consumer.
  auto g = Graph::create("g");
  add(*g, "p", "Data");
  add(*g, "c1", "Relu", {"p"});
  add(*g, "c2", "Relu", {"p"});
  add(*g, "s1", "Relu", {"c2"});
  add(*g, "s2", "Add", {"c1", "c2"});
  auto order = order_of(*g, TopoSortMode::kRDFS);
  EXPECT_TRUE(is_topological(*g, order)) << ::testing::PrintToString(names(order));
}

TEST(TopoSortTest, StableRdfsKeepsAValidOrderAndRepairsAnInvalidOne) {
  auto g = Graph::create("g");
  add(*g, "a", "Data");
  add(*g, "k", "Const");
  add(*g, "b", "Relu", {"a"});
  add(*g, "c", "Add", {"b", "k"});
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kStableRDFS)), (Names{"a", "k", "b", "c"}));

  auto h = Graph::create("h");
  Node* b = h->add_node("b", "Relu", 1, 1);
  Node* a = h->add_node("a", sdk::op::kData, 0, 1);
  ASSERT_TRUE(h->add_edge({a, 0}, {b, 0}).is_ok());
  EXPECT_EQ(names(order_of(*h, TopoSortMode::kStableRDFS)), (Names{"a", "b"}));
}

// An order that looks valid by its data edges alone but not by a control edge, in a graph with a removed node
// (a hole in the ids): the shortcut for an already sorted graph must not take it.
TEST(TopoSortTest, StableRdfsSeesABackwardControlEdgeAcrossAHole) {
  auto g = Graph::create("g");
  add(*g, "a", "Data");
  add(*g, "gone", "Relu", {"a"});
  add(*g, "b", "Relu", {"a"});
  add(*g, "c", "Relu", {"b"});
  g->remove_node(g->find_node("gone"));
  ASSERT_TRUE(g->add_control_edge(g->find_node("c"), g->find_node("b")).is_ok());
  std::vector<Node*> order;
  const Status s = topological_order(*g, TopoSortMode::kStableRDFS, &order);
  ASSERT_FALSE(s.is_ok()) << "b -> c by data and c -> b by control is a cycle";
  EXPECT_NE(s.message().find("'b' -> 'c' -> 'b'"), std::string::npos) << s.message();

  auto h = Graph::create("h");
  add(*h, "x", "Data");
  add(*h, "y", "Data");
  add(*h, "z", "Add", {"x", "y"});
  ASSERT_TRUE(h->add_control_edge(h->find_node("y"), h->find_node("x")).is_ok());
  EXPECT_EQ(names(order_of(*h, TopoSortMode::kStableRDFS)), (Names{"y", "x", "z"}));
}

TEST(TopoSortTest, SortAppliesTheOrderAndIds) {
  auto g = fan_out_graph();
  ASSERT_TRUE(topological_sort(*g, TopoSortMode::kBFS).is_ok());
  EXPECT_EQ(names(g->node_list()), (Names{"d0", "d1", "c", "x", "y", "z"}));
  EXPECT_EQ(g->find_node("x")->id(), 3);
}

TEST(TopoSortTest, CycleIsReportedWithItsPath) {
  auto g = Graph::create("g");
  Node* a = g->add_node("a", "Relu", 1, 1);
  Node* b = g->add_node("b", "Relu", 1, 1);
  Node* c = g->add_node("c", "Relu", 1, 1);
  add(*g, "free", "Data");
  ASSERT_TRUE(g->add_edge({a, 0}, {b, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({b, 0}, {c, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({c, 0}, {a, 0}).is_ok());
  for (auto mode : {TopoSortMode::kBFS, TopoSortMode::kDFS, TopoSortMode::kRDFS, TopoSortMode::kStableRDFS}) {
    std::vector<Node*> order;
    Status s = topological_order(*g, mode, &order);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("graph 'g' has a cycle"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("'a' -> 'b' -> 'c' -> 'a'"), std::string::npos) << s.message();
  }
}

TEST(TopoSortTest, ParsesTheGeOption) {
  EXPECT_EQ(parse_topo_sorting_mode("0"), TopoSortMode::kBFS);
  EXPECT_EQ(parse_topo_sorting_mode("3"), TopoSortMode::kStableRDFS);
  EXPECT_EQ(parse_topo_sorting_mode("4"), std::nullopt);
  EXPECT_EQ(parse_topo_sorting_mode(""), std::nullopt);
  EXPECT_EQ(parse_topo_sorting_mode("dfs"), std::nullopt);
}

// A copy of `g` with its nodes created in `order` and every consumer and control list in g's order: the same
// graph, stored in that order, with nothing remembered of a sort.
std::unique_ptr<Graph> copy_in_order(const Graph& g, const std::vector<Node*>& order) {
  auto copy = Graph::create("copy");
  std::vector<Node*> twin(g.id_bound(), nullptr);
  for (const Node* n : order) {
    Node* t = copy->add_node(n->name(), n->type(), n->num_inputs(), n->num_outputs());
    t->attrs() = n->attrs();
    twin[n->id()] = t;
  }
  for (const Node* n : order) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      for (const InPort& c : n->consumers(o)) {
        EXPECT_TRUE(
            copy->add_edge({twin[n->id()], static_cast<int32_t>(o)}, {twin[c.node->id()], c.index}).is_ok());
      }
    }
    for (const Node* c : n->control_outputs()) {
      EXPECT_TRUE(copy->add_control_edge(twin[n->id()], twin[c->id()]).is_ok());
    }
  }
  return copy;
}

// A random DAG with data and control edges; some sources are Data nodes with shuffled `index` attributes.
std::unique_ptr<Graph> random_dag(std::mt19937& rng) {
  auto g = Graph::create("g");
  const int n = 2 + static_cast<int>(rng() % 60);
  std::vector<Node*> nodes;
  for (int i = 0; i < n; ++i) {
    const int fan_in = i == 0 ? 0 : static_cast<int>(rng() % 4);
    Node* node = g->add_node("n" + std::to_string((i * 7919) % 1000) + "_" + std::to_string(i),
                             fan_in ? "Op" : (rng() % 3 ? "Data" : "Const"), fan_in, 2);
    if (!fan_in && rng() % 4)
      node->attrs().set(attr::kIndex, AttrValue::Int(static_cast<int64_t>(rng() % 5)));
    for (int k = 0; k < fan_in; ++k) {
      Node* src = nodes[rng() % nodes.size()];
      EXPECT_TRUE(g->add_edge({src, static_cast<int32_t>(rng() % 2)}, {node, k}).is_ok());
    }
    if (i > 0 && rng() % 5 == 0) {
      EXPECT_TRUE(g->add_control_edge(nodes[rng() % nodes.size()], node).is_ok());
    }
    nodes.push_back(node);
  }
  std::shuffle(nodes.begin(), nodes.end(), rng);
  EXPECT_TRUE(g->reorder(nodes).is_ok());
  return g;
}

// Random DAGs with data and control edges: every mode yields a complete topological order, the same one on a
// second run, and StableRDFS leaves an already sorted graph unchanged.
TEST(TopoSortTest, RandomDagsAllModes) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 150; ++trial) {
    auto g = random_dag(rng);
    for (auto mode :
         {TopoSortMode::kBFS, TopoSortMode::kDFS, TopoSortMode::kRDFS, TopoSortMode::kStableRDFS}) {
      auto first = order_of(*g, mode);
      ASSERT_TRUE(is_topological(*g, first)) << "mode " << to_string(mode) << " trial " << trial;
      EXPECT_EQ(first, order_of(*g, mode));
    }
    ASSERT_TRUE(topological_sort(*g, TopoSortMode::kDFS).is_ok());
    EXPECT_EQ(order_of(*g, TopoSortMode::kStableRDFS), g->node_list());
  }
}

// The SDK skips a BFS or DFS sort of a graph that sort left unchanged. That rests on the sort finding the
// same order in the graph it sorted, checked here on copies that remember nothing.
TEST(TopoSortTest, ASortOfTheOrderItLeftFindsItAgain) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 150; ++trial) {
    auto g = random_dag(rng);
    for (auto mode : {TopoSortMode::kBFS, TopoSortMode::kDFS}) {
      ASSERT_TRUE(topological_sort(*g, mode).is_ok());
      const std::vector<Node*> sorted = g->node_list();
      auto copy = copy_in_order(*g, sorted);
      EXPECT_EQ(names(order_of(*copy, mode)), names(sorted)) << to_string(mode) << " trial " << trial;
      EXPECT_EQ(names(order_of(*g, mode)), names(sorted));  // what the remembered order answers
    }
  }
}

// A BFS or DFS order is a function of the edges and of the sources' order: a copy stored in any order that
// keeps the data-like sources' order and the other sources' order sorts back to the same order. The engine
// partitioner leaves a graph in place on this (is_topologically_sorted). Swapping two sources of a class is
// the control: it must change some orders, or the property would be vacuous here.
TEST(TopoSortTest, AnyStoreOrderKeepingTheSourcesOrderSortsBackToTheSameOrder) {
  std::mt19937 rng(99);
  size_t changed_by_a_swap = 0;
  for (int trial = 0; trial < 150; ++trial) {
    auto g = random_dag(rng);
    for (auto mode : {TopoSortMode::kBFS, TopoSortMode::kDFS}) {
      ASSERT_TRUE(topological_sort(*g, mode).is_ok());
      EXPECT_TRUE(is_topologically_sorted(*g, mode));
      EXPECT_FALSE(
          is_topologically_sorted(*g, mode == TopoSortMode::kBFS ? TopoSortMode::kDFS : TopoSortMode::kBFS));
      const std::vector<Node*> sorted = g->node_list();
      // Sources in their class's order, the other nodes shuffled among them.
      std::vector<Node*> data, other, rest;
      for (Node* n : sorted) {
        const bool source = std::none_of(n->inputs().begin(), n->inputs().end(),
                                         [](const OutPort& p) { return p.node != nullptr; }) &&
                            n->control_inputs().empty();
        (!source ? rest : is_data_like(n->type()) ? data : other).push_back(n);
      }
      std::vector<int> slot_class(sorted.size());
      for (size_t i = 0; i < sorted.size(); ++i)
        slot_class[i] = i < data.size() ? 0 : i < data.size() + other.size() ? 1 : 2;
      std::shuffle(slot_class.begin(), slot_class.end(), rng);
      std::shuffle(rest.begin(), rest.end(), rng);
      std::vector<Node*> store;
      size_t d = 0, o = 0, r = 0;
      for (int c : slot_class) store.push_back(c == 0 ? data[d++] : c == 1 ? other[o++] : rest[r++]);
      auto copy = copy_in_order(*g, store);
      EXPECT_EQ(names(order_of(*copy, mode)), names(sorted)) << to_string(mode) << " trial " << trial;
      if (other.size() >= 2) {
        std::swap(*std::find(store.begin(), store.end(), other[0]),
                  *std::find(store.begin(), store.end(), other[1]));
        changed_by_a_swap += names(order_of(*copy_in_order(*g, store), mode)) != names(sorted);
      }
    }
  }
  EXPECT_GT(changed_by_a_swap, 10u);
}

// After any edit the next sort is a real one: its order is a copy's, which has nothing to remember.
TEST(TopoSortTest, EveryEditForgetsTheSortedOrder) {
  auto g = fan_out_graph();
  const Names dfs{"d0", "x", "y", "z", "d1", "c"};
  auto sort_matches_a_copy = [&](const char* edit) {
    auto copy = copy_in_order(*g, g->node_list());
    ASSERT_TRUE(topological_sort(*g, TopoSortMode::kDFS).is_ok());
    EXPECT_EQ(names(g->node_list()), names(order_of(*copy, TopoSortMode::kDFS))) << "after " << edit;
  };
  ASSERT_TRUE(topological_sort(*g, TopoSortMode::kDFS).is_ok());
  ASSERT_EQ(names(g->node_list()), dfs);
  const auto by_name = [&](const Names& list) {
    std::vector<Node*> order;
    for (const std::string& n : list) order.push_back(g->find_node(n));
    return order;
  };
  ASSERT_TRUE(g->reorder(by_name({"d1", "d0", "c", "z", "y", "x"})).is_ok());
  sort_matches_a_copy("reorder");
  EXPECT_EQ(names(g->node_list()), dfs);
  Node* w = add(*g, "w", "Relu", {"c"});
  sort_matches_a_copy("add_node and add_edge");
  g->disconnect_input({w, 0});
  sort_matches_a_copy("disconnect_input");
  ASSERT_TRUE(g->add_edge({g->find_node("d1"), 0}, {w, 0}).is_ok());
  sort_matches_a_copy("add_edge");
  ASSERT_TRUE(g->add_control_edge(g->find_node("z"), g->find_node("c")).is_ok());
  sort_matches_a_copy("add_control_edge");
  ASSERT_TRUE(g->remove_control_edge(g->find_node("z"), g->find_node("c")).is_ok());
  sort_matches_a_copy("remove_control_edge");
  g->disconnect_inputs({{w, 0}});
  sort_matches_a_copy("disconnect_inputs");
  g->move_consumers_last({{g->find_node("z"), 0}});  // d0's readers become y, x, z: z is popped first
  sort_matches_a_copy("move_consumers_last");
  EXPECT_EQ(names(g->node_list())[1], "z");
  g->remove_node(g->find_node("x"));
  sort_matches_a_copy("remove_node");
  g->remove_nodes({g->find_node("y")});
  sort_matches_a_copy("remove_nodes");
  Graph* other = g->add_detached_subgraph("area");
  ASSERT_TRUE(g->move_nodes_to({w}, other).is_ok());
  sort_matches_a_copy("move_nodes_to (out)");
  ASSERT_TRUE(other->move_nodes_to({w}, g.get()).is_ok());
  sort_matches_a_copy("move_nodes_to (in)");
  g->root()->remove_subgraph(other);
}

// A data source's index is an attribute, changed without the graph knowing: the seeds are ordered again.
TEST(TopoSortTest, AnIndexChangedAfterASortOrdersTheSeedsAgain) {
  auto g = fan_out_graph();
  ASSERT_TRUE(topological_sort(*g, TopoSortMode::kDFS).is_ok());
  ASSERT_EQ(names(g->node_list()), (Names{"d0", "x", "y", "z", "d1", "c"}));
  g->find_node("d0")->attrs().set(attr::kIndex, AttrValue::Int(1));
  g->find_node("d1")->attrs().set(attr::kIndex, AttrValue::Int(0));
  EXPECT_EQ(names(order_of(*g, TopoSortMode::kDFS)), (Names{"d1", "d0", "x", "y", "z", "c"}));
  ASSERT_TRUE(topological_sort(*g, TopoSortMode::kDFS).is_ok());
  EXPECT_EQ(names(g->node_list()), (Names{"d1", "d0", "x", "y", "z", "c"}));
  ASSERT_TRUE(topological_sort(*g, TopoSortMode::kBFS).is_ok());
  EXPECT_EQ(names(g->node_list()), (Names{"d1", "d0", "c", "x", "y", "z"}));
}

}  // namespace
}  // namespace graphsplit::sdk
