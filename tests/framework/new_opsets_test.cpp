// Models as current exporters write them (IR 9-11, ai.onnx opsets 18-23, model-local functions, sparse
// initializers), built here with libonnx's protobuf classes: imported, checked against ONNX's operator
// definitions for those versions, compiled by the default pipeline and run.
#include <gtest/gtest.h>

#include <cstring>

#include "common/log.h"
#include "config/config.h"
#include "framework/onnx_builders.h"
#include "import/onnx_import.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"
#include "runtime/runtime.h"

namespace graphsplit {
namespace {

using testing::add_node;
using testing::set_tensor_type;

onnx::ModelProto model(int ir, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(ir);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void add_ints(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

void add_attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

sdk::Tensor floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape(std::move(dims));
  std::string bytes(v.size() * 4, '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return sdk::Tensor(d, bytes);
}

std::vector<float> values(const sdk::Tensor& t) {
  std::vector<float> v(t.size_bytes() / 4);
  std::memcpy(v.data(), t.data(), t.size_bytes());
  return v;
}

sdk::Status import_model(const onnx::ModelProto& m, std::unique_ptr<sdk::Graph>* root) {
  return import_onnx_bytes(testing::to_bytes(m), "m.onnx", ".", {}, root);
}

// Import, the default pipeline, the .om round trip and a run on the engines.
std::vector<sdk::Tensor> compile_and_run(const onnx::ModelProto& m, const std::vector<sdk::Tensor>& inputs) {
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return {};
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(parse_pipeline_config(GRAPHSPLIT_DEFAULT_PIPELINE, &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  std::unique_ptr<Pipeline> pipeline;
  EXPECT_TRUE(Pipeline::create(config, settings, &pipeline, &diags).is_ok());
  if (!pipeline) return {};
  s = pipeline->run(*root);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::string om;
  std::unique_ptr<sdk::Graph> loaded;
  EXPECT_TRUE(serialize_om(*root, &om).is_ok());
  EXPECT_TRUE(parse_om(om, "m.om", &loaded).is_ok());
  std::unique_ptr<Runtime> rt;
  s = Runtime::create(
      std::move(loaded), "m", [&](const std::string& name) { return pipeline->find_engine(name); }, {}, &rt);
  EXPECT_TRUE(s.is_ok()) << s.message();
  std::vector<sdk::Tensor> out;
  if (rt) {
    s = rt->run(inputs, &out);
    EXPECT_TRUE(s.is_ok()) << s.message();
  }
  return out;
}

const sdk::Node* producer(const sdk::Graph& g, const std::string& value) {
  for (const sdk::Node* n : g.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      if (n->output_name(o) == value) return n;
    }
  }
  return nullptr;
}

// x[2,3,4] -> ReduceMean-18 (axes as input) -> [2,4] -> Split-18 (num_outputs) -> a, b [2,2] -> Add -> y.
onnx::ModelProto reduce_split_model(int ir, int opset) {
  onnx::ModelProto m = model(ir, opset);
  auto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 3, 4});
  add_ints(g, "axes", {1});
  add_attr_int(add_node(g, "ReduceMean", {"x", "axes"}, {"r"}, "mean"), "keepdims", 0);
  auto* split = add_node(g, "Split", {"r"}, {"a", "b"}, "split");
  add_attr_int(split, "axis", 1);
  add_attr_int(split, "num_outputs", 2);
  add_node(g, "Add", {"a", "b"}, {"y"}, "add");
  g->add_output()->set_name("y");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

TEST(NewOpsets, Opset18ReduceAndSplitImportInferAndRun) {
  for (int ir : {9, 10, 11}) {
    for (int opset : {18, 21, 23}) {
      SCOPED_TRACE("IR " + std::to_string(ir) + ", opset " + std::to_string(opset));
      onnx::ModelProto m = reduce_split_model(ir, opset);
      std::unique_ptr<sdk::Graph> root;
      ASSERT_TRUE(import_model(m, &root).is_ok());
      EXPECT_EQ(producer(*root, "r")->output_desc(0).to_string(), "float32[2,4]");
      EXPECT_EQ(producer(*root, "y")->output_desc(0).to_string(), "float32[2,2]");
      std::vector<float> x(24);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
      auto out = compile_and_run(m, {floats({2, 3, 4}, x)});
      ASSERT_EQ(out.size(), 1u);
      // mean over axis 1 of batch 0 is [4,5,6,7]; halves added: [4+6, 5+7]; batch 1: [16+18, 17+19].
      EXPECT_EQ(values(out[0]), (std::vector<float>{10, 12, 34, 36}));
    }
  }
}

TEST(NewOpsets, VersionsCheckedAgainstTheirOwnDefinitions) {
  onnx::ModelProto m = reduce_split_model(10, 18);
  auto* axes = m.mutable_graph()->mutable_node(0)->add_attribute();  // opset 18 moved axes to an input
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(s.message().find("node 'mean' (ReduceMean): ReduceMean-18 has no attribute 'axes'"),
            std::string::npos)
      << s.message();
  // The same node at opset 17 is libonnx's ReduceMean-13, where two inputs are one too many.
  s = import_model(reduce_split_model(8, 17), &root);
  EXPECT_FALSE(s.is_ok());
  s = import_model(reduce_split_model(12, 18), &root);
  EXPECT_NE(s.message().find("ONNX IR version 12 is newer than the supported 11"), std::string::npos)
      << s.message();
  s = import_model(reduce_split_model(10, 24), &root);
  EXPECT_NE(s.message().find("opset 24 of domain 'ai.onnx' is not supported (supported: 1 to 23)"),
            std::string::npos)
      << s.message();
}

// Each check of the 18-23 table: input count, a required attribute, an attribute's type.
TEST(NewOpsets, TableChecksCountsRequiredAttributesAndTypes) {
  std::unique_ptr<sdk::Graph> root;
  onnx::ModelProto m = reduce_split_model(10, 18);
  m.mutable_graph()->mutable_node(0)->add_input("axes");  // a third input
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(s.message().find("node 'mean' (ReduceMean): ReduceMean-18 takes 1 to 2 inputs, the node has 3"),
            std::string::npos)
      << s.message();
  onnx::ModelProto g = model(10, 18);
  auto* graph = g.mutable_graph();
  set_tensor_type(graph->add_input(), "x", onnx::TensorProto::FLOAT, {1, 4, 2});
  set_tensor_type(graph->add_input(), "scale", onnx::TensorProto::FLOAT, {2});
  set_tensor_type(graph->add_input(), "bias", onnx::TensorProto::FLOAT, {2});
  auto* gn = add_node(graph, "GroupNormalization", {"x", "scale", "bias"}, {"y"}, "gn");
  graph->add_output()->set_name("y");
  s = import_model(g, &root);
  EXPECT_NE(s.message().find(
                "node 'gn' (GroupNormalization): GroupNormalization-18 requires attribute 'num_groups'"),
            std::string::npos)
      << s.message();
  auto* groups = gn->add_attribute();
  groups->set_name("num_groups");
  groups->set_type(onnx::AttributeProto::FLOAT);
  groups->set_f(2);
  s = import_model(g, &root);
  EXPECT_NE(s.message().find("GroupNormalization-18 attribute 'num_groups' has type FLOAT, expected INT"),
            std::string::npos)
      << s.message();
  groups->set_type(onnx::AttributeProto::INT);
  groups->set_i(2);
  EXPECT_TRUE(import_model(g, &root).is_ok());
}

TEST(NewOpsets, UnrepresentableElementTypesAreRefusedNamingTheValue) {
  onnx::ModelProto m = model(9, 19);
  auto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "x8", 17 /* FLOAT8E4M3FN */, {2});
  add_node(g, "Identity", {"x8"}, {"y"}, "id");
  g->add_output()->set_name("y");
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(
      s.message().find("value 'x8' has element type FLOAT8E4M3FN (17), which graphsplit cannot represent"),
      std::string::npos)
      << s.message();
  onnx::ModelProto c = model(10, 21);
  g = c.mutable_graph();
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {2});
  add_attr_int(add_node(g, "Cast", {"x"}, {"y"}, "to_int4"), "to", 22);
  g->add_output()->set_name("y");
  s = import_model(c, &root);
  EXPECT_NE(s.message().find("node 'to_int4' (Cast): attribute 'to' is element type INT4 (22)"),
            std::string::npos)
      << s.message();
}

// local.Axpy(X, Y; alpha) = alpha * X + Y, calling local.Scale(X; factor = alpha) inside.
onnx::ModelProto function_model() {
  onnx::ModelProto m = model(10, 18);
  auto* local = m.add_opset_import();
  local->set_domain("local");
  local->set_version(1);
  auto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {3});
  set_tensor_type(g->add_input(), "y", onnx::TensorProto::FLOAT, {3});
  auto* call = add_node(g, "Axpy", {"x", "y"}, {"z"}, "axpy");
  call->set_domain("local");
  auto* alpha = call->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(2.0f);
  g->add_output()->set_name("z");

