// The dynamic-shape partitioner through the real host: GE's catalogue entries (DSP-xx), cycle safety,
// determinism, random-DAG properties and the real models.
// Over 600 lines on purpose: one test per catalogue entry of the reference, in catalogue order, so that the
// catalogue and its tests can be read side by side.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "config/config.h"
#include "graphsplit/sdk/ir/verify.h"
#include "import/onnx_import.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"
#include "pipeline_testing.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using sdk::AttrValue;
using sdk::DataType;
using sdk::Graph;
using sdk::Node;

sdk::TensorDesc desc(std::vector<int64_t> dims, DataType t = DataType::kFloat) {
  return testing::tensor_desc(t, std::move(dims));
}
const std::vector<int64_t> kStatic = {2, 3};
const std::vector<int64_t> kDynamic = {-1, 3};

Node* add(Graph& g, const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
          const std::vector<int64_t>& dims = kStatic) {
  return testing::add_op(g, name, type, inputs, desc(dims));
}

Node* net_output(Graph& g, const std::vector<std::string>& inputs) {
  return testing::add_net_output(g, inputs);
}

// The decision log of the last partition().
std::vector<sdk::Decision> g_log;

// `options`: the partitioner's own options, as the inside of a TOML inline table.
sdk::Status partition(Graph& g, std::vector<std::pair<std::string, std::string>> ge = {}, bool place = false,
                      const std::string& options = "") {
  const std::string text =
      std::string("schema_version = 1\n[plugins]\nrequired = [\"partition_dynamic_shape\"") +
      (place ? ", \"placement\", \"ai_core\", \"ai_cpu\", \"dvpp\", \"host_cpu\"" : "") + "]\n" +
      (place ? "[[pipeline]]\npass = \"placement.engine_place\"\n" : "") +
      "[[pipeline]]\npartition = \"dynamic_shape\"\n" +
      (options.empty() ? "" : "options = { " + options + " }\n");
  return testing::run_pipeline(g, text, {GRAPHSPLIT_PLUGIN_DIR}, std::move(ge), &g_log);
}

std::unique_ptr<Graph> new_root(const std::string& name = "g1") {
  return testing::opset17_root(name);
}

// Root node types in order, and each subgraph as "name{members}".
std::vector<std::string> root_types(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->type());
  return out;
}

std::vector<std::string> members(const Graph& sub) {
  std::vector<std::string> out;
  for (const Node* n : sub.nodes()) {
    if (n->type() != sdk::op::kData && n->type() != sdk::op::kNetOutput) out.push_back(n->name());
  }
  return out;
}

bool unknown(const Graph& g) {
  return g.attrs().get_bool(sdk::attr::kIsUnknownShape, false);
}

TEST(DynamicShapePartitionerTest, Dsp15ShortStaticEndsJoinTheDynamicMiddle) {
  auto g = new_root();
  add(*g, "a", "Relu", {});
  add(*g, "b", "Relu", {"a"}, kDynamic);
  add(*g, "c", "Relu", {"b"}, kDynamic);
  add(*g, "d", "Relu", {"c"});
  ASSERT_TRUE(partition(*g).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 1u);
  EXPECT_EQ(root_types(*g), std::vector<std::string>{"PartitionedCall"});
  EXPECT_TRUE(g->node_list()[0]->attrs().get_bool(sdk::attr::kIsUnknownShape, false));
  EXPECT_EQ(members(*g->subgraphs()[0]), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(g->subgraphs()[0]->name(), "g1_sub_0_unknow");
  EXPECT_TRUE(g->subgraphs()[0]->attrs().get_bool(sdk::attr::kMemoryDiscontiguousAllocation, false));
  EXPECT_TRUE(g->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, false));
}

