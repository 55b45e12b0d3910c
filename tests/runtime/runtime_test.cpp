// The runtime's own rules, on hand-built graphs: arena planning and reuse, results that survive later runs,
// engines binding only their op table, PartitionedCall expansion with its control edges, Case and Loop.
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "config/config.h"
#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/ir/verify.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"
#include "support/pipeline_testing.h"

namespace graphsplit::testing {
namespace {

sdk::Tensor floats(std::vector<int64_t> dims, std::vector<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return sdk::Tensor(tensor_desc(sdk::DataType::kFloat, std::move(dims)), bytes);
}

std::vector<float> values(const sdk::Tensor& t) {
  std::vector<float> v(t.size_bytes() / 4);
  std::memcpy(v.data(), t.data(), t.size_bytes());
  return v;
}

// A root input: Data `name` of this type, the `index`th input.
sdk::Node* add_input(sdk::Graph& g, const std::string& name, sdk::TensorDesc desc, int64_t index) {
  sdk::Node* n = g.add_node(name, sdk::op::kData, 0, 0);
  n->add_output(std::move(desc), name);
  n->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index));
  return n;
}

void add_const(sdk::Graph& g, const std::string& name, const sdk::Tensor& t) {
  sdk::Node* c = g.add_node(name, sdk::op::kConst, 0, 0);
  c->add_output(t.desc(), name);
  c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(t));
}

// The node, placed on `engine` as atc would have placed it.
sdk::Node* placed(sdk::Node* n, const std::string& engine) {
  n->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String(engine));
  return n;
}

// x -> Relu x `n` -> out, every value float32[shape].
std::unique_ptr<sdk::Graph> relu_chain(int n, std::vector<int64_t> shape, const std::string& engine) {
  auto g = opset17_root();
  add_input(*g, "x", tensor_desc(sdk::DataType::kFloat, shape), 0);
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    const std::string name = "relu" + std::to_string(i);
    placed(add_op(*g, name, "Relu", {prev}, tensor_desc(sdk::DataType::kFloat, shape)), engine);
    prev = name;
  }
  add_net_output(*g, {prev});
  return g;
}

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PipelineConfig config;
    std::vector<Diagnostic> diags;
    ASSERT_TRUE(parse_pipeline_config(GRAPHSPLIT_DEFAULT_PIPELINE, &config, &diags).is_ok());
    PipelineSettings settings;
    settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
    sdk::Status s = Pipeline::create(config, settings, &engines_, &diags);
    ASSERT_TRUE(s.is_ok()) << s.message();
  }

  sdk::Status open(std::unique_ptr<sdk::Graph> g, std::unique_ptr<Runtime>* rt, RuntimeOptions options = {}) {
    return Runtime::create(
        std::move(g), "test", [this](const std::string& n) { return engines_->find_engine(n); }, options, rt);
  }

  std::unique_ptr<Pipeline> engines_;
};

TEST_F(RuntimeTest, StaticSegmentsReuseOneArena) {
  std::unique_ptr<Runtime> rt;
  setenv("GRAPHSPLIT_FUSE_ELEMENTWISE", "0", 1);  // fused, the chain has no intermediate value at all
  ASSERT_TRUE(open(relu_chain(10, {1000}, "AIcoreEngine"), &rt).is_ok());
  unsetenv("GRAPHSPLIT_FUSE_ELEMENTWISE");
  std::unique_ptr<Runtime> fused;
  ASSERT_TRUE(open(relu_chain(10, {1000}, "AIcoreEngine"), &fused).is_ok());
  EXPECT_EQ(fused->segment_stats()[0].arena_bytes, 0);
  ASSERT_EQ(rt->segment_stats().size(), 1u);
  const SegmentStats& s = rt->segment_stats()[0];
  EXPECT_TRUE(s.static_shape);
  EXPECT_EQ(s.nodes, 10u);
  // Nine intermediates of 4,000 bytes (the result lives apart): two live at a time, so two slots.
  EXPECT_GT(s.arena_bytes, 0);
  EXPECT_LE(s.arena_bytes, 2 * 4032);
}

TEST_F(RuntimeTest, DynamicSegmentsHaveNoArena) {
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(relu_chain(3, {-1}, "AIcoreEngine"), &rt).is_ok());
  ASSERT_EQ(rt->segment_stats().size(), 1u);
  EXPECT_FALSE(rt->segment_stats()[0].static_shape);
  EXPECT_EQ(rt->segment_stats()[0].arena_bytes, -1);
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(rt->run({floats({3}, {-1, 2, -3})}, &out).is_ok());
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 0}));
}

// Found by fuzzing om_run: a declared static shape too large to plan overflowed the arena arithmetic. Such a
// segment now runs as dynamic, with the real shapes.
TEST_F(RuntimeTest, AbsurdDeclaredShapesAreNotPlanned) {
  auto g = relu_chain(2, {-1}, "AIcoreEngine");
  g->find_node("relu0")->mutable_output_desc(0).shape = sdk::Shape({int64_t{1} << 40, int64_t{1} << 22});
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  EXPECT_EQ(rt->segment_stats()[0].arena_bytes, -1);
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(rt->run({floats({3}, {-1, 2, -3})}, &out).is_ok());
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 2, 0}));
}

// GRAPHSPLIT_CHECK_SHAPES: a kernel output that differs from the shape inference wrote fails the run, naming
// the node and both shapes (what makes the node tests a proof of the shape rules).
TEST_F(RuntimeTest, ShapeCheckCatchesAWrongCompileTimeShape) {
  setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);
  auto g = relu_chain(2, {-1}, "AIcoreEngine");
  g->find_node("relu0")->mutable_output_desc(0).shape = sdk::Shape({4});
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  std::vector<sdk::Tensor> out;
  sdk::Status s = rt->run({floats({3}, {-1, 2, -3})}, &out);
  unsetenv("GRAPHSPLIT_CHECK_SHAPES");
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'relu0' (Relu): output 0 has shape [3] but shape inference said [4]"),
            std::string::npos)
      << s.message();
}

TEST_F(RuntimeTest, ShapeCheckEvaluatesSymbolicDimensions) {
  setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);
  auto g = relu_chain(2, {-1}, "AIcoreEngine");
  g->find_node("relu0")->mutable_output_desc(0).shape.set_dim_names({"n"});
  g->find_node("relu1")->mutable_output_desc(0).shape.set_dim_names({"2*n"});  // wrong: Relu keeps the size
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  std::vector<sdk::Tensor> out;
  sdk::Status s = rt->run({floats({3}, {-1, 2, -3})}, &out);
  unsetenv("GRAPHSPLIT_CHECK_SHAPES");
  EXPECT_NE(
      s.message().find("node 'relu1' (Relu): output 0 has shape [3] but shape inference said [-1(2*n)]"),
      std::string::npos)
      << s.message();
}

// Found by fuzzing om_run: a root Data without an output was read as if it had one.
TEST_F(RuntimeTest, ARootDataWithoutAnOutputIsRefused) {
  auto g = relu_chain(1, {4}, "AIcoreEngine");
  sdk::Node* extra = g->add_node("extra", sdk::op::kData, 0, 0);
  extra->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(1));
  std::unique_ptr<Runtime> rt;
  sdk::Status s = open(std::move(g), &rt);
  EXPECT_EQ(s.message(), "test: root Data 'extra' has 0 outputs instead of 1");
}

TEST_F(RuntimeTest, ResultsSurviveLaterRuns) {
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(relu_chain(4, {4}, "AIcoreEngine"), &rt).is_ok());
  std::vector<sdk::Tensor> first, second;
  ASSERT_TRUE(rt->run({floats({4}, {1, -2, 3, -4})}, &first).is_ok());
  ASSERT_TRUE(rt->run({floats({4}, {-5, 6, -7, 8})}, &second).is_ok());
  EXPECT_EQ(values(first[0]), (std::vector<float>{1, 0, 3, 0}));
  EXPECT_EQ(values(second[0]), (std::vector<float>{0, 6, 0, 8}));
}

TEST_F(RuntimeTest, AnEngineCompilesOnlyItsOwnOperators) {
  // DVPP's op table has no Relu.
  std::unique_ptr<Runtime> rt;
  sdk::Status s = open(relu_chain(2, {4}, "DNN_VM_DVPP"), &rt);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("engine DNN_VM_DVPP does not declare operator Relu"), std::string::npos)
      << s.message();
  s = open(relu_chain(2, {4}, "NoSuchEngine"), &rt);
  EXPECT_NE(s.message().find("is placed on engine NoSuchEngine, which is not loaded"), std::string::npos)
      << s.message();
}

