#include "graphsplit/sdk/ir/graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/strings.h"
#include "test_graphs.h"

namespace graphsplit::sdk {
namespace {

using testing::add;

// The name tables index with the hash's low bits and keep its high 32 as tags. Generated names ("n0", "n1",
// ...: one prefix, differing in a digit or two) must spread over both: no two share all 64 bits, few share
// the high 32 (about 5 expected at random), and no bucket of a table of 2^18 gets crowded (about 9 at most).
TEST(NameHashTest, GeneratedNamesSpreadOverLowAndHighBits) {
  constexpr size_t kNames = 200'000, kBuckets = size_t{1} << 18;
  std::unordered_set<uint64_t> full;
  std::unordered_set<uint32_t> high;
  std::vector<uint8_t> load(kBuckets, 0);
  full.reserve(kNames);
  high.reserve(kNames);
  uint8_t worst = 0;
  for (size_t i = 0; i < kNames; ++i) {
    const uint64_t h = name_hash("n" + std::to_string(i));
    full.insert(h);
    high.insert(static_cast<uint32_t>(h >> 32));
    worst = std::max<uint8_t>(worst, ++load[h & (kBuckets - 1)]);
  }
  EXPECT_EQ(full.size(), kNames);
  EXPECT_GT(high.size(), kNames - 100);
  EXPECT_LE(worst, 16);
}

// Every length takes its own path (8-byte words, a 4-7 byte tail in two overlapping reads, a 1-3 byte tail):
// the hash reads exactly the name's bytes, so one changed byte at any position changes it, and bytes past the
// end never count.
TEST(NameHashTest, EveryByteOfEveryLengthCountsAndNothingPastTheEnd) {
  std::string buffer(80, 'a');
  for (size_t n = 0; n <= 64; ++n) {
    const uint64_t base = name_hash(std::string_view(buffer.data(), n));
    buffer[n] = 'z';  // past the end: no effect
    EXPECT_EQ(name_hash(std::string_view(buffer.data(), n)), base) << n;
    buffer[n] = 'a';
    for (size_t i = 0; i < n; ++i) {
      buffer[i] = 'b';
      EXPECT_NE(name_hash(std::string_view(buffer.data(), n)), base) << n << " " << i;
      buffer[i] = 'a';
    }
  }
  std::set<uint64_t> lengths;  // "", "a", "aa", ...: the length alone tells them apart
  for (size_t n = 0; n <= 64; ++n) lengths.insert(name_hash(std::string_view(buffer.data(), n)));
  EXPECT_EQ(lengths.size(), 65u);
}

TEST(GraphTest, NodeNamesAreUniquePerGraph) {
  auto g = Graph::create("g");
  ASSERT_NE(g->add_node("a", "Relu"), nullptr);
  EXPECT_EQ(g->add_node("a", "Relu"), nullptr);
  EXPECT_EQ(g->unique_node_name("a"), "a_1");
  EXPECT_EQ(g->unique_node_name("b"), "b");
  EXPECT_EQ(g->find_node("a")->type(), "Relu");
  EXPECT_EQ(g->find_node("zzz"), nullptr);
}

// Names asked for again and again (duplicate ONNX node names, unnamed nodes from the Python builder) come out
// as base, base_1, base_2, ... in order, found in O(log k) lookups each (a scan from 1 made 40k of them take
// a minute). A name freed below the taken suffixes leaves the answer free, if not the smallest.
TEST(GraphTest, UniqueNamesContinueAfterTheLastSuffixTaken) {
  auto g = Graph::create("g");
  for (int i = 0; i < 5000; ++i) {
    const std::string name = g->unique_node_name("x");
    ASSERT_EQ(name, i == 0 ? std::string("x") : "x_" + std::to_string(i));
    ASSERT_NE(g->add_node(name, "Relu"), nullptr);
  }
  g->remove_node(g->find_node("x_17"));
  const std::string again = g->unique_node_name("x");
  EXPECT_EQ(g->find_node(again), nullptr);
  EXPECT_EQ(again.rfind("x_", 0), 0u);
  for (int i = 0; i < 300; ++i) {
    const std::string name = g->unique_subgraph_name("s");
    ASSERT_EQ(name, i == 0 ? std::string("s") : "s_" + std::to_string(i));
    ASSERT_NE(g->add_detached_subgraph(name), nullptr);
  }
  EXPECT_EQ(g->unique_subgraph_name("g"), "g_1");  // the root's own name is taken too
}

// A few nodes out of many take the path that marks them while their edges are checked: a refused move leaves
// every node where it was, and a later move still works.
TEST(GraphTest, ARefusedMoveOfAFewNodesLeavesTheGraphAsItWas) {
  auto g = Graph::create("g");
  add(*g, "r0", "Data");
  for (int i = 1; i < 40; ++i) add(*g, "r" + std::to_string(i), "Relu", {"r" + std::to_string(i - 1)});
  Node* x0 = add(*g, "x0", "Data");
  Node* x1 = add(*g, "x1", "Relu", {"x0"});
  Graph* s = g->add_detached_subgraph("s");
  const std::vector<Node*> before = g->node_list();
  const Status feeds = g->move_nodes_to({g->find_node("r10"), g->find_node("r11")}, s);
  EXPECT_NE(feeds.message().find("'r10' (Relu) still has an input from 'r9' (Relu)"), std::string::npos)
      << feeds.message();
  const Status twice = g->move_nodes_to({x0, x1, x0}, s);
  EXPECT_NE(twice.message().find("'x0' (Data) is listed twice"), std::string::npos) << twice.message();
  EXPECT_FALSE(s->move_nodes_to({x0}, g.get()).is_ok());  // x0 is not s's
  for (const Node* n : before) EXPECT_EQ(n->owner(), g.get()) << n->name();
  EXPECT_EQ(g->node_list(), before);
  EXPECT_TRUE(sdk::verify_graph(*g).is_ok());
  ASSERT_TRUE(g->move_nodes_to({x1, x0}, s).is_ok());
  EXPECT_EQ(x0->owner(), s);
  EXPECT_EQ(x1->input(0), (OutPort{x0, 0}));
  EXPECT_EQ(s->node_list(), (std::vector<Node*>{x0, x1}));
  EXPECT_EQ(g->num_nodes(), 40u);
  // A node of another graph after one that was already marked: the marked one is restored too.
  Node* r39 = g->find_node("r39");
  const Status foreign = g->move_nodes_to({r39, x0}, s);
  EXPECT_NE(foreign.message().find("a node does not belong to graph 'g'"), std::string::npos)
      << foreign.message();
  EXPECT_EQ(r39->owner(), g.get());
  EXPECT_EQ(x0->owner(), s);
  EXPECT_TRUE(sdk::verify_graph(*g).is_ok());
  EXPECT_TRUE(sdk::verify_graph(*s).is_ok());
}

// Moving part of a graph, all of it into an empty graph (the name index moves along) and all of it into a
// graph with nodes: names are found where the nodes are, and nowhere else, in each case.
TEST(GraphTest, MoveNodesToKeepsNamesFindableInEveryCase) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu", {"a"});
  Node* c = add(*g, "c", "Relu", {"b"});
  Node* d = add(*g, "d", "Data");
  Node* e = add(*g, "e", "Relu", {"d"});
  Graph* s1 = g->add_detached_subgraph("s1");
  Graph* s2 = g->add_detached_subgraph("s2");
  EXPECT_FALSE(g->move_nodes_to({d}, s1).is_ok());  // d still feeds e
  const Status twice = g->move_nodes_to({d, e, d}, s1);
  EXPECT_NE(twice.message().find("listed twice"), std::string::npos) << twice.message();
  ASSERT_TRUE(g->move_nodes_to({d, e}, s1).is_ok());
  EXPECT_EQ(s1->find_node("e"), e);
  EXPECT_EQ(g->find_node("e"), nullptr);
  EXPECT_EQ(g->find_node("a"), a);
  ASSERT_TRUE(g->move_nodes_to({c, a, b}, s2).is_ok());  // everything left, into an empty graph
  EXPECT_EQ(g->num_nodes(), 0u);
  EXPECT_EQ(g->find_node("a"), nullptr);
  EXPECT_EQ(s2->node_list(), (std::vector<Node*>{a, b, c}));    // the source's order, not the list's
  ASSERT_TRUE(s1->move_nodes_to(s1->node_list(), s2).is_ok());  // everything, into a graph with nodes
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    EXPECT_NE(s2->find_node(name), nullptr) << name;
    EXPECT_EQ(s1->find_node(name), nullptr) << name;
  }
  EXPECT_NE(g->add_node("a", "Data"), nullptr);  // the emptied graph's index is empty, not stale
  const Status clash = g->move_nodes_to({g->find_node("a")}, s2);
  EXPECT_NE(clash.message().find("already has a node named 'a'"), std::string::npos) << clash.message();
  EXPECT_EQ(b->input(0), (OutPort{a, 0}));  // edges travel with their nodes
  EXPECT_EQ(e->owner(), s2);
  EXPECT_EQ(s2->num_nodes(), 5u);
}

