// EnginePlacer and HostcpuEngineUpdatePass through the real host with the real engine plugins.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"
#include "pipeline_testing.h"
#include "report/placement_report.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using sdk::AttrValue;
using sdk::DataType;
using sdk::Graph;
using sdk::Node;

using testing::tensor_desc;

Node* add(Graph& g, const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
          sdk::TensorDesc out) {
  return testing::add_op(g, name, type, inputs, std::move(out));
}

std::unique_ptr<Graph> new_root() {
  return testing::opset17_root();
}

Node* net_output(Graph& g, const std::vector<std::string>& inputs) {
  return testing::add_net_output(g, inputs);
}

// Runs placement (and optionally the host-CPU update) with the given extra TOML and --options; `keep` as
// PipelineSettings::keep_decisions. The decision log of the last place().
std::vector<sdk::Decision> g_log;

sdk::Status place(Graph& g, const std::string& extra = "",
                  std::vector<std::pair<std::string, std::string>> ge = {}, bool update = false,
                  std::vector<std::string> extra_plugin_paths = {}, const std::string& place_options = "",
                  bool keep = true) {
  std::string text =
      "schema_version = 1\n[plugins]\nrequired = [\"placement\", \"ai_core\", \"ai_cpu\", \"dvpp\", "
      "\"host_cpu\"" +
      std::string(extra_plugin_paths.empty() ? "" : ", \"template\"") + "]\n" + extra +
      "\n[[pipeline]]\npass = \"placement.engine_place\"\n" +
      (place_options.empty() ? "" : "options = { " + place_options + " }\n");
  if (update) text += "[[pipeline]]\npass = \"placement.hostcpu_engine_update\"\n";
  extra_plugin_paths.push_back(GRAPHSPLIT_PLUGIN_DIR);
  return testing::run_pipeline(g, text, std::move(extra_plugin_paths), std::move(ge), &g_log, keep);
}

std::string engine_of(const Graph& g, const std::string& node) {
  return g.find_node(node)->attrs().get_string(sdk::attr::kOpEngineName);
}
std::string decision_of(const Graph& g, const std::string& node) {
  return testing::decision_about(g_log, g, node);
}

TEST(EnginePlaceTest, CheapestEngineWhoseCheckPassesWins) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {1, 3, 8, 8}));
  add(*g, "img", "Data", {}, tensor_desc(DataType::kUint8, {1, 3, 64, 64}));
  add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {1, 3, 8, 8}));
  add(*g, "nz", "NonZero", {"x"}, tensor_desc(DataType::kInt64, {4, -1}));
  add(*g, "shape", "Shape", {"x"}, tensor_desc(DataType::kInt64, {4}));
  add(*g, "add64", "Add", {"shape", "shape"}, tensor_desc(DataType::kInt64, {4}));
  add(*g, "resize", "Resize", {"img"}, tensor_desc(DataType::kUint8, {1, 3, 128, 128}));
  net_output(*g, {"relu", "nz", "add64", "resize"});
  sdk::Status s = place(*g);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "relu"), "AIcoreEngine");
  EXPECT_EQ(engine_of(*g, "nz"), "DNN_VM_AICPU");
  EXPECT_EQ(engine_of(*g, "shape"), "DNN_VM_HOST_CPU");
  EXPECT_EQ(engine_of(*g, "add64"), "DNN_VM_HOST_CPU");  // AI Core has no int64 Add
  EXPECT_EQ(engine_of(*g, "resize"), "DNN_VM_DVPP");
  EXPECT_EQ(engine_of(*g, "x"), "DNN_VM_GE_LOCAL");
  EXPECT_EQ(decision_of(*g, "x"), "STRUCTURAL");
  EXPECT_EQ(decision_of(*g, "relu"), "COST_ORDER");
  EXPECT_EQ(g->find_node("relu")->attrs().get_string(sdk::attr::kOpKernelLibName), "AIcoreEngine");
  const std::vector<std::string> all = testing::verdicts_about(g_log, *g, "add64");
  const auto* verdicts = &all;
  ASSERT_EQ(verdicts->size(), 2u);
  EXPECT_EQ((*verdicts)[0],
            "AIcoreEngine|ENGINE_UNSUPPORTED_DTYPE|input 0 is int64; supported: float16, float32, int32");
  EXPECT_EQ((*verdicts)[1], "DNN_VM_HOST_CPU|OK|cost 30");
}

