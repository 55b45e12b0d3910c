// The shape pass's inference and folding on IR graphs built by hand: the patterns exporters write.
#include <gtest/gtest.h>

#include <cstring>

#include "graphsplit/kernels/shape_inference.h"
#include "graphsplit/sdk/ir/tensor.h"
#include "graphsplit/sdk/testing/graph_builder.h"

namespace graphsplit {
namespace {

using sdk::DataType;
using sdk::testing::add_op;
using sdk::testing::tensor_desc;

const sdk::TensorDesc kUnknown = [] {
  sdk::TensorDesc d;
  return d;
}();

sdk::Node* add_data(sdk::Graph& g, const std::string& name, sdk::TensorDesc desc, int64_t index,
                    std::vector<std::string> names = {}) {
  if (!names.empty()) desc.shape.set_dim_names(std::move(names));
  sdk::Node* n = g.add_node(name, sdk::op::kData, 0, 0);
  n->add_output(desc, name);
  n->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index));
  return n;
}

sdk::Node* add_ints(sdk::Graph& g, const std::string& name, std::vector<int64_t> values,
                    bool scalar = false) {
  sdk::TensorDesc d = tensor_desc(
      DataType::kInt64, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(values.size())});
  std::string bytes(values.size() * 8, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  sdk::Node* n = g.add_node(name, sdk::op::kConst, 0, 0);
  n->add_output(d, name);
  n->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(sdk::Tensor(d, bytes)));
  return n;
}

kernels::ShapeInferenceStats infer(sdk::Graph& g, sdk::Status* status = nullptr) {
  kernels::ShapeInferenceStats stats;
  sdk::Status s = kernels::infer_shapes(g, {}, &stats);
  if (status) {
    *status = s;
  } else {
    EXPECT_TRUE(s.is_ok()) << s.message();
  }
  return stats;
}

std::string shape_of(const sdk::Graph& g, const std::string& node) {
  const sdk::Node* n = g.find_node(node);
  return n ? n->output_desc(0).to_string() : "<no node " + node + ">";
}

// x[N,C,H,W] -> Shape -> Gather(0) -> Concat([n, -1]) -> Reshape: torch's flatten before a classifier.
TEST(ShapePass, ShapeGatherConcatReshapeBecomesStatic) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {2, 3, 4, 5}), 0);
  add_op(*g, "shape", "Shape", {"x"}, kUnknown);
  add_ints(*g, "zero", {0}, true);
  add_op(*g, "n", "Gather", {"shape", "zero"}, kUnknown);
  add_ints(*g, "axes", {0});
  add_op(*g, "n1", "Unsqueeze", {"n", "axes"}, kUnknown);
  add_ints(*g, "minus1", {-1});
  add_op(*g, "target", "Concat", {"n1", "minus1"}, kUnknown)->attrs().set("axis", sdk::AttrValue::Int(0));
  add_op(*g, "y", "Reshape", {"x", "target"}, kUnknown);
  sdk::testing::add_net_output(*g, {"y"});
  auto stats = infer(*g);
  EXPECT_EQ(shape_of(*g, "y"), "float32[2,60]");
  // The shape chain is folded into one Const feeding the Reshape; the chain's own Consts are gone.
  const sdk::Node* target = g->find_node("target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->type(), "Const");
  EXPECT_EQ(g->find_node("shape"), nullptr);
  EXPECT_EQ(g->find_node("zero"), nullptr);
  EXPECT_EQ(g->num_nodes(), 4u);  // x, target, y, out
  EXPECT_GE(stats.folded, 4);
}