// Most of a graph into an empty one (a partitioner framing nearly everything): the index goes along and the
// nodes that stay get one of their own. Every name is found where its node is, both graphs take new names,
// and a name that moved still clashes in its new graph.
TEST(GraphTest, MovingMostNodesIntoAnEmptyGraphKeepsEveryNameFindable) {
  auto g = Graph::create("g");
  Graph* sub = g->add_detached_subgraph("sub");
  std::vector<Node*> nodes;
  for (int k = 0; k < 3000; ++k) nodes.push_back(g->add_node("n" + std::to_string(k), "Op"));
  std::vector<Node*> moving;
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (k % 10 != 3) moving.push_back(nodes[k]);
  }
  std::reverse(moving.begin(), moving.end());
  ASSERT_TRUE(g->move_nodes_to(moving, sub).is_ok());
  EXPECT_EQ(g->num_nodes(), 300u);
  EXPECT_EQ(sub->num_nodes(), 2700u);
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string name = "n" + std::to_string(k);
    const bool stays = k % 10 == 3;
    ASSERT_EQ(g->find_node(name), stays ? nodes[k] : nullptr) << name;
    ASSERT_EQ(sub->find_node(name), stays ? nullptr : nodes[k]) << name;
    ASSERT_EQ(nodes[k]->owner(), stays ? g.get() : sub) << name;
  }
  EXPECT_EQ(sub->node_list().front(), nodes[0]);  // the source's order
  EXPECT_EQ(sub->node_list().back(), nodes[2999]);
  EXPECT_EQ(g->add_node("n3", "Op"), nullptr);
  EXPECT_EQ(sub->add_node("n4", "Op"), nullptr);
  for (int k = 0; k < 1000; ++k) {
    ASSERT_NE(g->add_node("g" + std::to_string(k), "Op"), nullptr);
    ASSERT_NE(sub->add_node("s" + std::to_string(k), "Op"), nullptr);
  }
  EXPECT_EQ(g->find_node("s5"), nullptr);
  EXPECT_NE(sub->find_node("s5"), nullptr);
  const Status clash = g->move_nodes_to({g->add_node("n5", "Op")}, sub);
  EXPECT_NE(clash.message().find("already has a node named 'n5'"), std::string::npos) << clash.message();
}

