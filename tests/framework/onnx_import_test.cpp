#include "import/onnx_import.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "graphsplit/sdk/ir/verify.h"
#include "import/onnx_tensors.h"
#include "model/om_io.h"
#include "onnx_builders.h"

namespace graphsplit {
namespace {

using namespace graphsplit::testing;

sdk::Status import(const onnx::ModelProto& m, std::unique_ptr<sdk::Graph>* root,
                   OnnxImportOptions options = {}) {
  return import_onnx_bytes(to_bytes(m), "m.onnx", ".", options, root);
}

std::string import_error(const onnx::ModelProto& m) {
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import(m, &root);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(root, nullptr);
  return s.message();
}

TEST(OnnxImportTest, MapsInputsNodesAndOutputs) {
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(import(tiny_model(), &root).is_ok());
  EXPECT_EQ(root->name(), "tiny");
  EXPECT_EQ(root->num_nodes(), 4u);  // Data, Relu, Sigmoid, NetOutput
  sdk::Node* x = root->find_node("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type(), "Data");
  EXPECT_EQ(x->attrs().get_int(sdk::attr::kIndex, -1), 0);
  EXPECT_EQ(x->output_desc(0).to_string(), "float32[-1(N),4]");
  sdk::Node* relu = root->find_node("relu");
  EXPECT_EQ(relu->input(0).node, x);
  // Shape inference filled the intermediate value, keeping the symbol.
  EXPECT_EQ(relu->output_desc(0).to_string(), "float32[-1(N),4]");
  EXPECT_EQ(relu->output_name(0), "r");
  sdk::Node* out = root->find_node("NetOutput");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->input(0).node->name(), "sigmoid");
  EXPECT_EQ(*out->attrs().get(sdk::attr::kOutputNames)->as_strings(), std::vector<std::string>{"y"});
}

TEST(OnnxImportTest, InputShapeOverrideIsInferredThroughTheGraph) {
  std::unique_ptr<sdk::Graph> root;
  OnnxImportOptions o;
  o.input_shapes.push_back({"x", {8, 4}});
  ASSERT_TRUE(import(tiny_model(), &root, o).is_ok());
  EXPECT_EQ(root->find_node("sigmoid")->output_desc(0).shape.dims(), (std::vector<int64_t>{8, 4}));
  o.input_shapes = {{"nope", {1}}};
  sdk::Status s = import(tiny_model(), &root, o);
  EXPECT_NE(s.message().find("--input_shape names 'nope', which is not an input of the model (inputs: x)"),
            std::string::npos)
      << s.message();
}

// The host's per-shape inference (PassContext::infer_value_shapes): weights over 4 KiB never loaded (they
// become typed inputs), small constants kept, every value by name; a wrong input name lists the real inputs
// only.
TEST(OnnxImportTest, ShapeInferencerInfersOtherInputShapes) {
  onnx::ModelProto m = tiny_model();
  auto* w = m.mutable_graph()->add_initializer();  // 4096 floats: a weight
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1024);
  w->add_dims(4);
  w->set_raw_data(std::string(1024 * 4 * 4, '\0'));
  m.mutable_graph()->mutable_node(1)->set_op_type("MatMul");
  m.mutable_graph()->mutable_node(1)->add_input("w");
  const std::string path = ::testing::TempDir() + "/gs_inferencer.onnx";
  write_bytes(path, to_bytes(m));
  std::unique_ptr<ShapeInferencer> inferencer;
  ASSERT_TRUE(ShapeInferencer::open(path, &inferencer).is_ok());
  sdk::ValueDescs out;
  ASSERT_TRUE(inferencer->infer({{"x", {3, 1024}}}, &out).is_ok());
  EXPECT_EQ(out["r"].to_string(), "float32[3,1024]");
  EXPECT_EQ(out["y"].to_string(), "float32[3,4]");
  EXPECT_EQ(out["w"].to_string(), "float32[1024,4]");
  ASSERT_TRUE(inferencer->infer({{"x", {7, 1024}}}, &out).is_ok());  // a second run starts afresh
  EXPECT_EQ(out["y"].to_string(), "float32[7,4]");
  sdk::Status s = inferencer->infer({{"w", {1, 1}}}, &out);
  EXPECT_NE(s.message().find("--input_shape names 'w', which is not an input of the model (inputs: x)"),
            std::string::npos)
      << s.message();
  s = inferencer->infer({{"x", {3, 5}}}, &out);  // MatMul inner dimensions 5 and 1024
  EXPECT_NE(s.message().find("inner dimensions differ: 5 and 1024"), std::string::npos) << s.message();
}

TEST(OnnxImportTest, InitializersAndConstantsBecomeConst) {
  auto m = tiny_model();
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  for (float v : {1.f, 2.f, 3.f, 4.f}) w->add_float_data(v);
  auto* k = add_node(g, "Constant", {}, {"k"}, "k");
  auto* a = k->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(3);
  a->add_ints(5);
  add_node(g, "Add", {"y", "w"}, {"z"}, "add");
  g->mutable_output(0)->set_name("z");
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(import(m, &root).is_ok());
  sdk::Node* wn = root->find_node("w");
  ASSERT_EQ(wn->type(), "Const");
  const sdk::Tensor* t = wn->attrs().get(sdk::attr::kValue)->as_tensor();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->desc().to_string(), "float32[4]");
  EXPECT_EQ(t->size_bytes(), 16u);
  float third;
  std::memcpy(&third, t->bytes().data() + 8, 4);
  EXPECT_EQ(third, 3.f);
  sdk::Node* kn = root->find_node("k");
  EXPECT_EQ(kn->type(), "Const");
  EXPECT_EQ(kn->output_desc(0).to_string(), "int64[2]");
}

