// The malformed-input corpus: broken models and .om files, each built here, each run through atc. Every case
// must end with exit code 1, one line "atc: error: ..." with the expected words, and no output file; never a
// crash, a hang or an allocation of the absurd size. Bit flips of real files may also convert cleanly (a flip
// in weights changes nothing structural), but never crash.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "../framework/onnx_builders.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using namespace testing;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class MalformedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gs_malformed_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }

  struct Result {
    int code = -1;  // -1: killed by a signal
    std::string err;
  };
  Result atc(const std::string& args) const {
    const std::string cmd = std::string(GRAPHSPLIT_ATC) + " " + args + " >/dev/null 2>" + path("stderr.txt");
    const int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = slurp(path("stderr.txt"));
    fs::remove(path("stderr.txt"));
    return r;
  }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }
  // The contract for one broken input: exit 1, one line naming what is wrong, nothing written.
  void expect_refused(const std::string& file, const std::string& fragment) {
    SCOPED_TRACE(file);
    const auto before = listing();
    const Result r = atc("--model=" + path(file) + " --output=" + path("out"));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("atc: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err << "expected: " << fragment;
    EXPECT_EQ(listing(), before);
  }
  std::string write(const std::string& name, const std::string& bytes) const {
    write_bytes(path(name), bytes);
    return name;
  }
  std::string write(const std::string& name, const onnx::ModelProto& m) const {
    return write(name, to_bytes(m));
  }

  fs::path dir_;
};

TEST_F(MalformedTest, WrongAttributeTypeUnknownOperatorAndDomain) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Transpose");
  auto* perm = m.mutable_graph()->mutable_node(1)->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::FLOAT);
  perm->set_f(1.5f);
  expect_refused(write("attr.onnx", m), "node 'sigmoid' (Transpose): Mismatched attribute type");

  m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Frobnicate");
  expect_refused(write("op.onnx", m), "operator 'Frobnicate' is not defined in domain 'ai.onnx' at opset 13");

  m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_domain("com.example");
  expect_refused(write("domain.onnx", m), "uses domain 'com.example', which the model does not import");
}

TEST_F(MalformedTest, AbsurdShapesAndTensorSizes) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->set_dim_value(-5);
  expect_refused(write("negative.onnx", m), "value 'x' has negative dimension -5");

  m = tiny_model();
  auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(0)->set_dim_value(int64_t{1} << 62);
  expect_refused(write("huge_input.onnx", m), "value 'x' declares a shape too large to address");

  // An initializer of 2^62 floats with no data: refused from its shape, never allocated.
  m = tiny_model();
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(int64_t{1} << 31);
  w->add_dims(int64_t{1} << 31);
  m.mutable_graph()->mutable_node(1)->set_op_type("Add");
  m.mutable_graph()->mutable_node(1)->add_input("w");
  expect_refused(write("huge_init.onnx", m), "initializer 'w' is too large");

  // Data that does not match the shape.
  m = tiny_model();
  w = m.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_raw_data(std::string(3, '\0'));
  m.mutable_graph()->mutable_node(1)->set_op_type("Add");
  m.mutable_graph()->mutable_node(1)->add_input("w");
  expect_refused(write("short_data.onnx", m),
                 "initializer 'w' has 3 bytes of data but shape [4] of float32 needs 16");
}

// x[1,1,7,5] -> `op` (with weight w[1,1,3,3] for convolutions) -> y: libonnx 1.12's inference divided by a
// zero stride here (SIGFPE, killing atc); graphsplit's own shape rules refuse it naming the node.
onnx::ModelProto window_model(const std::string& op, const std::string& attr, std::vector<int64_t> values) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("w");
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {1, 1, 7, 5});
  std::vector<std::string> inputs = {"x"};
  if (op == "Conv" || op == "ConvTranspose") {
    auto* w = g->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1, 1, 3, 3}) w->add_dims(d);
    w->set_raw_data(std::string(9 * 4, '\0'));
    inputs.push_back("w");
  }
  auto* n = add_node(g, op, inputs, {"y"}, "win");
  if (op != "Conv" && op != "ConvTranspose") {
    auto* k = n->add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    k->add_ints(2);
    k->add_ints(2);
  }
  auto* a = n->add_attribute();
  a->set_name(attr);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  return m;
}