// A host that keeps no decision (atc without a report) gets none built, and the same placement. The kept run
// must still log every node: a pass that skipped its records whatever the host wanted would fail here.
TEST(EnginePlaceTest, PlacementIsTheSameWhenTheHostKeepsNoDecision) {
  auto build = [] {
    auto g = new_root();
    add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {1, 3, 8, 8}));
    add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {1, 3, 8, 8}));
    add(*g, "nz", "NonZero", {"x"}, tensor_desc(DataType::kInt64, {4, -1}));
    add(*g, "shape", "Shape", {"x"}, tensor_desc(DataType::kInt64, {4}));
    net_output(*g, {"relu", "nz", "shape"});
    return g;
  };
  auto kept = build(), dropped = build();
  ASSERT_TRUE(place(*kept).is_ok());
  const std::vector<sdk::Decision> kept_log = g_log;
  ASSERT_TRUE(place(*dropped, "", {}, false, {}, "", /*keep=*/false).is_ok());
  EXPECT_TRUE(g_log.empty());
  for (const std::string name : {"x", "relu", "nz", "shape"}) {
    EXPECT_EQ(engine_of(*dropped, name), engine_of(*kept, name)) << name;
    EXPECT_EQ(dropped->find_node(name)->attrs().get_string(sdk::attr::kOpKernelLibName),
              kept->find_node(name)->attrs().get_string(sdk::attr::kOpKernelLibName))
        << name;
    EXPECT_NE(testing::decision_about(kept_log, *kept, name), "") << name;
  }
  EXPECT_EQ(engine_of(*dropped, "nz"), "DNN_VM_AICPU");
}

TEST(EnginePlaceTest, AnEngineAlreadySetIsKeptAndLxAttributesAreWrittenBack) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  Node* relu = add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*g, {"relu"});
  relu->attrs().set(sdk::attr::kOpEngineName, AttrValue::String("DNN_VM_AICPU"));
  relu->attrs().set(sdk::attr::kOpKernelLibName, AttrValue::String("aicpu_ascend_kernel"));
  relu->attrs().set(sdk::attr::kLxfusionEngineName, AttrValue::String("AIcoreEngine"));
  relu->attrs().set(sdk::attr::kLxfusionOpKernelLibName, AttrValue::String("AIcoreEngine"));
  ASSERT_TRUE(place(*g).is_ok());
  EXPECT_EQ(engine_of(*g, "relu"), "DNN_VM_AICPU");  // EPL-03/04: the op wins
  EXPECT_EQ(decision_of(*g, "relu"), "KEPT");
  EXPECT_EQ(relu->attrs().get_string(sdk::attr::kLxfusionEngineName), "DNN_VM_AICPU");
  // record_kept = false (the default pipeline's second run): the engine still stays, nothing is recorded.
  relu->attrs().set(sdk::attr::kLxfusionEngineName, AttrValue::String("AIcoreEngine"));
  add(*g, "late", "Sigmoid", {"x"}, tensor_desc(DataType::kFloat, {4}));  // no engine yet
  ASSERT_TRUE(place(*g, "", {}, false, {}, "record_kept = false").is_ok());
  EXPECT_EQ(engine_of(*g, "relu"), "DNN_VM_AICPU");
  EXPECT_EQ(decision_of(*g, "relu"), "");
  EXPECT_EQ(decision_of(*g, "x"), "");
  EXPECT_EQ(decision_of(*g, "late"), "COST_ORDER") << "only KEPT is left out";
  EXPECT_EQ(relu->attrs().get_string(sdk::attr::kLxfusionEngineName), "DNN_VM_AICPU");
}