// Cutting many inputs of a hub at once, and removing many nodes at once: the lists left are in their old
// order, with exactly the edges that were not cut.
TEST(GraphTest, BatchDisconnectAndRemoveKeepTheOtherEdgesInOrder) {
  auto g = Graph::create("g");
  Node* hub = add(*g, "hub", "Data");
  std::vector<Node*> readers;
  for (int i = 0; i < 600; ++i) readers.push_back(add(*g, "r" + std::to_string(i), "Relu", {"hub"}));
  std::vector<InPort> cut;
  for (int i = 0; i < 600; i += 3) cut.push_back({readers[i], 0});
  cut.push_back(cut.front());  // twice: no effect the second time
  g->disconnect_inputs(cut);
  std::vector<InPort> expected;
  for (int i = 0; i < 600; ++i) {
    if (i % 3) expected.push_back({readers[i], 0});
  }
  EXPECT_EQ(hub->consumers(0), expected);
  EXPECT_FALSE(readers[0]->input(0).valid());
  EXPECT_EQ(readers[1]->input(0), (OutPort{hub, 0}));

  Node* tail = add(*g, "tail", "Add", {"r1", "r2"});
  ASSERT_TRUE(g->add_control_edge(readers[4], tail).is_ok());
  ASSERT_TRUE(g->add_control_edge(readers[5], tail).is_ok());
  g->remove_nodes({readers[1], readers[4], readers[1]});
  EXPECT_EQ(g->find_node("r1"), nullptr);
  EXPECT_FALSE(tail->input(0).valid());
  EXPECT_EQ(tail->input(1), (OutPort{readers[2], 0}));
  EXPECT_EQ(tail->control_inputs(), (std::vector<Node*>{readers[5]}));
  expected.erase(
      std::remove_if(expected.begin(), expected.end(),
                     [&](const InPort& c) { return c.node == readers[1] || c.node == readers[4]; }),
      expected.end());
  EXPECT_EQ(hub->consumers(0), expected);
  EXPECT_EQ(g->num_nodes(), 1u + 600u + 1u - 2u);
}