// tiny_model's input x and a boolean input cond, no nodes or outputs but an If(cond) -> res named "if".
onnx::ModelProto if_model(onnx::NodeProto** iff) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_output();
  set_tensor_type(g->add_input(), "cond", onnx::TensorProto::BOOL, {});
  *iff = add_node(g, "If", {"cond"}, {"res"}, "if");
  return m;
}

// outer: x -> If(cond) whose then-branch reads x from the outer scope and whose else-branch holds a Loop
// whose body reads x too: x must be threaded through both levels as explicit inputs.
onnx::ModelProto nested_capture_model() {
  onnx::NodeProto* iff = nullptr;
  onnx::ModelProto m = if_model(&iff);
  auto* g = m.mutable_graph();
  auto* then_attr = iff->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  add_node(then_g, "Relu", {"x"}, {"t_out"}, "t_relu");
  set_tensor_type(then_g->add_output(), "t_out", onnx::TensorProto::FLOAT, {-1, 4});

  auto* else_attr = iff->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* else_g = else_attr->mutable_g();
  else_g->set_name("else");
  auto* trip = else_g->add_initializer();
  trip->set_name("trip");
  trip->set_data_type(onnx::TensorProto::INT64);
  trip->add_int64_data(2);
  auto* loop = add_node(else_g, "Loop", {"trip", "", "x"}, {"l_out"}, "loop");
  auto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* body = body_attr->mutable_g();
  body->set_name("body");
  set_tensor_type(body->add_input(), "i", onnx::TensorProto::INT64, {});
  set_tensor_type(body->add_input(), "c_in", onnx::TensorProto::BOOL, {});
  set_tensor_type(body->add_input(), "acc", onnx::TensorProto::FLOAT, {-1, 4});
  add_node(body, "Identity", {"c_in"}, {"c_out"}, "keep_going");
  add_node(body, "Add", {"acc", "x"}, {"acc_out"}, "accumulate");  // x comes from two levels up
  set_tensor_type(body->add_output(), "c_out", onnx::TensorProto::BOOL, {});
  set_tensor_type(body->add_output(), "acc_out", onnx::TensorProto::FLOAT, {-1, 4});
  set_tensor_type(else_g->add_output(), "l_out", onnx::TensorProto::FLOAT, {-1, 4});
  set_tensor_type(g->add_output(), "res", onnx::TensorProto::FLOAT, {-1, 4});
  return m;
}