TEST(EnginePlaceTest, BothLxAttributesChooseOneAloneIsIgnored) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  Node* a = add(*g, "a", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  Node* b = add(*g, "b", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  Node* c = add(*g, "c", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*g, {"a", "b", "c"});
  a->attrs().set(sdk::attr::kLxfusionEngineName, AttrValue::String("DNN_VM_AICPU"));
  a->attrs().set(sdk::attr::kLxfusionOpKernelLibName, AttrValue::String("aicpu_ascend_kernel"));
  b->attrs().set(sdk::attr::kLxfusionEngineName, AttrValue::String("DNN_VM_AICPU"));              // EPL-08
  c->attrs().set(sdk::attr::kLxfusionOpKernelLibName, AttrValue::String("aicpu_ascend_kernel"));  // EPL-07
  ASSERT_TRUE(place(*g).is_ok());
  EXPECT_EQ(engine_of(*g, "a"), "DNN_VM_AICPU");  // EPL-01
  EXPECT_EQ(decision_of(*g, "a"), "LXFUSION");
  EXPECT_EQ(engine_of(*g, "b"), "AIcoreEngine");
  EXPECT_EQ(engine_of(*g, "c"), "AIcoreEngine");
}

TEST(EnginePlaceTest, SpecifiedEngineWinsEvenWhenExcluded) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  Node* relu = add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  Node* other = add(*g, "other", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*g, {"relu", "other"});
  relu->attrs().set(sdk::attr::kSpecifiedEngineName, AttrValue::String("DNN_VM_AICPU"));
  relu->attrs().set(sdk::attr::kSpecifiedKernelLibName, AttrValue::String("aicpu_ascend_kernel"));
  sdk::Status s = place(*g, "", {{"ge.exec.exclude_engines", "AiCpu"}});
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "relu"), "DNN_VM_AICPU");
  EXPECT_EQ(decision_of(*g, "relu"), "SPECIFIED");
  EXPECT_EQ(engine_of(*g, "other"), "AIcoreEngine");

  other->attrs().set(sdk::attr::kSpecifiedEngineName, AttrValue::String("DNN_VM_AICPU"));
  other->attrs().set(sdk::attr::kSpecifiedKernelLibName, AttrValue::String("AIcoreEngine"));
  other->attrs().remove(sdk::attr::kOpEngineName);
  s = place(*g);
  EXPECT_NE(
      s.message().find(
          "EZ3003: node 'other' (Relu) in graph 'g' [inputs: float32[4]; outputs: float32[4]]: "
          "_specified_kernel_lib_name 'AIcoreEngine' is not the kernel library of engine 'DNN_VM_AICPU'"),
      std::string::npos)
      << s.message();
}

TEST(EnginePlaceTest, ExcludedEnginesAreSkippedWithAReason) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*g, {"relu"});
  ASSERT_TRUE(place(*g, "", {{"ge.exec.exclude_engines", "AiCore|Dsa"}}).is_ok());
  EXPECT_EQ(engine_of(*g, "relu"), "DNN_VM_AICPU");
  const std::vector<std::string> verdicts = testing::verdicts_about(g_log, *g, "relu");
  const auto* v = &verdicts;
  EXPECT_EQ(v->front(), "AIcoreEngine|ENGINE_DISABLED|excluded by ge.exec.exclude_engines or ge.engineType");

  auto h = new_root();
  add(*h, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  add(*h, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*h, {"relu"});
  ASSERT_TRUE(place(*h, "", {{"ge.engineType", "VectorCore"}}).is_ok());
  EXPECT_EQ(engine_of(*h, "relu"), "DNN_VM_AICPU");

  EXPECT_EQ(place(*h, "", {{"ge.exec.exclude_engines", "AiCorr"}}).message(),
            "pipeline entry 1 (pass placement.engine_place) (libgsplugin_placement.so 0.1.0, SDK "
            "ABI " GS_SDK_ABI_STRING
            ") "
            "failed: E10001: "
            "ge.exec.exclude_engines names 'AiCorr', which is not an engine; use AiCore, AiCpu, AiCpuAscend, "
            "AiVector, "
            "Dsa, Dvpp, FftsPlus, Hccl, HostCpu or an engine's own name");
}

