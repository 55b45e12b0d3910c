// The multibatch plugin's passes on hand-built graphs: GE's catalogue entries for the scope pass (SCP-xx),
// the split-variable pass (SPV-xx) and the clone pass (MBC-xx) where a graph can show them. The real-model
// gear cases run through atc (tests/atc).
#include <gtest/gtest.h>

#include <cstring>

#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "multibatch_clone.h"
#include "pipeline_testing.h"
#include "scope_and_variable.h"

namespace graphsplit {
namespace {

using namespace plugins::multibatch;
using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;

Node* op(Graph& g, const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
         std::vector<int64_t> dims = {2, 3}) {
  return testing::add_op(g, name, type, inputs, testing::tensor_desc(sdk::DataType::kFloat, std::move(dims)));
}

template <class Pass>
sdk::Status run(Graph& g, sdk::testing::TestPassContext& ctx, bool* changed) {
  sdk::testing::TestPluginContext pc("pass");
  Pass pass(pc);
  return pass.run(g, ctx, changed);
}

template <class Pass>
sdk::Status run(Graph& g, bool* changed = nullptr) {
  sdk::testing::TestPassContext ctx;
  bool c = false;
  return run<Pass>(g, ctx, changed ? changed : &c);
}

// ---- scope pass

std::unique_ptr<Graph> scoped_graph() {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, {-1, 224, 224, 3});
  Node* a = op(*g, "a", "Relu", {"x"}, {-1, 224, 224, 3});
  Node* b = op(*g, "b", "Relu", {"a"}, {-1, 224, 224, 3});
  op(*g, "c", "Relu", {"b"}, {-1, 224, 224, 3});
  testing::add_net_output(*g, {"c"});
  for (Node* n : {a, b}) n->attrs().set(sdk::attr::kSubgraphMultiDimsIndex, AttrValue::Int(0));
  a->attrs().set(sdk::attr::kSubgraphMultiDimsInputShape, AttrValue::String("0:-1,224,224,3"));
  a->attrs().set(sdk::attr::kSubgraphMultiDimsInputDims, AttrValue::String("1, 2, 4"));
  return g;
}

TEST(ScopeSubgraphTest, Scp01And06AScopeBecomesOneMultiDimsCall) {
  auto g = scoped_graph();
  bool changed = false;
  ASSERT_TRUE(run<CreateSubGraphWithScope>(*g, &changed).is_ok());
  EXPECT_TRUE(changed);
  ASSERT_EQ(g->subgraphs().size(), 1u);
  const Graph* sub = g->subgraphs()[0];
  EXPECT_EQ(sub->name(), "g_scope_subgraph_0");
  EXPECT_TRUE(sub->attrs().get_bool(sdk::attr::kSubgraphIsMultiDims, false));
  EXPECT_TRUE(sub->attrs().get_bool(sdk::attr::kNoNeedDynamicShapePartition, false));
  ASSERT_NE(g->find_node("scope_partitioned_call_0"), nullptr);
  EXPECT_EQ(sub->num_nodes(), 4u);  // inner Data, a, b, NetOutput
  EXPECT_NE(sub->find_node("a"), nullptr);
  EXPECT_NE(sub->find_node("b"), nullptr);
  const Node* data = nullptr;
  for (const Node* n : sub->nodes()) {
    if (n->type() == sdk::op::kData) data = n;
  }
  ASSERT_NE(data, nullptr);
  const AttrValue* grades = data->attrs().get(sdk::attr::kOpMultiDimsInputDims);
  ASSERT_TRUE(grades && grades->as_ints());
  EXPECT_EQ(*grades->as_ints(), (std::vector<int64_t>{1, 2, 4}));
  const AttrValue* max_shape = data->attrs().get(sdk::attr::kOpMaxShape);
  ASSERT_TRUE(max_shape && max_shape->as_ints());
  EXPECT_EQ(*max_shape->as_ints(), (std::vector<int64_t>{4, 224, 224, 3}));
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}

TEST(ScopeSubgraphTest, Scp03And04ControlEdgesCrossingAScopeFail) {
  auto in = scoped_graph();
  ASSERT_TRUE(in->add_control_edge(in->find_node("x"), in->find_node("b")).is_ok());
  sdk::Status s = run<CreateSubGraphWithScope>(*in);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("control edge 'x' -> 'b' enters scope 0"), std::string::npos) << s.message();
  auto out = scoped_graph();
  ASSERT_TRUE(out->add_control_edge(out->find_node("a"), out->find_node("c")).is_ok());
  s = run<CreateSubGraphWithScope>(*out);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("control edge 'a' -> 'c' leaves scope 0"), std::string::npos) << s.message();
}

