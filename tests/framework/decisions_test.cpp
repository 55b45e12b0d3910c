// The decision log as text, and which records concern a node after partitioning moved it.
#include "report/decisions.h"

#include <gtest/gtest.h>

#include "graphsplit/sdk/testing/graph_builder.h"
#include "pipeline/decision_log.h"

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

// The pipeline's compact log gives back every field of every record, in order, with the recording stage.
TEST(DecisionLogTest, CompactLogGivesBackEveryRecordExactly) {
  std::vector<sdk::Decision> given;
  for (int i = 0; i < 300; ++i) {
    sdk::Decision d = record(i % 2 ? sdk::ReasonCode::kCostOrder : sdk::ReasonCode::kOk,
                             "g" + std::to_string(i % 3), {}, static_cast<size_t>(i));
    for (int k = 0; k < i % 11; ++k) d.nodes.push_back("node_" + std::to_string(i) + "_" + std::to_string(k));
    d.engine = i % 5 ? "AIcoreEngine" : "";
    d.detail = i % 7 ? "kernel library AIcoreEngine" : "unique detail " + std::to_string(i);
    d.final = i % 4 != 0;
    given.push_back(d);
  }
  given.back().nodes.assign(300, "many");  // more names than one byte counts
  // Consecutive records about the same nodes (an engine's verdict, then the placement) share their names;
  // one that differs only in its last name, or in having one name fewer, must not.
  for (int i = 0; i < 4; ++i) {
    sdk::Decision d = given[10];
    d.final = i == 3;
    if (i == 1) d.nodes.back() += "x";
    if (i == 2) d.nodes.pop_back();
    given.push_back(d);
  }
  given.push_back(given[0]);
  given.back().node_count = size_t{5} << 32;                 // more nodes than 32 bits count
  given.back().nodes.assign(1, std::string(3u << 20, 'n'));  // names longer than one block of the pool
  DecisionLog log;
  for (size_t i = 0; i < given.size(); ++i) log.add(given[i], i < 100 ? "placement.engine_place" : "engine");
  log.add(given[5], "engine");  // after the long name: the pool goes on in a new block
  given.push_back(given[5]);
  const std::vector<sdk::Decision>& back = log.decisions();
  ASSERT_EQ(back.size(), given.size());
  for (size_t i = 0; i < given.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(back[i].code, given[i].code);
    EXPECT_EQ(back[i].graph, given[i].graph);
    EXPECT_EQ(back[i].nodes, given[i].nodes);
    EXPECT_EQ(back[i].node_count, given[i].node_count);
    EXPECT_EQ(back[i].engine, given[i].engine);
    EXPECT_EQ(back[i].detail, given[i].detail);
    EXPECT_EQ(back[i].final, given[i].final);
    EXPECT_EQ(back[i].stage, i < 100 ? "placement.engine_place" : "engine");
  }
  log.add(given[0], "later");  // a record added after reading is seen on the next read
  ASSERT_EQ(log.decisions().size(), given.size() + 1);
  EXPECT_EQ(log.decisions().back().stage, "later");
  log.clear();
  EXPECT_TRUE(log.decisions().empty());
  // The fields' recent values are forgotten too: the same strings again are interned afresh.
  log.add(given[1], "engine");
  ASSERT_EQ(log.decisions().size(), 1u);
  EXPECT_EQ(log.decisions()[0].graph, given[1].graph);
  EXPECT_EQ(log.decisions()[0].engine, given[1].engine);
  EXPECT_EQ(log.decisions()[0].detail, given[1].detail);
  EXPECT_EQ(log.decisions()[0].stage, "engine");
}

}  // namespace
}  // namespace graphsplit
