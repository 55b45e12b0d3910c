// GE's JIT binary partitioner and graph builder (reference 8.2, catalogue BIN and BGB), with the one
// deliberate difference (a Data outside the inferred set is an error), and GE's option routing (EXO-03).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "graphsplit/sdk/ir/names.h"
#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/testing/graph_builder.h"
#include "import/onnx_import.h"
#include "jit/binary_partition.h"
#include "jit/inferred_set.h"
#include "jit/jit_session.h"
#include "model/om_io.h"

namespace graphsplit::jit {
namespace {

using sdk::Graph;
using sdk::Node;
using namespace sdk::testing;

sdk::TensorDesc f32(std::vector<int64_t> dims) {
  return tensor_desc(sdk::DataType::kFloat, std::move(dims));
}

Node* data(Graph& g, const std::string& name, int index, sdk::TensorDesc d = f32({2, 3})) {
  Node* n = g.add_node(name, sdk::op::kData, 0, 0);
  n->add_output(d, name);
  n->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index));
  return n;
}

std::unordered_set<const Node*> nodes_named(const Graph& g, const std::vector<std::string>& names) {
  std::unordered_set<const Node*> out;
  for (const std::string& n : names) {
    const Node* node = g.find_node(n);
    if (!node) throw std::runtime_error("no node " + n);
    out.insert(node);
  }
  return out;
}

std::vector<std::string> names_of(const Graph& g, std::string_view type = {}) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    if (type.empty() || n->type() == type) out.push_back(n->name());
  return out;
}

const Node* net_of(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->type() == sdk::op::kNetOutput) return n;
  return nullptr;
}

size_t count_type(const Graph& g, std::string_view type) {
  return names_of(g, type).size();
}

// x -> a -> b -> c -> out, y -> b.
std::unique_ptr<Graph> chain() {
  auto g = opset_root();
  data(*g, "x", 0);
  data(*g, "y", 1);
  add_op(*g, "a", "Relu", {"x"}, f32({2, 3}));
  add_op(*g, "b", "Add", {"a", "y"}, f32({2, 3}));
  add_op(*g, "c", "Neg", {"b"}, f32({2, 3}));
  add_net_output(*g, {"c"});
  return g;
}

TEST(BinaryPartitionTest, AllInferredGivesTheWholeGraphAndNoRemainder) {  // BIN-01
  auto g = chain();
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "y", "a", "b", "c"}), &p).is_ok());
  ASSERT_TRUE(p.sliced);
  EXPECT_EQ(p.remaining, nullptr);
  EXPECT_EQ(names_of(*p.sliced), names_of(*g));
  EXPECT_TRUE(p.io.empty());
}

TEST(BinaryPartitionTest, AnInferredNodeFedByAnUninferredOneIsRefused) {  // BIN-02
  auto g = chain();
  BinaryPartition p;
  sdk::Status s = binary_partition(*g, nodes_named(*g, {"x", "y", "b"}), &p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(
                "inferred node 'b' takes input 0 from 'a', which is not inferred (GRAPH_PARAM_INVALID)"),
            std::string::npos)
      << s.message();
}

TEST(BinaryPartitionTest, AControlInputFromAnUninferredNodeIsRefused) {  // BIN-03
  auto g = chain();
  add_op(*g, "side", "Relu", {"x"}, f32({2, 3}));
  ASSERT_TRUE(g->add_control_edge(g->find_node("side"), g->find_node("a")).is_ok());
  BinaryPartition p;
  sdk::Status s = binary_partition(*g, nodes_named(*g, {"x", "y", "a"}), &p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'a' has a control input from 'side'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("GRAPH_PARAM_INVALID"), std::string::npos);
}