TEST_F(RuntimeTest, SegmentsFollowEngineChanges) {
  auto g = relu_chain(4, {4}, "AIcoreEngine");
  g->find_node("relu2")->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String("DNN_VM_AICPU"));
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  ASSERT_EQ(rt->segment_stats().size(), 3u);
  EXPECT_EQ(rt->segment_stats()[1].engine, "DNN_VM_AICPU");
  EXPECT_EQ(rt->segment_stats()[1].nodes, 1u);
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(rt->run({floats({4}, {1, -2, 3, -4})}, &out).is_ok());
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 0, 3, 0}));
  EXPECT_EQ(rt->segment_stats()[1].calls, 1u);
}

// Inputs a, u (read by nothing) and b; d = Sub(b, a) and r = Relu(d), both outputs: one AI Core segment.
std::unique_ptr<sdk::Graph> sub_relu() {
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {3});
  add_input(*g, "a", d, 0);
  add_input(*g, "u", d, 1);
  add_input(*g, "b", d, 2);
  placed(add_op(*g, "d", "Sub", {"b", "a"}, d), "AIcoreEngine");
  placed(add_op(*g, "r", "Relu", {"d"}, d), "AIcoreEngine");
  return g;
}

// A root that is one segment is compiled as it is (no copy): its inputs go to the engine in Data index order,
// the unread one included, and its outputs in NetOutput order. Roots that are more than one segment, or whose
// outputs include an input, are copied, with the same results.
TEST_F(RuntimeTest, ARootOfOneSegmentIsCompiledAsItIs) {
  const std::vector<sdk::Tensor> in = {floats({3}, {1, 2, 3}), floats({3}, {7, 7, 7}),
                                       floats({3}, {5, 1, 3})};
  const std::vector<float> d = {4, -1, 0}, r = {4, 0, 0};
  auto whole = sub_relu();
  add_net_output(*whole, {"r", "d", "r"});
  auto echo = sub_relu();
  add_net_output(*echo, {"r", "d", "u"});
  auto split = sub_relu();
  split->find_node("r")->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String("DNN_VM_AICPU"));
  add_net_output(*split, {"r", "d"});
  std::unique_ptr<Runtime> a, b, c;
  ASSERT_TRUE(open(std::move(whole), &a).is_ok());
  ASSERT_TRUE(open(std::move(echo), &b).is_ok());
  ASSERT_TRUE(open(std::move(split), &c).is_ok());
  ASSERT_EQ(a->segment_stats().size(), 1u);
  EXPECT_TRUE(a->segment_stats()[0].whole_graph);
  EXPECT_EQ(a->segment_stats()[0].nodes, 2u);
  ASSERT_EQ(b->segment_stats().size(), 1u);
  EXPECT_FALSE(b->segment_stats()[0].whole_graph);
  ASSERT_EQ(c->segment_stats().size(), 2u);
  EXPECT_FALSE(c->segment_stats()[0].whole_graph);
  for (int run = 0; run < 2; ++run) {
    std::vector<sdk::Tensor> out_a, out_b, out_c;
    ASSERT_TRUE(a->run(in, &out_a).is_ok());
    ASSERT_TRUE(b->run(in, &out_b).is_ok());
    ASSERT_TRUE(c->run(in, &out_c).is_ok());
    ASSERT_EQ(out_a.size(), 3u);
    EXPECT_EQ(values(out_a[0]), r);
    EXPECT_EQ(values(out_a[1]), d);
    EXPECT_EQ(values(out_a[2]), r);
    ASSERT_EQ(out_b.size(), 3u);
    EXPECT_EQ(values(out_b[0]), r);
    EXPECT_EQ(values(out_b[1]), d);
    EXPECT_EQ(values(out_b[2]), (std::vector<float>{7, 7, 7}));
    ASSERT_EQ(out_c.size(), 2u);
    EXPECT_EQ(values(out_c[0]), r);
    EXPECT_EQ(values(out_c[1]), d);
  }
  std::vector<sdk::Tensor> out;
  const sdk::Status s = a->run({in[0], in[1]}, &out);
  EXPECT_FALSE(s.is_ok());
}

// x -> Relu x 3 (AI Core) and x -> Relu x 3 (AI CPU) -> Add (AI Core), and idx -> Gather(x, idx) (AI CPU):
// four segments, of which the two Relu chains and the Gather are independent.
std::unique_ptr<sdk::Graph> two_branches() {
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {4});
  add_input(*g, "x", d, 0);
  add_input(*g, "idx", tensor_desc(sdk::DataType::kInt64, {1}), 1);
  for (const char* branch : {"a", "b"}) {
    std::string prev = "x";
    for (int i = 0; i < 3; ++i) {
      const std::string name = std::string(branch) + std::to_string(i);
      placed(add_op(*g, name, "Relu", {prev}, d), *branch == 'a' ? "AIcoreEngine" : "DNN_VM_AICPU");
      prev = name;
    }
  }
  placed(add_op(*g, "sum", "Add", {"a2", "b2"}, d), "AIcoreEngine");
  placed(add_op(*g, "pick", "Gather", {"x", "idx"}, tensor_desc(sdk::DataType::kFloat, {1})), "DNN_VM_AICPU");
  add_net_output(*g, {"sum", "pick"});
  return g;
}

// Independent segments run at once give the results, and the errors, of the same segments run one by one.
TEST_F(RuntimeTest, IndependentSegmentsRunAtOnceWithTheSameResults) {
  kernels::set_blas_threads(2);  // a budget to share
  std::unique_ptr<Runtime> at_once, in_order;
  RuntimeOptions always, never;
  always.concurrency = RuntimeOptions::Concurrency::kAlways;
  never.concurrency = RuntimeOptions::Concurrency::kNever;
  ASSERT_TRUE(open(two_branches(), &at_once, always).is_ok());
  ASSERT_TRUE(open(two_branches(), &in_order, never).is_ok());
  ASSERT_EQ(at_once->segment_stats().size(), 4u);
  const sdk::Tensor x = floats({4}, {1, -2, 3, -4});
  sdk::Tensor idx(tensor_desc(sdk::DataType::kInt64, {1}), std::string(8, '\0'));
  const int64_t two = 2;
  std::memcpy(const_cast<char*>(idx.data()), &two, 8);
  for (int run = 0; run < 3; ++run) {
    std::vector<sdk::Tensor> a, b;
    ASSERT_TRUE(at_once->run({x, idx}, &a).is_ok());
    ASSERT_TRUE(in_order->run({x, idx}, &b).is_ok());
    EXPECT_EQ(values(a[0]), (std::vector<float>{2, 0, 6, 0}));
    EXPECT_EQ(values(a[1]), (std::vector<float>{3}));
    EXPECT_EQ(values(b[0]), values(a[0]));
  }
  ASSERT_EQ(at_once->concurrency_stats().size(), 1u);
  EXPECT_EQ(at_once->concurrency_stats()[0].steps, 4u);
  EXPECT_EQ(at_once->concurrency_stats()[0].concurrent_runs, 3u);
  EXPECT_EQ(in_order->concurrency_stats()[0].concurrent_runs, 0u);
  EXPECT_NE(at_once->timing_summary().find("4 steps        3 runs at once   always"), std::string::npos)
      << at_once->timing_summary();
  // An index out of range fails the Gather's segment while the others run: the same one-line error.
  const int64_t nine = 9;
  std::memcpy(const_cast<char*>(idx.data()), &nine, 8);
  std::vector<sdk::Tensor> out;
  const sdk::Status e1 = at_once->run({x, idx}, &out), e2 = in_order->run({x, idx}, &out);
  EXPECT_FALSE(e1.is_ok());
  EXPECT_EQ(e1.message(), e2.message());
  EXPECT_NE(e1.message().find("node 'pick' (Gather)"), std::string::npos) << e1.message();
  kernels::set_blas_threads(0);
}

// With one thread there is nothing to share: the steps run one after another whatever the option.
TEST_F(RuntimeTest, OneThreadRunsStepsInOrder) {
  kernels::set_blas_threads(1);
  std::unique_ptr<Runtime> rt;
  RuntimeOptions always;
  always.concurrency = RuntimeOptions::Concurrency::kAlways;
  ASSERT_TRUE(open(two_branches(), &rt, always).is_ok());
  sdk::Tensor idx(tensor_desc(sdk::DataType::kInt64, {1}), std::string(8, '\0'));
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(rt->run({floats({4}, {1, -2, 3, -4}), idx}, &out).is_ok());
  EXPECT_EQ(values(out[1]), (std::vector<float>{1}));
  EXPECT_EQ(rt->concurrency_stats()[0].concurrent_runs, 0u);
  kernels::set_blas_threads(0);
}