TEST(DynamicShapePartitionerTest, NodesCreatedOutOfOrderAreClassifiedAfterTheSortRenumbersThem) {
  // The chain x -> s1..s5 -> u (dynamic output) -> t1..t8 -> out, created back to front, so that sorting the
  // graph renumbers every node: the classification must follow the nodes, not their old numbers. t1 reads u's
  // dynamic tensor, so it is dynamic too.
  auto g = new_root();
  std::vector<std::string> chain = {"x",  "s1", "s2", "s3", "s4", "s5", "u", "t1",
                                    "t2", "t3", "t4", "t5", "t6", "t7", "t8"};
  std::map<std::string, Node*> nodes;
  Node* out = g->add_node("out", sdk::op::kNetOutput, 1, 0);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const bool data = *it == "x";
    nodes[*it] = g->add_node(*it, data ? "Data" : "Relu", data ? 0 : 1, 0);
    nodes[*it]->add_output(desc(*it == "u" ? kDynamic : kStatic), *it);
  }
  for (size_t i = 1; i < chain.size(); ++i)
    ASSERT_TRUE(g->add_edge({nodes[chain[i - 1]], 0}, {nodes[chain[i]], 0}).is_ok());
  ASSERT_TRUE(g->add_edge({nodes["t8"], 0}, {out, 0}).is_ok());
  ASSERT_TRUE(partition(*g).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 3u);
  EXPECT_EQ(members(*g->subgraphs()[0]), (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5"}));
  EXPECT_FALSE(unknown(*g->subgraphs()[0]));
  EXPECT_EQ(members(*g->subgraphs()[1]), (std::vector<std::string>{"u", "t1"}));
  EXPECT_TRUE(unknown(*g->subgraphs()[1]));
  EXPECT_EQ(members(*g->subgraphs()[2]),
            (std::vector<std::string>{"t2", "t3", "t4", "t5", "t6", "t7", "t8"}));
  EXPECT_FALSE(unknown(*g->subgraphs()[2]));
}

TEST(DynamicShapePartitionerTest, KnownFirstStrategyHasNoPathAbsorption) {
  // u1 (forced dynamic) feeds u2 (forced dynamic) directly and through six static nodes. Normal mode: u2
  // absorbs u1 and the static run between them, one dynamic subgraph. Known-first (GE's ffts+ order): the run
  // merges first, stays static (6 >= its default limit 6), and u1 and u2 cannot merge past it: three
  // subgraphs.
  auto build = [] {
    auto g = new_root();
    add(*g, "x", "Data", {});
    add(*g, "u1", "Relu", {"x"})->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
    add(*g, "k1", "Relu", {"u1"});
    for (int i = 2; i <= 6; ++i) add(*g, "k" + std::to_string(i), "Relu", {"k" + std::to_string(i - 1)});
    add(*g, "u2", "Add", {"u1", "k6"})->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
    net_output(*g, {"u2"});
    return g;
  };
  auto normal = build();
  ASSERT_TRUE(partition(*normal).is_ok());
  ASSERT_EQ(normal->subgraphs().size(), 1u);
  EXPECT_EQ(members(*normal->subgraphs()[0]),
            (std::vector<std::string>{"u1", "k1", "k2", "k3", "k4", "k5", "k6", "u2"}));

  auto known_first = build();
  ASSERT_TRUE(partition(*known_first, {}, false, "strategy = \"known_first\"").is_ok());
  ASSERT_EQ(known_first->subgraphs().size(), 3u);
  EXPECT_EQ(members(*known_first->subgraphs()[0]), std::vector<std::string>{"u1"});
  EXPECT_TRUE(unknown(*known_first->subgraphs()[0]));
  EXPECT_EQ(members(*known_first->subgraphs()[1]),
            (std::vector<std::string>{"k1", "k2", "k3", "k4", "k5", "k6"}));
  EXPECT_FALSE(unknown(*known_first->subgraphs()[1]));
  EXPECT_EQ(members(*known_first->subgraphs()[2]), std::vector<std::string>{"u2"});

  // With five static nodes the run is below 6 and is demoted; then it joins the dynamic clusters.
  auto small = build();
  ASSERT_TRUE(partition(*small, {}, false, "strategy = \"known_first\", known_first_limit = 7").is_ok());
  ASSERT_EQ(small->subgraphs().size(), 1u);
  EXPECT_TRUE(unknown(*small->subgraphs()[0]));
}

TEST(DynamicShapePartitionerTest, StaticAndDynamicPartsWithSecondPathRefused) {
  // x -> s1 -> s2 -> s3 -> s4 -> s5 -> s6 -> out, with s1 -> u (forced dynamic, static shapes) -> s6. s6
  // cannot join the static chain (the path through u), so it is a lone static node, demoted, and joins u.
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "s1", "Relu", {"x"});
  add(*g, "s2", "Relu", {"s1"});
  add(*g, "s3", "Relu", {"s2"});
  add(*g, "s4", "Relu", {"s3"});
  add(*g, "s5", "Relu", {"s4"});
  add(*g, "u", "Relu", {"s1"})->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
  add(*g, "s6", "Add", {"s5", "u"});
  net_output(*g, {"s6"});
  ASSERT_TRUE(partition(*g).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 2u);
  EXPECT_EQ(g->subgraphs()[0]->name(), "g1_sub_0_know");
  EXPECT_EQ(members(*g->subgraphs()[0]), (std::vector<std::string>{"s1", "s2", "s3", "s4", "s5"}));
  EXPECT_FALSE(unknown(*g->subgraphs()[0]));
  EXPECT_EQ(g->subgraphs()[1]->name(), "g1_sub_1_unknow");
  EXPECT_EQ(members(*g->subgraphs()[1]), (std::vector<std::string>{"u", "s6"}));
  EXPECT_TRUE(unknown(*g->subgraphs()[1]));
  EXPECT_EQ(root_types(*g),
            (std::vector<std::string>{"Data", "PartitionedCall", "PartitionedCall", "NetOutput"}));
  // The records, as the partitioner reported them through the pass context.
  auto has = [&](sdk::ReasonCode code, std::vector<std::string> nodes, const std::string& detail) {
    return std::any_of(g_log.begin(), g_log.end(), [&](const sdk::Decision& d) {
      return d.code == code && d.nodes == nodes && d.node_count == nodes.size() && d.detail == detail &&
             d.graph == "g1" && d.stage == "dynamic_shape" && d.final;
    });
  };
  EXPECT_TRUE(has(sdk::ReasonCode::kSizeBelowLimit, {"s6"},
                  "static cluster of 1 nodes < ge.exec.static_model_ops_lower_limit 4"));
  EXPECT_TRUE(has(sdk::ReasonCode::kCycle, {"s1", "s6"},
                  "not merged: another path joins the cluster of 's1' to that of 's6'"));
  EXPECT_TRUE(has(sdk::ReasonCode::kForced, {"u"}, "_is_unknown_shape or _force_unknown_shape is set"));
}

