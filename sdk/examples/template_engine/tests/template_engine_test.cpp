// The template engine's own unit tests: what it accepts and why it refuses, and that a compiled subgraph
// computes what the operators mean. Copy and adapt them with the engine.
#include "template_engine.h"

#include <gtest/gtest.h>

#include <cstring>

#include "graphsplit/sdk/testing/contexts.h"
#include "graphsplit/testing/engine_conformance.h"

namespace graphsplit::examples {
namespace {

using sdk::DataType;
using namespace graphsplit::testing;

// [snippet:unit-test-engine]
std::unique_ptr<TemplateEngine> make_engine() {
  sdk::testing::TestPluginContext ctx(GS_PLUGIN_NAME, {},
                                      load_table(GRAPHSPLIT_PLUGIN_DIR "/" GS_PLUGIN_NAME ".ops.toml"));
  return std::make_unique<TemplateEngine>(ctx);
}
// [/snippet:unit-test-engine]

sdk::Tensor floats(std::vector<int64_t> dims, const std::vector<float>& values) {
  char* out = nullptr;
  sdk::Tensor t = sdk::Tensor::allocate(tensor_desc(DataType::kFloat, std::move(dims)),
                                        values.size() * sizeof(float), &out);
  std::memcpy(out, values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> values_of(const sdk::Tensor& t) {
  std::vector<float> v(t.size_bytes() / sizeof(float));
  std::memcpy(v.data(), t.data(), t.size_bytes());
  return v;
}

TEST(TemplateEngineTest, TakesWhatItsTableDeclares) {
  auto engine = make_engine();
  OneNode relu =
      one_node("Relu", {tensor_desc(DataType::kFloat, {2, 3})}, {tensor_desc(DataType::kFloat, {2, 3})});
  EXPECT_TRUE(engine->check_support(*relu.node).supported);
  OneNode f64 =
      one_node("Relu", {tensor_desc(DataType::kDouble, {2, 3})}, {tensor_desc(DataType::kDouble, {2, 3})});
  const sdk::SupportVerdict v = engine->check_support(*f64.node);
  EXPECT_FALSE(v.supported);
  EXPECT_NE(v.detail.find("float64"), std::string::npos) << v.detail;
}

TEST(TemplateEngineTest, RefusesBroadcastingWithItsReason) {
  auto engine = make_engine();
  OneNode add = one_node("Add", {tensor_desc(DataType::kFloat, {2, 3}), tensor_desc(DataType::kFloat, {3})},
                         {tensor_desc(DataType::kFloat, {2, 3})});
  const sdk::SupportVerdict v = engine->check_support(*add.node);
  EXPECT_FALSE(v.supported);
  EXPECT_EQ(v.reason, sdk::ReasonCode::kEngineCheckFailed);
  EXPECT_EQ(v.detail, "Add needs two inputs of one static shape (no broadcasting)");
  OneNode same =
      one_node("Add", {tensor_desc(DataType::kFloat, {2, 3}), tensor_desc(DataType::kFloat, {2, 3})},
               {tensor_desc(DataType::kFloat, {2, 3})});
  EXPECT_TRUE(engine->check_support(*same.node).supported);
}

// (relu(x) + y) * y on four values, against the arithmetic done here.
TEST(TemplateEngineTest, CompiledSubgraphComputesTheOperators) {
  auto engine = make_engine();
  auto g = sdk::testing::opset_root("sub");
  const sdk::TensorDesc d = tensor_desc(DataType::kFloat, {4});
  for (int i = 0; i < 2; ++i) {
    sdk::Node* in = add_op(*g, i == 0 ? "x" : "y", sdk::op::kData, {}, d);
    in->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(i));
  }
  add_op(*g, "relu", "Relu", {"x"}, d);
  add_op(*g, "sum", "Add", {"relu", "y"}, d);
  add_op(*g, "product", "Mul", {"sum", "y"}, d);
  add_net_output(*g, {"product"});
  std::unique_ptr<sdk::Executable> exe;
  ASSERT_TRUE(engine->compile(*g, &exe).is_ok());
  const std::vector<float> x = {-2.0f, -0.5f, 1.5f, 3.0f}, y = {1.0f, 2.0f, -1.0f, 0.5f};
  std::vector<sdk::Tensor> out;
  ASSERT_TRUE(exe->run({floats({4}, x), floats({4}, y)}, &out).is_ok());
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> want;
  for (size_t i = 0; i < x.size(); ++i) want.push_back((std::max(x[i], 0.0f) + y[i]) * y[i]);
  EXPECT_EQ(values_of(out[0]), want);
  EXPECT_FALSE(exe->run({floats({4}, x)}, &out).is_ok());  // one input missing
}

TEST(TemplateEngineTest, CompileNamesTheNodeItCannotRun) {
  auto engine = make_engine();
  auto g = sdk::testing::opset_root("sub");
  const sdk::TensorDesc d = tensor_desc(DataType::kFloat, {4});
  add_op(*g, "x", sdk::op::kData, {}, d)->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  add_op(*g, "e", "Exp", {"x"}, d);
  add_net_output(*g, {"e"});
  std::unique_ptr<sdk::Executable> exe;
  const sdk::Status s = engine->compile(*g, &exe);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("node 'e' (Exp): ", 0), 0u) << s.message();
}

}  // namespace
}  // namespace graphsplit::examples