// A control edge orders two steps that share no value: with it, they are one chain and never run at once.
TEST_F(RuntimeTest, ControlEdgesOrderSteps) {
  auto side_by_side = [](bool ordered) {
    auto g = opset17_root();
    const auto d = tensor_desc(sdk::DataType::kFloat, {4});
    add_input(*g, "x", d, 0);
    sdk::Node* a = placed(add_op(*g, "a", "Relu", {"x"}, d), "AIcoreEngine");
    sdk::Node* b = placed(add_op(*g, "b", "Neg", {"x"}, d), "DNN_VM_AICPU");
    if (ordered) {
      EXPECT_TRUE(g->add_control_edge(a, b).is_ok());
    }
    add_net_output(*g, {"a", "b"});
    return g;
  };
  std::unique_ptr<Runtime> free, chained;
  ASSERT_TRUE(open(side_by_side(false), &free).is_ok());
  ASSERT_TRUE(open(side_by_side(true), &chained).is_ok());
  EXPECT_EQ(free->concurrency_stats().size(), 1u);
  EXPECT_TRUE(chained->concurrency_stats().empty());
}

// root: x -> call(f: Data -> Relu -> Neg -> NetOutput) -> out, with control edges into and out of the call.
std::unique_ptr<sdk::Graph> graph_with_call() {
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {3});
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 0);
  x->add_output(d, "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  sdk::Node* before = add_op(*g, "before", "Abs", {"x"}, d);
  before->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String("AIcoreEngine"));
  sdk::Node* call = g->add_node("call", sdk::op::kPartitionedCall, 1, 0);
  call->add_output(d, "y");
  EXPECT_TRUE(g->add_edge({x, 0}, {call, 0}).is_ok());
  sdk::Graph* f = g->add_subgraph("f", call);
  call->attrs().set("f", sdk::AttrValue::OfGraph(f));
  sdk::Node* in = f->add_node("f_in", sdk::op::kData, 0, 0);
  in->add_output(d);
  in->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  in->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(0));
  add_op(*f, "relu", "Relu", {"f_in"}, d)
      ->attrs()
      .set(sdk::attr::kOpEngineName, sdk::AttrValue::String("AIcoreEngine"));
  add_op(*f, "neg", "Neg", {"relu"}, d)
      ->attrs()
      .set(sdk::attr::kOpEngineName, sdk::AttrValue::String("AIcoreEngine"));
  add_net_output(*f, {"neg"});
  sdk::Node* after = add_op(*g, "after", "Abs", {"call"}, d);
  after->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String("AIcoreEngine"));
  EXPECT_TRUE(g->add_control_edge(before, call).is_ok());
  sdk::Node* out = g->add_node("out", sdk::op::kNetOutput, 2, 0);
  EXPECT_TRUE(g->add_edge({call, 0}, {out, 0}).is_ok());
  EXPECT_TRUE(g->add_edge({after, 0}, {out, 1}).is_ok());
  EXPECT_TRUE(g->add_control_edge(call, after).is_ok());
  return g;
}

TEST_F(RuntimeTest, ExpansionTransfersOutputsAndControlEdges) {
  auto g = graph_with_call();
  ASSERT_TRUE(sdk::verify(*g).is_ok());
  size_t expanded = 0;
  sdk::Status s = expand_partitioned_calls(*g, &expanded);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(expanded, 1u);
  EXPECT_TRUE(g->subgraphs().empty());
  EXPECT_EQ(g->find_node("call"), nullptr);
  sdk::Node* pre = g->find_node("call_pre_noop");
  sdk::Node* post = g->find_node("call_post_noop");
  ASSERT_TRUE(pre && post);
  sdk::Node* relu = g->find_node("relu");
  sdk::Node* neg = g->find_node("neg");
  ASSERT_TRUE(relu && neg);
  EXPECT_EQ(relu->input(0).node, g->find_node("x"));  // inner Data consumers read the call's input
  // In-control edge to pre_noop (GE drops it), pre_noop before the inner consumers, out-control from
  // post_noop.
  EXPECT_EQ(pre->control_inputs(), std::vector<sdk::Node*>{g->find_node("before")});
  EXPECT_EQ(pre->control_outputs(), std::vector<sdk::Node*>{relu});
  EXPECT_EQ(post->control_outputs(), std::vector<sdk::Node*>{g->find_node("after")});
  // The call's data outputs now come from the inner producer (GE drops them too).
  EXPECT_EQ(g->find_node("after")->input(0).node, neg);
  EXPECT_EQ(g->find_node("out")->input(0).node, neg);
}

TEST_F(RuntimeTest, ExpansionRefusesANameTakenInTheParent) {
  auto g = graph_with_call();
  add_op(*g, "neg", "Neg", {"x"}, tensor_desc(sdk::DataType::kFloat, {3}));  // the body also has a 'neg'
  size_t expanded = 0;
  sdk::Status s = expand_partitioned_calls(*g, &expanded);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(
                "cannot expand PartitionedCall 'call': its node 'neg' has the name of a node of graph"),
            std::string::npos)
      << s.message();
  // Refused before anything changed.
  EXPECT_NE(g->find_node("call"), nullptr);
  EXPECT_EQ(g->find_node("call_pre_noop"), nullptr);
  EXPECT_EQ(g->subgraphs().size(), 1u);
}

// The subgraph `sub_name` of `call`, registered on `root`: its Data reads the call's input 0 and feeds one
// Relu named `op`, which it returns.
sdk::Graph* add_relu_body(sdk::Graph& root, sdk::Node* call, const std::string& sub_name,
                          const std::string& op, const sdk::TensorDesc& d) {
  sdk::Graph* f = root.add_subgraph(sub_name, call);
  call->attrs().set("f", sdk::AttrValue::OfGraph(f));
  add_input(*f, sub_name + "_in", d, 0)->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(0));
  add_op(*f, op, "Relu", {sub_name + "_in"}, d);
  add_net_output(*f, {op});
  return f;
}

// A call `name` in the root reading x and feeding `out` input `slot`, whose body's Relu is named `op`.
sdk::Graph* add_relu_call(sdk::Graph& root, const std::string& name, sdk::Node* out, int slot,
                          const std::string& op, const sdk::TensorDesc& d) {
  sdk::Node* call = root.add_node(name, sdk::op::kPartitionedCall, 1, 0);
  call->add_output(d, name);
  EXPECT_TRUE(root.add_edge({root.find_node("x"), 0}, {call, 0}).is_ok());
  EXPECT_TRUE(root.add_edge({call, 0}, {out, slot}).is_ok());
  return add_relu_body(root, call, "f_" + name, op, d);
}

// Many calls read one input (a hub), one body holds a nested call, a later body has a node named as an
// earlier call, and one call's NoOp name is taken: names and order are what expanding and removing one call
// at a time gave, except the hub's readers, now in call order (removing a call from a list of more than 256
// moved its last reader into the gap, so that before they came out shuffled; the test failed on that
// implementation there and only there).
TEST_F(RuntimeTest, ExpansionOfManyCallsKeepsOrderHubsAndNames) {
  constexpr int kCalls = 300;  // more readers of x than the IR's in-order limit for single removals (256)
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {3});
  add_input(*g, "x", d, 0);
  sdk::Node* out = g->add_node("out", sdk::op::kNetOutput, kCalls, 0);
  ASSERT_NE(g->add_node("c5_pre_noop", sdk::op::kNoOp, 0, 0), nullptr);  // c5's NoOp gets another name
  for (int i = 0; i < kCalls; ++i) {
    // The last body's node takes the first call's name, free once that call is expanded.
    const std::string op = i == kCalls - 1 ? "c0" : "relu" + std::to_string(i);
    sdk::Graph* f = add_relu_call(*g, "c" + std::to_string(i), out, i, op, d);
    if (i == 1) {  // a call inside the body of c1, between its Relu and NetOutput
      sdk::Node* inner = f->add_node("inner", sdk::op::kPartitionedCall, 1, 0);
      inner->add_output(d, "inner");
      sdk::Node* ret = f->find_node("out");
      ASSERT_NE(ret, nullptr);
      f->disconnect_input({ret, 0});
      ASSERT_TRUE(f->add_edge({f->find_node("relu1"), 0}, {inner, 0}).is_ok());
      ASSERT_TRUE(f->add_edge({inner, 0}, {ret, 0}).is_ok());
      add_relu_body(*g, inner, "nested", "deep", d);
    }
  }
  ASSERT_TRUE(sdk::verify(*g).is_ok());
  size_t expanded = 0;
  sdk::Status s = expand_partitioned_calls(*g, &expanded);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(expanded, static_cast<size_t>(kCalls + 1));
  EXPECT_TRUE(g->subgraphs().empty());
  for (const sdk::Node* n : g->nodes()) EXPECT_NE(n->type(), sdk::op::kPartitionedCall) << n->name();
  // x feeds the bodies' first nodes, in call order.
  const std::vector<sdk::InPort>& readers = g->find_node("x")->consumers(0);
  ASSERT_EQ(readers.size(), static_cast<size_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) {
    const std::string want = i == kCalls - 1 ? "c0" : "relu" + std::to_string(i);
    EXPECT_EQ(readers[i].node->name(), want) << i;
    EXPECT_EQ(out->input(i).node->name(), i == 1 ? "deep" : want) << i;
  }
  EXPECT_EQ(g->find_node("c0")->type(), "Relu");
  EXPECT_EQ(g->find_node("deep")->input(0).node->name(), "relu1");
  EXPECT_NE(g->find_node("c299_pre_noop"), nullptr);
  EXPECT_NE(g->find_node("inner_post_noop"), nullptr);
  const sdk::Node* c5_pre = g->find_node("c5_pre_noop_1");
  ASSERT_NE(c5_pre, nullptr);
  EXPECT_EQ(c5_pre->control_outputs(), std::vector<sdk::Node*>{g->find_node("relu5")});
}

