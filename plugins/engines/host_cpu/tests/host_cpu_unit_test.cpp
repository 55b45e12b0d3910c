#include <gtest/gtest.h>

#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/testing/engine_conformance.h"
#include "host_cpu_engine.h"

namespace graphsplit::plugins::host_cpu {
namespace {

using namespace graphsplit::testing;
using sdk::DataType;

std::unique_ptr<HostCpuEngine> make(int64_t max_elements = 65536) {
  sdk::OptionValues options;
  options.set("max_output_elements", sdk::AttrValue::Int(max_elements));
  sdk::testing::TestPluginContext ctx("DNN_VM_HOST_CPU", options,
                                      load_table(GRAPHSPLIT_PLUGIN_DIR "/host_cpu.ops.toml"));
  return std::make_unique<HostCpuEngine>(ctx);
}

TEST(HostCpuEngineTest, ShapeComputation) {
  auto e = make();
  OneNode shape = one_node("Shape", {tensor_desc(DataType::kFloat, {-1, 3, -1, -1})},
                           {tensor_desc(DataType::kInt64, {4})});
  EXPECT_TRUE(e->check_support(*shape.node).supported);
  OneNode gather =
      one_node("Gather", {tensor_desc(DataType::kInt64, {4})}, {tensor_desc(DataType::kInt64, {2})});
  EXPECT_TRUE(e->check_support(*gather.node).supported);
  OneNode concat =
      one_node("Concat", {tensor_desc(DataType::kInt64, {-1})}, {tensor_desc(DataType::kInt64, {-1})});
  EXPECT_TRUE(e->check_support(*concat.node).supported);  // a 1-D shape vector of unknown length
}

TEST(HostCpuEngineTest, RefusesFloatsBigTensorsAndDynamicBlocks) {
  auto e = make(100);
  OneNode fp = one_node("Add", {tensor_desc(DataType::kFloat, {4})}, {tensor_desc(DataType::kFloat, {4})});
  EXPECT_EQ(e->check_support(*fp.node).reason, sdk::ReasonCode::kEngineUnsupportedDtype);
  OneNode big =
      one_node("Add", {tensor_desc(DataType::kInt64, {1000})}, {tensor_desc(DataType::kInt64, {1000})});
  auto v = e->check_support(*big.node);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kSizeAboveLimit);
  EXPECT_EQ(v.detail, "output 0 holds 1000 elements; the host takes at most 100");
  OneNode dyn =
      one_node("Add", {tensor_desc(DataType::kInt64, {-1, 4})}, {tensor_desc(DataType::kInt64, {-1, 4})});
  EXPECT_EQ(e->check_support(*dyn.node).reason, sdk::ReasonCode::kShapeUnknown);
}

}  // namespace
}  // namespace graphsplit::plugins::host_cpu