TEST(DynamicShapePartitionerTest, Dsp16HostPlacementAndDsp20LimitMinusOneKeepTheGraphWhole) {
  for (auto option : std::vector<std::pair<std::string, std::string>>{
           {"ge.exec.placement", "HOST"}, {"ge.exec.static_model_ops_lower_limit", "-1"}}) {
    auto g = new_root();
    add(*g, "x", "Data", {}, kDynamic);
    add(*g, "r", "Relu", {"x"}, kDynamic);
    net_output(*g, {"r"});
    ASSERT_TRUE(partition(*g, {option}).is_ok());
    EXPECT_TRUE(g->subgraphs().empty()) << option.first;
    EXPECT_TRUE(unknown(*g));
    EXPECT_FALSE(g->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, true));
    for (const Node* n : g->nodes()) EXPECT_TRUE(n->attrs().get_bool(sdk::attr::kOwnerGraphIsUnknown, false));
  }
}

TEST(DynamicShapePartitionerTest, Dsp17And18HostSchedulingThreshold) {
  for (const char* threshold : {"15", "0"}) {
    auto g = new_root();
    add(*g, "a", "Relu", {});
    add(*g, "b", "Relu", {"a"});
    add(*g, "c", "Relu", {"b"});
    ASSERT_TRUE(partition(*g, {{"ge.host_scheduling_max_threshold", threshold}}).is_ok());
    EXPECT_TRUE(g->subgraphs().empty());
    EXPECT_EQ(unknown(*g), std::string(threshold) == "15") << threshold;
    EXPECT_FALSE(g->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, true));
  }
}

TEST(DynamicShapePartitionerTest, Dsp19OnlyDataAndNetOutput) {
  auto g = new_root();
  add(*g, "x", "Data", {}, kDynamic);
  add(*g, "y", "Data", {});
  net_output(*g, {"x", "y"});
  ASSERT_TRUE(partition(*g).is_ok());
  EXPECT_TRUE(g->subgraphs().empty());
  EXPECT_EQ(g->num_nodes(), 3u);
  EXPECT_TRUE(unknown(*g));
  EXPECT_TRUE(g->find_node("y")->attrs().get_bool(sdk::attr::kOwnerGraphIsUnknown, false));
}

TEST(DynamicShapePartitionerTest, Dsp21LargeLimitMakesOneDynamicSubgraph) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "a", "Relu", {"x"});
  add(*g, "b", "Relu", {"a"});
  add(*g, "u", "NonZero", {"b"}, kDynamic);
  add(*g, "c", "Relu", {"u"});
  add(*g, "d", "Relu", {"c"});
  net_output(*g, {"d"});
  ASSERT_TRUE(partition(*g, {{"ge.exec.static_model_ops_lower_limit", "10"}}).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 1u);
  EXPECT_EQ(g->num_nodes(), 3u);
  EXPECT_TRUE(unknown(*g->subgraphs()[0]));
  EXPECT_EQ(members(*g->subgraphs()[0]), (std::vector<std::string>{"a", "b", "u", "c", "d"}));
}

TEST(DynamicShapePartitionerTest, Dsp22EmptyOrOutOfRangeLimitIsAnError) {
  auto g = new_root();
  add(*g, "a", "Relu", {});
  EXPECT_EQ(partition(*g, {{"ge.exec.static_model_ops_lower_limit", ""}}).message(),
            "<command line>: error: --options: E10001: option 'ge.exec.static_model_ops_lower_limit' is "
            "present but empty");
  EXPECT_NE(partition(*g, {{"ge.exec.static_model_ops_lower_limit", "-2"}})
                .message()
                .find("must be an integer in [-1, INT64_MAX]"),
            std::string::npos);
}

TEST(DynamicShapePartitionerTest, Dsp23NoAddressRefreshForcesDynamic) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "neg", "Neg", {"x"})->attrs().set(sdk::attr::kIsSupportAddrRefresh, AttrValue::Bool(false));
  net_output(*g, {"neg"});
  ASSERT_TRUE(partition(*g).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 1u);
  EXPECT_TRUE(g->subgraphs()[0]->find_node("neg")->attrs().get_bool(sdk::attr::kForceUnknownShape, false));
  EXPECT_TRUE(g->subgraphs()[0]->parent_node()->attrs().get_bool(sdk::attr::kIsUnknownShape, false));
}