TEST(ShapePass, SymbolicSizesFollowConvolutionArithmetic) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {-1, 3, -1, -1}), 0, {"batch", "", "h", "w"});
  sdk::Node* w = g->add_node("w", sdk::op::kData, 0, 0);
  w->add_output(tensor_desc(DataType::kFloat, {8, 3, 3, 3}), "w");
  w->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(1));
  sdk::Node* conv = add_op(*g, "y", "Conv", {"x", "w"}, kUnknown);
  conv->attrs().set("strides", sdk::AttrValue::Ints({2, 2}));
  conv->attrs().set("pads", sdk::AttrValue::Ints({1, 1, 1, 1}));
  add_op(*g, "z", "Add", {"y", "y"}, kUnknown);
  sdk::testing::add_net_output(*g, {"z"});
  infer(*g);
  // floor((h + 2 - 3) / 2) + 1 in canonical form.
  EXPECT_EQ(shape_of(*g, "y"), "float32[-1(batch),8,-1(floor((h+1)/2)),-1(floor((w+1)/2))]");
  EXPECT_EQ(g->find_node("z")->output_desc(0).shape.dim_names(),
            g->find_node("y")->output_desc(0).shape.dim_names());
}

// Two symbolic batch sizes found equal only at the end (a Concat of the two branches): every value written
// before, whose last reader came long before the equality, takes the one name too. Inference drops values
// after their last reader; it must keep those a later equality rewrites.
TEST(ShapePass, AnEqualityFoundLateRenamesEveryEarlierValue) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {-1, 4}), 0, {"a", ""});
  add_data(*g, "y", tensor_desc(DataType::kFloat, {-1, 4}), 1, {"b", ""});
  add_op(*g, "r1", "Relu", {"x"}, kUnknown);
  add_op(*g, "r2", "Relu", {"r1"}, kUnknown);
  add_op(*g, "r3", "Relu", {"r2"}, kUnknown);
  add_op(*g, "z", "Concat", {"r3", "y"}, kUnknown)->attrs().set("axis", sdk::AttrValue::Int(1));
  sdk::testing::add_net_output(*g, {"z"});
  infer(*g);
  EXPECT_EQ(g->find_node("z")->output_desc(0).shape.dims(), (std::vector<int64_t>{-1, 8}));
  const std::string name = g->find_node("z")->output_desc(0).shape.dim_names().at(0);
  EXPECT_TRUE(name == "a" || name == "b") << name;
  for (const char* node : {"x", "y", "r1", "r2", "r3"}) {
    const auto& names = g->find_node(node)->output_desc(0).shape.dim_names();
    ASSERT_FALSE(names.empty()) << node;
    EXPECT_EQ(names[0], name) << node;
  }
}

TEST(ShapePass, DataDependentSizesAreUnbackedAndUpstreamStaysStatic) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {4, 6}), 0);
  add_op(*g, "r", "Relu", {"x"}, kUnknown);
  add_op(*g, "nz", "NonZero", {"r"}, kUnknown);
  add_op(*g, "t", "Transpose", {"nz"}, kUnknown);
  sdk::testing::add_net_output(*g, {"t"});
  infer(*g);
  EXPECT_EQ(shape_of(*g, "r"), "float32[4,6]");
  const auto& nz = g->find_node("nz")->output_desc(0);
  EXPECT_EQ(nz.shape.dims(), (std::vector<int64_t>{2, -1}));
  ASSERT_EQ(nz.shape.dim_names().size(), 2u);
  const std::string count = nz.shape.dim_names()[1];
  EXPECT_EQ(count.substr(0, 1), "n");
  EXPECT_EQ(g->find_node("t")->output_desc(0).shape.dim_names()[0], count);
}

TEST(ShapePass, ZeroStrideIsRefusedNamingTheNode) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {1, 1, 7, 5}), 0);
  sdk::Node* pool = add_op(*g, "pool", "MaxPool", {"x"}, kUnknown);
  pool->attrs().set("kernel_shape", sdk::AttrValue::Ints({2, 2}));
  pool->attrs().set("strides", sdk::AttrValue::Ints({0, 2}));
  sdk::testing::add_net_output(*g, {"pool"});
  sdk::Status s;
  infer(*g, &s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'pool'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("strides must be positive"), std::string::npos) << s.message();
}