TEST(EnginePlaceTest, NoEngineFitsGivesEZ3003WithEveryReason) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 4}));
  add(*g, "nz", "NonZero", {"x"}, tensor_desc(DataType::kInt64, {2, -1}));
  net_output(*g, {"nz"});
  sdk::Status s = place(*g, "", {{"ge.exec.exclude_engines", "AiCpu|HostCpu"}});
  EXPECT_NE(
      s.message().find(
          "EZ3003: no engine can run node 'nz' (NonZero) in graph 'g' [inputs: float32[-1,4]; "
          "outputs: int64[2,-1]]: DNN_VM_HOST_CPU: ENGINE_DISABLED (excluded by ge.exec.exclude_engines or "
          "ge.engineType); DNN_VM_AICPU: ENGINE_DISABLED"),
      std::string::npos)
      << s.message();

  auto h = new_root();
  add(*h, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  add(*h, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
  net_output(*h, {"relu"});
  s = place(*h, "", {{"ge.exec.placement", "HOST"}});  // host execution: only the host CPU is asked
  EXPECT_NE(s.message().find(
                "EZ3003: no engine can run node 'relu' (Relu) in graph 'g' [inputs: float32[4]; outputs: "
                "float32[4]]: no loaded engine lists op type Relu"),
            std::string::npos)
      << s.message();
}

// A copy of the template engine whose Relu row refuses dynamic shapes and costs less than AI Core's.
std::string no_dynamic_template() {
  const fs::path dir = fs::temp_directory_path() / ("gs_nodyn_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(std::string(GRAPHSPLIT_PLUGIN_DIR) + "/libgsplugin_template.so",
                dir / "libgsplugin_template.so", fs::copy_options::overwrite_existing);
  std::ofstream(dir / "template.ops.toml") << "kernel_lib = \"template_kernel\"\n[[op]]\ntype = \"Relu\"\n"
                                              "dtypes = [\"float32\"]\ndynamic_shape = \"none\"\ncost = 0\n";
  return dir.string();
}

TEST(EnginePlaceTest, NoDynamicShapeAnswerStopsTheSearchAsGeDoes) {
  const std::string dir = no_dynamic_template();
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 4}));
  add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {-1, 4}));
  net_output(*g, {"relu"});
  sdk::Status s = place(*g, "", {}, false, {dir});
  EXPECT_NE(s.message().find(
                "EZ3002: node 'relu' (Relu) in graph 'g' [inputs: float32[-1,4]; outputs: float32[-1,4]] is "
                "not supported by template: ENGINE_NO_DYNAMIC_SHAPE"),
            std::string::npos)
      << s.message();
  // With the GE rule switched off, the search goes on to AI Core.
  s = place(*g, "", {}, false, {dir}, "stop_on_no_dynamic_shape = false");
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "relu"), "AIcoreEngine");
  EXPECT_EQ(testing::verdicts_about(g_log, *g, "relu").at(0),
            "template|ENGINE_NO_DYNAMIC_SHAPE|input 0 has dynamic shape [-1,4] and the table says "
            "dynamic_shape = none");
  fs::remove_all(dir);
}

TEST(EnginePlaceTest, AThirdPartyEngineTakesTheOpItIsCheapestFor) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {2, 4}));
  add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {2, 4}));
  add(*g, "sig", "Sigmoid", {"relu"}, tensor_desc(DataType::kFloat, {2, 4}));
  net_output(*g, {"sig"});
  // The template engine (built from sdk/examples) lists Relu at cost 1, below AI Core's 5.
  sdk::Status s =
      place(*g, "[engines.template]\npriority = 200\n", {}, false, {std::string(GRAPHSPLIT_PLUGIN_DIR)});
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "relu"), "template");
  EXPECT_EQ(g->find_node("relu")->attrs().get_string(sdk::attr::kOpKernelLibName), "template_kernel");
  EXPECT_EQ(engine_of(*g, "sig"), "AIcoreEngine");  // not in its table
  g->find_node("relu")->attrs().remove(sdk::attr::kOpEngineName);
  s = place(*g, "[engines.template]\nenabled = false\n", {}, false, {std::string(GRAPHSPLIT_PLUGIN_DIR)});
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "relu"), "AIcoreEngine");
}