// A static node that depends on run-time tiling, where its tiling cannot sink (the default options): forced
// dynamic, with the reason, while an _is_support_addr_refresh = true neighbour stays static.
TEST(DynamicShapePartitionerTest, Dsp23TilingDependentNodeIsForcedDynamic) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  Node* t = add(*g, "t", "Neg", {"x"});
  t->attrs().set(sdk::attr::kIsSupportAddrRefresh, AttrValue::Bool(true));
  t->attrs().set(sdk::attr::kDynamicTilingDependOp, AttrValue::Bool(true));
  add(*g, "r", "Relu", {"x"})->attrs().set(sdk::attr::kIsSupportAddrRefresh, AttrValue::Bool(true));
  net_output(*g, {"t", "r"});
  ASSERT_TRUE(partition(*g).is_ok());
  const Node* moved = nullptr;
  for (const Graph* s : g->subgraphs()) {
    if (const Node* n = s->find_node("t")) {
      moved = n;
      EXPECT_TRUE(unknown(*s));
      EXPECT_EQ(s->find_node("r"), nullptr);
    }
  }
  ASSERT_NE(moved, nullptr);
  EXPECT_TRUE(moved->attrs().get_bool(sdk::attr::kForceUnknownShape, false));
  EXPECT_TRUE(std::any_of(g_log.begin(), g_log.end(), [](const sdk::Decision& d) {
    return d.code == sdk::ReasonCode::kTilingDepend && d.nodes == std::vector<std::string>{"t"};
  }));
}

TEST(DynamicShapePartitionerTest, Dsp02HostCpuAndForcedNodesAreDynamic) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "a", "Relu", {"x"});
  add(*g, "b", "Relu", {"a"});
  add(*g, "c", "Relu", {"b"});
  add(*g, "d", "Relu", {"c"});
  add(*g, "h", "Shape", {"d"})->attrs().set(sdk::attr::kOpEngineName, AttrValue::String("DNN_VM_HOST_CPU"));
  add(*g, "f", "Relu", {"x"})->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
  net_output(*g, {"h", "f"});
  ASSERT_TRUE(partition(*g).is_ok());
  std::set<std::string> dynamic_nodes;
  for (const Graph* s : g->subgraphs()) {
    if (unknown(*s)) {
      for (const auto& m : members(*s)) dynamic_nodes.insert(m);
    }
  }
  EXPECT_TRUE(dynamic_nodes.count("h"));
  EXPECT_TRUE(dynamic_nodes.count("f"));
  EXPECT_FALSE(dynamic_nodes.count("a"));
}

// A PartitionedCall whose subgraph holds an If whose branch holds the given node.
std::unique_ptr<Graph> nested(const std::function<void(Graph&)>& fill_branch) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "s1", "Relu", {"x"});
  add(*g, "s2", "Relu", {"s1"});
  add(*g, "s3", "Relu", {"s2"});
  add(*g, "s4", "Relu", {"s3"});
  Node* call = add(*g, "call", "PartitionedCall", {"s4"});
  net_output(*g, {"call"});
  Graph* f = g->add_subgraph("f", call);
  call->attrs().set("f", AttrValue::OfGraph(f));
  add(*f, "a", "Data", {})->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(0));
  add(*f, "c", "Const", {}, {});
  Node* iff = add(*f, "if", "If", {"c", "a"});
  net_output(*f, {"if"});
  for (const char* key : {"then_branch", "else_branch"}) {
    Graph* b = g->add_subgraph(std::string("if_") + key, iff);
    iff->attrs().set(key, AttrValue::OfGraph(b));
    add(*b, "in", "Data", {})->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(1));
    add(*b, "op", "Relu", {"in"});
    if (std::string(key) == "then_branch") fill_branch(*b);
    net_output(*b, {"op"});
  }
  return g;
}

TEST(DynamicShapePartitionerTest, Dsp04To06SomethingDynamicTwoLevelsDownMakesTheCallDynamic) {
  const std::vector<std::pair<std::string, std::function<void(Graph&)>>> cases = {
      {"dynamic shape",
       [](Graph& b) {
         b.find_node("op")->mutable_output_desc(0).shape = sdk::Shape({-1, 3});
       }},
      {"force unknown",
       [](Graph& b) {
         b.find_node("op")->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
       }},
      {"host cpu",
       [](Graph& b) {
         b.find_node("op")->attrs().set(sdk::attr::kOpEngineName, AttrValue::String("DNN_VM_HOST_CPU"));
       }},
  };
  for (const auto& [what, fill] : cases) {
    auto g = nested(fill);
    ASSERT_TRUE(partition(*g).is_ok()) << what;
    const Node* call = nullptr;
    for (const Graph* s : g->subgraphs()) {
      if (members(*s) == std::vector<std::string>{"call"}) call = s->find_node("call");
    }
    ASSERT_NE(call, nullptr) << what;
    EXPECT_TRUE(call->owner()->attrs().get_bool(sdk::attr::kIsUnknownShape, false)) << what;
    // The call's own subgraph and the dynamic branch are marked; the static else branch is not (If passes
    // nothing down).
    EXPECT_TRUE(unknown(*g->find_subgraph("f"))) << what;
    EXPECT_TRUE(unknown(*g->find_subgraph("if_then_branch"))) << what;
    EXPECT_FALSE(unknown(*g->find_subgraph("if_else_branch"))) << what;
  }
}

