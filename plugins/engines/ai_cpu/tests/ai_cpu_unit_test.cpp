#include <gtest/gtest.h>

#include "ai_cpu_engine.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/testing/engine_conformance.h"

namespace graphsplit::plugins::ai_cpu {
namespace {

using namespace graphsplit::testing;
using sdk::DataType;

std::unique_ptr<AiCpuEngine> make(bool strings) {
  sdk::OptionValues options;
  options.set("string_tensors", sdk::AttrValue::Bool(strings));
  sdk::testing::TestPluginContext ctx("DNN_VM_AICPU", options,
                                      load_table(GRAPHSPLIT_PLUGIN_DIR "/ai_cpu.ops.toml"));
  return std::make_unique<AiCpuEngine>(ctx);
}

TEST(AiCpuEngineTest, TakesDataDependentOpsWithDynamicShapes) {
  auto e = make(true);
  for (const char* op :
       {"NonZero", "NonMaxSuppression", "TopK", "Unique", "Einsum", "SequenceAt", "StringNormalizer"}) {
    OneNode g = one_node(op, {tensor_desc(DataType::kFloat, {-1, 4})}, {tensor_desc(DataType::kInt64, {-1})});
    EXPECT_TRUE(e->check_support(*g.node).supported) << op;
  }
}

TEST(AiCpuEngineTest, ListsNoStructuralOrControlFlowOp) {
  auto e = make(true);
  for (const char* op : {"If", "Loop", "Scan", "Constant", "Data", "NetOutput"}) {
    OneNode g = one_node(op, {}, {tensor_desc(DataType::kFloat, {1})});
    EXPECT_EQ(e->check_support(*g.node).reason, sdk::ReasonCode::kEngineUnsupportedOp) << op;
  }
}

TEST(AiCpuEngineTest, StringTensorsOption) {
  OneNode g = one_node("StringNormalizer", {tensor_desc(DataType::kString, {3})},
                       {tensor_desc(DataType::kString, {3})});
  EXPECT_TRUE(make(true)->check_support(*g.node).supported);
  auto v = make(false)->check_support(*g.node);
  EXPECT_FALSE(v.supported);
  EXPECT_EQ(v.detail, "input 0 is a string tensor and string_tensors = false");
}

}  // namespace
}  // namespace graphsplit::plugins::ai_cpu
