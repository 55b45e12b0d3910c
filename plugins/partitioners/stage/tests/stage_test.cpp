// The stage partitioner through the real host (GE catalogue STG entries and error cases).
#include <gtest/gtest.h>

#include "config/config.h"
#include "graphsplit/sdk/ir/verify.h"
#include "pipeline/pipeline.h"
#include "pipeline_testing.h"

namespace graphsplit {
namespace {

using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;

Node* add(Graph& g, const std::string& name, const std::string& type,
          const std::vector<std::string>& inputs) {
  return testing::add_op(g, name, type, inputs, testing::tensor_desc(sdk::DataType::kFloat, {2, 2}));
}

sdk::Status run(Graph& g, bool with_dsp = false) {
  const std::string text = std::string("schema_version = 1\n[plugins]\nrequired = [\"partition_stage\"") +
                           (with_dsp ? ", \"partition_dynamic_shape\"" : "") +
                           "]\n[[pipeline]]\npartition = \"stage\"\n" +
                           (with_dsp ? "[[pipeline]]\npartition = \"dynamic_shape\"\n" : "");
  return testing::run_pipeline(g, text, {GRAPHSPLIT_PLUGIN_DIR});
}

std::vector<std::string> types(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes())
    out.push_back(n->type() == sdk::op::kPartitionedCall ? n->name() : n->type());
  return out;
}

TEST(StagePartitionerTest, Stg05ThreeStagesWithATail) {
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "n1", "Relu", {"data"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(0));
  add(*g, "n2", "Relu", {"n1"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(1));
  add(*g, "n3", "Relu", {"n2"});
  add(*g, "out", "NetOutput", {"n3"});
  ASSERT_TRUE(run(*g).is_ok());
  EXPECT_EQ(types(*g), (std::vector<std::string>{"Data", "Subgraph_Level_0_PartitionedCall",
                                                 "Subgraph_Level_1_PartitionedCall",
                                                 "Subgraph_Level_2_PartitionedCall", "NetOutput"}));
  ASSERT_EQ(g->subgraphs().size(), 3u);
  for (int level = 0; level < 3; ++level) {
    const Graph* sub = g->find_subgraph("Subgraph_Level_" + std::to_string(level));
    ASSERT_NE(sub, nullptr);
    const Node* call = sub->parent_node();
    EXPECT_TRUE(call->attrs().get_bool(sdk::attr::kForceUnknownShape, false));
    EXPECT_EQ(call->attrs().get_int(sdk::attr::kStageLevel, -1), level);
    EXPECT_EQ(sub->attrs().get_int(sdk::attr::kStageLevel, -1), level);
    EXPECT_NE(sub->find_node("n" + std::to_string(level + 1)), nullptr);
    EXPECT_NE(sub->find_node("args0"), nullptr);
    EXPECT_NE(sub->find_node("output"), nullptr);
  }
}

TEST(StagePartitionerTest, UntaggedProducersJoinTheLowestStageThatReachesThem) {
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "p", "Relu", {"data"});  // feeds both stages
  add(*g, "a", "Relu", {"p"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(3));
  add(*g, "b", "Add", {"p", "a"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(5));
  add(*g, "out", "NetOutput", {"b"});
  ASSERT_TRUE(run(*g).is_ok());
  ASSERT_NE(g->find_subgraph("Subgraph_Level_3"), nullptr);
  EXPECT_NE(g->find_subgraph("Subgraph_Level_3")->find_node("p"), nullptr);
  EXPECT_EQ(g->find_subgraph("Subgraph_Level_5")->find_node("p"), nullptr);
  EXPECT_EQ(g->find_node("data")->attrs().get_int(sdk::attr::kStageLevel, -1), 3);  // tagged, not moved
}

TEST(StagePartitionerTest, NoTagsNoChange) {
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "n", "Relu", {"data"});
  add(*g, "out", "NetOutput", {"n"});
  ASSERT_TRUE(run(*g).is_ok());
  EXPECT_TRUE(g->subgraphs().empty());
  EXPECT_EQ(g->num_nodes(), 3u);
}

TEST(StagePartitionerTest, TagsFormingACycleAreAnError) {
  // a (stage 0) -> b (stage 1) -> c (stage 0): stage 0 would need stage 1's output and feed it.
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "a", "Relu", {"data"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(0));
  add(*g, "b", "Relu", {"a"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(1));
  add(*g, "c", "Relu", {"b"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(0));
  add(*g, "out", "NetOutput", {"c"});
  sdk::Status s = run(*g);
  EXPECT_NE(s.message().find("the _stage_level tags form a cycle between stages"), std::string::npos)
      << s.message();
}

TEST(StagePartitionerTest, NonIntegerStageLevelIsAnError) {
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "a", "Relu", {"data"})->attrs().set(sdk::attr::kStageLevel, AttrValue::String("first"));
  add(*g, "out", "NetOutput", {"a"});
  EXPECT_NE(run(*g).message().find(
                "node 'a' (Relu): _stage_level must be an integer in [0, 4294967295], got a string"),
            std::string::npos);
}

TEST(StagePartitionerTest, TheDynamicShapePartitionerLeavesStageCallsAlone) {
  auto g = Graph::create("g");
  add(*g, "data", "Data", {});
  add(*g, "n1", "Relu", {"data"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(0));
  add(*g, "n2", "Relu", {"n1"})->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(1));
  add(*g, "out", "NetOutput", {"n2"});
  ASSERT_TRUE(run(*g, true).is_ok());
  // Stage calls are forced dynamic, so DSP splits, but a STAGE cluster is never merged or wrapped.
  EXPECT_EQ(types(*g), (std::vector<std::string>{"Data", "Subgraph_Level_0_PartitionedCall",
                                                 "Subgraph_Level_1_PartitionedCall", "NetOutput"}));
  EXPECT_TRUE(sdk::verify(*g).is_ok());
}

}  // namespace
}  // namespace graphsplit