TEST(ScopeSubgraphTest, Scp13DataInAScopeAndScp12NoScopeAtAll) {
  auto g = scoped_graph();
  g->find_node("x")->attrs().set(sdk::attr::kSubgraphMultiDimsIndex, AttrValue::Int(0));
  const sdk::Status s = run<CreateSubGraphWithScope>(*g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Data 'x' has _subgraph_multi_dims_index 0"), std::string::npos) << s.message();
  auto plain = testing::opset17_root("g");
  op(*plain, "x", "Data", {});
  op(*plain, "a", "Relu", {"x"});
  testing::add_net_output(*plain, {"a"});
  bool changed = true;
  ASSERT_TRUE(run<CreateSubGraphWithScope>(*plain, &changed).is_ok());
  EXPECT_FALSE(changed);
  EXPECT_EQ(plain->num_nodes(), 3u);
}

TEST(ScopeSubgraphTest, UnequalGradesAreRefused) {
  auto g = scoped_graph();
  g->find_node("a")->attrs().set(sdk::attr::kSubgraphMultiDimsInputDims, AttrValue::String("1,2;3"));
  const sdk::Status s = run<CreateSubGraphWithScope>(*g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("every grade"), std::string::npos) << s.message();
}

// ---- split-variable pass

// var -> call(PartitionedCall) whose body casts its input twice.
std::unique_ptr<Graph> var_into_call(const std::string& var_type,
                                     const std::string& call_type = "PartitionedCall") {
  auto g = testing::opset17_root("g");
  op(*g, "var", var_type, {});
  Node* call = op(*g, "call", call_type, {"var"});
  testing::add_net_output(*g, {"call"});
  for (const std::string& branch :
       call_type == "If" ? std::vector<std::string>{"then", "else"} : std::vector<std::string>{"body"}) {
    Graph* b = g->add_subgraph(branch, call);
    call->attrs().set(branch + "_branch", AttrValue::OfGraph(b));
    op(*b, "in", "Data", {})->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(0));
    op(*b, "cast1", "Cast", {"in"});
    op(*b, "cast2", "Cast", {"in"});
    op(*b, "sum", "Add", {"cast1", "cast2"});
    testing::add_net_output(*b, {"sum"});
  }
  return g;
}

TEST(SplitVariableTest, Spv01TheVariableIsCopiedNextToItsInnerDataAndTakesItsConsumers) {
  auto g = var_into_call("Variable");
  bool changed = false;
  ASSERT_TRUE(run<SplitVariableIntoSubgraph>(*g, &changed).is_ok());
  EXPECT_TRUE(changed);
  Graph* body = g->find_subgraph("body");
  const Node* copy = body->find_node("var");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->type(), "Variable");
  EXPECT_EQ(copy->consumers(0).size(), 2u);
  EXPECT_EQ(body->find_node("cast1")->input(0).node, copy);
  ASSERT_EQ(copy->control_inputs().size(), 1u);
  EXPECT_EQ(copy->control_inputs()[0]->name(), "in");
  EXPECT_EQ(g->find_node("call")->input(0).node->name(), "var");  // the root is unchanged
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}

TEST(SplitVariableTest, Spv02ASameNamedVariableIsReused) {
  auto g = var_into_call("Variable");
  op(*g->find_subgraph("body"), "var", "Variable", {});
  ASSERT_TRUE(run<SplitVariableIntoSubgraph>(*g).is_ok());
  size_t vars = 0;
  for (const Node* n : g->find_subgraph("body")->nodes()) vars += n->type() == sdk::op::kVariable;
  EXPECT_EQ(vars, 1u);
  EXPECT_EQ(g->find_subgraph("body")->find_node("var")->consumers(0).size(), 2u);
}