TEST(OnnxImportTest, OuterScopeCapturesBecomeExplicitInputsAtEveryLevel) {
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import(nested_capture_model(), &root);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_EQ(root->subgraphs().size(), 3u);
  sdk::Node* iff = root->find_node("if");
  // cond + the captured x, shared by both branches.
  ASSERT_EQ(iff->num_inputs(), 2u);
  EXPECT_EQ(iff->input(1).node->name(), "x");
  sdk::Graph* then_g = root->find_subgraph("if_then_branch");
  sdk::Graph* else_g = root->find_subgraph("if_else_branch");
  sdk::Graph* body = root->find_subgraph("loop_body");
  ASSERT_TRUE(then_g && else_g && body);
  EXPECT_EQ(body->parent_graph(), else_g);
  sdk::Node* then_x = then_g->find_node("x");
  ASSERT_NE(then_x, nullptr);
  EXPECT_EQ(then_x->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 1);
  EXPECT_EQ(then_x->attrs().get_string(sdk::attr::kOuterValue), "x");
  // In the else branch, x arrives as a Data (parent index 1) and feeds the Loop's appended input 3.
  sdk::Node* loop = else_g->find_node("loop");
  ASSERT_EQ(loop->num_inputs(), 4u);
  EXPECT_FALSE(loop->input(1).valid());  // the omitted optional cond
  EXPECT_EQ(loop->input(3).node->name(), "x");
  EXPECT_EQ(loop->input(3).node->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 1);
  // In the body, the formal inputs bind positionally and the capture binds Loop input 3.
  EXPECT_EQ(body->find_node("acc")->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 2);
  EXPECT_EQ(body->find_node("x")->attrs().get_int(sdk::attr::kParentNodeIndex, -1), 3);
  EXPECT_TRUE(sdk::verify(*root).is_ok());
}

// ONNX does not require unique node names; the IR does. A taken name gets the first free "_k" suffix, in node
// order, whether it clashes with a graph input or with an earlier node.
TEST(OnnxImportTest, ClashingNodeNamesGetTheFirstFreeSuffix) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_name("x");  // the graph input's Data node is "x"
  m.mutable_graph()->mutable_node(1)->set_name("x");
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(import(m, &root).is_ok());
  ASSERT_NE(root->find_node("x_1"), nullptr);
  ASSERT_NE(root->find_node("x_2"), nullptr);
  EXPECT_EQ(root->find_node("x")->type(), "Data");
  EXPECT_EQ(root->find_node("x_1")->type(), "Relu");
  EXPECT_EQ(root->find_node("x_2")->type(), "Sigmoid");
  EXPECT_EQ(root->find_node("x_2")->input(0).node, root->find_node("x_1"));
}

TEST(OnnxImportTest, RejectsADanglingInput) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  EXPECT_EQ(import_error(m),
            "m.onnx: node 'sigmoid' (Sigmoid) input 0 is 'ghost', which no node, graph input or initializer "
            "produces");
}

TEST(OnnxImportTest, RejectsAValueProducedTwice) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_output(0, "r");
  EXPECT_NE(import_error(m).find(
                "value 'r' is produced twice in graph 'tiny': by 'relu' (Relu) and by node 'sigmoid'"),
            std::string::npos);
}

// A chain of `n` Relus, x -> v1 -> ... -> vn = y: long enough that the build, which runs beside the node
// checks, is many batches and waits behind them.
onnx::ModelProto relu_chain(int n) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  std::string prev = "x";
  for (int i = 1; i <= n; ++i) {
    const std::string out = i == n ? "y" : "v" + std::to_string(i);
    add_node(g, "Relu", {prev}, {out}, "r" + std::to_string(i));
    prev = out;
  }
  return m;
}