TEST(DynamicShapePartitionerTest, StableModeMergesRunsDsp26To30) {
  // DSP-29: [cast1 K, relu1 U, cast3 U, relu3 U, cast2 K, relu2 K, addn K] in node order -> one dynamic
  // subgraph.
  auto g = new_root();
  add(*g, "cast1", "Cast", {});
  add(*g, "relu1", "Relu", {"cast1"}, kDynamic);
  add(*g, "cast3", "Cast", {}, kDynamic);
  add(*g, "relu3", "Relu", {"cast3"}, kDynamic);
  add(*g, "cast2", "Cast", {});
  add(*g, "relu2", "Relu", {"cast2"});
  add(*g, "addn", "Sum", {"relu1", "relu2", "relu3"});
  ASSERT_TRUE(partition(*g, {{"ge.topoSortingMode", "3"}}).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 1u);
  EXPECT_TRUE(unknown(*g->subgraphs()[0]));
  EXPECT_EQ(members(*g->subgraphs()[0]).size(), 7u);

  // DSP-30: six dynamic then three static -> one subgraph with all nine.
  auto h = new_root();
  std::string prev;
  for (int i = 0; i < 9; ++i) {
    const std::string name = "n" + std::to_string(i);
    add(*h, name, "Relu", prev.empty() ? std::vector<std::string>{} : std::vector<std::string>{prev},
        i < 6 ? kDynamic : kStatic);
    prev = name;
  }
  ASSERT_TRUE(partition(*h, {{"ge.topoSortingMode", "3"}}).is_ok());
  ASSERT_EQ(h->subgraphs().size(), 1u);
  EXPECT_EQ(members(*h->subgraphs()[0]).size(), 9u);
}

TEST(DynamicShapePartitionerTest, ConstsWithoutInputsGatherInOneInputSubgraph) {
  auto g = new_root();
  add(*g, "x", "Data", {}, kDynamic);
  add(*g, "w1", "Const", {});
  add(*g, "w2", "Const", {});
  add(*g, "a", "Add", {"x", "w1"}, kDynamic);
  add(*g, "b", "Mul", {"a", "w2"}, kDynamic);
  net_output(*g, {"b"});
  ASSERT_TRUE(partition(*g).is_ok());
  ASSERT_EQ(g->subgraphs().size(), 2u);
  const Graph* input = g->find_subgraph("g1_sub_0_input");
  ASSERT_NE(input, nullptr);
  EXPECT_EQ(members(*input), (std::vector<std::string>{"w1", "w2"}));
  EXPECT_FALSE(unknown(*input));
}

TEST(DynamicShapePartitionerTest, Dsp01SingleOpSceneIsDynamicButNotSplit) {
  auto g = new_root();
  g->attrs().set(sdk::attr::kSingleOpScene, AttrValue::Bool(true));
  add(*g, "x", "Data", {}, kDynamic);
  add(*g, "a", "AddN", {"x"}, kDynamic);
  net_output(*g, {"a"});
  ASSERT_TRUE(partition(*g).is_ok());
  EXPECT_TRUE(g->subgraphs().empty());
  EXPECT_FALSE(g->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, true));
  EXPECT_TRUE(g->attrs().get_bool(sdk::attr::kMemoryDiscontiguousAllocation, false));
  EXPECT_TRUE(unknown(*g));
}

TEST(DynamicShapePartitionerTest, NoNeedAttributeSkipsTheGraph) {
  auto g = new_root();
  g->attrs().set(sdk::attr::kNoNeedDynamicShapePartition, AttrValue::Bool(true));
  add(*g, "x", "Data", {}, kDynamic);
  add(*g, "a", "Relu", {"x"}, kDynamic);
  net_output(*g, {"a"});
  ASSERT_TRUE(partition(*g).is_ok());
  EXPECT_TRUE(g->subgraphs().empty());
  EXPECT_FALSE(g->attrs().has(sdk::attr::kDynamicShapePartitioned));
}

TEST(DynamicShapePartitionerTest, Dsp07ControlFlowGroupBecomesOneCluster) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "m1", "StreamSwitch", {"x"})->attrs().set(sdk::attr::kControlFlowGroup, AttrValue::Int(1));
  add(*g, "k1", "Relu", {"m1"});
  add(*g, "k2", "Relu", {"k1"});
  Node* m2 = add(*g, "m2", "Merge", {"k2"});
  m2->attrs().set(sdk::attr::kControlFlowGroup, AttrValue::Int(1));
  m2->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
  add(*g, "h1", "Relu", {"x"});
  add(*g, "h2", "Relu", {"h1"});
  add(*g, "h3", "Relu", {"h2"});
  add(*g, "h4", "Relu", {"h3"});
  net_output(*g, {"m2", "h4"});
  ASSERT_TRUE(partition(*g).is_ok());
  const Graph* group = nullptr;
  for (const Graph* s : g->subgraphs()) {
    if (s->find_node("m1")) group = s;
  }
  ASSERT_NE(group, nullptr);
  EXPECT_TRUE(unknown(*group));
  EXPECT_EQ(members(*group), (std::vector<std::string>{"m1", "k1", "k2", "m2"}));
}