TEST(SplitVariableTest, Spv03RefDataIntoIfGoesIntoBothBranches) {
  auto g = var_into_call("RefData", "If");
  ASSERT_TRUE(run<SplitVariableIntoSubgraph>(*g).is_ok());
  for (const char* b : {"then", "else"}) {
    const Node* copy = g->find_subgraph(b)->find_node("var");
    ASSERT_NE(copy, nullptr) << b;
    EXPECT_EQ(copy->type(), "RefData");
    EXPECT_EQ(copy->consumers(0).size(), 2u);
  }
}

TEST(SplitVariableTest, Spv05WhileOutputsAreReadFromTheVariable) {
  auto g = var_into_call("RefData", "While");
  op(*g, "after", "Cast", {"call"});
  ASSERT_TRUE(run<SplitVariableIntoSubgraph>(*g).is_ok());
  const Node* after = g->find_node("after");
  EXPECT_EQ(after->input(0).node->name(), "var");
  ASSERT_EQ(after->control_inputs().size(), 1u);
  EXPECT_EQ(after->control_inputs()[0]->name(), "call");
}

TEST(SplitVariableTest, Spv07AnUnknownShapeCallIsSkipped) {
  auto g = var_into_call("Variable");
  g->find_subgraph("body")->attrs().set(sdk::attr::kIsUnknownShape, AttrValue::Bool(true));
  bool changed = true;
  ASSERT_TRUE(run<SplitVariableIntoSubgraph>(*g, &changed).is_ok());
  EXPECT_FALSE(changed);
  EXPECT_EQ(g->find_subgraph("body")->find_node("var"), nullptr);
}

// ---- clone pass on a hand-built graph, with a stand-in for the host's shape inference