TEST(ShapePass, ImpossibleStaticReshapeIsRefused) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {2, 3}), 0);
  add_ints(*g, "target", {4, 2});
  add_op(*g, "y", "Reshape", {"x", "target"}, kUnknown);
  sdk::testing::add_net_output(*g, {"y"});
  sdk::Status s;
  infer(*g, &s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'y' (Reshape): cannot reshape 6 elements into 8"), std::string::npos)
      << s.message();
}

TEST(ShapePass, ContradictionWithTheDeclaredShapeNamesBothShapes) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {2, 3}), 0);
  add_op(*g, "y", "Transpose", {"x"}, tensor_desc(DataType::kFloat, {2, 3}));
  sdk::testing::add_net_output(*g, {"y"});
  sdk::Status s;
  infer(*g, &s);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("inferred as float32[3,2] but the model declares float32[2,3]"),
            std::string::npos)
      << s.message();
}

TEST(ShapePass, FoldingRespectsTheSizeLimit) {
  auto g = sdk::testing::opset_root();
  add_ints(*g, "shape", {512, 1024});
  add_op(*g, "big", "ConstantOfShape", {"shape"}, kUnknown);  // 2 MiB of float zeros
  add_ints(*g, "small_shape", {2, 2});
  add_op(*g, "small", "ConstantOfShape", {"small_shape"}, kUnknown);
  sdk::testing::add_net_output(*g, {"big", "small"});
  auto stats = infer(*g);
  ASSERT_NE(g->find_node("big"), nullptr);
  ASSERT_NE(g->find_node("small"), nullptr);
  EXPECT_EQ(g->find_node("big")->type(), "ConstantOfShape");
  EXPECT_EQ(shape_of(*g, "big"), "float32[512,1024]");
  EXPECT_EQ(g->find_node("small")->type(), "Const");
  EXPECT_EQ(stats.folded, 1);
}

// The counts say what the pass changed: an unknown rank becomes numbers (each dimension refined), a declared
// [2,-1] gains its last dimension, and a second run over the result changes nothing.
TEST(ShapePass, StatsCountRefinedDimensionsAndASecondRunChangesNothing) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "x", tensor_desc(DataType::kFloat, {2, 3}), 0);
  add_op(*g, "r", "Relu", {"x"}, kUnknown);
  add_op(*g, "s", "Add", {"r", "x"}, tensor_desc(DataType::kFloat, {2, -1}));
  add_op(*g, "t", "Sigmoid", {"s"}, tensor_desc(DataType::kFloat, {2, 3}));
  sdk::testing::add_net_output(*g, {"t"});
  auto first = infer(*g);
  EXPECT_EQ(shape_of(*g, "r"), "float32[2,3]");
  EXPECT_EQ(shape_of(*g, "s"), "float32[2,3]");
  EXPECT_EQ(first.refined_dims, 3);
  EXPECT_EQ(first.changed_values, 3);  // r's type and shape, s's shape; t was declared as inferred
  auto second = infer(*g);
  EXPECT_EQ(second.refined_dims, 0);
  EXPECT_EQ(second.changed_values, 0);
  EXPECT_EQ(shape_of(*g, "s"), "float32[2,3]");
}

// A random operator is never folded, though its input is constant and it has a kernel; the same type met
// again (the engine keeps what it knows of each type) is not folded either, and ConstantOfShape beside them
// is.
TEST(ShapePass, RandomOperatorsAreNeverFolded) {
  auto g = sdk::testing::opset_root();
  add_ints(*g, "shape", {2, 2});
  add_op(*g, "zeros", "ConstantOfShape", {"shape"}, kUnknown);
  add_op(*g, "noise", "RandomUniformLike", {"zeros"}, kUnknown);
  add_op(*g, "more_noise", "RandomUniformLike", {"zeros"}, kUnknown);
  sdk::testing::add_net_output(*g, {"noise", "more_noise"});
  infer(*g);
  ASSERT_NE(g->find_node("zeros"), nullptr);
  EXPECT_EQ(g->find_node("zeros")->type(), "Const");
  for (const char* name : {"noise", "more_noise"}) {
    ASSERT_NE(g->find_node(name), nullptr) << name;
    EXPECT_EQ(g->find_node(name)->type(), "RandomUniformLike") << name;
    EXPECT_EQ(shape_of(*g, name), "float32[2,2]") << name;
  }
}