// A call refused after others were expanded: those stay expanded and removed, the refused one stays whole,
// and the graph is valid.
TEST_F(RuntimeTest, ExpansionRefusedMidwayLeavesTheExpandedCallsDone) {
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {3});
  add_input(*g, "x", d, 0);
  sdk::Node* out = g->add_node("out", sdk::op::kNetOutput, 3, 0);
  add_relu_call(*g, "c0", out, 0, "relu0", d);
  add_relu_call(*g, "c1", out, 1, "taken", d);
  ASSERT_TRUE(g->add_edge({add_op(*g, "taken", "Neg", {"x"}, d), 0}, {out, 2}).is_ok());
  size_t expanded = 0;
  sdk::Status s = expand_partitioned_calls(*g, &expanded);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("cannot expand PartitionedCall 'c1': its node 'taken' has the name of a node"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(expanded, 1u);
  EXPECT_EQ(g->find_node("c0"), nullptr);
  EXPECT_EQ(out->input(0).node, g->find_node("relu0"));
  ASSERT_NE(g->find_node("c1"), nullptr);
  EXPECT_EQ(out->input(1).node, g->find_node("c1"));
  EXPECT_EQ(g->subgraphs().size(), 1u);
  EXPECT_EQ(g->find_subgraph("f_c0"), nullptr);
  s = sdk::verify(*g);
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST_F(RuntimeTest, ExpandedAndCalledGiveTheSameResults) {
  for (bool expand : {false, true}) {
    std::unique_ptr<Runtime> rt;
    RuntimeOptions o;
    o.expand_partitioned_calls = expand;
    sdk::Status s = open(graph_with_call(), &rt, o);
    ASSERT_TRUE(s.is_ok()) << s.message();
    std::vector<sdk::Tensor> out;
    ASSERT_TRUE(rt->run({floats({3}, {-1, 2, -3})}, &out).is_ok());
    EXPECT_EQ(values(out[0]), (std::vector<float>{0, -2, 0})) << expand;
    EXPECT_EQ(values(out[1]), (std::vector<float>{0, 2, 0})) << expand;
    // Called: three segments (before, the call's body, after), of which the body is compiled as it is and the
    // root's two are copies; expanded: one.
    ASSERT_EQ(rt->segment_stats().size(), expand ? 1u : 3u);
    for (const SegmentStats& st : rt->segment_stats()) {
      if (expand) continue;
      EXPECT_EQ(st.whole_graph, st.graph == "f") << st.graph << " " << st.first_node;
    }
  }
}

// root: x, w -> call(f: Data 0 + Data 1 -> NetOutput) -> out; w a Const (a weight) or the root's input 1.
std::unique_ptr<sdk::Graph> add_in_call(bool weight) {
  auto g = opset17_root();
  const auto d = tensor_desc(sdk::DataType::kFloat, {3});
  add_input(*g, "x", d, 0);
  if (weight)
    add_const(*g, "w", floats({3}, {10, 20, 30}));
  else
    add_input(*g, "w", d, 1);
  sdk::Node* call = g->add_node("call", sdk::op::kPartitionedCall, 2, 0);
  call->add_output(d, "y");
  EXPECT_TRUE(g->add_edge({g->find_node("x"), 0}, {call, 0}).is_ok());
  EXPECT_TRUE(g->add_edge({g->find_node("w"), 0}, {call, 1}).is_ok());
  sdk::Graph* f = g->add_subgraph("f", call);
  call->attrs().set("f", sdk::AttrValue::OfGraph(f));
  for (int i = 0; i < 2; ++i) {
    sdk::Node* in = f->add_node("f_in" + std::to_string(i), sdk::op::kData, 0, 0);
    in->add_output(d);
    in->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(i));
    in->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(i));
  }
  placed(add_op(*f, "sum", "Sub", {"f_in1", "f_in0"}, d), "AIcoreEngine");
  add_net_output(*f, {"sum"});
  add_net_output(*g, {"call"});
  return g;
}

// A partition's body of one engine is compiled as it is, its inputs in call order, unless a weight reaches it
// through the call: the body is then copied, so that the weight is the segment's own constant.
TEST_F(RuntimeTest, ABodyIsCompiledAsItIsUnlessAWeightComesThroughTheCall) {
  for (bool weight : {false, true}) {
    std::unique_ptr<Runtime> rt;
    sdk::Status s = open(add_in_call(weight), &rt);
    ASSERT_TRUE(s.is_ok()) << s.message();
    ASSERT_EQ(rt->segment_stats().size(), 1u);
    EXPECT_EQ(rt->segment_stats()[0].whole_graph, !weight);
    std::vector<sdk::Tensor> in = {floats({3}, {1, 2, 3})};
    if (!weight) in.push_back(floats({3}, {10, 20, 30}));
    std::vector<sdk::Tensor> out;
    ASSERT_TRUE(rt->run(in, &out).is_ok());
    EXPECT_EQ(values(out[0]), (std::vector<float>{9, 18, 27})) << weight;
  }
}

TEST_F(RuntimeTest, InputsAreChecked) {
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(relu_chain(1, {2, 2}, "AIcoreEngine"), &rt).is_ok());
  std::vector<sdk::Tensor> out;
  sdk::Status s = rt->run({}, &out);
  EXPECT_NE(s.message().find("the model takes 1 inputs, got 0"), std::string::npos) << s.message();
  s = rt->run({floats({4}, {1, 2, 3, 4})}, &out);
  EXPECT_NE(s.message().find("input 0 'x' must have shape [2,2], got rank 1"), std::string::npos)
      << s.message();
  s = rt->run({floats({2, 3}, {1, 2, 3, 4, 5, 6})}, &out);
  EXPECT_NE(s.message().find("must have shape [2,2], got [2,3]"), std::string::npos) << s.message();
  s = rt->run({sdk::Tensor(tensor_desc(sdk::DataType::kFloat, {2, 2}), std::string(3, '\0'))}, &out);
  EXPECT_NE(s.message().find("holds 3 bytes"), std::string::npos) << s.message();
}

TEST_F(RuntimeTest, KernelErrorsNameTheNode) {
  // Gather with an index out of range, found at run time.
  auto g = opset17_root();
  add_input(*g, "x", tensor_desc(sdk::DataType::kFloat, {3}), 0);
  add_input(*g, "i", tensor_desc(sdk::DataType::kInt64, {1}), 1);
  placed(add_op(*g, "gather", "Gather", {"x", "i"}, tensor_desc(sdk::DataType::kFloat, {1})), "DNN_VM_AICPU");
  add_net_output(*g, {"gather"});
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  std::string idx(8, '\0');
  const int64_t seven = 7;
  std::memcpy(idx.data(), &seven, 8);
  std::vector<sdk::Tensor> out;
  sdk::Status s =
      rt->run({floats({3}, {1, 2, 3}), sdk::Tensor(tensor_desc(sdk::DataType::kInt64, {1}), idx)}, &out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'gather' (Gather): index 7 out of range for dimension 3"),
            std::string::npos)
      << s.message();
}