TEST(DynamicShapePartitionerTest, Dsp13StackOpsOfOneHandleEndOnOneSide) {
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "d", "Data", {}, kDynamic);
  add(*g, "a1", "Relu", {"x"});
  add(*g, "a2", "Relu", {"a1"});
  add(*g, "a3", "Relu", {"a2"});
  add(*g, "stack1", "StackPush", {"a3"})->attrs().set("_data_flow_handle", AttrValue::Int(7));
  add(*g, "u", "Relu", {"d"}, kDynamic);
  add(*g, "pop", "StackPop", {"u"}, kDynamic)->attrs().set("_data_flow_handle", AttrValue::Int(7));
  net_output(*g, {"stack1", "pop"});
  ASSERT_TRUE(partition(*g).is_ok());
  const Node* stack1 = nullptr;
  for (const Graph* s : g->subgraphs()) {
    if (s->find_node("stack1")) stack1 = s->find_node("stack1");
  }
  ASSERT_NE(stack1, nullptr);
  EXPECT_TRUE(stack1->attrs().get_bool(sdk::attr::kForceUnknownShape, false));
  EXPECT_TRUE(unknown(*stack1->owner()));
}

TEST(DynamicShapePartitionerTest, Dsp24MultiBatchBranchesAreSplitOnTheirOwn) {
  for (bool flag : {true, false}) {
    auto g = new_root();
    if (flag) g->attrs().set(sdk::attr::kEnableDynamicBatch, AttrValue::Bool(true));
    add(*g, "idx", "Data", {}, {});
    add(*g, "x", "Data", {});
    Node* c = add(*g, "case", "Case", {"idx", "x"}, kDynamic);
    c->attrs().set(sdk::attr::kMbatchInsertedNode, AttrValue::Bool(true));
    net_output(*g, {"case"});
    std::vector<Graph*> branches;
    for (int b = 0; b < 2; ++b) {
      Graph* br = g->add_subgraph("Batch_" + std::to_string(b), c);
      branches.push_back(br);
      add(*br, "in", "Data", {})->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(1));
      add(*br, "s1", "Relu", {"in"});
      add(*br, "s2", "Relu", {"s1"});
      add(*br, "s3", "Relu", {"s2"});
      add(*br, "s4", "Relu", {"s3"});
      add(*br, "u", "NonZero", {"s4"}, kDynamic);
      net_output(*br, {"u"});
    }
    c->attrs().set("branches", AttrValue::Graphs(branches));
    ASSERT_TRUE(partition(*g).is_ok());
    size_t calls_in_branches = 0;
    for (Graph* br : branches) {
      for (const Node* n : br->nodes()) calls_in_branches += n->type() == sdk::op::kPartitionedCall;
    }
    EXPECT_EQ(calls_in_branches, flag ? 4u : 0u) << "flag " << flag;
    EXPECT_TRUE(unknown(*g)) << "flag " << flag;
  }
}

TEST(DynamicShapePartitionerTest, ConstControlEdgesMoveToTheConstsConsumers) {
  auto g = new_root();
  add(*g, "d", "Data", {}, kDynamic);
  Node* u = add(*g, "u", "Relu", {"d"}, kDynamic);
  Node* k = add(*g, "k", "Const", {});
  ASSERT_TRUE(g->add_control_edge(u, k).is_ok());
  add(*g, "v", "Add", {"u", "k"}, kDynamic);
  net_output(*g, {"v"});
  ASSERT_TRUE(partition(*g).is_ok());
  const Graph* sub = nullptr;
  for (const Graph* s : g->subgraphs()) {
    if (s->find_node("k")) sub = s;
  }
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(sub->find_node("k")->control_inputs().empty());
  EXPECT_EQ(sub->find_node("v")->control_inputs(), std::vector<Node*>{sub->find_node("u")});
}

TEST(DynamicShapePartitionerTest, RefVariableMergesIntoItsProducer) {
  // A ref variable fed by a dynamic producer joins it, although the variable itself is static.
  auto g = new_root();
  add(*g, "x", "Data", {});
  add(*g, "s1", "Relu", {"x"});
  add(*g, "s2", "Relu", {"s1"});
  add(*g, "s3", "Relu", {"s2"});
  add(*g, "s4", "Relu", {"s3"});
  add(*g, "u", "Relu", {"s4"})->attrs().set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
  add(*g, "var", "Variable", {"u"})->attrs().set("ref_var_src_var_name", AttrValue::String("weights"));
  add(*g, "t1", "Relu", {"var"});
  add(*g, "t2", "Relu", {"t1"});
  add(*g, "t3", "Relu", {"t2"});
  add(*g, "t4", "Relu", {"t3"});
  net_output(*g, {"t4"});
  ASSERT_TRUE(partition(*g).is_ok());
  const Graph* home = nullptr;
  for (const Graph* s : g->subgraphs()) {
    if (s->find_node("var")) home = s;
  }
  ASSERT_NE(home, nullptr);
  EXPECT_NE(home->find_node("u"), nullptr);
  EXPECT_TRUE(unknown(*home));
  EXPECT_EQ(home->find_node("t1"), nullptr);  // the static tail stays static
}

// ---- properties on random DAGs