// If with two branches; each branch holds one operator of the given type on a float tensor.
std::unique_ptr<Graph> if_graph(const std::string& then_op, const std::string& else_op) {
  auto g = new_root();
  add(*g, "c", "Data", {}, tensor_desc(DataType::kBool, {}));
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
  Node* iff = add(*g, "if", "If", {"c", "x"}, tensor_desc(DataType::kFloat, {-1}));
  net_output(*g, {"if"});
  for (const auto& [key, op] :
       {std::pair<std::string, std::string>{"then_branch", then_op}, {"else_branch", else_op}}) {
    Graph* b = g->add_subgraph("if_" + key, iff);
    iff->attrs().set(key, AttrValue::OfGraph(b));
    Node* d = add(*b, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
    d->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(1));
    add(*b, "op", op, {"x"}, tensor_desc(DataType::kFloat, {-1}));
    net_output(*b, {"op"});
  }
  return g;
}

TEST(EnginePlaceTest, ANodeWithSubgraphsTakesTheirCommonEngine) {
  auto same = if_graph("Relu", "Sigmoid");
  ASSERT_TRUE(place(*same).is_ok());
  EXPECT_EQ(engine_of(*same, "if"), "AIcoreEngine");
  EXPECT_EQ(decision_of(*same, "if"), "COMPOSITE");
  EXPECT_EQ(engine_of(*same->find_subgraph("if_then_branch"), "op"), "AIcoreEngine");

  auto mixed = if_graph("Relu", "NonZero");
  ASSERT_TRUE(place(*mixed).is_ok());
  EXPECT_EQ(engine_of(*mixed, "if"), "DNN_VM_GE_LOCAL");
  EXPECT_EQ(decision_of(*mixed, "if"), "COMPOSITE_HOST");
  EXPECT_EQ(testing::verdicts_about(g_log, *mixed, "if").at(0),
            "subgraphs|COLOUR_MISMATCH|the subgraphs use AIcoreEngine, DNN_VM_AICPU");
}

TEST(EnginePlaceTest, NestingDeeperThan25IsRefused) {
  for (int levels : {25, 26}) {
    auto g = new_root();
    Graph* cur = g.get();
    add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}));
    for (int i = 0; i < levels; ++i) {
      Node* call = add(*cur, "call", "PartitionedCall", {"x"}, tensor_desc(DataType::kFloat, {4}));
      net_output(*cur, {"call"});
      Graph* sub = g->add_subgraph("level" + std::to_string(i + 1), call);
      call->attrs().set("f", AttrValue::OfGraph(sub));
      add(*sub, "x", "Data", {}, tensor_desc(DataType::kFloat, {4}))
          ->attrs()
          .set(sdk::attr::kParentNodeIndex, AttrValue::Int(0));
      cur = sub;
    }
    add(*cur, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {4}));
    net_output(*cur, {"relu"});
    sdk::Status s = place(*g);
    if (levels == 25) {
      EXPECT_TRUE(s.is_ok()) << s.message();
      EXPECT_EQ(engine_of(*g, "call"), "AIcoreEngine");  // composite all the way up
    } else {
      EXPECT_NE(s.message().find(
                    "E19999: subgraph 'level26' is nested 26 levels deep; placement handles at most 25"),
                std::string::npos)
          << s.message();
    }
  }
}

// ---- HostcpuEngineUpdatePass

TEST(HostcpuEngineUpdateTest, SmallShapeComputationMovesToTheHost) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 3}));
  add(*g, "k1", "Const", {}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "k2", "Const", {}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "add32", "Add", {"k1", "k2"}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "big", "Add", {"k1", "k2"}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "sig", "Sigmoid", {"x"}, tensor_desc(DataType::kFloat, {-1, 3}));
  add(*g, "kf", "Const", {}, tensor_desc(DataType::kFloat, {2}));
  add(*g, "sigk", "Sigmoid", {"kf"}, tensor_desc(DataType::kFloat, {2}));
  g->find_node("big")->mutable_output_desc(0).shape = sdk::Shape({64});  // not small
  net_output(*g, {"add32", "big", "sig", "sigk"});
  sdk::Status s = place(*g, "", {}, true);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "add32"), "DNN_VM_HOST_CPU");  // HCU-01/02/09
  EXPECT_EQ(decision_of(*g, "add32"), "HOST_CPU_UPDATE");
  EXPECT_TRUE(g->find_node("add32")->attrs().get_bool("SmallShapeHostcpu", false));
  EXPECT_EQ(engine_of(*g, "big"), "AIcoreEngine");
  EXPECT_EQ(engine_of(*g, "sig"), "AIcoreEngine");
  EXPECT_EQ(engine_of(*g, "sigk"), "AIcoreEngine");  // HCU-03: the host store has no Sigmoid
  EXPECT_FALSE(g->find_node("sigk")->attrs().has("SmallShapeHostcpu"));
}

