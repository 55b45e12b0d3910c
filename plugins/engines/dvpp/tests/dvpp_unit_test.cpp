#include <gtest/gtest.h>

#include "dvpp_engine.h"
#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/testing/engine_conformance.h"

namespace graphsplit::plugins::dvpp {
namespace {

using namespace graphsplit::testing;
using sdk::DataType;

std::unique_ptr<DvppEngine> make(int64_t max_resolution = 4096) {
  sdk::OptionValues options;
  options.set("max_resolution", sdk::AttrValue::Int(max_resolution));
  options.set("max_channels", sdk::AttrValue::Int(4));
  sdk::testing::TestPluginContext ctx("DNN_VM_DVPP", options,
                                      load_table(GRAPHSPLIT_PLUGIN_DIR "/dvpp.ops.toml"));
  return std::make_unique<DvppEngine>(ctx);
}

TEST(DvppEngineTest, ResizesUint8Images) {
  auto e = make();
  OneNode up = one_node("Resize", {tensor_desc(DataType::kUint8, {1, 3, 224, 224})},
                        {tensor_desc(DataType::kUint8, {1, 3, 448, 448})});
  EXPECT_TRUE(e->check_support(*up.node).supported);
  OneNode nhwc = one_node("Resize", {tensor_desc(DataType::kUint8, {1, 720, 1280, 3})},
                          {tensor_desc(DataType::kUint8, {1, 360, 640, 3})});
  EXPECT_TRUE(e->check_support(*nhwc.node).supported);
}

TEST(DvppEngineTest, RefusesWhatTheHardwareCannotDo) {
  auto e = make();
  OneNode fp = one_node("Resize", {tensor_desc(DataType::kFloat, {1, 3, 8, 8})},
                        {tensor_desc(DataType::kFloat, {1, 3, 16, 16})});
  EXPECT_EQ(e->check_support(*fp.node).reason, sdk::ReasonCode::kEngineUnsupportedDtype);
  OneNode dyn = one_node("Resize", {tensor_desc(DataType::kUint8, {1, 3, -1, -1})},
                         {tensor_desc(DataType::kUint8, {1, 3, -1, -1})});
  EXPECT_EQ(e->check_support(*dyn.node).detail,
            "input 0 has dynamic sizes [1,3,-1,-1]; DVPP needs static image sizes");
  OneNode huge = one_node("Resize", {tensor_desc(DataType::kUint8, {1, 3, 100, 100})},
                          {tensor_desc(DataType::kUint8, {1, 3, 3200, 3200})});
  EXPECT_EQ(e->check_support(*huge.node).detail, "Resize scale 32.000000 on axis 2 is outside [1/32, 16]");
  OneNode big = one_node("Slice", {tensor_desc(DataType::kUint8, {1, 3, 5000, 5000})},
                         {tensor_desc(DataType::kUint8, {1, 3, 100, 100})});
  EXPECT_EQ(e->check_support(*big.node).detail, "input 0 is 5000x5000; DVPP takes at most 4096x4096");
  OneNode cubic = one_node("Resize", {tensor_desc(DataType::kUint8, {1, 3, 8, 8})},
                           {tensor_desc(DataType::kUint8, {1, 3, 16, 16})});
  cubic.node->attrs().set("mode", sdk::AttrValue::String("cubic"));
  EXPECT_EQ(e->check_support(*cubic.node).detail, "Resize mode 'cubic'; DVPP does nearest and linear");
  OneNode many = one_node("Cast", {tensor_desc(DataType::kUint8, {1, 16, 64, 64})},
                          {tensor_desc(DataType::kFloat, {1, 16, 64, 64})});
  EXPECT_EQ(e->check_support(*many.node).detail, "input 0 has 16 channels; DVPP takes at most 4");
}

TEST(DvppEngineTest, CastsPixelsToFloatButNotBack) {
  auto e = make();
  OneNode to_float = one_node("Cast", {tensor_desc(DataType::kUint8, {1, 3, 64, 64})},
                              {tensor_desc(DataType::kFloat16, {1, 3, 64, 64})});
  EXPECT_TRUE(e->check_support(*to_float.node).supported);
  OneNode back = one_node("Cast", {tensor_desc(DataType::kFloat, {1, 3, 64, 64})},
                          {tensor_desc(DataType::kUint8, {1, 3, 64, 64})});
  EXPECT_EQ(e->check_support(*back.node).reason, sdk::ReasonCode::kEngineUnsupportedDtype);
}

TEST(DvppEngineTest, MaxResolutionOption) {
  OneNode g = one_node("Slice", {tensor_desc(DataType::kUint8, {1, 3, 2000, 2000})},
                       {tensor_desc(DataType::kUint8, {1, 3, 1000, 1000})});
  EXPECT_TRUE(make(4096)->check_support(*g.node).supported);
  EXPECT_FALSE(make(1024)->check_support(*g.node).supported);
}

}  // namespace
}  // namespace graphsplit::plugins::dvpp