TEST(MultiBatchCloneTest, BuildsGesRootCaseAndBranches) {
  // x[-1,3] -> relu -> out0; x -> out1 (a direct output); w (Const) -> add(relu, w) -> out2.
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, {-1, 3})->attrs().set(sdk::attr::kIndex, AttrValue::Int(0));
  Node* w = op(*g, "w", "Const", {}, {3});
  w->attrs().set(sdk::attr::kValue,
                 AttrValue::OfTensor(sdk::Tensor(w->output_desc(0), std::string(12, '\0'))));
  op(*g, "relu", "Relu", {"x"}, {-1, 3});
  op(*g, "add", "Add", {"relu", "w"}, {-1, 3});
  testing::add_net_output(*g, {"relu", "x", "add"});
  sdk::OptionValues ge;
  ge.set("ge.inputShape", AttrValue::String("x:-1,3"));
  ge.set("ge.dynamicBatchSize", AttrValue::String("2,8"));
  sdk::testing::TestPassContext ctx({}, ge);
  ctx.infer = [](const sdk::InputDims& inputs, sdk::ValueDescs* out) {
    const int64_t b = inputs.at(0).second.at(0);
    for (const char* v : {"x", "relu", "add"})
      (*out)[v] = testing::tensor_desc(sdk::DataType::kFloat, {b, 3});
    (*out)["w"] = testing::tensor_desc(sdk::DataType::kFloat, {3});
    return sdk::Status::ok();
  };
  bool changed = false;
  ASSERT_TRUE(run<MultiBatchClone>(*g, ctx, &changed).is_ok());
  ASSERT_TRUE(changed);
  ASSERT_TRUE(sdk::verify(*g).is_ok()) << sdk::verify(*g).message();
  EXPECT_TRUE(g->attrs().get_bool(sdk::attr::kEnableDynamicBatch, false));
  const Node* c = g->find_node("ascend_mbatch_shape_case");
  ASSERT_NE(c, nullptr);
  // Inputs: the branch index from MapIndex, x, w.
  ASSERT_EQ(c->num_inputs(), 3u);
  EXPECT_EQ(c->input(0).node->type(), "MapIndex");
  EXPECT_EQ(c->input(1).node->name(), "x");
  EXPECT_EQ(c->input(2).node->name(), "w");
  // PruneDirectOutput: two Case outputs; the NetOutput reads x directly.
  EXPECT_EQ(c->num_outputs(), 2u);
  const Node* out = g->find_node("out");
  EXPECT_EQ(out->input(1).node->name(), "x");
  EXPECT_EQ(out->input(0).node, c);
  EXPECT_EQ(out->input(2).node, c);
  EXPECT_EQ(c->output_desc(0).shape.dims(), (std::vector<int64_t>{-1, 3}));
  // The shape index: a Const of every gear feeding MapIndex with the shape Data.
  const Node* table = g->find_node("ascend_mbatch_shape_const");
  ASSERT_NE(table, nullptr);
  const sdk::Tensor* t = table->attrs().get(sdk::attr::kValue)->as_tensor();
  ASSERT_NE(t, nullptr);
  int32_t values[2];
  ASSERT_EQ(t->bytes().size(), sizeof values);
  std::memcpy(values, t->bytes().data(), sizeof values);
  EXPECT_EQ(values[0], 2);
  EXPECT_EQ(values[1], 8);
  EXPECT_EQ(g->find_node("x")->output_desc(0).shape.dims(), (std::vector<int64_t>{8, 3}));
  // Branches: static, the Const as an inner Data, node names suffixed.
  const std::vector<Graph*> branches = c->subgraphs();
  ASSERT_EQ(branches.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const std::string suffix = "_ascend_mbatch_batch_" + std::to_string(i);
    const Graph& b = *branches[i];
    EXPECT_EQ(b.name(), "Batch_" + std::to_string(i));
    const Node* relu = b.find_node("relu" + suffix);
    ASSERT_NE(relu, nullptr);
    EXPECT_EQ(relu->output_desc(0).shape.dims(), (std::vector<int64_t>{i == 0 ? 2 : 8, 3}));
    const Node* inner_w = b.find_node("w" + suffix);
    ASSERT_NE(inner_w, nullptr);
    EXPECT_EQ(inner_w->type(), "Data");
    EXPECT_EQ(inner_w->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 2);
    EXPECT_FALSE(inner_w->attrs().has(sdk::attr::kValue));
    const Node* inner_out = b.find_node("out" + suffix);
    ASSERT_NE(inner_out, nullptr);
    EXPECT_EQ(inner_out->num_inputs(), 2u);
  }
  EXPECT_EQ(*c->attrs().get("_pred_value_1")->as_ints(), std::vector<int64_t>{8});
  EXPECT_EQ(c->attrs().get_int(sdk::attr::kBatchNum, 0), 2);
}

TEST(MultiBatchCloneTest, Mbc03WithoutGearsNothingHappensAndMbc18OneGearIsRefused) {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, {-1, 3});
  op(*g, "relu", "Relu", {"x"}, {-1, 3});
  testing::add_net_output(*g, {"relu"});
  bool changed = true;
  ASSERT_TRUE(run<MultiBatchClone>(*g, &changed).is_ok());
  EXPECT_FALSE(changed);
  EXPECT_EQ(g->num_nodes(), 3u);
  sdk::OptionValues ge;
  ge.set("ge.inputShape", AttrValue::String("x:-1,3"));
  ge.set("ge.dynamicBatchSize", AttrValue::String("1"));
  sdk::testing::TestPassContext ctx({}, ge);
  const sdk::Status s = run<MultiBatchClone>(*g, ctx, &changed);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("E10035", 0), 0u) << s.message();
  // The pass infers each branch itself (no host inference needed): every value of both branches is static.
  ge.set("ge.dynamicBatchSize", AttrValue::String("1,2"));
  sdk::testing::TestPassContext no_host({}, ge);
  ASSERT_TRUE(run<MultiBatchClone>(*g, no_host, &changed).is_ok());
  size_t branches = 0;
  for (const sdk::Graph* b : g->subgraphs()) {
    ++branches;
    for (const sdk::Node* n : b->nodes()) {
      for (size_t o = 0; o < n->num_outputs(); ++o)
        EXPECT_TRUE(n->output_desc(o).shape.is_static()) << n->name();
    }
  }
  EXPECT_EQ(branches, 2u);
}

}  // namespace
}  // namespace graphsplit
