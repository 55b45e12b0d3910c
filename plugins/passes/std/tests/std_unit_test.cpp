#include <gtest/gtest.h>

#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/sdk/testing/graph_builder.h"
#include "std_passes.h"

namespace graphsplit::plugins::std_passes {
namespace {

using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;
using sdk::testing::TestPassContext;
using sdk::testing::TestPluginContext;

Node* add(Graph& g, const std::string& name, const std::string& type,
          const std::vector<std::string>& inputs = {}) {
  return sdk::testing::add_plain(g, name, type, inputs);
}

// Runs std.prune_unused on a graph holding x -> relu -> out, a dead chain x -> dead1 -> dead2, and a guard on
// x with a control edge into out: the dead chain goes and the rest stays, whatever the graph's order.
void expect_dead_chain_pruned(Graph& g, size_t nodes_left) {
  TestPluginContext pc("std.prune_unused");
  PruneUnused pass(pc);
  TestPassContext ctx;
  bool changed = false;
  ASSERT_TRUE(pass.run(g, ctx, &changed).is_ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(g.find_node("dead1"), nullptr);
  EXPECT_EQ(g.find_node("dead2"), nullptr);
  EXPECT_NE(g.find_node("guard"), nullptr);  // reaches the output through a control edge
  EXPECT_NE(g.find_node("relu"), nullptr);
  EXPECT_EQ(g.num_nodes(), nodes_left);
  EXPECT_EQ(ctx.messages, std::vector<std::string>{"removed 2 unused nodes"});
  ASSERT_TRUE(pass.run(g, ctx, &changed).is_ok());
  EXPECT_FALSE(changed);  // a second run has nothing left to do
  EXPECT_TRUE(sdk::verify(g).is_ok());
}

TEST(PruneUnusedTest, RemovesDeadChainsButKeepsInputsAndControlDependencies) {
  auto g = Graph::create("g");
  add(*g, "x", "Data");
  add(*g, "unused_input", "Data");
  add(*g, "relu", "Relu", {"x"});
  add(*g, "dead1", "Sigmoid", {"x"});
  add(*g, "dead2", "Exp", {"dead1"});
  Node* guard = add(*g, "guard", "NoOp", {"x"});
  Node* out = add(*g, "out", "NetOutput", {"relu"});
  ASSERT_TRUE(g->add_control_edge(guard, out).is_ok());
  expect_dead_chain_pruned(*g, 5);
  EXPECT_NE(g->find_node("unused_input"), nullptr);  // the graph's signature stays
}

// Liveness is settled from the back of the order when that order is topological; a graph whose readers come
// before their producers (the output first, the input last) is walked instead, with the same result.
TEST(PruneUnusedTest, AGraphOutOfOrderLosesTheSameNodes) {
  auto g = Graph::create("g");
  Node* out = g->add_node("out", "NetOutput", 1, 0);
  Node* relu = g->add_node("relu", "Relu", 1, 1);
  Node* dead2 = g->add_node("dead2", "Exp", 1, 1);
  Node* dead1 = g->add_node("dead1", "Sigmoid", 1, 1);
  Node* guard = g->add_node("guard", "NoOp", 1, 1);
  Node* x = g->add_node("x", "Data", 0, 1);
  for (auto [from, to] : {std::pair{x, relu}, {relu, out}, {x, dead1}, {dead1, dead2}, {x, guard}})
    ASSERT_TRUE(g->add_edge({from, 0}, {to, 0}).is_ok());
  ASSERT_TRUE(g->add_control_edge(guard, out).is_ok());
  expect_dead_chain_pruned(*g, 4);
}

// Without a NetOutput nothing is known to be unused: every node stays, in order or not.
TEST(PruneUnusedTest, AGraphWithoutAnOutputKeepsEveryNode) {
  for (bool in_order : {true, false}) {
    auto g = Graph::create("g");
    Node* x = in_order ? g->add_node("x", "Data", 0, 1) : nullptr;
    Node* relu = g->add_node("relu", "Relu", 1, 1);
    if (!in_order) x = g->add_node("x", "Data", 0, 1);
    ASSERT_TRUE(g->add_edge({x, 0}, {relu, 0}).is_ok());
    TestPluginContext pc("std.prune_unused");
    PruneUnused pass(pc);
    TestPassContext ctx;
    bool changed = true;
    ASSERT_TRUE(pass.run(*g, ctx, &changed).is_ok()) << in_order;
    EXPECT_FALSE(changed) << in_order;
    EXPECT_EQ(g->num_nodes(), 2u) << in_order;
  }
}

TEST(PruneUnusedTest, RemovesTheSubgraphsOfARemovedNode) {
  auto root = Graph::create("root");
  add(*root, "c", "Data");
  Node* dead_if = add(*root, "dead_if", "If", {"c"});
  add(*root, "out", "NetOutput", {"c"});
  for (const char* key : {"then_branch", "else_branch"}) {
    Graph* b = root->add_subgraph(std::string("dead_if_") + key, dead_if);
    dead_if->attrs().set(key, AttrValue::OfGraph(b));
    Node* k = add(*b, "k", "Const");
    Node* loop = add(*b, "loop", "Loop");
    Graph* body = root->add_subgraph(b->name() + "_body", loop);
    loop->attrs().set("body", AttrValue::OfGraph(body));
    add(*body, "one", "Const");
    add(*body, "ret", "NetOutput", {"one"});
    (void)k;
    add(*b, "ret", "NetOutput", {"k"});
  }
  ASSERT_EQ(root->subgraphs().size(), 4u);
  TestPluginContext pc("std.prune_unused");
  PruneUnused pass(pc);
  TestPassContext ctx;
  bool changed = false;
  ASSERT_TRUE(pass.run(*root, ctx, &changed).is_ok());
  EXPECT_TRUE(root->subgraphs().empty());
  EXPECT_EQ(root->find_node("dead_if"), nullptr);
  EXPECT_TRUE(sdk::verify(*root).is_ok());
}

TEST(TopologicalSortTest, FollowsTheGeOptionWhenAuto) {
  auto g = Graph::create("g");
  Node* b = g->add_node("b", "Relu", 1, 1);
  Node* a = g->add_node("a", sdk::op::kData, 0, 1);
  ASSERT_TRUE(g->add_edge({a, 0}, {b, 0}).is_ok());
  sdk::OptionValues options;
  options.set("mode", AttrValue::String("auto"));
  TestPluginContext pc("std.topological_sort", options);
  TopologicalSort pass(pc);
  sdk::OptionValues ge;
  ge.set("ge.topoSortingMode", AttrValue::String("0"));
  TestPassContext ctx({}, ge);
  bool changed = false;
  ASSERT_TRUE(pass.run(*g, ctx, &changed).is_ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(g->node_list(), (std::vector<Node*>{a, b}));
  ASSERT_TRUE(pass.run(*g, ctx, &changed).is_ok());
  EXPECT_FALSE(changed);

  ge.set("ge.topoSortingMode", AttrValue::String("9"));
  TestPassContext bad({}, ge);
  sdk::Status s = pass.run(*g, bad, &changed);
  EXPECT_NE(s.message().find("ge.topoSortingMode '9' is not 0, 1, 2 or 3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace graphsplit::plugins::std_passes