// Found by fuzzing om_run: a kernel reading an input the node does not have. Now an error naming the input.
TEST_F(RuntimeTest, AMissingRequiredInputIsAnError) {
  auto g = opset17_root();
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 0);
  x->add_output(tensor_desc(sdk::DataType::kFloat, {3}), "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  sdk::Node* gather = g->add_node("gather", "Gather", 2, 0);  // input 1 (the indices) left open
  gather->add_output(tensor_desc(sdk::DataType::kFloat, {-1}), "gather");
  gather->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String("DNN_VM_AICPU"));
  ASSERT_TRUE(g->add_edge({x, 0}, {gather, 0}).is_ok());
  add_net_output(*g, {"gather"});
  std::unique_ptr<Runtime> rt;
  ASSERT_TRUE(open(std::move(g), &rt).is_ok());
  std::vector<sdk::Tensor> out;
  sdk::Status s = rt->run({floats({3}, {1, 2, 3})}, &out);
  EXPECT_NE(s.message().find("node 'gather' (Gather): input 1 is required but missing"), std::string::npos)
      << s.message();
}

// Found by fuzzing om_run: a Loop that lost its body. Refused at load, naming the node.
TEST_F(RuntimeTest, AControlFlowNodeWithoutItsSubgraphIsRefused) {
  auto g = opset17_root();
  sdk::Node* m = g->add_node("m", sdk::op::kData, 0, 0);
  m->add_output(tensor_desc(sdk::DataType::kInt64, {}), "m");
  m->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  sdk::Node* loop = g->add_node("loop", sdk::op::kLoop, 2, 0);
  ASSERT_TRUE(g->add_edge({m, 0}, {loop, 0}).is_ok());
  add_net_output(*g, {});
  std::unique_ptr<Runtime> rt;
  sdk::Status s = open(std::move(g), &rt);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'loop' (Loop) in graph 'g' lacks its subgraph"), std::string::npos)
      << s.message();
}

// Found by fuzzing om_run: a Const whose bytes disagree with its shape let Slice read past the end. The .om
// loader now refuses such a tensor.
TEST(OmTensorsTest, BytesMustMatchTheDescriptor) {
  auto g = opset17_root();
  sdk::Node* c = g->add_node("c", sdk::op::kConst, 0, 0);
  const sdk::Tensor bad(tensor_desc(sdk::DataType::kFloat, {2, 3}), std::string(4, '\0'));
  c->add_output(bad.desc(), "c");
  c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(bad));
  add_net_output(*g, {"c"});
  std::string bytes;
  ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
  std::unique_ptr<sdk::Graph> loaded;
  sdk::Status s = parse_om(bytes, "bad.om", &loaded);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("a tensor of float32[2,3] holds 4 bytes"), std::string::npos) << s.message();
}

TEST(KernelsTest, RegistryListsWhatEnginesCanBind) {
  const std::vector<std::string> names = kernels::kernel_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* op : {"Conv", "MatMul", "LSTM", "Resize", "NonMaxSuppression", "graphsplit::MapIndex"})
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
  EXPECT_TRUE(kernels::has_kernel("MapIndex", "graphsplit"));
  EXPECT_FALSE(kernels::has_kernel("NoSuchOperator"));
}

// Depthwise convolution has its own direct loops; they must agree with the definition of Conv.
TEST(KernelsTest, DepthwiseConvolutionMatchesTheDefinition) {
  const int64_t C = 3, H = 7, W = 6, K = 3, stride = 2, pad = 1, dil = 1;
  auto g = opset17_root();
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 0);
  x->add_output(tensor_desc(sdk::DataType::kFloat, {1, C, H, W}), "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  std::vector<float> wv(C * K * K), bv = {0.5f, -1.0f, 2.0f}, xv(C * H * W);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  for (const auto& [name, t] : {std::pair{"w", floats({C, 1, K, K}, wv)}, std::pair{"b", floats({C}, bv)}}) {
    sdk::Node* c = g->add_node(name, sdk::op::kConst, 0, 0);
    c->add_output(t.desc(), name);
    c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(t));
  }
  const int64_t OH = (H + 2 * pad - K) / stride + 1, OW = (W + 2 * pad - K) / stride + 1;
  sdk::Node* conv =
      add_op(*g, "conv", "Conv", {"x", "w", "b"}, tensor_desc(sdk::DataType::kFloat, {1, C, OH, OW}));
  conv->attrs().set("group", sdk::AttrValue::Int(C));
  conv->attrs().set("kernel_shape", sdk::AttrValue::Ints({K, K}));
  conv->attrs().set("strides", sdk::AttrValue::Ints({stride, stride}));
  conv->attrs().set("pads", sdk::AttrValue::Ints({pad, pad, pad, pad}));
  add_net_output(*g, {"conv"});
  std::unique_ptr<sdk::Executable> exe;
  ASSERT_TRUE(kernels::compile_graph(
                  *g, [](const sdk::Node&) { return sdk::Status::ok(); }, {}, &exe)
                  .is_ok());
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(exe->run({floats({1, C, H, W}, xv)}, &out).is_ok());
  ASSERT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{1, C, OH, OW}));
  const std::vector<float> got = values(out[0]);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        float want = bv[c];
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < K; ++j) {
            const int64_t iy = oy * stride - pad + i * dil, ix = ox * stride - pad + j * dil;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
              want += wv[(c * K + i) * K + j] * xv[(c * H + iy) * W + ix];
          }
        EXPECT_FLOAT_EQ(got[(c * OH + oy) * OW + ox], want) << c << "," << oy << "," << ox;
      }
}

// A ConvTranspose whose windows do not overlap runs as one matrix product and a scatter: it must agree with
// the definition, y[n, m, i * kh + a, j * kw + b] = bias[m] + sum_c x[n, c, i, j] * w[c, m, a, b].
TEST(KernelsTest, NonOverlappingConvTransposeMatchesTheDefinition) {
  const int64_t N = 2, C = 5, M = 3, H = 4, W = 6, KH = 2, KW = 3;
  auto g = opset17_root();
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 0);
  x->add_output(tensor_desc(sdk::DataType::kFloat, {N, C, H, W}), "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  std::vector<float> wv(C * M * KH * KW), bv = {0.5f, -1.0f, 2.0f}, xv(N * C * H * W);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37) % 11) - 5.0f;
  for (const auto& [name, t] :
       {std::pair{"w", floats({C, M, KH, KW}, wv)}, std::pair{"b", floats({M}, bv)}}) {
    sdk::Node* c = g->add_node(name, sdk::op::kConst, 0, 0);
    c->add_output(t.desc(), name);
    c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(t));
  }
  const std::vector<int64_t> out = {N, M, H * KH, W * KW};
  sdk::Node* conv =
      add_op(*g, "up", "ConvTranspose", {"x", "w", "b"}, tensor_desc(sdk::DataType::kFloat, out));
  conv->attrs().set("kernel_shape", sdk::AttrValue::Ints({KH, KW}));
  conv->attrs().set("strides", sdk::AttrValue::Ints({KH, KW}));
  add_net_output(*g, {"up"});
  std::unique_ptr<sdk::Executable> exe;
  ASSERT_TRUE(kernels::compile_graph(
                  *g, [](const sdk::Node&) { return sdk::Status::ok(); }, {}, &exe)
                  .is_ok());
  std::vector<sdk::Tensor> result;
  ASSERT_TRUE(exe->run({floats({N, C, H, W}, xv)}, &result).is_ok());
  ASSERT_EQ(result[0].desc().shape.dims(), out);
  const std::vector<float> got = values(result[0]);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t y = 0; y < H * KH; ++y)
        for (int64_t z = 0; z < W * KW; ++z) {
          float want = bv[m];
          for (int64_t c = 0; c < C; ++c)
            want +=
                xv[((n * C + c) * H + y / KH) * W + z / KW] * wv[((c * M + m) * KH + y % KH) * KW + z % KW];
          EXPECT_FLOAT_EQ(got[((n * M + m) * H * KH + y) * W * KW + z], want)
              << n << "," << m << "," << y << "," << z;
        }
}

sdk::Tensor int64s(std::vector<int64_t> dims, std::vector<int64_t> v) {
  std::string bytes(v.size() * 8, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return sdk::Tensor(tensor_desc(sdk::DataType::kInt64, std::move(dims)), bytes);
}

sdk::Node* add_data(sdk::Graph& g, const std::string& name, int index, sdk::TensorDesc desc) {
  sdk::Node* d = g.add_node(name, sdk::op::kData, 0, 0);
  d->add_output(std::move(desc), name);
  d->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index));
  return d;
}

std::unique_ptr<sdk::Executable> compile_kernels(const sdk::Graph& g) {
  std::unique_ptr<sdk::Executable> exe;
  sdk::Status s = kernels::compile_graph(
      g, [](const sdk::Node&) { return sdk::Status::ok(); }, {}, &exe);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return exe;
}