// The checks of the main graph's nodes run beside its build; errors must still come in the serial order:
// every check before any build error, node text before operators, the checks before --input_shape.
TEST(OnnxImportTest, ChecksBesideTheBuildKeepTheSerialErrorOrder) {
  const int n = 20000;
  {
    std::unique_ptr<sdk::Graph> root;
    ASSERT_TRUE(import(relu_chain(n), &root).is_ok());
    EXPECT_EQ(root->num_nodes(), static_cast<size_t>(n + 2));
  }
  // A build error early (a value produced twice at node 3), a check error late (an unknown operator).
  auto m = relu_chain(n);
  m.mutable_graph()->mutable_node(2)->set_output(0, "v1");
  m.mutable_graph()->mutable_node(n - 10)->set_op_type("Frobnicate");
  EXPECT_NE(import_error(m).find("operator 'Frobnicate' is not defined"), std::string::npos)
      << import_error(m);
  // Without the check error, the build's.
  m.mutable_graph()->mutable_node(n - 10)->set_op_type("Relu");
  EXPECT_NE(import_error(m).find("value 'v1' is produced twice"), std::string::npos) << import_error(m);

  // An operator error early, a name that is not UTF-8 late: the text error wins.
  m = relu_chain(n);
  m.mutable_graph()->mutable_node(5)->set_op_type("Frobnicate");
  m.mutable_graph()->mutable_node(n - 1)->set_name("bad\xff");
  EXPECT_NE(import_error(m).find("node name 'bad?' is not valid UTF-8"), std::string::npos)
      << import_error(m);

  // An --input_shape naming no input, and an operator error: the operator error first.
  OnnxImportOptions options;
  options.input_shapes.push_back({"nope", {1, 4}});
  m = relu_chain(n);
  m.mutable_graph()->mutable_node(n / 2)->set_op_type("Frobnicate");
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import(m, &root, options);
  EXPECT_NE(s.message().find("operator 'Frobnicate' is not defined"), std::string::npos) << s.message();
  EXPECT_EQ(root, nullptr);
  m.mutable_graph()->mutable_node(n / 2)->set_op_type("Relu");
  s = import(m, &root, options);
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s.message();
  EXPECT_EQ(root, nullptr);
}

TEST(OnnxImportTest, RejectsACycleWithItsPath) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");  // relu reads sigmoid's output
  EXPECT_NE(import_error(m).find("has a cycle through node 'relu': 'relu' -> 'sigmoid' -> 'relu'"),
            std::string::npos);
}

TEST(OnnxImportTest, RejectsUnknownOperatorsDomainsAndVersions) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("Frobnicate");
  EXPECT_NE(import_error(m).find("operator 'Frobnicate' is not defined in domain 'ai.onnx' at opset 13"),
            std::string::npos);

  m = tiny_model(99);
  EXPECT_NE(import_error(m).find("opset 99 of domain 'ai.onnx' is not supported (supported: 1 to "),
            std::string::npos);

  m = tiny_model();
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  {
    std::unique_ptr<sdk::Graph> root;
    EXPECT_TRUE(import(m, &root).is_ok());  // imported but unused: fine
  }
  m.mutable_graph()->mutable_node(0)->set_domain("com.example");
  EXPECT_NE(
      import_error(m).find("node 'relu' (Relu) uses operator domain 'com.example', which is not supported"),
      std::string::npos);

  m = tiny_model();
  m.set_ir_version(99);
  EXPECT_NE(import_error(m).find("ONNX IR version 99 is newer than the supported"), std::string::npos);
}

TEST(OnnxImportTest, RejectsTensorsWhoseDataDoesNotMatchTheirShape) {
  auto m = tiny_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(1000);
  w->set_raw_data(std::string(12, '\0'));
  EXPECT_NE(
      import_error(m).find("initializer 'w' has 12 bytes of data but shape [1000] of float32 needs 4000"),
      std::string::npos);
  w->clear_dims();
  w->add_dims(int64_t{1} << 62);
  w->add_dims(8);
  EXPECT_NE(import_error(m).find("initializer 'w' has a shape whose element count overflows"),
            std::string::npos);
  w->clear_dims();
  w->add_dims(-3);
  EXPECT_NE(import_error(m).find("initializer 'w' has negative dimension -3"), std::string::npos);
}

