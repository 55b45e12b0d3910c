// Every model in Debian's libonnx-testdata and the pinned real models: import, node counts against the ONNX
// file, verifier, lossless .om round trip, JSON round trip, determinism.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/atomic_file.h"
#include "graphsplit/sdk/ir/verify.h"
#include "import/onnx_import.h"
#include "model/om.pb.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using Counts = std::map<std::string, size_t>;

// What the IR must hold, computed from the ONNX file alone.
void expected_counts(const onnx::GraphProto& g, Counts* types, size_t* subgraphs) {
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  if (!initializers.empty()) (*types)["Const"] += initializers.size();
  for (const auto& vi : g.input()) {
    if (!initializers.count(vi.name())) ++(*types)["Data"];
  }
  ++(*types)["NetOutput"];
  for (const auto& n : g.node()) {
    const bool constant =
        n.op_type() == sdk::op::kConstant && (n.domain().empty() || n.domain() == "ai.onnx");
    ++(*types)[constant ? "Const" : n.op_type()];
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        ++*subgraphs;
        expected_counts(a.g(), types, subgraphs);
      }
      for (const auto& sub : a.graphs()) {
        ++*subgraphs;
        expected_counts(sub, types, subgraphs);
      }
    }
  }
}

// The IR's nodes by type, leaving out the Data nodes made for captured outer values (they have no ONNX node).
Counts actual_counts(const sdk::Graph& root) {
  Counts c;
  auto count = [&](const sdk::Graph& g) {
    for (const sdk::Node* n : g.nodes()) {
      if (n->type() == sdk::op::kData && n->attrs().has(sdk::attr::kOuterValue)) continue;
      ++c[n->type()];
    }
  };
  count(root);
  for (const sdk::Graph* g : root.subgraphs()) count(*g);
  return c;
}

struct Checked {
  std::unique_ptr<sdk::Graph> root;
  std::string om;
};

