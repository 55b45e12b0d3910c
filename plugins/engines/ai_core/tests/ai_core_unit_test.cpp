#include <gtest/gtest.h>

#include "ai_core_engine.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/testing/engine_conformance.h"

namespace graphsplit::plugins::ai_core {
namespace {

using namespace graphsplit::testing;
using sdk::DataType;

struct Fixture {
  sdk::OptionValues options;
  std::unique_ptr<AiCoreEngine> engine;
  explicit Fixture(int64_t max_rank = 8) {
    options.set("max_rank", sdk::AttrValue::Int(max_rank));
    sdk::testing::TestPluginContext ctx("AIcoreEngine", options,
                                        load_table(GRAPHSPLIT_PLUGIN_DIR "/ai_core.ops.toml"));
    engine = std::make_unique<AiCoreEngine>(ctx);
  }
};

TEST(AiCoreEngineTest, TakesDenseComputeInFloat) {
  Fixture f;
  OneNode conv = one_node("Conv", {tensor_desc(DataType::kFloat, {1, 3, 224, 224})},
                          {tensor_desc(DataType::kFloat, {1, 16, 112, 112})});
  EXPECT_TRUE(f.engine->check_support(*conv.node).supported);
  OneNode dyn = one_node("MatMul", {tensor_desc(DataType::kFloat16, {-1, 64})},
                         {tensor_desc(DataType::kFloat16, {-1, 32})});
  EXPECT_TRUE(f.engine->check_support(*dyn.node).supported);  // dynamic_shape = full
}

TEST(AiCoreEngineTest, ConvolutionNeedsFourOrFiveDimensions) {
  Fixture f;
  OneNode conv1d = one_node("Conv", {tensor_desc(DataType::kFloat, {1, 3, 100})},
                            {tensor_desc(DataType::kFloat, {1, 8, 98})});
  auto v = f.engine->check_support(*conv1d.node);
  EXPECT_FALSE(v.supported);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kEngineCheckFailed);
  EXPECT_EQ(v.detail, "Conv on AI Core needs a 4-D or 5-D input, got rank 3");
  OneNode unknown = one_node("MaxPool", {sdk::TensorDesc{}}, {sdk::TensorDesc{}});
  unknown.root->find_node("in0")->mutable_output_desc(0).dtype = DataType::kFloat;
  v = f.engine->check_support(*unknown.node);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kShapeUnknown) << v.detail;
}

TEST(AiCoreEngineTest, RefusesInt64ArithmeticAndDataDependentOps) {
  Fixture f;
  OneNode add = one_node("Add", {tensor_desc(DataType::kInt64, {4})}, {tensor_desc(DataType::kInt64, {4})});
  auto v = f.engine->check_support(*add.node);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kEngineUnsupportedDtype);
  EXPECT_EQ(v.detail, "input 0 is int64; supported: float16, float32, int32");
  OneNode nz =
      one_node("NonZero", {tensor_desc(DataType::kFloat, {4})}, {tensor_desc(DataType::kInt64, {1, -1})});
  EXPECT_EQ(f.engine->check_support(*nz.node).reason, sdk::ReasonCode::kEngineUnsupportedOp);
}

// The table's opset range is read against the model's ai.onnx import; an import entry that is not a number
// leaves the opset unknown, which refuses nothing.
TEST(AiCoreEngineTest, OpsetOutsideTheRowIsRefusedAndAnUnreadableImportIsNot) {
  Fixture f;
  const std::vector<sdk::TensorDesc> in{tensor_desc(DataType::kFloat, {2, 8})};
  OneNode old = one_node("LayerNormalization", in, in, 13);
  auto v = f.engine->check_support(*old.node);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kEngineUnsupportedOp);
  EXPECT_EQ(v.detail, "LayerNormalization at opset 13 is outside the supported range 17-23");
  OneNode current = one_node("LayerNormalization", in, in, 17);
  EXPECT_TRUE(f.engine->check_support(*current.node).supported);
  old.root->attrs().set(sdk::attr::kOnnxOpsetImport, sdk::AttrValue::Strings({"ai.onnx:13x"}));
  EXPECT_TRUE(f.engine->check_support(*old.node).supported);
}

TEST(AiCoreEngineTest, AnOutputOfAnotherTypeIsNamedInTheRefusal) {
  Fixture f;
  OneNode cast = one_node("Relu", {tensor_desc(DataType::kFloat, {4})},
                          {tensor_desc(DataType::kFloat, {4}), tensor_desc(DataType::kInt64, {4})});
  const auto v = f.engine->check_support(*cast.node);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kEngineUnsupportedDtype);
  EXPECT_EQ(v.detail, "output 1 is int64; supported: float16, float32");
}

TEST(AiCoreEngineTest, MaxRankOption) {
  Fixture f(4);
  OneNode relu = one_node("Relu", {tensor_desc(DataType::kFloat, {1, 2, 3, 4, 5})},
                          {tensor_desc(DataType::kFloat, {1, 2, 3, 4, 5})});
  auto v = f.engine->check_support(*relu.node);
  EXPECT_FALSE(v.supported);
  EXPECT_EQ(v.detail, "input 0 has rank 5; AI Core takes at most 4 dimensions");
  EXPECT_TRUE(Fixture(8).engine->check_support(*relu.node).supported);
}

TEST(AiCoreEngineTest, OpsetRangeOfARow) {
  Fixture f;
  OneNode ln = one_node("LayerNormalization", {tensor_desc(DataType::kFloat, {2, 8})},
                        {tensor_desc(DataType::kFloat, {2, 8})}, 17);
  EXPECT_TRUE(f.engine->check_support(*ln.node).supported);
}

}  // namespace
}  // namespace graphsplit::plugins::ai_core