TEST_F(MalformedTest, ZeroStridesAndDilationsAreRefusedNamingTheNode) {
  for (const char* op : {"Conv", "MaxPool", "AveragePool", "LpPool", "ConvTranspose"}) {
    expect_refused(write(std::string(op) + "_stride.onnx", window_model(op, "strides", {0, 2})),
                   "node 'win' (" + std::string(op) + "): strides must be positive, got [0,2]");
  }
  for (const char* op : {"Conv", "MaxPool"}) {
    expect_refused(write(std::string(op) + "_dilation.onnx", window_model(op, "dilations", {1, 0})),
                   "node 'win' (" + std::string(op) + "): dilations must be positive, got [1,0]");
  }
  // The SIGFPE case of the report is 221 bytes or so; it must stay a small, single-node model.
  EXPECT_LT(to_bytes(window_model("Conv", "strides", {0, 2})).size(), 300u);
}

TEST_F(MalformedTest, StaticReshapeThatCannotMatchIsRefused) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
      2);
  auto* shape = g->add_initializer();
  shape->set_name("target");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(3);
  shape->add_int64_data(3);
  g->mutable_node(1)->set_op_type("Reshape");
  g->mutable_node(1)->add_input("target");
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  expect_refused(write("reshape.onnx", m), "node 'sigmoid' (Reshape): cannot reshape 8 elements into 9");
}

TEST_F(MalformedTest, DeclaredShapeThatContradictsInferenceIsRefused) {
  onnx::ModelProto m = tiny_model();
  auto* dims = m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(1)->set_dim_value(5);
  expect_refused(write("contradiction.onnx", m),
                 "node 'sigmoid' (Sigmoid): output 0 is inferred as float32[N,4] but the model declares "
                 "float32[-1(N),5]");
}

TEST_F(MalformedTest, InvalidUtf8Names) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_name(std::string("bad\xff\xfe", 5));
  expect_refused(write("utf8.onnx", m), "node name 'bad\?\?' is not valid UTF-8");
  m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_output(0, std::string("r\xc3", 2));
  m.mutable_graph()->mutable_node(1)->set_input(0, std::string("r\xc3", 2));
  expect_refused(write("utf8_value.onnx", m), "value name 'r?' is not valid UTF-8");
}

// An If whose then-branch holds another If, `depth` times; else-branches are a single Identity.
onnx::ModelProto nested_ifs(int depth) {
  onnx::ModelProto m = tiny_model();
  onnx::GraphProto* g = m.mutable_graph();
  set_tensor_type(g->add_input(), "c", onnx::TensorProto::BOOL, {});
  g->mutable_node(1)->set_op_type("Identity");
  auto leaf = [](const std::string& name) {
    onnx::GraphProto b;
    b.set_name(name);
    add_node(&b, "Identity", {"r"}, {name + "_o"});
    set_tensor_type(b.add_output(), name + "_o", onnx::TensorProto::FLOAT, {-1, 4});
    return b;
  };
  onnx::GraphProto body = leaf("leaf");
  for (int d = 0; d < depth; ++d) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(d));
    auto* n = add_node(&outer, "If", {"c"}, {"o" + std::to_string(d)});
    auto* then_branch = n->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    *then_branch->mutable_g() = std::move(body);
    auto* else_branch = n->add_attribute();
    else_branch->set_name("else_branch");
    else_branch->set_type(onnx::AttributeProto::GRAPH);
    *else_branch->mutable_g() = leaf("else" + std::to_string(d));
    set_tensor_type(outer.add_output(), "o" + std::to_string(d), onnx::TensorProto::FLOAT, {-1, 4});
    body = std::move(outer);
  }
  // The root's second node runs the outermost If.
  onnx::NodeProto* root_if = g->mutable_node(1);
  root_if->set_op_type("If");
  root_if->clear_input();
  root_if->add_input("c");
  auto* then_branch = root_if->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  *then_branch->mutable_g() = std::move(body);
  auto* else_branch = root_if->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  *else_branch->mutable_g() = leaf("root_else");
  return m;
}