// x, y -> n1..n4 (4 in the slice, plus a const), then r1..r6 in the remaining graph, reading two slice
// values.
std::unique_ptr<Graph> two_halves() {
  auto g = opset_root();
  data(*g, "x", 0);
  data(*g, "y", 1);
  add_op(*g, "n1", "Relu", {"x"}, f32({2, 3}));
  add_op(*g, "n2", "Relu", {"y"}, f32({2, 3}));
  add_op(*g, "n3", "Add", {"n1", "n2"}, f32({2, 3}));
  add_op(*g, "n4", "Neg", {"n3"}, f32({2, 3}));
  add_op(*g, "n5", "Neg", {"n4"}, f32({2, 3}));
  add_op(*g, "n6", "Abs", {"n2"}, f32({2, 3}));
  add_op(*g, "n7", "Exp", {"n6"}, f32({2, 3}));
  add_op(*g, "r1", "Relu", {"n5"}, f32({2, 3}));
  add_op(*g, "r2", "Add", {"r1", "n7"}, f32({2, 3}));
  add_op(*g, "r3", "Neg", {"r2"}, f32({2, 3}));
  add_op(*g, "r4", "Abs", {"r3"}, f32({2, 3}));
  add_op(*g, "r5", "Add", {"r4", "n5"}, f32({2, 3}));
  add_op(*g, "r6", "Exp", {"r5"}, f32({2, 3}));
  add_net_output(*g, {"r6"});
  return g;
}

TEST(BinaryPartitionTest, AValidCutGivesBothGraphsAndTheirLinks) {  // BIN-04
  auto g = two_halves();
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "y", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}), &p)
                  .is_ok());
  ASSERT_TRUE(p.sliced && p.remaining);
  EXPECT_EQ(p.sliced->num_nodes(), 10u);  // 9 nodes + NetOutput
  // 6 nodes, 2 Data (n5 feeds r1 and r5: one Data), the NetOutput.
  EXPECT_EQ(p.remaining->num_nodes(), 9u);
  ASSERT_EQ(p.io.size(), 2u);
  EXPECT_EQ(p.io[0], (std::pair<int32_t, int32_t>{0, 0}));
  EXPECT_EQ(p.io[1], (std::pair<int32_t, int32_t>{1, 1}));
  const Node* net = net_of(*p.sliced);
  ASSERT_TRUE(net);
  EXPECT_EQ(net->input(0).node->name(), "n5");
  EXPECT_EQ(net->input(1).node->name(), "n7");
  EXPECT_TRUE(sdk::topological_sort(*p.remaining, sdk::TopoSortMode::kDFS).is_ok());
}

TEST(BinaryPartitionTest, AnEmptyInferredSetFails) {  // BIN-05
  auto g = chain();
  BinaryPartition p;
  sdk::Status s = binary_partition(*g, {}, &p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("GRAPH_FAILED"), std::string::npos);
}