TEST(HostcpuEngineUpdateTest, StaticGraphsAreLeftAlone) {
  auto g = new_root();
  add(*g, "k1", "Const", {}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "add32", "Add", {"k1", "k1"}, tensor_desc(DataType::kInt32, {2}));
  net_output(*g, {"add32"});
  ASSERT_TRUE(place(*g, "", {}, true).is_ok());
  EXPECT_EQ(engine_of(*g, "add32"), "AIcoreEngine");  // HCU-12
}

TEST(HostcpuEngineUpdateTest, HostTensorDataIsAnAnchorAndModelInputsAreMarked) {
  auto g = new_root();
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 3}));
  add(*g, "h", "Data", {}, tensor_desc(DataType::kInt32, {2}))
      ->attrs()
      .set(sdk::attr::kHostTensor, AttrValue::Bool(true));
  add(*g, "unused", "Data", {}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "k", "Const", {}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "add32", "Add", {"h", "k"}, tensor_desc(DataType::kInt32, {2}));
  add(*g, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {-1, 3}));
  net_output(*g, {"add32", "relu"});
  ASSERT_TRUE(place(*g, "", {}, true).is_ok());
  EXPECT_EQ(engine_of(*g, "add32"), "DNN_VM_HOST_CPU");  // HCU-06
  EXPECT_TRUE(g->find_node("h")->attrs().get_bool(sdk::attr::kHostTensorAsModelInput, false));
  EXPECT_FALSE(g->find_node("unused")->attrs().has(sdk::attr::kHostTensorAsModelInput));  // HCU-04
  EXPECT_FALSE(g->find_node("x")->attrs().has(sdk::attr::kHostTensorAsModelInput));
}

TEST(HostcpuEngineUpdateTest, PropagatesIntoDynamicSubgraphs) {
  auto g = new_root();
  add(*g, "c", "Data", {}, tensor_desc(DataType::kBool, {}));
  add(*g, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 3}));
  add(*g, "shape", "Shape", {"x"}, tensor_desc(DataType::kInt64, {2}));
  add(*g, "cast", "Cast", {"shape"}, tensor_desc(DataType::kInt32, {2}));
  Node* iff = add(*g, "if", "If", {"c", "cast", "x"}, tensor_desc(DataType::kInt32, {2}));
  iff->add_output(tensor_desc(DataType::kFloat, {-1, 3}), "if_1");
  net_output(*g, {"if"});
  for (const char* key : {"then_branch", "else_branch"}) {
    Graph* b = g->add_subgraph(std::string("if_") + key, iff);
    iff->attrs().set(key, AttrValue::OfGraph(b));
    add(*b, "dims", "Data", {}, tensor_desc(DataType::kInt32, {2}))
        ->attrs()
        .set(sdk::attr::kParentNodeIndex, AttrValue::Int(1));
    add(*b, "x", "Data", {}, tensor_desc(DataType::kFloat, {-1, 3}))
        ->attrs()
        .set(sdk::attr::kParentNodeIndex, AttrValue::Int(2));
    add(*b, "k", "Const", {}, tensor_desc(DataType::kInt32, {2}));
    add(*b, "grow", "Add", {"dims", "k"}, tensor_desc(DataType::kInt32, {2}));
    add(*b, "relu", "Relu", {"x"}, tensor_desc(DataType::kFloat, {-1, 3}));
    net_output(*b, {"grow", "relu"});
  }
  sdk::Status s = place(*g, "", {}, true);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(engine_of(*g, "cast"), "DNN_VM_HOST_CPU");
  for (const char* b : {"if_then_branch", "if_else_branch"}) {
    EXPECT_EQ(engine_of(*g->find_subgraph(b), "grow"), "DNN_VM_HOST_CPU") << b;
    EXPECT_EQ(engine_of(*g->find_subgraph(b), "relu"), "AIcoreEngine") << b;
  }
}