// disconnect_inputs compacts the consumer lists one of two ways: by sorting the cut ports (a few cuts in a
// large graph) or by marking each producer once and compacting all its outputs (many cuts). Both must leave
// every output of a two-output producer with exactly its uncut consumers, in order.
TEST(GraphTest, DisconnectingFewOrManyInputsOfATwoOutputProducer) {
  for (const int cuts_every : {1, 97}) {  // 1: many cuts (marking); 97: few cuts in a large graph (sorting)
    auto g = Graph::create("g");
    Node* split = testing::add_plain(*g, "split", "Split", {}, 2);
    std::vector<Node*> readers;
    for (int i = 0; i < 2000; ++i) {
      Node* r = g->add_node("r" + std::to_string(i), "Relu", 1, 1);
      ASSERT_TRUE(g->add_edge({split, i % 2}, {r, 0}).is_ok());
      readers.push_back(r);
    }
    std::vector<InPort> cut;
    for (int i = 0; i < 2000; i += 2 * cuts_every) cut.push_back({readers[i], 0});  // output 0's readers only
    g->disconnect_inputs(cut);
    std::vector<InPort> kept0, kept1;
    for (int i = 0; i < 2000; ++i) {
      const bool was_cut = i % (2 * cuts_every) == 0;
      if (i % 2 == 1) kept1.push_back({readers[i], 0});
      if (i % 2 == 0 && !was_cut) kept0.push_back({readers[i], 0});
      EXPECT_EQ(readers[i]->input(0).valid(), !was_cut) << i;
    }
    EXPECT_EQ(split->consumers(0), kept0) << cuts_every;
    EXPECT_EQ(split->consumers(1), kept1) << cuts_every;
    EXPECT_TRUE(verify(*g).is_ok()) << verify(*g).message();
  }
}

// move_consumers_last leaves every list as disconnecting the inputs and adding their edges back in the order
// listed would, on random graphs: producers with two outputs, a hub read by 40 nodes, inputs listed twice or
// unconnected; few listed (an insertion sort), a few dozen in a large graph (a stable sort) and many (a count
// by producer).
TEST(GraphTest, MovingConsumersLastMatchesCuttingAndReaddingThem) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 60; ++trial) {
    // Every fourth trial: a larger graph with a few dozen listed (more than an insertion sort takes, too few
    // to count by producer).
    const int n = trial % 4 == 1 ? 1500 : 20 + static_cast<int>(rng() % 200);
    std::vector<std::unique_ptr<Graph>> twins;
    std::vector<std::vector<Node*>> nodes(2);
    for (int t = 0; t < 2; ++t) {
      std::mt19937 same(static_cast<unsigned>(trial));
      twins.push_back(Graph::create("g"));
      Graph& g = *twins.back();
      for (int i = 0; i < n; ++i) {
        const int fan_in = i < 2 ? 0 : 1 + static_cast<int>(same() % 3);
        Node* node = g.add_node("n" + std::to_string(i), "Op", fan_in, 2);
        for (int k = 0; k < fan_in; ++k) {
          if (same() % 7 == 0) continue;  // left unconnected
          Node* src = same() % 4 == 0 ? nodes[t][0] : nodes[t][same() % nodes[t].size()];
          ASSERT_TRUE(g.add_edge({src, static_cast<int32_t>(same() % 2)}, {node, k}).is_ok());
        }
        nodes[t].push_back(node);
      }
    }
    const bool many = trial % 2 == 0;
    std::vector<std::pair<int, int>> picks;  // (node, input)
    for (int i = 2; i < n; ++i) {
      for (size_t k = 0; k < nodes[0][i]->num_inputs(); ++k) {
        if (many ? rng() % 2 : rng() % (n > 1000 ? 60 : 40) == 0) picks.push_back({i, static_cast<int>(k)});
      }
    }
    std::shuffle(picks.begin(), picks.end(), rng);
    if (!picks.empty()) picks.push_back(picks[rng() % picks.size()]);  // one listed twice
    auto listed = [&](int t) {
      std::vector<InPort> v;
      for (auto [i, k] : picks) v.push_back({nodes[t][i], k});
      return v;
    };
    twins[0]->move_consumers_last(listed(0));
    // The reference: cut them all, then add each one's edge back, first places only.
    std::vector<std::pair<OutPort, InPort>> wires;
    std::set<std::pair<int, int>> seen;
    for (auto [i, k] : picks) {
      const OutPort src = nodes[1][i]->input(k);
      if (src.valid() && seen.insert({i, k}).second) wires.push_back({src, {nodes[1][i], k}});
    }
    twins[1]->disconnect_inputs(listed(1));
    for (const auto& [src, dst] : wires) ASSERT_TRUE(twins[1]->add_edge(src, dst).is_ok());
    for (int i = 0; i < n; ++i) {
      for (int o = 0; o < 2; ++o) {
        std::vector<std::pair<std::string, int32_t>> got, want;
        for (const InPort& c : nodes[0][i]->consumers(o)) got.push_back({c.node->name(), c.index});
        for (const InPort& c : nodes[1][i]->consumers(o)) want.push_back({c.node->name(), c.index});
        ASSERT_EQ(got, want) << "trial " << trial << " node " << i << " output " << o;
      }
    }
    EXPECT_TRUE(verify(*twins[0]).is_ok()) << verify(*twins[0]).message();
  }
}