TEST(BinaryPartitionTest, ADataOutsideTheInferredSetIsAnErrorUnlikeGE) {
  auto g = chain();
  BinaryPartition p;
  sdk::Status s = binary_partition(*g, nodes_named(*g, {"x", "a"}), &p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("Data 'y' is not in the inferred set"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("E19999"), std::string::npos);
  EXPECT_EQ(p.sliced, nullptr);
}

TEST(GraphBuilderTest, NoNodesGiveNoGraph) {  // BGB-01
  auto g = chain();
  BuiltGraph b;
  ASSERT_TRUE(build_graph_from_nodes(*g, {}, &b).is_ok());
  EXPECT_EQ(b.graph, nullptr);
}

TEST(GraphBuilderTest, AllNodesGiveAnIdenticalCopy) {  // BGB-02
  auto g = chain();
  BuiltGraph b;
  ASSERT_TRUE(build_graph_from_nodes(*g, nodes_named(*g, names_of(*g)), &b).is_ok());
  ASSERT_TRUE(b.graph);
  EXPECT_EQ(names_of(*b.graph), names_of(*g));
  EXPECT_TRUE(b.inputs.empty());
  EXPECT_EQ(b.graph->find_node("b")->input(1).node->name(), "y");
}

TEST(GraphBuilderTest, EachOutsideInputBecomesItsOwnData) {  // BGB-03
  // r2, r5 and r1 read n5 (twice), n7 and n4's value: 5 consumer inputs from outside.
  auto g = two_halves();
  BuiltGraph b;
  ASSERT_TRUE(
      build_graph_from_nodes(*g, nodes_named(*g, {"r1", "r2", "r3", "r4", "r5", "r6", "out"}), &b).is_ok());
  EXPECT_EQ(count_type(*b.graph, sdk::op::kData), 3u);  // n5 -> r1, n7 -> r2, n5 -> r5
  ASSERT_EQ(b.inputs.size(), 3u);
  EXPECT_EQ(b.inputs[0].producer, "n5");
  EXPECT_EQ(b.inputs[0].consumer, "r1");
  EXPECT_EQ(b.inputs[2].consumer, "r5");
  // Without r3 and r4 as well, r5 reads r4 from outside, and r3 ... reads r2 (inside): 4 Data.
  BuiltGraph c;
  ASSERT_TRUE(build_graph_from_nodes(*g, nodes_named(*g, {"r1", "r2", "r5", "r6", "out"}), &c).is_ok());
  EXPECT_EQ(count_type(*c.graph, sdk::op::kData), 4u);
}

TEST(GraphBuilderTest, OutputsWithOutsideConsumersFeedANewNetOutput) {  // BGB-04
  auto g = two_halves();
  BuiltGraph b;
  ASSERT_TRUE(build_graph_from_nodes(*g, nodes_named(*g, {"x", "y", "n1", "n2", "n3", "n4", "n5", "n6"}), &b)
                  .is_ok());
  // n5 (r1, r5), n6 (n7), n2 (n6 is in; no), n4 (n5 in; no): n5 and n6.
  const Node* net = b.graph->find_node(sdk::op::kNetOutput);
  ASSERT_TRUE(net);
  ASSERT_EQ(net->num_inputs(), 2u);
  EXPECT_EQ(b.outputs[0].first, "n5");
  EXPECT_EQ(b.outputs[1].first, "n6");
  BuiltGraph c;
  ASSERT_TRUE(build_graph_from_nodes(*g, nodes_named(*g, {"x", "y", "n1", "n2"}), &c).is_ok());
  // n1 -> n3, n2 -> n3 and n6 (one output each): 2; x and y are consumed inside.
  EXPECT_EQ(c.graph->find_node(sdk::op::kNetOutput)->num_inputs(), 2u);
}

TEST(BinaryPartitionTest, RemainingDataIndicesFollowTheSlicedOutputs) {  // BGB-05
  auto g = two_halves();
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "y", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}), &p)
                  .is_ok());
  for (const auto& [o, i] : p.io) {
    const Node* producer = net_of(*p.sliced)->input(o).node;
    const Node* d = nullptr;
    for (const Node* n : p.remaining->nodes())
      if (n->type() == sdk::op::kData && n->attrs().get_int(sdk::attr::kIndex, -1) == i) d = n;
    ASSERT_TRUE(d);
    EXPECT_EQ(d->name(), producer->output_name(0)) << "remaining input " << i;
  }
}

// A Variable and a Const whose values the remaining graph reads.
std::unique_ptr<Graph> with_variable() {
  auto g = opset_root();
  data(*g, "x", 0);
  Node* v = g->add_node("var", sdk::op::kVariable, 0, 0);
  v->add_output(f32({2, 3}), "var");
  add_op(*g, "n1", "Add", {"x", "var"}, f32({2, 3}));
  add_op(*g, "n2", "Relu", {"n1"}, f32({2, 3}));
  add_op(*g, "n3", "Neg", {"x"}, f32({2, 3}));
  add_op(*g, "n4", "Abs", {"x"}, f32({2, 3}));
  add_op(*g, "r1", "Add", {"n2", "var"}, f32({2, 3}));
  add_op(*g, "r2", "Add", {"r1", "n3"}, f32({2, 3}));
  add_op(*g, "r3", "Add", {"r2", "n4"}, f32({2, 3}));
  add_net_output(*g, {"r3"});
  return g;
}