TEST(ShapePass, BroadcastOfTwoUnknownsIsMaxWithAnAssumption) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "a", tensor_desc(DataType::kFloat, {-1}), 0, {"p"});
  add_data(*g, "b", tensor_desc(DataType::kFloat, {-1}), 1, {"q"});
  add_op(*g, "y", "Add", {"a", "b"}, kUnknown);
  sdk::testing::add_net_output(*g, {"y"});
  auto stats = infer(*g);
  EXPECT_EQ(shape_of(*g, "y"), "float32[-1(max(p,q))]");
  ASSERT_EQ(stats.assumptions.size(), 1u);
  EXPECT_NE(stats.assumptions[0].find("p == q or one of them is 1"), std::string::npos);
}

TEST(ShapePass, ConcatProvesDimensionsEqual) {
  auto g = sdk::testing::opset_root();
  add_data(*g, "a", tensor_desc(DataType::kFloat, {-1, 4}), 0, {"p", ""});
  add_data(*g, "b", tensor_desc(DataType::kFloat, {-1, 4}), 1, {"q", ""});
  add_op(*g, "ra", "Relu", {"a"}, kUnknown);
  add_op(*g, "c", "Concat", {"a", "b"}, kUnknown)->attrs().set("axis", sdk::AttrValue::Int(1));
  sdk::testing::add_net_output(*g, {"ra", "c"});
  infer(*g);
  EXPECT_EQ(shape_of(*g, "c"), "float32[-1(p),8]");
  // The equality is applied to what was written before it was found.
  EXPECT_EQ(shape_of(*g, "ra"), "float32[-1(p),4]");
}

// The rules' own refusals, each naming the node: impossible Squeeze, Split sizes, TopK k, Concat ranks,
// Einsum.
TEST(ShapePass, ImpossibleOperatorArgumentsAreRefused) {
  struct Case {
    std::string op;
    std::vector<int64_t> dims2;  // a second Data input's shape, if any
    std::vector<int64_t> ints;   // a Const int64 input after the Data inputs, if any
    std::string attr;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {"Squeeze", {}, {1}, "", "cannot squeeze axis 1 of size 3"},
      {"Split", {}, {1, 2}, "", "split sizes add up to 3, not 2"},
      {"TopK", {}, {9}, "", "k = 9 exceeds the axis size 4"},
      {"Concat", {2, 3}, {}, "axis", "inputs differ in rank"},
      {"Einsum", {}, {}, "ij,jk->ik", "the equation has 2 operands for 1 inputs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    auto g = sdk::testing::opset_root();
    add_data(*g, "x", tensor_desc(DataType::kFloat, {2, 3, 4}), 0);
    std::vector<std::string> inputs = {"x"};
    if (!c.dims2.empty()) {
      add_data(*g, "x2", tensor_desc(DataType::kFloat, c.dims2), 1);
      inputs.push_back("x2");
    }
    if (!c.ints.empty()) {
      add_ints(*g, "k", c.ints);
      inputs.push_back("k");
    }
    sdk::Node* n = add_op(*g, "y", c.op, inputs, kUnknown);
    if (c.op == "Split") {
      n->add_output(kUnknown, "y2");
      n->attrs().set("axis", sdk::AttrValue::Int(0));
    }
    if (c.op == "TopK") n->add_output(kUnknown, "y_idx");
    if (c.attr == "axis") n->attrs().set("axis", sdk::AttrValue::Int(0));
    if (c.op == "Einsum") n->attrs().set("equation", sdk::AttrValue::String(c.attr));
    sdk::testing::add_net_output(*g, {"y"});
    sdk::Status st;
    infer(*g, &st);
    EXPECT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("node 'y' (" + c.op + "): " + c.fragment), std::string::npos) << st.message();
  }
}