std::unique_ptr<Graph> random_graph(std::mt19937& rng, int n, const std::vector<int>& order) {
  // Builds the same DAG whatever `order` the nodes are created in: node k's inputs are fixed by k alone.
  auto g = new_root();
  std::vector<std::vector<int>> inputs(n);
  std::vector<bool> dynamic(n);
  std::mt19937 shape_rng(static_cast<unsigned>(rng()));
  for (int k = 1; k < n; ++k) {
    const int fan_in = 1 + static_cast<int>(shape_rng() % 2);
    for (int j = 0; j < fan_in; ++j) inputs[k].push_back(static_cast<int>(shape_rng() % k));
  }
  for (int k = 0; k < n; ++k) dynamic[k] = shape_rng() % 10 == 0;
  std::vector<Node*> created(n, nullptr);
  for (int k : order) {
    created[k] = g->add_node("n" + std::to_string(k), k == 0 ? "Data" : "Relu", inputs[k].size(), 0);
    created[k]->add_output(desc(dynamic[k] ? kDynamic : kStatic));
  }
  for (int k = 0; k < n; ++k) {
    for (size_t j = 0; j < inputs[k].size(); ++j)
      (void)g->add_edge({created[inputs[k][j]], 0}, {created[k], static_cast<int32_t>(j)});
  }
  Node* out = g->add_node("out", sdk::op::kNetOutput, 1, 0);
  (void)g->add_edge({created[n - 1], 0}, {out, 0});
  return g;
}

// Each subgraph's members as a sorted list of names, the whole sorted: a canonical view of the partition.
std::vector<std::vector<std::string>> canonical(const Graph& g) {
  std::vector<std::vector<std::string>> out;
  for (const Graph* s : g.subgraphs()) {
    std::vector<std::string> m = members(*s);
    std::sort(m.begin(), m.end());
    m.insert(m.begin(), unknown(*s) ? "U" : "K");
    out.push_back(m);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DynamicShapePartitionerTest, RandomDagProperties) {
  std::mt19937 rng(4242);
  for (int trial = 0; trial < 150; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 60);
    const unsigned seed = static_cast<unsigned>(rng());
    std::vector<int> in_order(n), shuffled(n);
    std::iota(in_order.begin(), in_order.end(), 0);
    shuffled = in_order;
    std::shuffle(shuffled.begin() + 1, shuffled.end(), rng);  // keep the Data first
    std::mt19937 a_rng(seed), b_rng(seed);
    auto a = random_graph(a_rng, n, in_order);
    auto b = random_graph(b_rng, n, shuffled);
    ASSERT_TRUE(partition(*a).is_ok()) << "trial " << trial;
    ASSERT_TRUE(partition(*b).is_ok()) << "trial " << trial;
    ASSERT_TRUE(sdk::verify(*a).is_ok());
    // Every operator sits in exactly one subgraph (or, without a split, in the root).
    std::multiset<std::string> seen;
    for (const Graph* s : a->subgraphs()) {
      for (const auto& m : members(*s)) seen.insert(m);
    }
    for (const Node* x : a->nodes()) {
      if (x->type() == "Relu") seen.insert(x->name());
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n - 1)) << "trial " << trial;
    EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << "trial " << trial;
    // No static subgraph holds an unknown dimension.
    for (const Graph* s : a->subgraphs()) {
      if (unknown(*s)) continue;
      for (const Node* x : s->nodes()) {
        for (size_t o = 0; o < x->num_outputs(); ++o)
          EXPECT_TRUE(x->output_desc(o).shape.is_static()) << x->name();
      }
    }
    // The same DAG created in another order partitions the same way.
    EXPECT_EQ(canonical(*a), canonical(*b)) << "trial " << trial;
  }
}

// A graph that is dynamic almost everywhere: Data of an unknown batch, input Consts, operators on both; now
// and then a control edge, a second component, a static operator on Consts alone, or a Const that only
// feeds the output. Built from `seed` alone.
std::unique_ptr<Graph> mostly_dynamic_graph(uint32_t seed) {
  std::mt19937 rng(seed);
  auto g = new_root("m" + std::to_string(seed));
  const int n = 3 + static_cast<int>(rng() % 30);
  const bool two_parts = rng() % 5 == 0;
  const bool control_only = rng() % 5 == 0;  // the Consts reach the operators by control edges alone
  std::vector<std::string> names;
  std::vector<bool> is_const;
  add(*g, "x", "Data", {}, kDynamic);
  if (two_parts) add(*g, "y", "Data", {}, kDynamic);
  for (int k = 0; k < n; ++k) {
    const std::string name = "n" + std::to_string(k);
    if (k < 2 || rng() % 4 == 0) {
      add(*g, name, "Const", {}, kStatic);
      names.push_back(name);
      is_const.push_back(true);
      continue;
    }
    std::vector<std::string> in;
    for (int j = 0, fan = 1 + static_cast<int>(rng() % 2); j < fan; ++j) {
      const size_t pick = rng() % 2 ? names.size() - 1 : rng() % (names.size() + 1);  // mostly the latest
      in.push_back(pick == names.size() ? (two_parts && rng() % 2 ? "y" : "x") : names[pick]);
    }
    auto consts_only = [&] {
      return std::all_of(in.begin(), in.end(), [&](const std::string& i) {
        const auto it = std::find(names.begin(), names.end(), i);
        return it != names.end() && is_const[static_cast<size_t>(it - names.begin())];
      });
    };
    if (control_only) {
      for (std::string& i : in) {
        const auto it = std::find(names.begin(), names.end(), i);
        if (it != names.end() && is_const[static_cast<size_t>(it - names.begin())]) i = "x";
      }
    }
    if (consts_only() && rng() % 8 != 0) in.front() = "x";  // a static operator, now and then
    const bool all_const = consts_only();
    Node* op = add(*g, name, in.size() == 2 ? "Add" : "Relu", in, all_const ? kStatic : kDynamic);
    if (rng() % 6 == 0) (void)g->add_control_edge(g->find_node(names[rng() % names.size()]), op);
    names.push_back(name);
    is_const.push_back(false);
  }
  std::vector<std::string> outs = {names.back()};
  if (rng() % 6 == 0 || control_only) outs.push_back("n0");
  if (control_only) (void)g->add_control_edge(g->find_node("n1"), g->find_node(names.back()));
  net_output(*g, outs);
  return g;
}