TEST(BinaryPartitionTest, AVariableIsCopiedIntoTheRemainingGraph) {  // BGB-06, BGB-07
  auto g = with_variable();
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "var", "n1", "n2", "n3", "n4"}), &p).is_ok());
  // Without the variable: n2, n3, n4 reach the remaining graph (3 inputs, 3 links) and var is its own node.
  EXPECT_EQ(count_type(*p.remaining, sdk::op::kData), 3u);
  EXPECT_EQ(p.io.size(), 3u);
  ASSERT_TRUE(p.remaining->find_node("var"));
  EXPECT_EQ(p.remaining->find_node("r1")->input(1).node->name(), "var");
  const Node* net = net_of(*p.sliced);
  EXPECT_EQ(net->num_inputs(), 3u);  // 4 before the variable was taken out
  ASSERT_EQ(net->control_inputs().size(), 1u);
  EXPECT_EQ(net->control_inputs()[0]->name(), "var");
}

TEST(BinaryPartitionTest, RemainingInputsOfOneSlicedValueAreMerged) {  // BGB-08
  auto g = two_halves();
  BuiltGraph b;
  ASSERT_TRUE(
      build_graph_from_nodes(*g, nodes_named(*g, {"r1", "r2", "r3", "r4", "r5", "r6", "out"}), &b).is_ok());
  EXPECT_EQ(count_type(*b.graph, sdk::op::kData), 3u);  // before merging: n5 twice
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "y", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}), &p)
                  .is_ok());
  EXPECT_EQ(count_type(*p.remaining, sdk::op::kData), 2u);
  EXPECT_EQ(p.remaining->find_node("r1")->input(0).node, p.remaining->find_node("r5")->input(1).node);
}

TEST(BinaryPartitionTest, ARemainingDataTakesItsConsumersInputDescriptor) {  // BGB-09
  auto g = opset_root();
  data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat16, {4, 1, 7}));
  add_op(*g, "n1", "Relu", {"x"}, tensor_desc(sdk::DataType::kFloat16, {4, 1, 7}));
  g->find_node("n1")->mutable_output_desc(0).format = sdk::Format::kNHWC;
  add_op(*g, "r1", "Neg", {"n1"}, tensor_desc(sdk::DataType::kFloat16, {4, 1, 7}));
  add_net_output(*g, {"r1"});
  BinaryPartition p;
  ASSERT_TRUE(binary_partition(*g, nodes_named(*g, {"x", "n1"}), &p).is_ok());
  const Node* r1 = p.remaining->find_node("r1");
  EXPECT_EQ(*r1->input_desc(0), *g->find_node("r1")->input_desc(0));
  EXPECT_EQ(r1->input_desc(0)->format, sdk::Format::kNHWC);
  EXPECT_EQ(r1->input_desc(0)->dtype, sdk::DataType::kFloat16);
}

TEST(BinaryPartitionTest, SubgraphsOfSlicedNodesAreDeepCopies) {  // BGB-10
  auto g = opset_root();
  data(*g, "x", 0);
  data(*g, "k", 1, tensor_desc(sdk::DataType::kInt32, {}));
  Node* c = g->add_node("case", sdk::op::kCase, 2, 0);
  c->add_output(f32({2, 3}), "case");
  ASSERT_TRUE(g->add_edge({g->find_node("k"), 0}, {c, 0}).is_ok());
  ASSERT_TRUE(g->add_edge({g->find_node("x"), 0}, {c, 1}).is_ok());
  Graph* branch = g->add_subgraph("branch0", c);
  c->attrs().set("branches", sdk::AttrValue::Graphs({branch}));
  Node* in = branch->add_node("b_in", sdk::op::kData, 0, 0);
  in->add_output(f32({2, 3}), "b_in");
  in->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(1));
  add_op(*branch, "b_relu", "Relu", {"b_in"}, f32({2, 3}));
  add_op(*branch, "b_neg", "Neg", {"b_relu"}, f32({2, 3}));
  add_net_output(*branch, {"b_neg"});
  add_op(*g, "after", "Relu", {"case"}, f32({2, 3}));
  add_net_output(*g, {"after"});
  BinaryPartition p;
  const sdk::Status st = binary_partition(*g, nodes_named(*g, {"x", "k", "case"}), &p);
  ASSERT_TRUE(st.is_ok()) << st.message();
  const Graph* copy = p.sliced->find_subgraph("branch0");
  ASSERT_TRUE(copy);
  EXPECT_NE(copy, branch);
  EXPECT_EQ(copy->num_nodes(), 4u);
  EXPECT_EQ(copy->parent_node(), p.sliced->find_node("case"));
  EXPECT_EQ(p.remaining->find_subgraph("branch0"), nullptr);
}