TEST(OnnxImportTest, RejectsGarbageAndEmptyInput) {
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_onnx_bytes("this is not a model", "bad.onnx", ".", {}, &root);
  EXPECT_NE(s.message().find("bad.onnx: not a"), std::string::npos) << s.message();
  s = import_onnx_bytes("", "empty.onnx", ".", {}, &root);
  EXPECT_EQ(s.message(),
            "empty.onnx: not an ONNX model (no ir_version or no graph; is this really an .onnx file?)");
}

TEST(OnnxImportTest, TruncatedModelsAreRefusedOrImportCleanly) {
  // Every prefix of a real serialized model either fails with a message or (rarely, at field boundaries)
  // yields a smaller valid model; it never crashes.
  const std::string bytes = to_bytes(nested_capture_model());
  size_t refused = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    std::unique_ptr<sdk::Graph> root;
    sdk::Status s = import_onnx_bytes(std::string_view(bytes).substr(0, len), "t.onnx", ".", {}, &root);
    if (!s.is_ok()) {
      ++refused;
      EXPECT_EQ(s.message().rfind("t.onnx: ", 0), 0u) << s.message();
    } else {
      EXPECT_TRUE(sdk::verify(*root).is_ok());
    }
  }
  EXPECT_GT(refused, bytes.size() / 2);
}

// The main graph's nodes are parsed one at a time from the model's bytes; a model with local functions is
// parsed whole (inlining rewrites its node list). Both must give the same graph: an unused function forces
// the whole parse of the same model.
TEST(OnnxImportTest, NodesParsedOneAtATimeGiveTheSameGraph) {
  onnx::ModelProto m = nested_capture_model();
  auto* g = m.mutable_graph();
  auto* c = add_node(g, "Constant", {}, {"k"});
  c->clear_name();
  auto* value = c->add_attribute();
  value->set_name("value_floats");
  value->set_type(onnx::AttributeProto::FLOATS);
  value->add_floats(1.5f);
  add_node(g, "Relu", {"k"}, {"unused_out"}, "dangling");  // unnamed and named nodes, a Constant
  onnx::ModelProto whole = m;
  auto* f = whole.add_functions();
  f->set_name("unused");
  f->set_domain("local.functions");
  f->add_input("a");
  f->add_output("b");
  *f->add_opset_import() = m.opset_import(0);
  auto* fn = f->add_node();
  fn->set_op_type("Relu");
  fn->add_input("a");
  fn->add_output("b");
  std::unique_ptr<sdk::Graph> streamed, parsed;
  ASSERT_TRUE(import(m, &streamed).is_ok());
  ASSERT_TRUE(import(whole, &parsed).is_ok());
  std::string a, b;
  ASSERT_TRUE(serialize_om(*streamed, &a).is_ok());
  ASSERT_TRUE(serialize_om(*parsed, &b).is_ok());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(streamed->total_nodes(), parsed->total_nodes());
  ASSERT_NE(streamed->find_node("Constant_1"), nullptr);
  EXPECT_EQ(streamed->find_node("dangling")->input(0).node, streamed->find_node("Constant_1"));
}

// A file mostly of weights keeps only its nodes' bytes, copied out, once the rest is parsed (the file read by
// import_onnx_file); imported from bytes the caller keeps, nothing is copied. Both give the same graph.
TEST(OnnxImportTest, AFileMostlyOfWeightsGivesTheGraphItsBytesGive) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4096);
  w->add_dims(1);
  w->add_dims(4);
  w->set_raw_data(std::string(4 * 4096 * 4, '\x01'));
  add_node(g, "Add", {"y", "w"}, {"sum"}, "add_w");
  g->clear_output();
  set_tensor_type(g->add_output(), "sum", onnx::TensorProto::FLOAT, {4096, -1, 4});
  const std::string bytes = to_bytes(m);
  const std::string path = ::testing::TempDir() + "/gs_weights.onnx";
  write_bytes(path, bytes);
  std::unique_ptr<sdk::Graph> from_file, from_bytes;
  sdk::Status s = import_onnx_file(path, {}, &from_file);
  ASSERT_TRUE(s.is_ok()) << s.message();
  ASSERT_TRUE(import_onnx_bytes(bytes, path, ::testing::TempDir(), {}, &from_bytes).is_ok());
  std::string a, b;
  ASSERT_TRUE(serialize_om(*from_file, &a).is_ok());
  ASSERT_TRUE(serialize_om(*from_bytes, &b).is_ok());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(from_file->find_node("add_w")->input(0).node, from_file->find_node("sigmoid"));
  EXPECT_EQ(from_file->find_node("add_w")->input(1).node, from_file->find_node("w"));
}