// What move_consumers_last cannot move it skips, as disconnect_inputs does: a null node, a node of another
// graph, an index out of range either way, an unconnected input. The one movable entry still moves.
TEST(GraphTest, MovingConsumersLastSkipsWhatItCannotMove) {
  auto g = Graph::create("g");
  Node* x = add(*g, "x", "Data");
  Node* a = add(*g, "a", "Relu", {"x"});
  Node* b = add(*g, "b", "Relu", {"x"});
  Node* c = g->add_node("c", "Add", 2, 1);
  ASSERT_TRUE(g->add_edge({x, 0}, {c, 0}).is_ok());
  auto other = Graph::create("other");
  Node* y = add(*other, "y", "Data");
  Node* stranger = add(*other, "x", "Relu", {"y"});  // connected: only its graph makes it unmovable here
  Node* z = add(*other, "z", "Relu", {"y"});
  g->move_consumers_last({{nullptr, 0}, {stranger, 0}, {b, -1}, {b, 1}, {c, 1}, {a, 0}});
  EXPECT_EQ(x->consumers(0), (std::vector<InPort>{{b, 0}, {c, 0}, {a, 0}}));
  EXPECT_EQ(a->input(0), (OutPort{x, 0}));
  EXPECT_FALSE(c->input(1).valid());
  EXPECT_EQ(y->consumers(0), (std::vector<InPort>{{stranger, 0}, {z, 0}}));  // the other graph is left alone
  EXPECT_TRUE(verify(*g).is_ok()) << verify(*g).message();
}

TEST(GraphTest, EdgesAreStoredInBothDirections) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu", {"a"});
  Node* c = add(*g, "c", "Add", {"a", "b"});
  EXPECT_EQ(b->input(0), (OutPort{a, 0}));
  ASSERT_EQ(a->consumers(0).size(), 2u);
  EXPECT_EQ(a->consumers(0)[0], (InPort{b, 0}));
  EXPECT_EQ(a->consumers(0)[1], (InPort{c, 0}));
  EXPECT_EQ(c->input_desc(1), &b->output_desc(0));
  EXPECT_TRUE(verify(*g).is_ok());
}

TEST(GraphTest, AddEdgeRefusesConnectedInputBadIndexAndOtherGraph) {
  auto g = Graph::create("g");
  auto other = Graph::create("other");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu", {"a"});
  Node* x = add(*other, "x", "Data");
  Status s = g->add_edge({a, 0}, {b, 0});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("already connected"), std::string::npos) << s.message();
  EXPECT_NE(g->add_edge({a, 3}, {b, 0}).message().find("has no output 3"), std::string::npos);
  EXPECT_NE(g->add_edge({x, 0}, {b, 0}).message().find("both nodes must belong"), std::string::npos);
  EXPECT_EQ(a->consumers(0).size(), 1u);
}

TEST(GraphTest, RemoveNodeUnlinksEverything) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu", {"a"});
  Node* c = add(*g, "c", "Relu", {"b"});
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  g->remove_node(b);
  EXPECT_EQ(g->num_nodes(), 2u);
  EXPECT_TRUE(a->consumers(0).empty());
  EXPECT_TRUE(a->control_outputs().empty());
  EXPECT_FALSE(c->input(0).valid());
  EXPECT_EQ(g->find_node("b"), nullptr);
  EXPECT_TRUE(verify(*g).is_ok());
  // The name is free again.
  EXPECT_NE(g->add_node("b", "Relu"), nullptr);
}

TEST(GraphTest, ControlEdgesAreDeduplicated) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu");
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  EXPECT_EQ(a->control_outputs().size(), 1u);
  EXPECT_EQ(b->control_inputs().size(), 1u);
  EXPECT_TRUE(g->remove_control_edge(a, b).is_ok());
  EXPECT_FALSE(g->remove_control_edge(a, b).is_ok());
}

// The walks over every node skip both lists on this answer, so it must follow additions and removals at
// both ends, and a node whose lists were emptied again has none.
TEST(GraphTest, AnyControlEdgesFollowsBothEnds) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu");
  Node* c = add(*g, "c", "Relu");
  EXPECT_FALSE(a->any_control_edges());
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  EXPECT_TRUE(a->any_control_edges());
  EXPECT_TRUE(b->any_control_edges());
  EXPECT_FALSE(c->any_control_edges());
  ASSERT_TRUE(g->add_control_edge(b, c).is_ok());
  ASSERT_TRUE(g->remove_control_edge(a, b).is_ok());
  EXPECT_FALSE(a->any_control_edges());
  EXPECT_TRUE(b->any_control_edges());  // still the source of b -> c
  ASSERT_TRUE(g->remove_control_edge(b, c).is_ok());
  EXPECT_FALSE(b->any_control_edges());
  EXPECT_FALSE(c->any_control_edges());
}