TEST_F(MalformedTest, DeepNesting) {
  // 10,000 levels: past protobuf's recursion limit, refused while parsing (no stack exhaustion).
  expect_refused(write("deep10000.onnx", nested_ifs(10000)), "nested deeper than protobuf's limit");
  // 30 levels parse, but the import refuses nesting deeper than GE's 25 (the option raises the limit).
  expect_refused(write("deep30.onnx", nested_ifs(30)),
                 "is nested 26 levels deep; the limit is 25 (--max_nesting_depth)");
  // The node limit.
  const Result big = atc("--model=" + path(write("deep3b.onnx", nested_ifs(3))) + " --output=" + path("o") +
                         " --max_nodes=5");
  EXPECT_EQ(big.code, 1);
  EXPECT_NE(big.err.find("the limit is --max_nodes=5"), std::string::npos) << big.err;
  // A few levels are an ordinary model.
  const Result ok = atc("--model=" + path(write("deep3.onnx", nested_ifs(3))) + " --output=" + path("deep3"));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST_F(MalformedTest, HugeFanOutConvertsQuickly) {
  // One value read by 50,000 nodes, summed: large but legal.
  onnx::ModelProto m = tiny_model();
  onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(1)->set_op_type("Sum");
  g->mutable_node(1)->clear_input();
  for (int i = 0; i < 50000; ++i) {
    add_node(g, "Relu", {"r"}, {"f" + std::to_string(i)});
    g->mutable_node(1)->add_input("f" + std::to_string(i));
  }
  const Result r = atc("--model=" + path(write("fanout.onnx", m)) + " --output=" + path("fanout"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("fanout.om")));
}

TEST_F(MalformedTest, BitFlipsAndTruncationsNeverCrash) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/silero_vad_v5.onnx";
  ASSERT_TRUE(fs::exists(model)) << "run scripts/fetch_models.sh";
  const std::string bytes = slurp(model);
  std::mt19937 rng(2026);
  int refused = 0, converted = 0;
  for (int i = 0; i < 24; ++i) {
    std::string flipped = bytes;
    // Flips concentrated in the first 64 KiB (graph structure) and a few anywhere.
    const size_t span = i % 3 == 0 ? flipped.size() : std::min<size_t>(flipped.size(), 65536);
    flipped[rng() % span] ^= static_cast<char>(1u << (rng() % 8));
    write_bytes(path("flip.onnx"), flipped);
    const auto before = listing();
    const Result r = atc("--model=" + path("flip.onnx") + " --output=" + path("flip"));
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "flip " << i << ": exit " << r.code << " " << r.err;
    if (r.code == 1) {
      ++refused;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(listing(), before) << "flip " << i;
    } else {
      ++converted;
      fs::remove(path("flip.om"));
    }
  }
  EXPECT_EQ(refused + converted, 24);
  // A converted .om, truncated or flipped, read back in --mode=1.
  ASSERT_EQ(atc("--model=" + model + " --output=" + path("good")).code, 0);
  const std::string om = slurp(path("good.om"));
  for (int i = 0; i < 16; ++i) {
    std::string broken = i < 8 ? om.substr(0, om.size() * static_cast<size_t>(i + 1) / 9) : om;
    if (i >= 8) broken[rng() % broken.size()] ^= static_cast<char>(1u << (rng() % 8));
    write_bytes(path("broken.om"), broken);
    const Result r = atc("--mode=1 --om=" + path("broken.om") + " --json=" + path("broken.json"));
    ASSERT_TRUE(r.code == 0 || r.code == 1) << "om case " << i << ": exit " << r.code << " " << r.err;
    if (i < 8) {
      EXPECT_EQ(r.code, 1) << "a truncated .om must be refused (case " << i << ")";
    }
    if (r.code == 1) {
      EXPECT_FALSE(fs::exists(path("broken.json")));
    }
    fs::remove(path("broken.json"));
  }
}

}  // namespace
}  // namespace graphsplit