sdk::Tensor random_floats(std::vector<int64_t> dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) {
    seed = seed * 1664525u + 1013904223u;
    f = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return floats(std::move(dims), v);
}

// Convolutions, elementwise operators with every kind of broadcast operand (per-channel and full constants, a
// full runtime input, runtime inputs of lower rank whose bytes do or do not need moving), global pooling and
// a depthwise squeeze-excite: each layout conversion and relabelling of the channels-last pass.
std::unique_ptr<sdk::Graph> channels_last_graph() {
  const int64_t N = 2, C = 8, H = 9, W = 7;
  auto f = [](std::vector<int64_t> d) { return tensor_desc(sdk::DataType::kFloat, std::move(d)); };
  auto g = opset17_root();
  add_data(*g, "x", 0, f({N, C, H, W}));
  add_data(*g, "z", 1, f({N, C, H, W}));
  add_data(*g, "v", 2, f({W}));
  add_data(*g, "u", 3, f({C, 1, W}));
  add_const(*g, "w1", random_floats({C, C, 3, 3}, 1));
  add_const(*g, "b1", random_floats({C}, 2));
  add_const(*g, "s", random_floats({1, C, 1, 1}, 3));
  add_const(*g, "t", random_floats({C, H, W}, 4));
  add_const(*g, "lo", random_floats({}, 5));
  add_const(*g, "wd", random_floats({C, 1, 3, 3}, 6));
  auto conv = [&](const std::string& name, std::vector<std::string> in, int64_t group) {
    sdk::Node* n = add_op(*g, name, "Conv", std::move(in), f({N, C, H, W}));
    n->attrs().set("group", sdk::AttrValue::Int(group));
    n->attrs().set("kernel_shape", sdk::AttrValue::Ints({3, 3}));
    n->attrs().set("pads", sdk::AttrValue::Ints({1, 1, 1, 1}));
  };
  conv("c1", {"x", "w1", "b1"}, 1);
  add_op(*g, "a", "Add", {"c1", "z"}, f({N, C, H, W}));
  add_op(*g, "m", "Mul", {"a", "s"}, f({N, C, H, W}));
  add_op(*g, "k", "Mul", {"m", "t"}, f({N, C, H, W}));
  add_op(*g, "r", "Clip", {"k", "lo"}, f({N, C, H, W}));
  add_op(*g, "q", "Add", {"r", "v"}, f({N, C, H, W}));
  add_op(*g, "p", "Sub", {"u", "q"}, f({N, C, H, W}));
  add_op(*g, "gap", "GlobalAveragePool", {"p"}, f({N, C, 1, 1}));
  conv("d", {"p", "wd"}, C);
  add_op(*g, "h", "HardSigmoid", {"gap"}, f({N, C, 1, 1}));
  add_op(*g, "e", "Mul", {"d", "h"}, f({N, C, H, W}));
  sdk::Node* mp = add_op(*g, "mp", "MaxPool", {"e"}, f({N, C, (H + 1) / 2, (W + 1) / 2}));
  mp->attrs().set("kernel_shape", sdk::AttrValue::Ints({3, 3}));
  mp->attrs().set("strides", sdk::AttrValue::Ints({2, 2}));
  mp->attrs().set("pads", sdk::AttrValue::Ints({1, 1, 1, 1}));
  add_net_output(*g, {"e", "gap", "c1", "mp"});
  return g;
}

std::vector<sdk::Tensor> run_channels_last_graph(bool channels_last, std::vector<std::string>* ops) {
  setenv("GRAPHSPLIT_CHANNELS_LAST", channels_last ? "1" : "0", 1);
  setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);  // every output checked in the layout its node declares
  const std::unique_ptr<sdk::Graph> g = channels_last_graph();  // the executable refers to its nodes
  std::unique_ptr<sdk::Executable> exe = compile_kernels(*g);
  unsetenv("GRAPHSPLIT_CHANNELS_LAST");
  unsetenv("GRAPHSPLIT_CHECK_SHAPES");
  const kernels::KernelObserver observer = [&](const kernels::KernelCall& c) {
    ops->push_back(c.node->type());
  };
  kernels::set_kernel_observer(&observer);
  std::vector<sdk::Tensor> out;
  const sdk::Status s = exe->run({random_floats({2, 8, 9, 7}, 7), random_floats({2, 8, 9, 7}, 8),
                                  random_floats({7}, 9), random_floats({8, 1, 7}, 10)},
                                 &out);
  kernels::set_kernel_observer(nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out;
}

// The channels-last regions change where bytes sit, never what is computed: the same bits as ONNX's layout,
// results in ONNX's layout.
TEST(KernelsTest, ChannelsLastRegionsGiveTheBitsOfThePlainLayout) {
  std::vector<std::string> plain_ops, last_ops;
  const std::vector<sdk::Tensor> plain = run_channels_last_graph(false, &plain_ops);
  const std::vector<sdk::Tensor> last = run_channels_last_graph(true, &last_ops);
  EXPECT_EQ(std::count(plain_ops.begin(), plain_ops.end(), "ToChannelsLast"), 0);
  // x and z go in, u is moved (8 channels of 7), the four results come out; v is only relabelled.
  EXPECT_EQ(std::count(last_ops.begin(), last_ops.end(), "ToChannelsLast"), 3);
  EXPECT_EQ(std::count(last_ops.begin(), last_ops.end(), "ToChannelsFirst"), 4);
  ASSERT_EQ(plain.size(), 4u);
  ASSERT_EQ(last.size(), 4u);
  const std::vector<std::vector<int64_t>> dims = {{2, 8, 9, 7}, {2, 8, 1, 1}, {2, 8, 9, 7}, {2, 8, 5, 4}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(last[i].desc().shape.dims(), dims[i]);
    EXPECT_EQ(plain[i].desc().shape.dims(), dims[i]);
    EXPECT_TRUE(last[i].bytes() == plain[i].bytes()) << "result " << i;
  }
}

// A hard-swish spelled out as Paddle exports it, a scale and shift after it, then every other operator a
// chain may hold; "mid" is also a result, so the chain must end there and start again after it.
std::unique_ptr<sdk::Graph> elementwise_chain_graph() {
  auto f = [](std::vector<int64_t> d) { return tensor_desc(sdk::DataType::kFloat, std::move(d)); };
  const std::vector<int64_t> dims = {3, 1000};
  auto g = opset17_root();
  add_data(*g, "x", 0, f(dims));
  add_data(*g, "z", 1, f(dims));
  add_const(*g, "three", floats({}, {3}));
  add_const(*g, "zero", floats({}, {0}));
  add_const(*g, "six", floats({}, {6}));
  add_const(*g, "scale", floats({1}, {1.7f}));
  add_const(*g, "shift", floats({1, 1}, {-0.3f}));
  add_op(*g, "a", "Add", {"x", "three"}, f(dims));
  add_op(*g, "c", "Clip", {"a", "zero", "six"}, f(dims));
  add_op(*g, "m", "Mul", {"x", "c"}, f(dims));
  add_op(*g, "d", "Div", {"m", "six"}, f(dims));
  add_op(*g, "s", "Mul", {"scale", "d"}, f(dims));
  add_op(*g, "mid", "Add", {"s", "shift"}, f(dims));
  add_op(*g, "h", "HardSigmoid", {"mid"}, f(dims))->attrs().set("alpha", sdk::AttrValue::Float(0.3));
  add_op(*g, "l", "LeakyRelu", {"h"}, f(dims));
  add_op(*g, "sub", "Sub", {"z", "l"}, f(dims));
  add_op(*g, "sig", "Sigmoid", {"sub"}, f(dims));
  add_op(*g, "t", "Tanh", {"sig"}, f(dims));
  add_op(*g, "sw", "HardSwish", {"t"}, f(dims));
  add_op(*g, "r", "Relu", {"sw"}, f(dims));
  // A Clip deep in a chain: its operand is a register whose number exceeds the step's inputs.
  add_const(*g, "hi", floats({}, {0.3f}));
  add_op(*g, "cl", "Clip", {"r", "zero", "hi"}, f(dims));
  add_net_output(*g, {"cl", "mid"});
  return g;
}