TEST(GraphTest, ReorderRequiresAPermutation) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "Data");
  Node* b = add(*g, "b", "Relu", {"a"});
  EXPECT_FALSE(g->reorder({a}).is_ok());
  EXPECT_FALSE(g->reorder({a, a}).is_ok());
  ASSERT_TRUE(g->reorder({b, a}).is_ok());
  EXPECT_EQ(b->id(), 0);
  EXPECT_EQ(a->id(), 1);
  EXPECT_EQ(testing::names(g->node_list()), (std::vector<std::string>{"b", "a"}));
  // A refusal found after some entries have moved (the repeat, or a node of another graph, comes last) puts
  // them back: the order, the ids and the name lookup are as before.
  Node* c = add(*g, "c", "Relu", {"a"});
  auto other = Graph::create("other");
  Node* stranger = add(*other, "s", "Data");
  EXPECT_FALSE(g->reorder({c, a, c}).is_ok());
  EXPECT_FALSE(g->reorder({a, c, stranger}).is_ok());
  EXPECT_EQ(testing::names(g->node_list()), (std::vector<std::string>{"b", "a", "c"}));
  EXPECT_EQ(b->id(), 0);
  EXPECT_EQ(c->id(), 2);
  EXPECT_EQ(g->find_node("c"), c);
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}

TEST(GraphTest, AttributesKeepInsertionOrderAndReplaceInPlace) {
  AttrMap m;
  m.set("z", AttrValue::Int(1));
  m.set("a", AttrValue::String("x"));
  m.set("z", AttrValue::Int(2));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.entries()[0].first, "z");
  EXPECT_EQ(m.get_int("z", 0), 2);
  EXPECT_EQ(m.get_string("a"), "x");
  EXPECT_EQ(m.get_int("a", 7), 7);  // wrong kind -> fallback
  EXPECT_TRUE(m.remove("z"));
  EXPECT_FALSE(m.has("z"));
}

// The interned-key overload shares the list with the text one: it replaces what either set, in place.
TEST(GraphTest, AttributesSetByKeyReplaceWhatTextSetAndAppendTheRest) {
  AttrMap m;
  m.set("z", AttrValue::Int(1));
  m.set("a", AttrValue::String("x"));
  const AttrKey z("z"), b("b");
  m.set(z, AttrValue::Int(5));
  m.set(b, AttrValue::Bool(true));
  m.set("b", AttrValue::Bool(false));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.entries()[0].first, "z");
  EXPECT_EQ(m.entries()[1].first, "a");
  EXPECT_EQ(m.entries()[2].first, "b");
  EXPECT_EQ(m.get_int("z", 0), 5);
  EXPECT_FALSE(m.get_bool("b", true));
  m.set(b, AttrValue::Int(3));
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.get_int("b", 0), 3);
}

// Reserving changes nothing a caller can see: names resolve, duplicates are refused and ids run on, whether
// the graph was empty, already held nodes, or had some removed.
TEST(GraphTest, ReservedNodesResolveAsGrownOnes) {
  auto g = Graph::create("g");
  g->reserve_nodes(3);
  Node* first = g->add_node("n0", "Relu", 0, 1);
  for (int i = 1; i < 40; ++i) ASSERT_NE(g->add_node("n" + std::to_string(i), "Relu", 0, 1), nullptr);
  g->remove_node(g->find_node("n5"));
  g->reserve_nodes(1000);
  for (int i = 40; i < 1040; ++i) ASSERT_NE(g->add_node("n" + std::to_string(i), "Relu", 0, 1), nullptr);
  EXPECT_EQ(g->num_nodes(), 1039u);
  EXPECT_EQ(g->find_node("n0"), first);
  EXPECT_EQ(g->find_node("n5"), nullptr);
  for (int i : {1, 39, 40, 777, 1039}) {
    Node* n = g->find_node("n" + std::to_string(i));
    ASSERT_NE(n, nullptr) << i;
    EXPECT_EQ(n->name(), "n" + std::to_string(i));
    EXPECT_EQ(n->id(), i);
  }
  EXPECT_EQ(g->add_node("n777", "Relu"), nullptr);
  EXPECT_NE(g->add_node("n5", "Relu"), nullptr);
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}

