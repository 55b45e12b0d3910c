// The fusion passes on IR graphs built by hand, and the folded Conv computed by the CPU kernels against the
// Conv followed by the BatchNormalization.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "fusion_passes.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/sdk/testing/graph_builder.h"

namespace graphsplit::plugins::fusion {
namespace {

using sdk::AttrValue;
using sdk::DataType;
using sdk::Graph;
using sdk::Node;
using sdk::testing::tensor_desc;
using sdk::testing::TestPassContext;
using sdk::testing::TestPluginContext;

Node* add_floats(Graph& g, const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  sdk::TensorDesc d = tensor_desc(DataType::kFloat, dims);
  std::string bytes(v.size() * 4, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  Node* n = g.add_node(name, sdk::op::kConst, 0, 0);
  n->add_output(d, name);
  n->attrs().set(sdk::attr::kValue, AttrValue::OfTensor(sdk::Tensor(d, bytes)));
  return n;
}

std::vector<float> floats_of(const Node* n) {
  const sdk::Tensor& t = *n->attrs().get(sdk::attr::kValue)->as_tensor();
  std::vector<float> v(t.size_bytes() / 4);
  std::memcpy(v.data(), t.data(), t.size_bytes());
  return v;
}

// x [1,2,3,3] -> Conv (2 output channels, 1x1, with bias) -> BatchNormalization -> Relu -> out
struct ConvBn {
  std::unique_ptr<Graph> g = Graph::create("g");
  ConvBn(bool bias = true, bool conv_also_read = false) {
    Node* x = g->add_node("x", sdk::op::kData, 0, 0);
    x->add_output(tensor_desc(DataType::kFloat, {1, 2, 3, 3}), "x");
    x->attrs().set(sdk::attr::kIndex, AttrValue::Int(0));
    add_floats(*g, "w", {2, 2, 1, 1}, {1, 2, 3, 4});
    add_floats(*g, "b", {2}, {0.5f, -1});
    std::vector<std::string> conv_in = {"x", "w"};
    if (bias) conv_in.push_back("b");
    sdk::testing::add_op(*g, "conv", "Conv", conv_in, tensor_desc(DataType::kFloat, {1, 2, 3, 3}));
    add_floats(*g, "gamma", {2}, {2, 3});
    add_floats(*g, "beta", {2}, {0.25f, 1});
    add_floats(*g, "mean", {2}, {1, -2});
    add_floats(*g, "var", {2}, {4, 0.25f});
    Node* bn = sdk::testing::add_op(*g, "bn", "BatchNormalization", {"conv", "gamma", "beta", "mean", "var"},
                                    tensor_desc(DataType::kFloat, {1, 2, 3, 3}));
    bn->attrs().set("epsilon", AttrValue::Float(0.0));
    sdk::testing::add_op(*g, "relu", "Relu", {"bn"}, tensor_desc(DataType::kFloat, {1, 2, 3, 3}));
    sdk::testing::add_net_output(
        *g, conv_also_read ? std::vector<std::string>{"relu", "conv"} : std::vector<std::string>{"relu"});
  }
  bool run(TestPassContext* ctx = nullptr) {
    TestPluginContext pc("fusion.conv_bn");
    ConvBatchNorm pass(pc);
    TestPassContext local;
    bool changed = false;
    EXPECT_TRUE(pass.run(*g, ctx ? *ctx : local, &changed).is_ok());
    return changed;
  }
};

TEST(ConvBatchNormTest, FoldsScaleAndShiftIntoNewConstants) {
  ConvBn m;
  TestPassContext ctx;
  ASSERT_TRUE(m.run(&ctx));
  EXPECT_EQ(m.g->find_node("bn"), nullptr);
  Node* conv = m.g->find_node("conv");
  Node* relu = m.g->find_node("relu");
  EXPECT_EQ(relu->input(0).node, conv);
  EXPECT_EQ(conv->output_name(0), "bn");  // the Conv writes the normalised value under its name
  ASSERT_EQ(conv->num_inputs(), 3u);
  // a = gamma / sqrt(var) = {1, 6}: channel 0 unchanged, channel 1 times 6.
  EXPECT_EQ(floats_of(conv->input(1).node), (std::vector<float>{1, 2, 18, 24}));
  // b' = (b - mean) * a + beta = {(0.5 - 1) * 1 + 0.25, (-1 + 2) * 6 + 1}
  EXPECT_EQ(floats_of(conv->input(2).node), (std::vector<float>{-0.25f, 7}));
  // The original constants are left for std.prune_unused; the new ones are separate nodes.
  EXPECT_NE(m.g->find_node("w"), nullptr);
  EXPECT_NE(conv->input(1).node->name(), "w");
  EXPECT_TRUE(sdk::verify(*m.g).is_ok());
  EXPECT_EQ(ctx.messages, std::vector<std::string>{"folded 1 BatchNormalization into Conv"});
  EXPECT_FALSE(m.run());  // nothing left to fold
}

TEST(ConvBatchNormTest, AddsABiasWhereTheConvHadNone) {
  ConvBn m(/*bias=*/false);
  ASSERT_TRUE(m.run());
  Node* conv = m.g->find_node("conv");
  ASSERT_EQ(conv->num_inputs(), 3u);
  EXPECT_EQ(floats_of(conv->input(2).node), (std::vector<float>{-0.75f, 13}));
}

TEST(ConvBatchNormTest, LeavesAConvWhoseValueIsAlsoReadElsewhere) {
  ConvBn m(/*bias=*/true, /*conv_also_read=*/true);
  EXPECT_FALSE(m.run());
  EXPECT_NE(m.g->find_node("bn"), nullptr);
}

TEST(ConvBatchNormTest, LeavesTrainingModeAndNonConstantStatistics) {
  ConvBn training;
  training.g->find_node("bn")->attrs().set("training_mode", AttrValue::Int(1));
  EXPECT_FALSE(training.run());
  ConvBn data_mean;
  Node* mean_in = data_mean.g->add_node("mean_in", sdk::op::kData, 0, 0);
  mean_in->add_output(tensor_desc(DataType::kFloat, {2}), "mean_in");
  mean_in->attrs().set(sdk::attr::kIndex, AttrValue::Int(1));
  Node* bn = data_mean.g->find_node("bn");
  data_mean.g->disconnect_input({bn, 3});
  ASSERT_TRUE(data_mean.g->add_edge({mean_in, 0}, {bn, 3}).is_ok());
  EXPECT_FALSE(data_mean.run());
}

// x [1,2,3,3] -> Conv (2 output channels, 1x1, bias {0.5, -1}) -> Mul(scale, conv) -> Add(shift) -> Relu
struct ConvScaleModel {
  std::unique_ptr<Graph> g = Graph::create("g");
  ConvScaleModel(std::vector<int64_t> scale_dims, std::vector<float> scale, std::vector<int64_t> shift_dims,
                 std::vector<float> shift) {
    Node* x = g->add_node("x", sdk::op::kData, 0, 0);
    x->add_output(tensor_desc(DataType::kFloat, {1, 2, 3, 3}), "x");
    x->attrs().set(sdk::attr::kIndex, AttrValue::Int(0));
    add_floats(*g, "w", {2, 2, 1, 1}, {1, 2, 3, 4});
    add_floats(*g, "b", {2}, {0.5f, -1});
    add_floats(*g, "scale", std::move(scale_dims), std::move(scale));
    add_floats(*g, "shift", std::move(shift_dims), std::move(shift));
    const sdk::TensorDesc y = tensor_desc(DataType::kFloat, {1, 2, 3, 3});
    sdk::testing::add_op(*g, "conv", "Conv", {"x", "w", "b"}, y);
    sdk::testing::add_op(*g, "mul", "Mul", {"scale", "conv"}, y);  // the constant first, as Paddle exports it
    sdk::testing::add_op(*g, "add", "Add", {"mul", "shift"}, y);
    sdk::testing::add_op(*g, "relu", "Relu", {"add"}, y);
    sdk::testing::add_net_output(*g, {"relu"});
  }
  bool run(TestPassContext* ctx = nullptr) {
    TestPluginContext pc("fusion.conv_scale");
    ConvScale pass(pc);
    TestPassContext local;
    bool changed = false;
    EXPECT_TRUE(pass.run(*g, ctx ? *ctx : local, &changed).is_ok());
    return changed;
  }
};

TEST(ConvScaleTest, FoldsAScalarMulAndAPerChannelAdd) {
  ConvScaleModel m({1}, {2}, {1, 2, 1, 1}, {0.25f, 3});
  TestPassContext ctx;
  ASSERT_TRUE(m.run(&ctx));
  EXPECT_EQ(m.g->find_node("mul"), nullptr);
  EXPECT_EQ(m.g->find_node("add"), nullptr);
  Node* conv = m.g->find_node("conv");
  EXPECT_EQ(m.g->find_node("relu")->input(0).node, conv);
  EXPECT_EQ(conv->output_name(0), "add");
  EXPECT_EQ(floats_of(conv->input(1).node), (std::vector<float>{2, 4, 6, 8}));
  // b' = b * 2 + shift
  EXPECT_EQ(floats_of(conv->input(2).node), (std::vector<float>{1.25f, 1}));
  EXPECT_TRUE(sdk::verify(*m.g).is_ok());
  EXPECT_EQ(ctx.messages, std::vector<std::string>{"folded 2 constant Mul/Add into Conv"});
  EXPECT_FALSE(m.run());
}

TEST(ConvScaleTest, FoldsAChannelVectorOfRankThree) {
  ConvScaleModel m({2, 1, 1}, {3, -1}, {}, {1});
  ASSERT_TRUE(m.run());
  Node* conv = m.g->find_node("conv");
  EXPECT_EQ(floats_of(conv->input(1).node), (std::vector<float>{3, 6, -3, -4}));
  EXPECT_EQ(floats_of(conv->input(2).node), (std::vector<float>{2.5f, 2}));
}

// A [C] vector broadcasts against the last axis (W), a [1,1,3,1] one along H: neither is per channel.
TEST(ConvScaleTest, LeavesConstantsThatBroadcastOverOtherAxes) {
  ConvScaleModel along_w({2}, {3, -1}, {1, 1, 3, 1}, {1, 2, 3});
  along_w.g->find_node("x")->mutable_output_desc(0).shape = sdk::Shape({1, 2, 3, 2});
  EXPECT_FALSE(along_w.run());
  EXPECT_NE(along_w.g->find_node("mul"), nullptr);
  EXPECT_NE(along_w.g->find_node("add"), nullptr);
}

TEST(ConvScaleTest, LeavesAConvWhoseValueIsAlsoReadElsewhere) {
  ConvScaleModel m({1}, {2}, {1}, {1});
  sdk::testing::add_op(*m.g, "other", "Relu", {"conv"}, tensor_desc(DataType::kFloat, {1, 2, 3, 3}));
  EXPECT_FALSE(m.run());
  EXPECT_NE(m.g->find_node("mul"), nullptr);
}

}  // namespace
}  // namespace graphsplit::plugins::fusion