// Operators of opsets 18-23 (kernels come with the runtime; the shapes are known now), checked against
// ONNX's operator definitions.
TEST(ShapePass, NewOperatorsOfOpsets18To23) {
  auto g = sdk::testing::opset_root("g", 23);
  add_data(*g, "cols", tensor_desc(DataType::kFloat, {1, 18, 12}), 0);  // Col2Im: C=2, block 3x3
  add_ints(*g, "image", {5, 5});
  add_ints(*g, "block", {3, 3});
  add_op(*g, "im", "Col2Im", {"cols", "image", "block"}, kUnknown);
  add_data(*g, "theta", tensor_desc(DataType::kFloat, {4, 2, 3}), 1);
  add_ints(*g, "size", {4, 3, 16, 24});
  add_op(*g, "grid", "AffineGrid", {"theta", "size"}, kUnknown);
  add_data(*g, "q", tensor_desc(DataType::kFloat, {2, 8, 5, 64}), 2);
  add_data(*g, "k", tensor_desc(DataType::kFloat, {2, 2, 5, 64}), 3);
  add_data(*g, "v", tensor_desc(DataType::kFloat, {2, 2, 5, 32}), 4);
  add_data(*g, "past_k", tensor_desc(DataType::kFloat, {2, 2, -1, 64}), 5, {"", "", "past", ""});
  add_data(*g, "past_v", tensor_desc(DataType::kFloat, {2, 2, -1, 32}), 6, {"", "", "past", ""});
  sdk::Node* att = g->add_node("att", "Attention", 6, 0);
  for (int i = 0; i < 3; ++i) att->add_output(kUnknown, "att_" + std::to_string(i));
  int slot = 0;
  for (const char* in : {"q", "k", "v"})
    ASSERT_TRUE(g->add_edge({g->find_node(in), 0}, {att, slot++}).is_ok());
  ASSERT_TRUE(g->add_edge({g->find_node("past_k"), 0}, {att, 4}).is_ok());
  ASSERT_TRUE(g->add_edge({g->find_node("past_v"), 0}, {att, 5}).is_ok());
  add_data(*g, "signal", tensor_desc(DataType::kFloat, {3, 10, 1}), 7);
  add_op(*g, "spectrum", "DFT", {"signal"}, kUnknown)->attrs().set("onesided", sdk::AttrValue::Int(1));
  add_data(*g, "img", tensor_desc(DataType::kFloat, {3, 20, 10}), 8);
  add_ints(*g, "crop", {8, 12});
  add_op(*g, "cropped", "CenterCropPad", {"img", "crop"}, kUnknown)
      ->attrs()
      .set("axes", sdk::AttrValue::Ints({1, 2}));
  sdk::testing::add_net_output(*g, {"im", "grid", "att", "spectrum", "cropped"});
  infer(*g);
  EXPECT_EQ(shape_of(*g, "im"), "float32[1,2,5,5]");
  EXPECT_EQ(shape_of(*g, "grid"), "float32[4,16,24,2]");
  EXPECT_EQ(g->find_node("att")->output_desc(0).to_string(), "float32[2,8,5,32]");
  EXPECT_EQ(g->find_node("att")->output_desc(1).to_string(), "float32[2,2,-1(past+5),64]");
  EXPECT_EQ(shape_of(*g, "spectrum"), "float32[3,6,2]");  // onesided: floor(10/2)+1
  EXPECT_EQ(shape_of(*g, "cropped"), "float32[3,8,12]");
}

}  // namespace
}  // namespace graphsplit