// prefetch_name is a hint: on a graph with no index yet, for names present, absent or empty, and ahead of the
// adds it is meant for, it changes nothing a caller can see.
TEST(GraphTest, PrefetchedNamesChangeNothing) {
  auto g = Graph::create("g");
  g->prefetch_name("n0");
  g->prefetch_name("");
  EXPECT_EQ(g->num_nodes(), 0u);
  EXPECT_EQ(g->find_node("n0"), nullptr);
  g->reserve_nodes(100);
  for (int i = 0; i < 100; ++i) {
    if (i + 4 < 100) g->prefetch_name("n" + std::to_string(i + 4));
    ASSERT_NE(g->add_node("n" + std::to_string(i), "Relu", 0, 1), nullptr) << i;
  }
  g->prefetch_name("n7");
  g->prefetch_name("missing");
  EXPECT_EQ(g->num_nodes(), 100u);
  EXPECT_EQ(g->find_node("n7")->id(), 7);
  EXPECT_EQ(g->find_node("missing"), nullptr);
  EXPECT_EQ(g->add_node("n7", "Relu"), nullptr);
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}
// Keys and op types are interned: equal names share one string, from any thread, and a buffer reused for
// another name (the per-thread cache is keyed by address) still gives the right one.
TEST(GraphTest, InternedKeysAndTypesAreOneStringPerName) {
  std::string buffer = "first_key_name";
  const AttrKey first(buffer);
  buffer = "other_key_name";
  const AttrKey other(buffer);
  EXPECT_EQ(first.str(), "first_key_name");
  EXPECT_EQ(other.str(), "other_key_name");
  EXPECT_EQ(&AttrKey(std::string("first_key_name")).str(), &first.str());
  EXPECT_FALSE(first == other);
  std::vector<const std::string*> seen(8);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&seen, t] {
      for (int i = 0; i < 200; ++i) {
        const AttrKey k("thread_key_" + std::to_string(i % 7));
        if (i == 199) seen[t] = &k.str();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string* s : seen) EXPECT_EQ(s, &AttrKey("thread_key_3").str());
  auto g = Graph::create("g");
  Node* a = g->add_node("a", std::string("MyCustomOperatorType"));
  Node* b = g->add_node("b", "MyCustomOperatorType");
  EXPECT_EQ(&a->type(), &b->type());
  EXPECT_EQ(a->type(), "MyCustomOperatorType");
  // Types read from a file come at a new address each time, and the cache by content must still tell apart
  // names alike in length and first and last letters.
  const std::vector<std::string> names = {"Add", "And", "Add", "Abd", "And"};
  std::vector<Node*> typed;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto text = std::make_unique<std::string>(names[i]);
    typed.push_back(g->add_node("t" + std::to_string(i), std::string_view(*text)));
  }
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(typed[i]->type(), names[i]);
  EXPECT_EQ(&typed[0]->type(), &typed[2]->type());
  EXPECT_EQ(&typed[1]->type(), &typed[4]->type());
  EXPECT_NE(&typed[0]->type(), &typed[1]->type());
}

TEST(GraphTest, TensorAttributesCompareByValue) {
  TensorDesc d;
  d.dtype = DataType::kFloat;
  d.shape = Shape({2});
  const Tensor t(d, std::string(8, '\1'));
  const AttrValue a = AttrValue::OfTensor(t), b = AttrValue::OfTensor(Tensor(d, std::string(8, '\1')));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, AttrValue::OfTensor(Tensor(d, std::string(8, '\2'))));
  ASSERT_NE(a.as_tensor(), nullptr);
  EXPECT_EQ(a.as_tensor()->bytes(), t.bytes());
  const AttrValue copy = a;  // copies share the tensor
  EXPECT_EQ(copy.as_tensor(), a.as_tensor());
}

TEST(GraphTest, TensorsShareTheirBytes) {
  TensorDesc d;
  d.dtype = DataType::kFloat;
  d.shape = Shape({2});
  Tensor t(d, std::string(8, '\1'));
  Tensor copy = t;
  EXPECT_TRUE(copy.shares_storage_with(t));
  EXPECT_EQ(copy, t);
  Tensor s = Tensor::from_strings(d, {"ab", "", "xyz"});
  std::vector<std::string> back;
  ASSERT_TRUE(s.strings(&back));
  EXPECT_EQ(back, (std::vector<std::string>{"ab", "", "xyz"}));
}

TEST(GraphTest, ShapeHelpers) {
  EXPECT_TRUE(Shape::unknown_rank().is_unknown_rank());
  EXPECT_FALSE(Shape::unknown_rank().is_static());
  EXPECT_TRUE(Shape().is_scalar());
  EXPECT_EQ(Shape({2, 3, 4}).num_elements(), 24);
  EXPECT_EQ(Shape({2, -1}).num_elements(), std::nullopt);
  EXPECT_EQ(Shape({int64_t{1} << 40, int64_t{1} << 40}).num_elements(), std::nullopt);  // overflow
  Shape s({-1, 3});
  s.set_dim_name(0, "batch");
  EXPECT_EQ(s.to_string(), "[-1(batch),3]");
  EXPECT_EQ(parse_data_type("float"), DataType::kFloat);
  EXPECT_EQ(parse_data_type("float32"), DataType::kFloat);
  EXPECT_EQ(parse_data_type("nope"), std::nullopt);
}