// copy_graph is exact: the copy serializes to the same .om bytes, subgraphs and all, and shares no graph.
TEST(CopyGraphTest, ACopySerializesToTheSameBytes) {
  for (const char* name :
       {"ch_PP-OCRv4_rec_infer.onnx", "silero_vad_v5.onnx", "ch_PP-OCRv4_det_infer.onnx"}) {
    std::unique_ptr<Graph> g, copy;
    ASSERT_TRUE(import_onnx_file(std::string(GRAPHSPLIT_MODEL_DIR) + "/" + name, {}, &g).is_ok()) << name;
    ASSERT_TRUE(copy_graph(*g, &copy).is_ok()) << name;
    std::string a, b;
    ASSERT_TRUE(serialize_om(*g, &a).is_ok());
    ASSERT_TRUE(serialize_om(*copy, &b).is_ok());
    EXPECT_EQ(a, b) << name;
    EXPECT_TRUE(sdk::verify(*copy).is_ok()) << name;
    for (const Graph* sg : copy->subgraphs()) EXPECT_TRUE(copy->owns_graph(sg) && !g->owns_graph(sg));
  }
}

TEST(OptionRoutingTest, FirstMiddleAndLastPointsTakeTheirOptions) {  // EXO-03
  const std::vector<std::pair<std::string, std::string>> all = {{"input_shape", "x:1,3"},
                                                                {"ge.exec.static_model_ops_lower_limit", "4"},
                                                                {"output_type", "FP32"},
                                                                {"input_format", "NCHW"}};
  auto names = [](const std::vector<std::pair<std::string, std::string>>& v) {
    std::vector<std::string> out;
    for (const auto& kv : v) out.push_back(kv.first);
    return out;
  };
  EXPECT_EQ(names(route_options(all, true, false)), names(all));
  EXPECT_EQ(names(route_options(all, true, true)), names(all));
  EXPECT_EQ(names(route_options(all, false, false)),
            (std::vector<std::string>{"ge.exec.static_model_ops_lower_limit"}));
  EXPECT_EQ(names(route_options(all, false, true)),
            (std::vector<std::string>{"ge.exec.static_model_ops_lower_limit", "output_type"}));
}

// The inferred set on hand-built graphs (GE's JIT-0x entries in graphsplit's terms).
std::vector<InputBinding> bind(std::vector<int64_t> dims) {
  InputBinding b;
  b.desc = f32(std::move(dims));
  return {b};
}

bool has_note(const InferredSet& s, const std::string& node, const std::string& text) {
  for (const SliceNote& n : s.notes)
    if (n.node == node && n.reason.find(text) != std::string::npos) return true;
  return false;
}

std::unique_ptr<Graph> nonzero_then_cast() {
  auto g = opset_root();
  data(*g, "x", 0, f32({-1, 3}));
  add_op(*g, "nz", "NonZero", {"x"}, tensor_desc(sdk::DataType::kInt64, {2, -1}));
  add_op(*g, "cast", "Cast", {"nz"}, f32({2, -1}))->attrs().set("to", sdk::AttrValue::Int(1));
  add_op(*g, "relu", "Relu", {"cast"}, f32({2, -1}));
  add_net_output(*g, {"relu"});
  return g;
}