// A graph whose every framed node is dynamic, in one connected whole, takes a shortcut past the cluster
// engine; the .om must be the one the cluster engine gives (the option always_cluster), byte for byte.
TEST(DynamicShapePartitionerTest, OneDynamicFrameShortcutAgreesWithTheClusterEngine) {
  int one_dynamic_frame = 0;
  for (uint32_t seed = 0; seed < 300; ++seed) {
    std::string bytes[2];
    size_t dynamic_frames = 0, static_frames = 0;
    for (int general = 0; general < 2; ++general) {
      auto g = mostly_dynamic_graph(seed);
      ASSERT_TRUE(partition(*g, {}, false, general ? "always_cluster = true" : "").is_ok())
          << "seed " << seed;
      ASSERT_TRUE(serialize_om(*g, &bytes[general]).is_ok());
      dynamic_frames = static_frames = 0;
      for (const Graph* s : g->subgraphs()) {
        const bool input_frame = s->name().size() > 6 && s->name().substr(s->name().size() - 6) == "_input";
        if (!input_frame) ++(unknown(*s) ? dynamic_frames : static_frames);
      }
    }
    ASSERT_TRUE(bytes[0] == bytes[1]) << "seed " << seed;
    if (dynamic_frames == 1 && static_frames == 0) ++one_dynamic_frame;
  }
  EXPECT_GT(one_dynamic_frame, 50);  // the shortcut's case is common among these graphs
}

TEST(DynamicShapePartitionerTest, OutputIsByteIdenticalAcrossRuns) {
  std::string first;
  for (int run = 0; run < 2; ++run) {
    std::mt19937 rng(7);
    std::vector<int> order(40);
    std::iota(order.begin(), order.end(), 0);
    auto g = random_graph(rng, 40, order);
    ASSERT_TRUE(partition(*g).is_ok());
    std::string bytes;
    ASSERT_TRUE(serialize_om(*g, &bytes).is_ok());
    if (run == 0)
      first = bytes;
    else
      EXPECT_TRUE(bytes == first);
  }
}

// ---- real models with the default placement

struct ModelSummary {
  const char* file;
  size_t min_subgraphs;
};

class RealModelDspTest : public ::testing::TestWithParam<ModelSummary> {};

TEST_P(RealModelDspTest, PartitionsAndVerifies) {
  const std::string path = std::string(GRAPHSPLIT_MODEL_DIR) + "/" + GetParam().file;
  ASSERT_TRUE(fs::exists(path)) << "run scripts/fetch_models.sh";
  std::unique_ptr<Graph> root;
  ASSERT_TRUE(import_onnx_file(path, {}, &root).is_ok());
  const size_t before = root->total_nodes();
  sdk::Status s = partition(*root, {}, true);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(root->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, false));
  size_t frames = 0, dynamic_frames = 0;
  for (const Node* n : root->nodes()) {
    if (n->type() != sdk::op::kPartitionedCall) continue;
    ++frames;
    dynamic_frames += n->attrs().get_bool(sdk::attr::kIsUnknownShape, false);
  }
  EXPECT_GE(frames, GetParam().min_subgraphs);
  EXPECT_GE(dynamic_frames, 1u);
  // Framing adds calls, inner Data and inner NetOutputs and loses nothing.
  EXPECT_GT(root->total_nodes(), before);
}

INSTANTIATE_TEST_SUITE_P(Models, RealModelDspTest,
                         ::testing::Values(ModelSummary{"ch_PP-OCRv4_det_infer.onnx", 2},
                                           ModelSummary{"ch_PP-OCRv4_rec_infer.onnx", 2},
                                           ModelSummary{"silero_vad_v5.onnx", 1},
                                           ModelSummary{"silero_vad_legacy.onnx", 1}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(0, n.find('.'));
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(RealModelDspTest, StaticShapesLeaveTheGraphWhole) {
  std::unique_ptr<Graph> root;
  OnnxImportOptions o;
  o.input_shapes.push_back({"x", {1, 3, 640, 640}});
  ASSERT_TRUE(
      import_onnx_file(std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx", o, &root).is_ok());
  ASSERT_TRUE(partition(*root, {}, true).is_ok());
  EXPECT_TRUE(root->subgraphs().empty());
  EXPECT_FALSE(root->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, true));
}

}  // namespace
}  // namespace graphsplit