std::vector<sdk::Tensor> run_chain_graph(bool fuse, std::vector<std::string>* ops) {
  setenv("GRAPHSPLIT_FUSE_ELEMENTWISE", fuse ? "1" : "0", 1);
  setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);
  const std::unique_ptr<sdk::Graph> g = elementwise_chain_graph();
  std::unique_ptr<sdk::Executable> exe = compile_kernels(*g);
  unsetenv("GRAPHSPLIT_FUSE_ELEMENTWISE");
  unsetenv("GRAPHSPLIT_CHECK_SHAPES");
  const kernels::KernelObserver observer = [&](const kernels::KernelCall& c) {
    ops->push_back(c.node->type());
  };
  kernels::set_kernel_observer(&observer);
  std::vector<sdk::Tensor> out;
  // Values from -5 to 5: every branch of the clamps and activations is taken.
  sdk::Tensor x = random_floats({3, 1000}, 11), z = random_floats({3, 1000}, 12);
  std::vector<float> xv = values(x);
  for (float& v : xv) v *= 5;
  const sdk::Status s = exe->run({floats({3, 1000}, xv), z}, &out);
  kernels::set_kernel_observer(nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out;
}

// A fused chain keeps each operator's per-element arithmetic: the bits of the operators run one by one.
TEST(KernelsTest, FusedElementwiseChainsGiveTheBitsOfTheOperators) {
  std::vector<std::string> one_by_one, fused;
  const std::vector<sdk::Tensor> want = run_chain_graph(false, &one_by_one);
  const std::vector<sdk::Tensor> got = run_chain_graph(true, &fused);
  EXPECT_EQ(one_by_one.size(), 14u);
  EXPECT_EQ(fused, (std::vector<std::string>{"FusedElementwise", "FusedElementwise"}));
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got[i].desc().shape.dims(), (std::vector<int64_t>{3, 1000}));
    EXPECT_TRUE(got[i].bytes() == want[i].bytes()) << "result " << i;
  }
  // Not a vacuous comparison: the clamps and activations left values on both sides of zero.
  const std::vector<float> mid = values(got[1]);
  EXPECT_GT(*std::max_element(mid.begin(), mid.end()), 1.0f);
  EXPECT_LT(*std::min_element(mid.begin(), mid.end()), -0.2f);
  const std::vector<float> clipped = values(got[0]);
  EXPECT_EQ(*std::max_element(clipped.begin(), clipped.end()), 0.3f);
  EXPECT_LT(*std::min_element(clipped.begin(), clipped.end()), 0.3f);
}

// The run-time rewrites hold for the shapes a static segment was compiled for (what the runtime feeds it);
// other shapes are refused naming the step, never computed in the wrong layout.
TEST(KernelsTest, RewrittenStepsRefuseOtherInputShapes) {
  const std::unique_ptr<sdk::Graph> chain = elementwise_chain_graph();
  std::unique_ptr<sdk::Executable> exe = compile_kernels(*chain);
  std::vector<sdk::Tensor> out;
  sdk::Status s = exe->run({random_floats({3, 999}, 1), random_floats({3, 999}, 2)}, &out);
  EXPECT_EQ(s.code(), sdk::StatusCode::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find("node 'a+5' (FusedElementwise): a fused elementwise input is not a float of the "
                             "chain's size or a single value"),
            std::string::npos)
      << s.message();
  const std::unique_ptr<sdk::Graph> conv = channels_last_graph();
  exe = compile_kernels(*conv);
  s = exe->run({random_floats({2, 8, 9, 8}, 7), random_floats({2, 8, 9, 7}, 8), random_floats({7}, 9),
                random_floats({8, 1, 7}, 10)},
               &out);
  EXPECT_NE(
      s.message().find("node 'c1' (Conv): the inputs do not have the shapes the segment was compiled for"),
      std::string::npos)
      << s.message();
}

sdk::Tensor bytes_tensor(sdk::DataType type, std::vector<int64_t> dims, const std::vector<int>& v) {
  std::string bytes(v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i) bytes[i] = static_cast<char>(static_cast<uint8_t>(v[i] & 0xff));
  return sdk::Tensor(tensor_desc(type, std::move(dims)), bytes);
}

// MatMulInteger's int32 sums are exact, also where they pass 2^24 (float would round them) and for uint8
// weights with zero point 128 (shifted to int8 for oneDNN's int8 product).
TEST(KernelsTest, MatMulIntegerSumsAreExact) {
  const int64_t M = 5, K = 2048, N = 9;
  for (const bool unsigned_weights : {false, true}) {
    auto g = opset17_root();
    sdk::Node* a = g->add_node("a", sdk::op::kData, 0, 0);
    a->add_output(tensor_desc(sdk::DataType::kUint8, {M, K}), "a");
    a->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
    std::vector<int> av(M * K), bv(K * N);
    for (size_t i = 0; i < av.size(); ++i) av[i] = 240 + static_cast<int>(i % 16);
    for (size_t i = 0; i < bv.size(); ++i)
      bv[i] = 100 + static_cast<int>(i * 7 % 28) - (i % 5 == 0 ? 220 : 0);
    const int a_zero = 3, b_zero = unsigned_weights ? 128 : 0;
    std::vector<int> stored = bv;
    for (int& v : stored) v += b_zero;
    const sdk::DataType bt = unsigned_weights ? sdk::DataType::kUint8 : sdk::DataType::kInt8;
    add_const(*g, "b", bytes_tensor(bt, {K, N}, stored));
    add_const(*g, "az", bytes_tensor(sdk::DataType::kUint8, {}, {a_zero}));
    add_const(*g, "bz", bytes_tensor(bt, {}, {b_zero}));
    add_op(*g, "y", "MatMulInteger", {"a", "b", "az", "bz"}, tensor_desc(sdk::DataType::kInt32, {M, N}));
    add_net_output(*g, {"y"});
    std::unique_ptr<sdk::Executable> exe = compile_kernels(*g);
    std::vector<sdk::Tensor> out;
    ASSERT_TRUE(exe->run({bytes_tensor(sdk::DataType::kUint8, {M, K}, av)}, &out).is_ok());
    std::vector<int32_t> got(M * N);
    ASSERT_EQ(out[0].size_bytes(), got.size() * 4);
    std::memcpy(got.data(), out[0].data(), out[0].size_bytes());
    int64_t largest = 0;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        int64_t want = 0;
        for (int64_t k = 0; k < K; ++k) want += int64_t{av[m * K + k] - a_zero} * bv[k * N + n];
        largest = std::max(largest, std::abs(want));
        EXPECT_EQ(got[m * N + n], want) << m << "," << n << (unsigned_weights ? " (uint8 weights)" : "");
      }
    EXPECT_GT(largest, int64_t{1} << 24);
  }
}

// The kernels take output shapes from the operators' shape rules, evaluated on each run's inputs: a Reshape
// target known only at run time is resolved, and refused, by the rule (its error text, not a kernel's).
TEST(KernelsTest, ReshapeTargetsAreResolvedByTheShapeRuleAtRunTime) {
  auto g = opset17_root();
  add_data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat, {-1}));
  add_data(*g, "s", 1, tensor_desc(sdk::DataType::kInt64, {2}));
  add_op(*g, "r", "Reshape", {"x", "s"}, tensor_desc(sdk::DataType::kFloat, {-1, -1}));
  add_net_output(*g, {"r"});
  auto exe = compile_kernels(*g);
  ASSERT_TRUE(exe);
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(exe->run({floats({6}, {1, 2, 3, 4, 5, 6}), int64s({2}, {2, -1})}, &out).is_ok());
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(exe->run({floats({4}, {1, 2, 3, 4}), int64s({2}, {-1, 1})}, &out).is_ok());
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{4, 1}));
  sdk::Status s = exe->run({floats({6}, {1, 2, 3, 4, 5, 6}), int64s({2}, {4, -1})}, &out);
  EXPECT_EQ(s.message(), "node 'r' (Reshape): cannot reshape 6 elements into a multiple of 4");
}

// A shape settled at compile time is reused only for inputs of the dims it was settled for: a run whose
// input contradicts the declared shape gets the rule again, on the real dims.
TEST(KernelsTest, ACompileTimeRuleAnswerIsNotReusedForOtherInputDims) {
  auto g = opset17_root();
  add_data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat, {6}));
  sdk::Node* c = g->add_node("shape", sdk::op::kConst, 0, 0);
  const sdk::Tensor target = int64s({2}, {2, 3});
  c->add_output(target.desc(), "shape");
  c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(target));
  add_op(*g, "r", "Reshape", {"x", "shape"}, tensor_desc(sdk::DataType::kFloat, {2, 3}));
  add_net_output(*g, {"r"});
  auto exe = compile_kernels(*g);
  ASSERT_TRUE(exe);
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(exe->run({floats({6}, {1, 2, 3, 4, 5, 6})}, &out).is_ok());
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{2, 3}));
  sdk::Status s = exe->run({floats({4}, {1, 2, 3, 4})}, &out);
  EXPECT_EQ(s.message(), "node 'r' (Reshape): cannot reshape 4 elements into 6");
}

