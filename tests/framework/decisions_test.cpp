// The decision log as text, and which records concern a node after partitioning moved it.
#include "report/decisions.h"

#include <gtest/gtest.h>

#include "graphsplit/sdk/testing/graph_builder.h"

namespace graphsplit {
namespace {

sdk::Decision record(sdk::ReasonCode code, std::string graph, std::vector<std::string> nodes, size_t count) {
  sdk::Decision d;
  d.code = code;
  d.graph = std::move(graph);
  d.nodes = std::move(nodes);
  d.node_count = count;
  d.stage = "dynamic_shape";
  return d;
}

TEST(DecisionLogTest, DescribeNamesStageCodeGraphNodesAndDetail) {
  sdk::Decision d = record(sdk::ReasonCode::kSizeBelowLimit, "g", {"a", "b"}, 12);
  d.detail = "static cluster of 12 nodes < ge.exec.static_model_ops_lower_limit 16";
  EXPECT_EQ(describe(d),
            "[dynamic_shape] SIZE_BELOW_LIMIT g: a, b, ... (12 nodes): static cluster of 12 nodes < "
            "ge.exec.static_model_ops_lower_limit 16");
  sdk::Decision v = record(sdk::ReasonCode::kEngineDisabled, "g", {"relu"}, 1);
  v.final = false;
  v.engine = "AIcoreEngine";
  v.stage = "placement.engine_place";
  EXPECT_EQ(describe(v), "[placement.engine_place] ENGINE_DISABLED (verdict) g: relu [AIcoreEngine]");
}

// A node moved into a subgraph keeps the records made in the graph it came from, and only those.
TEST(DecisionLogTest, RecordsFollowANodeIntoItsSubgraph) {
  auto root = sdk::testing::opset_root("root");
  sdk::Node* call = sdk::testing::add_plain(*root, "call", sdk::op::kPartitionedCall);
  sdk::Graph* sub = root->add_subgraph("sub", call);
  ASSERT_NE(sub, nullptr);
  const sdk::Node* relu = sdk::testing::add_plain(*sub, "relu", "Relu");
  const std::vector<sdk::Decision> log = {record(sdk::ReasonCode::kShapeUnknown, "root", {"relu"}, 1),
                                          record(sdk::ReasonCode::kForced, "elsewhere", {"relu"}, 1),
                                          record(sdk::ReasonCode::kCycle, "root", {"x", "y"}, 2),
                                          record(sdk::ReasonCode::kHostCpu, "sub", {"relu"}, 1)};
  const std::vector<const sdk::Decision*> about = decisions_about(log, *relu);
  ASSERT_EQ(about.size(), 2u);
  EXPECT_EQ(about[0], &log[0]);
  EXPECT_EQ(about[1], &log[3]);
  EXPECT_FALSE(decided_above(log[1], *relu));
}

}  // namespace
}  // namespace graphsplit