// ---- real models

struct ModelCase {
  const char* file;
};

class RealModelPlacementTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(RealModelPlacementTest, EveryNodeIsPlacedWithAReason) {
  const std::string path = std::string(GRAPHSPLIT_MODEL_DIR) + "/" + GetParam().file;
  ASSERT_TRUE(fs::exists(path)) << path << " is missing; run scripts/fetch_models.sh";
  std::unique_ptr<Graph> root;
  ASSERT_TRUE(import_onnx_file(path, {}, &root).is_ok());
  sdk::Status s = place(*root, "", {}, true);
  ASSERT_TRUE(s.is_ok()) << s.message();
  const auto summary = placement_summary(*root);
  EXPECT_EQ(summary.count(""), 0u) << "unplaced nodes";
  size_t total = 0, convs = 0, convs_on_ai_core_or_cpu = 0;
  std::vector<const Graph*> graphs{root.get()};
  graphs.insert(graphs.end(), root->subgraphs().begin(), root->subgraphs().end());
  for (const Graph* g : graphs) {
    for (const Node* n : g->nodes()) {
      ++total;
      const std::string engine = n->attrs().get_string(sdk::attr::kOpEngineName);
      EXPECT_FALSE(testing::decision_about(g_log, *g, n->name()).empty()) << n->name();
      if (n->type() == "Conv") {
        ++convs;
        convs_on_ai_core_or_cpu += engine == "AIcoreEngine" || engine == "DNN_VM_AICPU";
      }
      if (n->type() == "Shape") {
        EXPECT_EQ(engine, "DNN_VM_HOST_CPU") << n->name();
      }
      if (n->type() == sdk::op::kData || n->type() == sdk::op::kConst || n->type() == sdk::op::kNetOutput) {
        EXPECT_EQ(engine, "DNN_VM_GE_LOCAL");
      }
    }
  }
  size_t summed = 0;
  for (const auto& [engine, count] : summary) summed += count;
  EXPECT_EQ(summed, total);
  EXPECT_EQ(convs_on_ai_core_or_cpu, convs);
  EXPECT_GT(summary.at("AIcoreEngine"), total / 5) << "most compute should be on AI Core";
}

INSTANTIATE_TEST_SUITE_P(Models, RealModelPlacementTest,
                         ::testing::Values(ModelCase{"ch_PP-OCRv4_det_infer.onnx"},
                                           ModelCase{"ch_PP-OCRv4_rec_infer.onnx"},
                                           ModelCase{"ch_ppocr_mobile_v2.0_cls_infer.onnx"},
                                           ModelCase{"silero_vad_v5.onnx"},
                                           ModelCase{"silero_vad_legacy.onnx"}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(0, n.find('.'));
                           for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(RealModelPlacementTest, PpOcrDetWithAFixedShapeIsAllAiCore) {
  const std::string path = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx";
  std::unique_ptr<Graph> root;
  OnnxImportOptions o;
  o.input_shapes.push_back({"x", {1, 3, 640, 640}});
  ASSERT_TRUE(import_onnx_file(path, o, &root).is_ok());
  ASSERT_TRUE(place(*root, "", {}, true).is_ok());
  const auto summary = placement_summary(*root);
  // Static shapes: every operator fits AI Core; only Data, Const and NetOutput stay GE-local.
  size_t structural = 0;
  for (const Node* n : root->nodes())
    structural +=
        n->type() == sdk::op::kData || n->type() == sdk::op::kConst || n->type() == sdk::op::kNetOutput;
  EXPECT_EQ(summary.at("DNN_VM_GE_LOCAL"), structural);
  EXPECT_EQ(summary.at("AIcoreEngine"), root->num_nodes() - structural);
  EXPECT_EQ(summary.size(), 2u);
}

}  // namespace
}  // namespace graphsplit