// Pooling has no output-size formula of its own any more: at every input size its output is what the rule
// says, ONNX's ceil-mode formula with the last window starting inside the input.
TEST(KernelsTest, PoolingOutputSizeIsTheRuleAtEveryInputSize) {
  auto g = opset17_root();
  add_data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat, {1, 1, -1, -1}));
  sdk::Node* p = add_op(*g, "pool", "MaxPool", {"x"}, tensor_desc(sdk::DataType::kFloat, {1, 1, -1, -1}));
  p->attrs().set("kernel_shape", sdk::AttrValue::Ints({3, 3}));
  p->attrs().set("strides", sdk::AttrValue::Ints({2, 2}));
  p->attrs().set("pads", sdk::AttrValue::Ints({1, 1, 1, 1}));
  p->attrs().set("ceil_mode", sdk::AttrValue::Int(1));
  add_net_output(*g, {"pool"});
  auto exe = compile_kernels(*g);
  ASSERT_TRUE(exe);
  for (int64_t h = 3; h <= 12; ++h) {
    const int64_t w = 15 - h;
    std::vector<sdk::Tensor> out;
    ASSERT_TRUE(exe->run({floats({1, 1, h, w}, std::vector<float>(h * w, 1.0f))}, &out).is_ok());
    auto size = [](int64_t n) {
      int64_t o = (n + 2 - 3 + 1) / 2 + 1;  // ceil((n + pads - k) / stride) + 1
      if ((o - 1) * 2 >= n + 1) --o;
      return o;
    };
    EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{1, 1, size(h), size(w)})) << h << "x" << w;
  }
}

// Resize's output size comes from its rule for both keep_aspect_ratio_policy values (one scale for every
// axis: the smallest ratio for not_larger, the largest for not_smaller, each size rounded).
TEST(KernelsTest, ResizeKeepsTheAspectRatioByItsRule) {
  for (const auto& [policy, want] : {std::pair{"not_larger", std::vector<int64_t>{1, 1, 2, 4}},
                                     std::pair{"not_smaller", std::vector<int64_t>{2, 2, 4, 8}}}) {
    auto g = sdk::testing::opset_root("g", 18);
    sdk::Node* x = add_data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat, {1, 1, 2, 4}));
    sdk::Node* sizes = add_data(*g, "sizes", 1, tensor_desc(sdk::DataType::kInt64, {4}));
    sdk::Node* r = g->add_node("resize", "Resize", 4, 0);
    sdk::TensorDesc any;
    any.dtype = sdk::DataType::kFloat;
    r->add_output(any, "resize");
    ASSERT_TRUE(g->add_edge({x, 0}, {r, 0}).is_ok());
    ASSERT_TRUE(g->add_edge({sizes, 0}, {r, 3}).is_ok());
    r->attrs().set("keep_aspect_ratio_policy", sdk::AttrValue::String(policy));
    add_net_output(*g, {"resize"});
    auto exe = compile_kernels(*g);
    ASSERT_TRUE(exe);
    std::vector<sdk::Tensor> out;
    sdk::Status s =
        exe->run({floats({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), int64s({4}, {1, 1, 4, 4})}, &out);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(out[0].desc().shape.dims(), want) << policy;
    EXPECT_EQ(values(out[0]).front(), 1.0f);
    EXPECT_EQ(values(out[0]).back(), 8.0f);
  }
}

// Found by fuzzing om_run: an LSTM whose R is a scalar read past R's dims for the default hidden_size.
TEST(KernelsTest, RecurrentWeightsOfTheWrongRankAreAnError) {
  auto g = opset17_root();
  add_data(*g, "x", 0, tensor_desc(sdk::DataType::kFloat, {1, 1, 2}));
  add_data(*g, "w", 1, tensor_desc(sdk::DataType::kFloat, {1, 4, 2}));
  add_data(*g, "r", 2, tensor_desc(sdk::DataType::kFloat, {}));
  add_op(*g, "lstm", "LSTM", {"x", "w", "r"}, tensor_desc(sdk::DataType::kFloat, {}));
  g->find_node("lstm")->mutable_output_desc(0).shape = sdk::Shape::unknown_rank();
  g->find_node("lstm")->attrs().set("hidden_size", sdk::AttrValue::Int(1));
  add_net_output(*g, {"lstm"});
  auto exe = compile_kernels(*g);
  ASSERT_TRUE(exe);
  std::vector<sdk::Tensor> out;
  sdk::Status s = exe->run(
      {floats({1, 1, 2}, {1, 2}), floats({1, 4, 2}, std::vector<float>(8, 0.5f)), floats({}, {1})}, &out);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "node 'lstm' (LSTM): W and R must be 3-D");
}

// Static executables place their values in one buffer per thread: a model cut into segments needs the largest
// arena, not the sum. Values stay right when segments alternate, and another thread has a buffer of its own.
TEST(KernelsTest, StaticSegmentsShareOneArenaPerThread) {
  setenv("GRAPHSPLIT_FUSE_ELEMENTWISE", "0", 1);  // keep the chains' intermediate values in the arena
  const std::unique_ptr<sdk::Graph> small = relu_chain(3, {100}, "AIcoreEngine");
  const std::unique_ptr<sdk::Graph> large = relu_chain(3, {1000}, "AIcoreEngine");
  std::unique_ptr<sdk::Executable> a = compile_kernels(*small), b = compile_kernels(*large);
  unsetenv("GRAPHSPLIT_FUSE_ELEMENTWISE");
  ASSERT_GT(a->arena_bytes(), 0);
  ASSERT_GT(b->arena_bytes(), a->arena_bytes());
  const void* first = nullptr;  // where the run's first Relu wrote
  const kernels::KernelObserver observer = [&](const kernels::KernelCall& c) {
    if (c.node->name() == "relu0") first = (*c.outputs)[0].data();
  };
  auto run = [&](sdk::Executable& exe, int64_t n, float v) {
    kernels::set_kernel_observer(&observer);
    std::vector<sdk::Tensor> out;
    const sdk::Status s = exe.run({floats({n}, std::vector<float>(static_cast<size_t>(n), v))}, &out);
    kernels::set_kernel_observer(nullptr);
    EXPECT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(values(out.at(0)), std::vector<float>(static_cast<size_t>(n), std::max(v, 0.0f)));
    return first;
  };
  run(*b, 1000, 2);
  const void* at_b = first;
  EXPECT_EQ(run(*a, 100, 3), at_b);
  EXPECT_EQ(run(*b, 1000, -1), at_b);
  EXPECT_EQ(run(*a, 100, 5), at_b);
  const void* elsewhere = nullptr;
  std::thread([&] { elsewhere = run(*a, 100, 7); }).join();
  EXPECT_NE(elsewhere, nullptr);
  EXPECT_NE(elsewhere, at_b);
  EXPECT_EQ(run(*a, 100, 1), at_b);  // the other thread's buffer did not replace this one's
}

// The tensor-size limit is a compile option of each executable, not process state: two executables of one
// graph, one limited and one not, run side by side.
TEST(KernelLimits, TensorSizeLimitIsPerExecutable) {
  auto g = opset17_root();
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 0);
  x->add_output(tensor_desc(sdk::DataType::kFloat, {4, 4}), "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  add_op(*g, "relu", "Relu", {"x"}, tensor_desc(sdk::DataType::kFloat, {4, 4}));
  add_net_output(*g, {"relu"});
  auto accept = [](const sdk::Node&) { return sdk::Status::ok(); };
  std::unique_ptr<sdk::Executable> limited, unlimited;
  kernels::CompileOptions small;
  small.max_tensor_bytes = 63;  // the output takes 64
  ASSERT_TRUE(kernels::compile_graph(*g, accept, small, &limited).is_ok());
  ASSERT_TRUE(kernels::compile_graph(*g, accept, {}, &unlimited).is_ok());
  const sdk::Tensor in = floats({4, 4}, std::vector<float>(16, -1.0f));
  std::vector<sdk::Tensor> out;
  const sdk::Status s = limited->run({in}, &out);
  EXPECT_EQ(s.code(), sdk::StatusCode::kResourceExhausted) << s.message();
  EXPECT_NE(s.message().find("node 'relu' (Relu): a float32[4,4] output exceeds the tensor size limit"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(unlimited->run({in}, &out).is_ok());
  EXPECT_EQ(values(out[0]), std::vector<float>(16, 0.0f));
}

}  // namespace
}  // namespace graphsplit::testing