TEST(InferredSetTest, ANodeWithoutAShapeRuleIsPulledWithItsConsumers) {  // JIT-03, JIT-07..09
  auto g = opset_root();
  data(*g, "x", 0, f32({-1, 3}));
  add_op(*g, "mine", "MyOwnOp", {"x"}, sdk::TensorDesc{});
  add_op(*g, "mine2", "MyOwnOp", {"mine"}, sdk::TensorDesc{});
  add_op(*g, "relu", "Relu", {"mine2"}, sdk::TensorDesc{});
  add_net_output(*g, {"relu"});
  InferredSet s;
  ASSERT_TRUE(compute_inferred_set(*g, bind({2, 3}), CutPolicy::kAuto, {}, &s).is_ok());
  EXPECT_EQ(s.waiting, 0u);
  EXPECT_TRUE(s.cuts.empty());
  EXPECT_EQ(s.nodes.size(), 4u);  // x, mine, mine2, relu
  EXPECT_TRUE(has_note(s, "mine", "no shape rule (GE: no callback registered)"));
}

TEST(InferredSetTest, ADataDependentSizeCutsAndItsConsumersWait) {  // JIT-01
  auto g = nonzero_then_cast();
  InferredSet s;
  ASSERT_TRUE(compute_inferred_set(*g, bind({2, 3}), CutPolicy::kAuto, {}, &s).is_ok());
  EXPECT_EQ(s.cuts, (std::vector<std::string>{"nz"}));
  EXPECT_EQ(s.nodes, nodes_named(*g, {"x", "nz"}));
  EXPECT_EQ(s.waiting, 2u);
  EXPECT_TRUE(has_note(s, "nz", "cut: data-dependent output int64[2,"));
  EXPECT_TRUE(has_note(s, "cast", "waits for the values of a cut"));
}

TEST(InferredSetTest, PolicyNeverAndACollapsedCutKeepEverythingInTheSlice) {
  auto g = nonzero_then_cast();
  InferredSet never, collapsed;
  ASSERT_TRUE(compute_inferred_set(*g, bind({2, 3}), CutPolicy::kNever, {}, &never).is_ok());
  EXPECT_EQ(never.waiting, 0u);
  EXPECT_TRUE(has_note(never, "nz", "cut policy never"));
  ASSERT_TRUE(compute_inferred_set(*g, bind({2, 3}), CutPolicy::kAuto, {"nz"}, &collapsed).is_ok());
  EXPECT_EQ(collapsed.waiting, 0u);
  EXPECT_TRUE(has_note(collapsed, "nz", "cut collapsed"));
}

TEST(InferredSetTest, AnInputLeftDynamicIsPulledNotCut) {
  auto g = nonzero_then_cast();
  InferredSet s;
  ASSERT_TRUE(compute_inferred_set(*g, bind({-1, 3}), CutPolicy::kAuto, {}, &s).is_ok());
  EXPECT_EQ(s.waiting, 0u);  // NonZero of a dynamic input is already dynamic: no cut buys anything
  EXPECT_TRUE(has_note(s, "x", "input left dynamic"));
}

TEST(InferredSetTest, ValueInputsAreThoseReachingAShapeThroughShapeArithmetic) {
  auto g = opset_root();
  data(*g, "x", 0, f32({-1, 3}));
  data(*g, "rows", 1, tensor_desc(sdk::DataType::kInt64, {1}));
  data(*g, "ids", 2, tensor_desc(sdk::DataType::kInt64, {4}));
  Node* c = g->add_node("three", sdk::op::kConst, 0, 0);
  c->add_output(tensor_desc(sdk::DataType::kInt64, {1}), "three");
  add_op(*g, "target", "Concat", {"rows", "three"}, tensor_desc(sdk::DataType::kInt64, {2}))
      ->attrs()
      .set("axis", sdk::AttrValue::Int(0));
  add_op(*g, "reshaped", "Reshape", {"x", "target"}, f32({-1, 3}));
  add_op(*g, "gathered", "Gather", {"reshaped", "ids"}, f32({4, 3}));
  add_net_output(*g, {"gathered"});
  EXPECT_EQ(value_inputs(*g), (std::vector<bool>{false, true, false}));  // ids are data, not a shape
}