  onnx::FunctionProto* scale = m.add_functions();
  scale->set_name("Scale");
  scale->set_domain("local");
  scale->add_input("X");
  scale->add_output("S");
  scale->add_attribute("factor");
  scale->add_opset_import()->set_version(18);
  auto* k = scale->add_node();
  k->set_op_type("Constant");
  k->add_output("k");
  auto* ref = k->add_attribute();
  ref->set_name("value_float");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("factor");
  auto* mul = scale->add_node();
  mul->set_op_type("Mul");
  mul->add_input("X");
  mul->add_input("k");
  mul->add_output("S");

  onnx::FunctionProto* axpy = m.add_functions();
  axpy->set_name("Axpy");
  axpy->set_domain("local");
  axpy->add_input("X");
  axpy->add_input("Y");
  axpy->add_output("Z");
  axpy->add_attribute("alpha");
  axpy->add_opset_import()->set_version(18);
  auto* inner = axpy->add_node();
  inner->set_op_type("Scale");
  inner->set_domain("local");
  inner->add_input("X");
  inner->add_output("ax");
  auto* fwd = inner->add_attribute();
  fwd->set_name("factor");
  fwd->set_type(onnx::AttributeProto::FLOAT);
  fwd->set_ref_attr_name("alpha");
  auto* add = axpy->add_node();
  add->set_op_type("Add");
  add->add_input("ax");
  add->add_input("Y");
  add->add_output("Z");
  return m;
}

TEST(NewOpsets, ModelLocalFunctionsAreInlinedWithTheirAttributes) {
  onnx::ModelProto m = function_model();
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(import_model(m, &root).is_ok());
  for (const sdk::Node* n : root->nodes()) EXPECT_NE(n->type(), "Axpy");
  EXPECT_EQ(producer(*root, "z")->type(), "Add");
  auto out = compile_and_run(m, {floats({3}, {1, 2, 3}), floats({3}, {10, 20, 30})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{12, 24, 36}));
}

TEST(NewOpsets, RecursiveFunctionsAndMixedOpsetsAreRefused) {
  onnx::ModelProto m = function_model();
  // Scale now calls Axpy, which calls Scale.
  auto* loop = m.mutable_functions(0)->mutable_node(1);
  loop->set_op_type("Axpy");
  loop->set_domain("local");
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(s.message().find("recursive functions cannot be inlined"), std::string::npos) << s.message();
  onnx::ModelProto mixed = function_model();
  mixed.mutable_functions(1)->mutable_opset_import(0)->set_version(17);
  s = import_model(mixed, &root);
  EXPECT_NE(s.message().find("function 'Axpy' imports ai.onnx version 17 but the model imports version 18"),
            std::string::npos)
      << s.message();
}

TEST(NewOpsets, AFunctionCalledWithTooManyInputsIsRefused) {
  onnx::ModelProto m = function_model();
  m.mutable_graph()->mutable_node(0)->add_input("x");  // Axpy takes X and Y
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(s.message().find("node 'axpy' calls function 'Axpy' with 3 inputs and 1 outputs; it has 2 and 1"),
            std::string::npos)
      << s.message();
}

TEST(NewOpsets, SparseInitializersAreDensified) {
  onnx::ModelProto m = model(9, 18);
  auto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  auto* sp = g->add_sparse_initializer();
  sp->add_dims(2);
  sp->add_dims(3);
  auto* v = sp->mutable_values();
  v->set_name("w");
  v->set_data_type(onnx::TensorProto::FLOAT);
  v->add_dims(2);
  v->add_float_data(5);
  v->add_float_data(7);
  auto* idx = sp->mutable_indices();
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_dims(2);
  idx->add_int64_data(1);
  idx->add_int64_data(5);
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  g->add_output()->set_name("y");
  auto out = compile_and_run(m, {floats({2, 3}, {1, 1, 1, 1, 1, 1})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{1, 6, 1, 1, 1, 8}));
  idx->set_int64_data(1, 6);  // past the 6 elements
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_model(m, &root);
  EXPECT_NE(s.message().find("sparse initializer 'w' has an index out of its shape"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace graphsplit
