// Frame building: calls, inner Data/NetOutput, control edges, order, and the verifier on random clusterings.
#include "graphsplit/sdk/partition_frames.h"

#include <gtest/gtest.h>

#include <random>

#include "graphsplit/sdk/cluster_graph.h"
#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/ir/verify.h"
#include "test_graphs.h"

namespace graphsplit::sdk {
namespace {

using testing::add;
using testing::names;

FrameSpec spec(Graph& g, const std::vector<std::string>& members, const std::string& sub,
               const std::string& call) {
  FrameSpec s;
  for (const auto& m : members) s.members.push_back(g.find_node(m));
  s.subgraph_name = sub;
  s.call_name = call;
  return s;
}

TEST(PartitionFramesTest, OneFrameInTheMiddleOfAChain) {
  auto g = Graph::create("g");
  add(*g, "x", "Data");
  add(*g, "a", "Relu", {"x"});
  add(*g, "b", "Add", {"a", "x"});  // two inputs from outside: x twice (once via a)
  add(*g, "c", "Exp", {"b"});
  add(*g, "out", "NetOutput", {"c", "a"});
  std::vector<Frame> frames;
  FrameSpec s = spec(*g, {"a", "b"}, "g_sub_0_know", "g_sub_0_know_PartitionedCall_0");
  s.call_attrs.set(sdk::attr::kIsUnknownShape, AttrValue::Bool(false));
  ASSERT_TRUE(build_frames(*g, {s}, {}, &frames).is_ok());
  ASSERT_EQ(frames.size(), 1u);
  Node* call = frames[0].call;
  Graph* sub = frames[0].subgraph;
  EXPECT_EQ(names(g->node_list()),
            (std::vector<std::string>{"x", "g_sub_0_know_PartitionedCall_0", "c", "out"}));
  // One input per consumer slot fed from outside (a's input 0 and b's input 1, both from x).
  ASSERT_EQ(call->num_inputs(), 2u);
  EXPECT_EQ(call->input(0).node->name(), "x");
  EXPECT_EQ(call->input(1).node->name(), "x");
  // One output per member output with an outside consumer: a (to out) and b (to c).
  ASSERT_EQ(call->num_outputs(), 2u);
  EXPECT_EQ(g->find_node("c")->input(0), (OutPort{call, 1}));
  EXPECT_EQ(g->find_node("out")->input(1), (OutPort{call, 0}));
  EXPECT_FALSE(call->attrs().get_bool(sdk::attr::kIsUnknownShape, true));
  EXPECT_EQ(names(sub->node_list()), (std::vector<std::string>{"g_sub_0_know_Data_0", "g_sub_0_know_Data_1",
                                                               "a", "b", "g_sub_0_know_Node_Output"}));
  EXPECT_EQ(sub->find_node("g_sub_0_know_Data_1")->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 1);
  EXPECT_EQ(sub->find_node("b")->input(1).node->name(), "g_sub_0_know_Data_1");
  Status v = verify(*g);
  EXPECT_TRUE(v.is_ok()) << v.message();
}

// A member already named as an inner Data or NetOutput would be: that node keeps its name and the inner node
// takes the next free one, as unique_node_name() gives it.
TEST(PartitionFramesTest, InnerNodesTakeTheNextNameWhenAMemberHasTheirs) {
  auto g = Graph::create("g");
  add(*g, "x", "Data");
  add(*g, "s_Data_0", "Relu", {"x"});
  add(*g, "s_Node_Output", "Exp", {"s_Data_0"});
  add(*g, "out", "NetOutput", {"s_Node_Output"});
  std::vector<Frame> frames;
  ASSERT_TRUE(build_frames(*g, {spec(*g, {"s_Data_0", "s_Node_Output"}, "s", "call")}, {}, &frames).is_ok());
  Graph* sub = frames[0].subgraph;
  EXPECT_EQ(names(sub->node_list()),
            (std::vector<std::string>{"s_Data_0_1", "s_Data_0", "s_Node_Output", "s_Node_Output_1"}));
  EXPECT_EQ(sub->find_node("s_Data_0")->input(0).node->name(), "s_Data_0_1");
  EXPECT_EQ(sub->find_node("s_Node_Output_1")->input(0).node->name(), "s_Node_Output");
  Status v = verify(*g);
  EXPECT_TRUE(v.is_ok()) << v.message();
}

TEST(PartitionFramesTest, ControlEdgesBetweenFramesBecomeCallToCall) {
  auto g = Graph::create("g");
  add(*g, "x", "Data");
  Node* a = add(*g, "a", "Relu", {"x"});
  Node* b = add(*g, "b", "Relu", {"x"});
  Node* n = add(*g, "n", "NoOp");
  add(*g, "out", "NetOutput", {"a", "b"});
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  ASSERT_TRUE(g->add_control_edge(n, a).is_ok());
  std::vector<Frame> frames;
  ASSERT_TRUE(build_frames(*g, {spec(*g, {"a"}, "s0", "call0"), spec(*g, {"b"}, "s1", "call1")}, {}, &frames)
                  .is_ok());
  Node* call0 = g->find_node("call0");
  Node* call1 = g->find_node("call1");
  EXPECT_EQ(call1->control_inputs(), std::vector<Node*>{call0});
  EXPECT_EQ(call0->control_inputs(), std::vector<Node*>{g->find_node("n")});
  // a's control edge out of its frame also holds the frame open: a -> inner NetOutput.
  Node* inner_out = frames[0].subgraph->find_node("s0_Node_Output");
  ASSERT_NE(inner_out, nullptr);
  EXPECT_EQ(inner_out->control_inputs(), std::vector<Node*>{frames[0].subgraph->find_node("a")});
  EXPECT_TRUE(verify(*g).is_ok()) << verify(*g).message();
}

TEST(PartitionFramesTest, CallsTakeAValidPlaceWhenTheFirstMemberIsTooEarly) {
  // m1 and m2 are unrelated; p (after m1) feeds m2, so the call cannot sit where m1 was.
  auto g = Graph::create("g");
  add(*g, "m1", "Const");
  add(*g, "p", "Const");
  add(*g, "m2", "Relu", {"p"});
  add(*g, "out", "NetOutput", {"m1", "m2"});
  std::vector<Frame> frames;
  ASSERT_TRUE(build_frames(*g, {spec(*g, {"m1", "m2"}, "s", "call")}, {}, &frames).is_ok());
  std::vector<Node*> order = g->node_list();
  EXPECT_TRUE(testing::is_topological(*g, order));
  EXPECT_TRUE(verify(*g).is_ok());
}

TEST(PartitionFramesTest, RejectsOverlappingAndForeignMembers) {
  auto g = Graph::create("g");
  add(*g, "a", "Relu");
  add(*g, "b", "Relu", {"a"});
  std::vector<Frame> frames;
  Status s = build_frames(*g, {spec(*g, {"a"}, "s0", "c0"), spec(*g, {"a", "b"}, "s1", "c1")}, {}, &frames);
  EXPECT_EQ(s.message(), "build_frames: node 'a' is in two frames");
}

// Random DAGs, random convex clusters from the cluster engine: the framed graph always verifies, every
// original node sits in exactly one place, and the frames' inputs/outputs match their subgraphs.
TEST(PartitionFramesTest, RandomClusteringsAlwaysVerify) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    auto g = Graph::create("g");
    const int n = 4 + static_cast<int>(rng() % 25);
    std::vector<Node*> nodes;
    for (int i = 0; i < n; ++i) {
      const int fan_in = i == 0 ? 0 : static_cast<int>(rng() % 3);
      Node* node = g->add_node("n" + std::to_string(i), fan_in ? "Op" : "Const", fan_in, 1 + rng() % 2);
      for (int k = 0; k < fan_in; ++k) {
        ASSERT_TRUE(g->add_edge({nodes[rng() % nodes.size()], static_cast<int32_t>(0)}, {node, k}).is_ok());
      }
      if (i > 2 && rng() % 5 == 0) {
        ASSERT_TRUE(g->add_control_edge(nodes[rng() % nodes.size()], node).is_ok());
      }
      nodes.push_back(node);
    }
    std::unique_ptr<ClusterGraph> cg;
    ASSERT_TRUE(ClusterGraph::build(*g, &cg).is_ok());
    for (int step = 0; step < n; ++step) {
      (void)cg->try_merge(cg->cluster_of(nodes[rng() % n]), cg->cluster_of(nodes[rng() % n]));
    }
    std::vector<FrameSpec> specs;
    for (ClusterGraph::Id c : cg->topological_order()) {
      if (rng() % 3 == 0) continue;  // some clusters stay unframed
      FrameSpec s;
      s.members = cg->members(c);
      s.subgraph_name = "s" + std::to_string(specs.size());
      s.call_name = "call" + std::to_string(specs.size());
      specs.push_back(std::move(s));
    }
    std::vector<Frame> frames;
    Status s = build_frames(*g, specs, {}, &frames);
    ASSERT_TRUE(s.is_ok()) << "trial " << trial << ": " << s.message();
    Status v = verify(*g);
    ASSERT_TRUE(v.is_ok()) << "trial " << trial << ": " << v.message();
    size_t placed = 0;
    for (const Node* x : nodes) placed += x->owner() == g.get() || g->owns_graph(x->owner());
    EXPECT_EQ(placed, nodes.size());
  }
}

}  // namespace
}  // namespace graphsplit::sdk