// Random DAGs: for random upstream-closed sets, the two graphs partition the nodes, every remaining input is
// fed by a sliced output, both graphs are acyclic, and the result does not depend on node creation order.
std::unique_ptr<Graph> random_dag(uint32_t seed, int n, bool reversed_creation) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int>> preds(n);
  for (int i = 2; i < n; ++i) {
    const int k = 1 + static_cast<int>(rng() % 2);
    for (int j = 0; j < k; ++j) preds[i].push_back(static_cast<int>(rng() % i));
  }
  auto g = opset_root();
  data(*g, "v0", 0);
  data(*g, "v1", 1);
  std::vector<int> order;
  for (int i = 2; i < n; ++i) order.push_back(i);
  if (reversed_creation) std::reverse(order.begin(), order.end());
  for (int i : order) {
    Node* node = g->add_node("v" + std::to_string(i), "Add", preds[i].size(), 0);
    node->add_output(f32({2, 3}), "v" + std::to_string(i));
  }
  for (int i = 2; i < n; ++i)
    for (size_t j = 0; j < preds[i].size(); ++j)
      EXPECT_TRUE(g->add_edge({g->find_node("v" + std::to_string(preds[i][j])), 0},
                              {g->find_node("v" + std::to_string(i)), static_cast<int32_t>(j)})
                      .is_ok());
  add_net_output(*g, {"v" + std::to_string(n - 1)});
  return g;
}

TEST(BinaryPartitionTest, RandomDagsSplitIntoClosedAcyclicHalves) {
  for (uint32_t seed = 1; seed <= 25; ++seed) {
    const int n = 30;
    std::mt19937 rng(seed * 7919);
    const int cut = 2 + static_cast<int>(rng() % (n - 3));
    std::vector<std::string> names_a, names_b;
    for (bool reversed : {false, true}) {
      auto g = random_dag(seed, n, reversed);
      // Upstream-closed: v0..v{cut} (every predecessor has a smaller number).
      std::vector<std::string> in;
      for (int i = 0; i <= cut; ++i) in.push_back("v" + std::to_string(i));
      BinaryPartition p;
      ASSERT_TRUE(binary_partition(*g, nodes_named(*g, in), &p).is_ok()) << "seed " << seed;
      std::vector<std::string> seen;
      for (const Node* x : p.sliced->nodes())
        if (x->type() == "Add" || x->type() == sdk::op::kData) seen.push_back(x->name());
      ASSERT_TRUE(p.remaining);
      size_t remaining_ops = 0;
      for (const Node* x : p.remaining->nodes())
        if (x->type() == "Add") {
          seen.push_back(x->name());
          ++remaining_ops;
        }
      std::sort(seen.begin(), seen.end());
      EXPECT_EQ(seen.size(), static_cast<size_t>(n)) << "seed " << seed;
      EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
      EXPECT_EQ(remaining_ops, static_cast<size_t>(n - cut - 1));
      std::vector<Node*> order;
      EXPECT_TRUE(sdk::topological_order(*p.sliced, sdk::TopoSortMode::kDFS, &order).is_ok());
      EXPECT_TRUE(sdk::topological_order(*p.remaining, sdk::TopoSortMode::kDFS, &order).is_ok());
      for (const auto& [o, i] : p.io) {
        EXPECT_LT(static_cast<size_t>(o), net_of(*p.sliced)->num_inputs());
        EXPECT_GE(i, 0);
      }
      std::vector<std::string>& names = reversed ? names_b : names_a;
      for (const Node* x : p.remaining->nodes()) names.push_back(x->name());
      std::sort(names.begin(), names.end());
    }
    EXPECT_EQ(names_a, names_b) << "seed " << seed;
  }
}

}  // namespace
}  // namespace graphsplit::jit
