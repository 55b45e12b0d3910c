// Static coverage: with every input shape fixed and nothing data-dependent upstream, the default pipeline
// leaves no operator in a dynamic PartitionedCall. Real models (PP-OCRv4 rec and det, ppocr cls, silero VAD
// legacy) and a model built here from the exporter patterns that used to defeat it: Shape -> Gather -> Concat
// -> Reshape, Resize sizes from Shape -> Slice -> Concat, Pad amounts from Split/Concat of constants,
// ConstantOfShape of a computed shape, Range over a shape value, and a NonZero in the middle that keeps
// everything upstream of it static.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/config.h"
#include "framework/onnx_builders.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using testing::add_node;
using testing::set_tensor_type;

std::unique_ptr<Pipeline> default_pipeline() {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(parse_pipeline_config(GRAPHSPLIT_DEFAULT_PIPELINE, &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  std::unique_ptr<Pipeline> p;
  EXPECT_TRUE(Pipeline::create(config, settings, &p, &diags).is_ok());
  return p;
}

struct Coverage {
  size_t dynamic_nodes = 0;      // operators in dynamic PartitionedCalls (or a dynamic root)
  size_t non_static_values = 0;  // tensor values whose shape is not a number everywhere
  std::vector<std::string> dynamic_names;
};

bool is_operator(const sdk::Node& n) {
  return !sdk::is_data_like(n.type()) && !sdk::is_const_like(n.type()) && n.type() != sdk::op::kNetOutput &&
         n.type() != sdk::op::kPartitionedCall;
}

Coverage coverage(const sdk::Graph& root) {
  Coverage c;
  std::vector<const sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (const sdk::Graph* g : graphs) {
    const bool call = g->parent_node() && g->parent_node()->type() == sdk::op::kPartitionedCall;
    const bool dynamic = call && g->attrs().get_bool(sdk::attr::kIsUnknownShape, false);
    for (const sdk::Node* n : g->nodes()) {
      if (dynamic && is_operator(*n)) {
        ++c.dynamic_nodes;
        c.dynamic_names.push_back(n->name());
      }
      for (size_t o = 0; o < n->num_outputs(); ++o) {
        const sdk::TensorDesc& d = n->output_desc(o);
        if (d.kind == sdk::ValueKind::kTensor && !d.shape.is_static()) ++c.non_static_values;
      }
    }
  }
  return c;
}

Coverage compile(const std::string& path, std::vector<InputShapeOverride> shapes, Pipeline& p) {
  OnnxImportOptions options;
  options.input_shapes = std::move(shapes);
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_onnx_file(path, options, &root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return {};
  s = p.run(*root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return coverage(*root);
}

std::string real_model(const std::string& name) {
  return std::string(GRAPHSPLIT_MODEL_DIR) + "/" + name;
}

TEST(StaticCoverage, RealModelsWithFixedShapesAreStatic) {
  auto p = default_pipeline();
  ASSERT_TRUE(p);
  struct Case {
    const char* model;
    std::vector<InputShapeOverride> shapes;
  };
  const Case cases[] = {
      {"ch_PP-OCRv4_rec_infer.onnx", {{"x", {1, 3, 48, 320}}}},  // was 244 nodes in 20 dynamic graphs
      {"ch_PP-OCRv4_det_infer.onnx", {{"x", {1, 3, 640, 640}}}},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {{"x", {6, 3, 48, 192}}}},  // was 16 nodes in 9
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.model);
    Coverage cov = compile(real_model(c.model), c.shapes, *p);
    EXPECT_EQ(cov.dynamic_nodes, 0u) << (cov.dynamic_names.empty() ? "" : cov.dynamic_names[0]);
    EXPECT_EQ(cov.non_static_values, 0u);
  }
}

// Silero VAD legacy branches on its sample-rate input: every value is static once the shapes are fixed (the
// inner If conditions are rank tests, decided at compile time). What stays dynamic is GE's HostCpu rule,
// not a shape: the int64 Equal on `sr` runs on DNN_VM_HOST_CPU, and that node and the If it feeds form a
// 2-node PartitionedCall.
TEST(StaticCoverage, SileroLegacyValuesAreAllStatic) {
  auto p = default_pipeline();
  ASSERT_TRUE(p);
  Coverage cov = compile(real_model("silero_vad_legacy.onnx"),
                         {{"input", {1, 512}}, {"sr", {}}, {"h", {2, 1, 64}}, {"c", {2, 1, 64}}}, *p);
  EXPECT_EQ(cov.non_static_values, 0u);
  EXPECT_LE(cov.dynamic_nodes, 2u);
  for (const std::string& n : cov.dynamic_names) EXPECT_TRUE(n == "Equal_23" || n == "If_25") << n;
}

void add_ints(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v, bool scalar = false) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

void attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

// The exporter patterns, on x[-1,3,8,8] (the batch fixed by --input_shape), then NonZero.
onnx::ModelProto patterns_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("patterns");
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {-1, 3, 8, 8});
  add_ints(g, "i0", {0});
  add_ints(g, "i2", {2});
  add_ints(g, "i4", {4});
  add_ints(g, "two", {2, 2});
  add_ints(g, "zero", {0}, true);
  add_ints(g, "one", {1}, true);
  add_ints(g, "minus1", {-1});
  add_ints(g, "pad_parts", {0, 0, 1, 1, 0, 0, 1, 1});
  // Resize sizes from Shape -> Slice -> Concat (tf2onnx).
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_node(g, "Slice", {"s", "i0", "i2"}, {"nc"}, "slice_nc");
  add_node(g, "Slice", {"s", "i2", "i4"}, {"hw"}, "slice_hw");
  add_node(g, "Mul", {"hw", "two"}, {"hw2"}, "double_hw");
  attr_int(add_node(g, "Concat", {"nc", "hw2"}, {"sizes"}, "sizes"), "axis", 0);
  auto* resize = add_node(g, "Resize", {"x", "", "", "sizes"}, {"r"}, "resize");
  auto* mode = resize->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx::AttributeProto::STRING);
  mode->set_s("nearest");
  // Pad amounts from Split and Concat of constants.
  auto* split = add_node(g, "Split", {"pad_parts"}, {"p0", "p1"}, "split_pads");
  attr_int(split, "axis", 0);
  attr_int(add_node(g, "Concat", {"p0", "p1"}, {"pads"}, "pads"), "axis", 0);
  add_node(g, "Pad", {"r", "pads"}, {"padded"}, "pad");
  // ConstantOfShape of a computed shape.
  add_node(g, "Shape", {"padded"}, {"ps"}, "shape_padded");
  add_node(g, "ConstantOfShape", {"ps"}, {"ones_like"}, "const_of_shape");
  add_node(g, "Add", {"padded", "ones_like"}, {"sum"}, "add_const");
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape (torch's flatten).
  add_node(g, "Gather", {"ps", "zero"}, {"batch"}, "gather_batch");
  add_node(g, "Unsqueeze", {"batch", "i0"}, {"batch1"}, "unsqueeze_batch");
  attr_int(add_node(g, "Concat", {"batch1", "minus1"}, {"target"}, "target"), "axis", 0);
  add_node(g, "Reshape", {"sum", "target"}, {"flat"}, "flatten");
  // Range over a shape value.
  add_node(g, "Shape", {"flat"}, {"fs"}, "shape_flat");
  add_node(g, "Gather", {"fs", "one"}, {"width"}, "gather_width");
  add_node(g, "Range", {"zero", "width", "one"}, {"ramp"}, "range");
  attr_int(add_node(g, "Cast", {"ramp"}, {"rampf"}, "cast_ramp"), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Add", {"flat", "rampf"}, {"ramped"}, "add_ramp");
  add_node(g, "Relu", {"ramped"}, {"act"}, "relu");
  // Data-dependent from here on.
  add_node(g, "NonZero", {"act"}, {"nz"}, "nonzero");
  add_node(g, "Transpose", {"nz"}, {"nzt"}, "transpose_nz");
  for (const char* out : {"act", "nzt"}) {
    auto* o = g->add_output();
    o->set_name(out);
    o->mutable_type()->mutable_tensor_type()->set_elem_type(
        std::string(out) == "act" ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  }
  return m;
}

TEST(StaticCoverage, ExporterPatternsAreStaticUpToTheDataDependentNode) {
  auto p = default_pipeline();
  ASSERT_TRUE(p);
  const fs::path file = fs::temp_directory_path() / ("gs_patterns_" + std::to_string(::getpid()) + ".onnx");
  testing::write_bytes(file.string(), testing::to_bytes(patterns_model()));
  OnnxImportOptions options;
  options.input_shapes = {{"x", {2, 3, 8, 8}}};
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(import_onnx_file(file.string(), options, &root).is_ok());
  fs::remove(file);
  ASSERT_TRUE(p->run(*root).is_ok());
  Coverage cov = coverage(*root);
  // Only the NonZero's consumers are dynamic (NonZero's own output count is data-dependent).
  for (const std::string& n : cov.dynamic_names) EXPECT_TRUE(n == "nonzero" || n == "transpose_nz") << n;
  EXPECT_EQ(cov.dynamic_names.size(), 2u);  // they are dynamic: the check above is not vacuous
  // The static part is folded and sized: act is [2, 3*18*18].
  const sdk::Node* relu = nullptr;
  std::vector<const sdk::Graph*> graphs{root.get()};
  graphs.insert(graphs.end(), root->subgraphs().begin(), root->subgraphs().end());
  for (const sdk::Graph* g : graphs) {
    if (const sdk::Node* n = g->find_node("relu")) relu = n;
    for (const char* folded : {"shape", "sizes", "pads", "target", "range", "const_of_shape"}) {
      const sdk::Node* n = g->find_node(folded);
      if (n) {
        EXPECT_EQ(n->type(), "Const") << folded << " was not folded";
      }
    }
  }
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->output_desc(0).to_string(), "float32[2,972]");
}

}  // namespace
}  // namespace graphsplit