// Large initializers of a model file are read from the file again when their tensors are made, not parsed
// into the message: the bytes, the checks and protobuf's rules (the last raw_data wins) must be the same as
// from bytes in memory.
TEST(OnnxImportTest, LargeInitializersReadFromTheFileAreTheBytesParsed) {
  const std::string path = ::testing::TempDir() + "/gs_embedded.onnx";
  std::string pattern(80'000, '\0');
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<char>(i * 7 % 251);
  auto with_weight = [&](int64_t elements, const std::string& raw) {
    onnx::ModelProto m = tiny_model();
    auto* w = m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(elements);
    w->set_raw_data(raw);
    return m;
  };
  auto both = [&](const std::string& bytes, std::unique_ptr<sdk::Graph>* from_file,
                  std::unique_ptr<sdk::Graph>* from_bytes) {
    write_bytes(path, bytes);
    const sdk::Status f = import_onnx_file(path, {}, from_file);
    const sdk::Status b = import_onnx_bytes(bytes, path, ::testing::TempDir(), {}, from_bytes);
    EXPECT_EQ(f.is_ok(), b.is_ok());
    EXPECT_EQ(f.message(), b.message());
    return f;
  };
  std::unique_ptr<sdk::Graph> from_file, from_bytes;
  ASSERT_TRUE(both(to_bytes(with_weight(20'000, pattern)), &from_file, &from_bytes).is_ok());
  const sdk::Tensor* t = from_file->find_node("w")->attrs().get("value")->as_tensor();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->bytes() == pattern);
  EXPECT_EQ(t->desc().shape.dims(), (std::vector<int64_t>{20'000}));
  // The same refusal, naming the initializer, when the data does not fit the shape.
  const sdk::Status short_data = both(to_bytes(with_weight(30'000, pattern)), &from_file, &from_bytes);
  EXPECT_NE(short_data.message().find("initializer 'w' has 80000 bytes of data but shape [30000] of float32 "
                                      "needs 120000"),
            std::string::npos)
      << short_data.message();
  // raw_data twice in one initializer: protobuf keeps the last.
  std::string last = pattern;
  std::reverse(last.begin(), last.end());
  const onnx::ModelProto m = with_weight(20'000, pattern);
  std::string tensor = m.graph().initializer(0).SerializeAsString();
  auto varint = [](std::string* out, uint64_t v) {
    for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
    out->push_back(static_cast<char>(v));
  };
  tensor.push_back(static_cast<char>(onnx::TensorProto::kRawDataFieldNumber << 3 | 2));
  varint(&tensor, last.size());
  tensor += last;
  onnx::ModelProto head = m;
  head.mutable_graph()->clear_initializer();
  std::string graph_piece(1, static_cast<char>(onnx::GraphProto::kInitializerFieldNumber << 3 | 2));
  varint(&graph_piece, tensor.size());
  graph_piece += tensor;
  std::string model = to_bytes(head);
  model.push_back(static_cast<char>(onnx::ModelProto::kGraphFieldNumber << 3 | 2));
  varint(&model, graph_piece.size());
  model += graph_piece;
  ASSERT_TRUE(both(model, &from_file, &from_bytes).is_ok());
  EXPECT_TRUE(from_file->find_node("w")->attrs().get("value")->as_tensor()->bytes() == last);
  EXPECT_TRUE(from_bytes->find_node("w")->attrs().get("value")->as_tensor()->bytes() == last);
}

// An initializer whose bytes are no longer where the parse found them (the file shrank, or went) is refused
// by name, never read short.
TEST(OnnxImportTest, AnInitializerThatCannotBeReadAgainIsRefusedByName) {
  const std::string path = ::testing::TempDir() + "/gs_shrunk.onnx";
  write_bytes(path, std::string(100, 'x'));
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1000);
  onnx_detail::EmbeddedWeights embedded;
  embedded.spans[&t] = {50, 4000};  // 4000 bytes from offset 50 of a 100-byte file
  for (const std::string& file : {path, path + ".gone"}) {
    embedded.file = file;
    const onnx_detail::TensorReader reader("m.onnx", ::testing::TempDir(), &embedded);
    sdk::Tensor out;
    const sdk::Status s = reader.read(t, "initializer 'w'", &out);
    EXPECT_EQ(
        s.message(),
        "m.onnx: initializer 'w': cannot read its data from the model file again (did the file change?)")
        << file;
  }
}

// Protobuf merges a message field that appears twice: a model whose graph comes in two pieces (nodes in
// both) is the same model as the merged one, whichever way its nodes are read.
TEST(OnnxImportTest, AGraphInTwoPiecesIsMergedAsProtobufWould) {
  const onnx::ModelProto m = tiny_model();
  onnx::GraphProto first = m.graph(), second;
  first.clear_output();
  first.mutable_node()->RemoveLast();
  *second.add_node() = m.graph().node(1);
  *second.add_output() = m.graph().output(0);
  onnx::ModelProto head = m;
  head.clear_graph();
  auto field = [](const std::string& payload) {
    std::string f(1, '\x3a');  // field 7 (graph), length-delimited
    for (size_t v = payload.size();; v >>= 7) {
      f.push_back(static_cast<char>(v >= 0x80 ? (v & 0x7f) | 0x80 : v));
      if (v < 0x80) break;
    }
    return f + payload;
  };
  const std::string bytes =
      field(first.SerializeAsString()) + to_bytes(head) + field(second.SerializeAsString());
  onnx::ModelProto merged;
  ASSERT_TRUE(merged.ParseFromString(bytes));
  ASSERT_EQ(merged.graph().node_size(), 2);
  std::unique_ptr<sdk::Graph> pieces, whole;
  ASSERT_TRUE(import_onnx_bytes(bytes, "m.onnx", ".", {}, &pieces).is_ok());
  ASSERT_TRUE(import(merged, &whole).is_ok());
  std::string a, b;
  ASSERT_TRUE(serialize_om(*pieces, &a).is_ok());
  ASSERT_TRUE(serialize_om(*whole, &b).is_ok());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(pieces->find_node("sigmoid")->input(0).node, pieces->find_node("relu"));
}

// A node whose own bytes are corrupt (its framing intact) is refused like any unparsable model.
TEST(OnnxImportTest, ACorruptNodeIsRefusedWithTheFileName) {
  onnx::ModelProto m = tiny_model();
  onnx::NodeProto bad = m.graph().node(0);
  m.mutable_graph()->clear_node();
  std::string node = bad.SerializeAsString() + std::string(1, '\x07');  // field 0, wire type 7: invalid
  std::string graph =
      std::string(1, '\x0a') + static_cast<char>(node.size()) + node + m.graph().SerializeAsString();
  ASSERT_LT(node.size(), 128u);
  ASSERT_LT(graph.size(), 128u);
  m.clear_graph();
  const std::string bytes = to_bytes(m) + std::string(1, '\x3a') + static_cast<char>(graph.size()) + graph;
  std::unique_ptr<sdk::Graph> root;
  const sdk::Status s = import_onnx_bytes(bytes, "corrupt.onnx", ".", {}, &root);
  EXPECT_EQ(s.message(),
            "corrupt.onnx: not a valid ONNX model (protobuf parse failed: truncated, not an .onnx file, or "
            "nested deeper than protobuf's limit of 100 message levels)");
  EXPECT_EQ(root, nullptr);
}

// Names are checked before operators, whichever node comes first: the model's text must be readable before
// its operators are judged.
TEST(OnnxImportTest, ABadNameIsReportedBeforeAnEarlierBadOperator) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_op_type("NoSuchOp");
  add_node(g, "Relu", {"y"}, {std::string("z\xff")}, "late");
  EXPECT_EQ(import_error(m), "m.onnx: graph 'tiny': value name 'z?' is not valid UTF-8");
  g->mutable_node(2)->set_output(0, "z");
  EXPECT_NE(import_error(m).find("operator 'NoSuchOp' is not defined"), std::string::npos) << import_error(m);
}

// A node whose inputs are already made is wired while it is visited; from the first one that is not, the rest
// wait for the second pass. Either way the graph is the one two passes make: consumers in node order.
TEST(OnnxImportTest, AnUnsortedGraphIsWiredAsTwoPassesWireIt) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  add_node(g, "Relu", {"x"}, {"a"}, "A");
  add_node(g, "Relu", {"c"}, {"b"}, "B");  // c is made two nodes later
  add_node(g, "Relu", {"a"}, {"c"}, "C");
  add_node(g, "Add", {"b", "c"}, {"y"}, "D");
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import(m, &root);
  ASSERT_TRUE(s.is_ok()) << s.message();
  sdk::Node* b = root->find_node("B");
  sdk::Node* c = root->find_node("C");
  sdk::Node* d = root->find_node("D");
  EXPECT_EQ(b->input(0).node, c);
  EXPECT_EQ(d->input(0).node, b);
  EXPECT_EQ(d->input(1).node, c);
  EXPECT_EQ(c->consumers(0), (std::vector<sdk::InPort>{{b, 0}, {d, 1}}));
}

// A subgraph may read a value its parent graph makes after the node that owns it: such a node is wired once
// every node of its graph exists.
TEST(OnnxImportTest, ASubgraphMayReadAValueMadeLaterInItsParent) {
  onnx::NodeProto* iff = nullptr;
  onnx::ModelProto m = if_model(&iff);
  auto* g = m.mutable_graph();
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* attr = iff->add_attribute();
    attr->set_name(branch);
    attr->set_type(onnx::AttributeProto::GRAPH);
    auto* body = attr->mutable_g();
    body->set_name(branch);
    add_node(body, "Neg", {"v"}, {std::string(branch) + "_out"}, std::string(branch) + "_neg");
    set_tensor_type(body->add_output(), std::string(branch) + "_out", onnx::TensorProto::FLOAT, {-1, 4});
  }
  add_node(g, "Relu", {"x"}, {"v"}, "V");  // after the If
  set_tensor_type(g->add_output(), "res", onnx::TensorProto::FLOAT, {-1, 4});
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import(m, &root);
  ASSERT_TRUE(s.is_ok()) << s.message();
  sdk::Node* iff_ir = root->find_node("if");
  ASSERT_EQ(iff_ir->num_inputs(), 2u);
  EXPECT_EQ(iff_ir->input(1).node, root->find_node("V"));
}

// Errors come as from two passes: one found while making any node (a value made twice) before one found while
// wiring an earlier node (a Constant whose tensor is short of data).
TEST(OnnxImportTest, ANodeErrorComesBeforeAWiringErrorOfAnEarlierNode) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  auto* k = add_node(g, "Constant", {}, {"k"}, "k");
  auto* value = k->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1000);
  value->mutable_t()->set_raw_data(std::string(12, '\0'));
  EXPECT_NE(import_error(m).find("has 12 bytes of data but shape [1000] of float32 needs 4000"),
            std::string::npos)
      << import_error(m);
  add_node(g, "Relu", {"x"}, {"r"}, "again");  // r is relu's output
  EXPECT_NE(import_error(m).find("value 'r' is produced twice"), std::string::npos) << import_error(m);
}

TEST(OnnxImportTest, ImportIsDeterministic) {
  std::unique_ptr<sdk::Graph> a, b;
  ASSERT_TRUE(import(nested_capture_model(), &a).is_ok());
  ASSERT_TRUE(import(nested_capture_model(), &b).is_ok());
  std::string ba, bb;
  ASSERT_TRUE(serialize_om(*a, &ba).is_ok());
  ASSERT_TRUE(serialize_om(*b, &bb).is_ok());
  EXPECT_EQ(ba, bb);
}

}  // namespace
}  // namespace graphsplit
