#include "graphsplit/sdk/ir/verify.h"

#include <gtest/gtest.h>

#include "test_graphs.h"

namespace graphsplit::sdk {
namespace {

using testing::add;

VerifyOptions without_edges() {
  VerifyOptions o;
  o.edges = false;
  return o;
}

// Every failure below is one a model or a pass can cause, so the importers' checks (edges off) must find it
// too, with the same message.
void expect_failure(const Graph& root, const std::string& fragment) {
  Status s = verify(root);
  ASSERT_FALSE(s.is_ok()) << "expected failure containing: " << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
  Status lighter = verify(root, without_edges());
  ASSERT_FALSE(lighter.is_ok()) << "edges off missed: " << fragment;
  EXPECT_EQ(lighter.message(), s.message());
}

Node* inner_data(Graph& g, const std::string& name, int64_t parent_index) {
  Node* d = add(g, name, "Data");
  d->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(parent_index));
  return d;
}

// root: x -> call(PartitionedCall, 1 in, 1 out) -> out; sub: Data(0) -> Relu -> NetOutput
struct CallFixture {
  std::unique_ptr<Graph> root = Graph::create("root");
  Node* call = nullptr;
  Graph* sub = nullptr;
  CallFixture() {
    add(*root, "x", "Data");
    call = add(*root, "call", "PartitionedCall", {"x"});
    add(*root, "out", "NetOutput", {"call"});
    sub = root->add_subgraph("f", call);
    call->attrs().set("f", AttrValue::OfGraph(sub));
    inner_data(*sub, "arg0", 0);
    add(*sub, "relu", "Relu", {"arg0"});
    add(*sub, "ret", "NetOutput", {"relu"});
  }
};

TEST(VerifyTest, AcceptsAWellFormedCall) {
  CallFixture f;
  Status s = verify(*f.root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  s = verify(*f.root, without_edges());
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST(VerifyTest, OptionsStillRefuseASubgraphAsRoot) {
  CallFixture f;
  Status s = verify(*f.sub, without_edges());
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "verify() takes the root graph, got 'f'");
}

TEST(VerifyTest, RejectsACycleNamingANode) {
  auto g = Graph::create("g");
  Node* a = g->add_node("a", "Relu", 1, 1);
  Node* b = g->add_node("b", "Relu", 0, 1);
  ASSERT_TRUE(g->add_edge({a, 0}, {a, 0}).is_ok());
  (void)b;
  expect_failure(*g, "has a cycle through node 'a'");
}

TEST(VerifyTest, RejectsAControlCycle) {
  auto g = Graph::create("g");
  Node* a = add(*g, "a", "NoOp");
  Node* b = add(*g, "b", "NoOp");
  ASSERT_TRUE(g->add_control_edge(a, b).is_ok());
  ASSERT_TRUE(g->add_control_edge(b, a).is_ok());
  expect_failure(*g, "has a cycle");
}

TEST(VerifyTest, RejectsAnUnreferencedSubgraph) {
  CallFixture f;
  f.root->add_subgraph("orphan", f.call);
  expect_failure(*f.root, "subgraph 'orphan' is registered but no node references it");
}

TEST(VerifyTest, RejectsASubgraphReferencedFromTheWrongNode) {
  CallFixture f;
  Node* other = add(*f.root, "other", "PartitionedCall");
  other->attrs().set("f", AttrValue::OfGraph(f.sub));
  expect_failure(*f.root,
                 "node 'other' (PartitionedCall): attribute 'f' references subgraph 'f', whose parent node "
                 "is another node");
}

TEST(VerifyTest, RejectsAPartitionedCallInputWithoutData) {
  CallFixture f;
  Node* y = add(*f.root, "y", "Data");
  int32_t extra = f.call->add_input();
  ASSERT_TRUE(f.root->add_edge({y, 0}, {f.call, extra}).is_ok());
  expect_failure(*f.root, "node 'call' (PartitionedCall): input 1 has no Data in subgraph 'f'");
}

TEST(VerifyTest, RejectsAParentIndexOutOfRange) {
  CallFixture f;
  inner_data(*f.sub, "arg7", 7);
  expect_failure(*f.root, "Data 'arg7' of subgraph 'f' has _parent_node_index 7 but the node has 1 inputs");
}

TEST(VerifyTest, RejectsAnOutputCountMismatch) {
  CallFixture f;
  f.call->add_output();
  expect_failure(*f.root, "subgraph 'f' returns 1 values but the node expects 2");
}

TEST(VerifyTest, IfBranchDataMustNotBindTheCondition) {
  auto root = Graph::create("root");
  add(*root, "cond", "Data");
  Node* iff = add(*root, "if", "If", {"cond"});
  add(*root, "out", "NetOutput", {"if"});
  Graph* then_g = root->add_subgraph("then", iff);
  Graph* else_g = root->add_subgraph("else", iff);
  iff->attrs().set("then_branch", AttrValue::OfGraph(then_g));
  iff->attrs().set("else_branch", AttrValue::OfGraph(else_g));
  for (Graph* b : {then_g, else_g}) {
    add(*b, "k", "Const");
    add(*b, "ret", "NetOutput", {"k"});
  }
  EXPECT_TRUE(verify(*root).is_ok()) << verify(*root).message();
  inner_data(*then_g, "bad", 0);
  expect_failure(*root, "Data 'bad' of subgraph 'then' has _parent_node_index 0");
}

TEST(VerifyTest, LoopBodyReturnsTheConditionToo) {
  auto root = Graph::create("root");
  add(*root, "m", "Data");
  add(*root, "c", "Data");
  add(*root, "v", "Data");
  Node* loop = add(*root, "loop", "Loop", {"m", "c", "v"});
  add(*root, "out", "NetOutput", {"loop"});
  Graph* body = root->add_subgraph("body", loop);
  loop->attrs().set("body", AttrValue::OfGraph(body));
  inner_data(*body, "i", 0);
  inner_data(*body, "cond", 1);
  inner_data(*body, "v_in", 2);
  add(*body, "ret", "NetOutput", {"cond", "v_in"});
  EXPECT_TRUE(verify(*root).is_ok()) << verify(*root).message();
  body->remove_node(body->find_node("ret"));
  add(*body, "ret", "NetOutput", {"v_in"});
  expect_failure(*root, "subgraph 'body' returns 1 values but the node expects 2");
}

TEST(VerifyTest, RejectsANonRootArgument) {
  CallFixture f;
  EXPECT_FALSE(verify(*f.sub).is_ok());
}

}  // namespace
}  // namespace graphsplit::sdk