// Runs every check on one model; returns the imported graph for model-specific assertions.
Checked check_model(const std::string& path) {
  Checked out;
  SCOPED_TRACE(path);
  std::string bytes;
  EXPECT_TRUE(read_file(path, &bytes).is_ok());
  onnx::ModelProto proto;
  EXPECT_TRUE(proto.ParseFromString(bytes));

  sdk::Status s = import_onnx_file(path, {}, &out.root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return out;

  Counts expected;
  size_t subgraphs = 0;
  expected_counts(proto.graph(), &expected, &subgraphs);
  EXPECT_EQ(actual_counts(*out.root), expected);
  EXPECT_EQ(out.root->subgraphs().size(), subgraphs);
  EXPECT_TRUE(sdk::verify(*out.root).is_ok());

  // import -> save -> load -> save gives identical bytes.
  EXPECT_TRUE(serialize_om(*out.root, &out.om).is_ok());
  std::unique_ptr<sdk::Graph> loaded;
  s = parse_om(out.om, path + ".om", &loaded);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return out;
  std::string again;
  EXPECT_TRUE(serialize_om(*loaded, &again).is_ok());
  EXPECT_TRUE(again == out.om) << "round trip changed the bytes";

  // JSON carries everything: parsing it back gives the same model.
  std::string json;
  EXPECT_TRUE(om_to_json(out.om, path, &json).is_ok());
  std::string reserialized;
  s = json_to_om(json, path + ".json", &reserialized);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(reserialized == out.om) << "JSON is lossy";
  return out;
}

TEST(ModelCorpusTest, EveryOnnxTestdataModel) {
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(GRAPHSPLIT_TESTDATA_DIR)) {
    if (e.path().filename() == "model.onnx") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  // Debian's libonnx-testdata 1.12 ships 1,072 models; fewer means the package is missing or broken.
  ASSERT_EQ(paths.size(), 1072u) << "is libonnx-testdata installed?";
  size_t with_subgraphs = 0;
  for (const std::string& p : paths) {
    Checked c = check_model(p);
    if (c.root && !c.root->subgraphs().empty()) ++with_subgraphs;
  }
  EXPECT_GT(with_subgraphs, 20u);  // If/Loop/Scan tests are among them
}

// The whole default pipeline (placement, host-CPU update, stage and dynamic-shape partitioning, placement
// again) on every test model: atc must be able to compile any valid ONNX model, not just the ones named here.
TEST(ModelCorpusTest, EveryOnnxTestdataModelThroughTheDefaultPipeline) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  ASSERT_TRUE(parse_pipeline_config(GRAPHSPLIT_DEFAULT_PIPELINE, &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  settings.verify_each = true;
  std::unique_ptr<Pipeline> pipeline;
  sdk::Status s = Pipeline::create(config, settings, &pipeline, &diags);
  ASSERT_TRUE(s.is_ok()) << s.message();
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(GRAPHSPLIT_TESTDATA_DIR)) {
    if (e.path().filename() == "model.onnx") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  size_t split = 0;
  for (const std::string& p : paths) {
    std::unique_ptr<sdk::Graph> root;
    ASSERT_TRUE(import_onnx_file(p, {}, &root).is_ok()) << p;
    s = pipeline->run(*root);
    EXPECT_TRUE(s.is_ok()) << p << ": " << s.message();
    split += root->attrs().get_bool(sdk::attr::kDynamicShapePartitioned, false);
  }
  EXPECT_GT(split, 10u);  // some test models have dynamic shapes and are split
}

std::string real_model(const std::string& name) {
  const std::string path = std::string(GRAPHSPLIT_MODEL_DIR) + "/" + name;
  EXPECT_TRUE(fs::exists(path)) << path << " is missing; run scripts/fetch_models.sh";
  return path;
}

size_t count_type(const sdk::Graph& root, const std::string& type) {
  size_t n = 0;
  for (const sdk::Node* x : root.nodes()) n += x->type() == type;
  for (const sdk::Graph* g : root.subgraphs()) {
    for (const sdk::Node* x : g->nodes()) n += x->type() == type;
  }
  return n;
}

TEST(RealModelTest, PpOcrV4Detection) {
  Checked c = check_model(real_model("ch_PP-OCRv4_det_infer.onnx"));
  ASSERT_TRUE(c.root);
  const sdk::Node* x = c.root->find_node("x");
  ASSERT_NE(x, nullptr);
  const sdk::Shape& s = x->output_desc(0).shape;
  EXPECT_EQ(s.dims(), (std::vector<int64_t>{-1, 3, -1, -1}));
  ASSERT_EQ(s.dim_names().size(), 4u);
  EXPECT_FALSE(s.dim_names()[0].empty());  // the symbolic batch dimension keeps its name
}

TEST(RealModelTest, PpOcrV4DetectionWithFixedInputShapeIsStaticThroughout) {
  std::unique_ptr<sdk::Graph> root;
  OnnxImportOptions o;
  o.input_shapes.push_back({"x", {1, 3, 640, 640}});
  ASSERT_TRUE(import_onnx_file(real_model("ch_PP-OCRv4_det_infer.onnx"), o, &root).is_ok());
  size_t dynamic = 0;
  for (const sdk::Node* n : root->nodes()) {
    for (size_t i = 0; i < n->num_outputs(); ++i) dynamic += !n->output_desc(i).is_static();
  }
  EXPECT_EQ(dynamic, 0u);
  const sdk::Node* out = root->find_node("NetOutput");
  EXPECT_EQ(out->input_desc(0)->shape.dims(), (std::vector<int64_t>{1, 1, 640, 640}));
}

TEST(RealModelTest, PpOcrV4Recognition) {
  EXPECT_TRUE(check_model(real_model("ch_PP-OCRv4_rec_infer.onnx")).root);
}

TEST(RealModelTest, PpOcrMobileClassifier) {
  EXPECT_TRUE(check_model(real_model("ch_ppocr_mobile_v2.0_cls_infer.onnx")).root);
}

TEST(RealModelTest, SileroVadV5HasItsNestedIfs) {
  Checked c = check_model(real_model("silero_vad_v5.onnx"));
  ASSERT_TRUE(c.root);
  EXPECT_EQ(count_type(*c.root, "If"), 25u);
  // Some If sits inside another If's branch.
  bool nested = false;
  for (const sdk::Graph* g : c.root->subgraphs())
    nested = nested || (g->parent_graph() && !g->parent_graph()->is_root());
  EXPECT_TRUE(nested);
}

TEST(RealModelTest, SileroVadLegacy) {
  EXPECT_TRUE(check_model(real_model("silero_vad_legacy.onnx")).root);
}

}  // namespace
}  // namespace graphsplit