TEST(GraphTest, SubgraphsAreOwnedByTheRootAndRemovedWithTheirChildren) {
  auto root = Graph::create("root");
  Node* call = add(*root, "if", "If");
  Graph* then_g = root->add_subgraph("then", call);
  Graph* else_g = root->add_subgraph("else", call);
  ASSERT_NE(then_g, nullptr);
  EXPECT_EQ(root->add_subgraph("then", call), nullptr);  // duplicate name
  EXPECT_EQ(then_g->add_subgraph("x", call), nullptr);   // only the root registers
  call->attrs().set("then_branch", AttrValue::OfGraph(then_g));
  call->attrs().set("else_branch", AttrValue::OfGraph(else_g));
  Node* inner = add(*then_g, "loop", "Loop");
  Graph* body = root->add_subgraph("body", inner);
  inner->attrs().set("body", AttrValue::OfGraph(body));
  EXPECT_EQ(body->parent_graph(), then_g);
  EXPECT_EQ(body->root(), root.get());
  EXPECT_EQ(call->subgraphs(), (std::vector<Graph*>{then_g, else_g}));

  root->remove_subgraph(then_g);
  EXPECT_EQ(root->subgraphs(), (std::vector<Graph*>{else_g}));
  EXPECT_EQ(root->find_subgraph("body"), nullptr);
  EXPECT_FALSE(call->attrs().has("then_branch"));
  EXPECT_TRUE(call->attrs().has("else_branch"));
}

}  // namespace
}  // namespace graphsplit::sdk

namespace graphsplit::sdk {
namespace {

// The name index uses backward-shift deletion; random adds and removes must keep it in step with a reference
// map.
TEST(GraphTest, NameIndexSurvivesRandomAddsAndRemoves) {
  auto g = Graph::create("g");
  std::map<std::string, Node*> reference;
  std::mt19937 rng(99);
  for (int step = 0; step < 20000; ++step) {
    const std::string name = "n" + std::to_string(rng() % 3000);
    auto it = reference.find(name);
    if (it == reference.end()) {
      Node* n = g->add_node(name, "Op");
      ASSERT_NE(n, nullptr) << name;
      reference[name] = n;
    } else if (rng() % 2) {
      g->remove_node(it->second);
      reference.erase(it);
    } else {
      EXPECT_EQ(g->add_node(name, "Op"), nullptr);
    }
    if (step % 997 == 0) {
      for (int k = 0; k < 3000; ++k) {
        const std::string probe = "n" + std::to_string(k);
        auto r = reference.find(probe);
        ASSERT_EQ(g->find_node(probe), r == reference.end() ? nullptr : r->second)
            << probe << " at step " << step;
      }
    }
  }
  EXPECT_EQ(g->num_nodes(), reference.size());
}

// The index shrinks when most nodes leave (moved to a subgraph, removed in a batch or one by one): every name
// left is still found, none that left is, and the graph grows again from its smaller index.
TEST(GraphTest, NameIndexShrinksAndKeepsEveryNameFindable) {
  auto g = Graph::create("g");
  Graph* sub = g->add_subgraph("sub", g->add_node("call", "PartitionedCall"));
  std::vector<Node*> nodes;
  for (int k = 0; k < 5000; ++k) nodes.push_back(g->add_node("n" + std::to_string(k), "Op"));
  auto check = [&](size_t live_from) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      const std::string name = "n" + std::to_string(k);
      ASSERT_EQ(g->find_node(name), k >= live_from ? nodes[k] : nullptr) << name << " from " << live_from;
      ASSERT_EQ(sub->find_node(name) != nullptr, k < 4000 && k >= 3000) << name;
    }
    EXPECT_EQ(g->num_nodes(), 1 + nodes.size() - live_from);
  };
  ASSERT_TRUE(g->move_nodes_to({nodes.begin() + 3000, nodes.begin() + 4000}, sub).is_ok());
  std::fill(nodes.begin() + 3000, nodes.begin() + 4000, nullptr);  // those names are in `sub` now
  g->remove_nodes({nodes.begin(), nodes.begin() + 3000});
  check(4000);
  for (size_t k = 4000; k < 4990; ++k) g->remove_node(nodes[k]);
  check(4990);
  EXPECT_EQ(g->add_node("n4995", "Op"), nullptr);  // still a duplicate
  for (int k = 0; k < 2000; ++k) ASSERT_NE(g->add_node("m" + std::to_string(k), "Op"), nullptr);
  for (int k = 0; k < 2000; ++k) ASSERT_NE(g->find_node("m" + std::to_string(k)), nullptr);
  EXPECT_EQ(g->find_node("n4995"), nodes[4995]);
  EXPECT_EQ(g->num_nodes(), 1u + 10u + 2000u);
}

}  // namespace
}  // namespace graphsplit::sdk
