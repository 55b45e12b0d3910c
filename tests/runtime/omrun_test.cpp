// atc + omrun end to end on the real models: partitioned output equals the unpartitioned output exactly, and
// so do the expanded run, runs on one and on three threads, and a stress compile (alternating engines, static
// subgraphs of one operator); gear models pick the branch of the input's shape and equal the dynamic model,
// and bad input gets one clear line and exit 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "graphsplit/sdk/ir/tensor.h"
#include "import/onnx_import.h"
#include "jit/jit_models.h"
#include "runtime/compare.h"
#include "support/process.h"

namespace graphsplit::testing {
namespace {

namespace fs = std::filesystem;

sdk::Tensor tensor_of(sdk::DataType dtype, std::vector<int64_t> dims, uint64_t seed) {
  sdk::TensorDesc d;
  d.dtype = dtype;
  d.shape = sdk::Shape(std::move(dims));
  return random_tensor(d, seed);
}

sdk::Tensor int64_scalar(int64_t v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt64;
  d.shape = sdk::Shape(std::vector<int64_t>{});
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &v, 8);
  return sdk::Tensor(d, bytes);
}

std::vector<float> floats(const sdk::Tensor& t) {
  std::vector<float> v(t.size_bytes() / 4);
  std::memcpy(v.data(), t.data(), v.size() * 4);
  return v;
}

// The segment count omrun reports ("loaded and compiled in X ms, N engine segments"); -1 if absent.
int segments(const std::string& out) {
  const auto at = out.find(" engine segments)");
  if (at == std::string::npos) return -1;
  const auto start = out.rfind(", ", at);
  return start == std::string::npos ? -1 : std::atoi(out.c_str() + start + 2);
}

class OmrunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every value the real models compute is checked against the shape inference wrote (a mismatch fails
    // the run naming the node), so these tests are also the proof that the shape rules agree with the
    // kernels.
    setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gs_omrun_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Placement only: every operator gets an engine, nothing is partitioned.
    std::ofstream(path("unpartitioned.toml"))
        << "schema_version = 1\n[plugins]\nsearch_paths = [\"" << GRAPHSPLIT_PLUGIN_DIR
        << "\"]\nrequired = [\"std\", \"placement\", \"ai_core\", \"ai_cpu\", "
           "\"dvpp\", \"host_cpu\", \"shape\", \"fusion\"]\n"
           // The same graph rewrites as the default pipeline, so that only the partitioning differs.
           "[[pipeline]]\npass = \"shape.infer\"\n[[pipeline]]\npass = "
           "\"fusion.conv_bn\"\n[[pipeline]]\npass = \"fusion.conv_scale\"\n"
           "[[pipeline]]\npass = \"std.prune_unused\"\n"
           "[[pipeline]]\npass = \"std.topological_sort\"\n"
           "[[pipeline]]\npass = \"placement.engine_place\"\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The default pipeline plus stress.stripe_engines before the engine partitioner (see node_test.cpp).
  std::string stress_pipeline() const {
    std::string toml = slurp(GRAPHSPLIT_DEFAULT_PIPELINE);
    const auto at = toml.find("[[pipeline]]\npartition = \"engine\"");
    EXPECT_NE(at, std::string::npos);
    toml.insert(at, "[[pipeline]]\npass = \"stress.stripe_engines\"\n\n");
    toml.insert(toml.find("required = [") + 12, "\"stress\", ");
    const auto search = toml.find("search_paths = [");
    toml.insert(search + 16, "\"" + std::string(GRAPHSPLIT_PLUGIN_DIR) + "\", ");
    std::ofstream(path("stress.toml")) << toml;
    return path("stress.toml");
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Result run(const std::string& exe, const std::string& args) const {
    return run_command(exe + " " + args, dir_);
  }
  Result atc(const std::string& args) const { return run(GRAPHSPLIT_ATC, args); }
  Result omrun(const std::string& args) const { return run(GRAPHSPLIT_OMRUN, args); }

  std::string write_input(const std::string& name, const sdk::Tensor& t) const {
    std::string bytes;
    EXPECT_TRUE(serialize_tensor_proto(t, name, &bytes).is_ok());
    std::ofstream(path(name + ".pb"), std::ios::binary) << bytes;
    return path(name + ".pb");
  }

  sdk::Tensor output(const std::string& dir, size_t i) const {
    sdk::Tensor t;
    sdk::Status s = read_tensor_proto_file(path(dir) + "/output_" + std::to_string(i) + ".pb", &t, nullptr);
    EXPECT_TRUE(s.is_ok()) << s.message();
    return t;
  }

  // Compiles `model` both ways, runs both (and the partitioned one expanded), and checks that all outputs are
  // byte-identical. Returns the partitioned run's outputs.
  std::vector<sdk::Tensor> run_three_ways(const std::string& model, const std::string& inputs, size_t outputs,
                                          const std::string& atc_extra = "") {
    Result a = atc("--model=" + model + " --output=" + path("part") + " " + atc_extra);
    EXPECT_EQ(a.code, 0) << a.err;
    Result b = atc("--model=" + model + " --output=" + path("flat") +
                   " --pipeline=" + path("unpartitioned.toml") + " " + atc_extra);
    EXPECT_EQ(b.code, 0) << b.err;
    Result r1 = omrun("--model=" + path("part.om") + " --input=" + inputs + " --output=" + path("out_part"));
    EXPECT_EQ(r1.code, 0) << r1.err;
    Result r2 = omrun("--model=" + path("flat.om") + " --input=" + inputs + " --output=" + path("out_flat"));
    EXPECT_EQ(r2.code, 0) << r2.err;
    Result r3 = omrun("--model=" + path("part.om") + " --input=" + inputs +
                      " --expand_partitioned_calls --output=" + path("out_expanded"));
    EXPECT_EQ(r3.code, 0) << r3.err;
    Result c = atc("--model=" + model + " --output=" + path("stress") + " --pipeline=" + stress_pipeline() +
                   " --options=ge.exec.static_model_ops_lower_limit=1 " + atc_extra);
    EXPECT_EQ(c.code, 0) << c.err;
    // Cut into many segments, the independent ones run at once on a budget of three threads.
    Result r4 = omrun("--model=" + path("stress.om") + " --input=" + inputs +
                      " --concurrent=always --threads=3 --output=" + path("out_stress") + " --timing");
    EXPECT_EQ(r4.code, 0) << r4.err;
    Result r0 = omrun("--model=" + path("part.om") + " --input=" + inputs + " --timing");
    // The thread budget changes who computes what, never a value: one thread and three (more than this
    // machine's two cores) against the default, bit for bit.
    Result t1 = omrun("--model=" + path("part.om") + " --input=" + inputs +
                      " --threads=1 --output=" + path("out_t1"));
    EXPECT_EQ(t1.code, 0) << t1.err;
    Result t3 = omrun("--model=" + path("part.om") + " --input=" + inputs +
                      " --threads=3 --output=" + path("out_t3"));
    EXPECT_EQ(t3.code, 0) << t3.err;
    // More engine segments than the default compile (omrun's first line: "..., N engine segments)").
    EXPECT_GT(segments(r4.out), segments(r0.out)) << r4.out << "\n---\n" << r0.out;
    EXPECT_GT(segments(r0.out), 0) << r0.out;
    std::vector<sdk::Tensor> result;
    for (size_t i = 0; i < outputs; ++i) {
      sdk::Tensor p = output("out_part", i), f = output("out_flat", i), e = output("out_expanded", i),
                  st = output("out_stress", i);
      EXPECT_TRUE(p == st) << model << " output " << i
                           << ": stress partitioning differs: " << compare_tensors(st, p, 0, 0).detail;
      EXPECT_TRUE(p == f) << model << " output " << i << ": partitioned differs from unpartitioned: "
                          << compare_tensors(p, f, 0, 0).detail;
      EXPECT_TRUE(p == e) << model << " output " << i
                          << ": expanded differs: " << compare_tensors(e, p, 0, 0).detail;
      for (const char* run : {"out_t1", "out_t3"}) {
        sdk::Tensor t = output(run, i);
        EXPECT_TRUE(p == t) << model << " output " << i << ": " << run
                            << " (another thread count) differs: " << compare_tensors(t, p, 0, 0).detail;
      }
      result.push_back(p);
    }
    return result;
  }

  fs::path dir_;
};

std::string real_model(const std::string& name) {
  return std::string(GRAPHSPLIT_MODEL_DIR) + "/" + name;
}

TEST_F(OmrunTest, SileroVadV5WithItsIfNodesAndState) {
  const std::string in = write_input("input", tensor_of(sdk::DataType::kFloat, {1, 512}, 1)) + "," +
                         write_input("state", tensor_of(sdk::DataType::kFloat, {2, 1, 128}, 2)) + "," +
                         write_input("sr", int64_scalar(16000));
  std::vector<sdk::Tensor> out = run_three_ways(real_model("silero_vad_v5.onnx"), in, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(out[1].desc().shape.dims(), (std::vector<int64_t>{2, 1, 128}));
  const float p = floats(out[0])[0];
  EXPECT_TRUE(p >= 0 && p <= 1) << p;  // a speech probability
  // The If on the sample rate takes the other branch for 8 kHz (256-sample frames): a different result.
  const std::string in8 = write_input("input8", tensor_of(sdk::DataType::kFloat, {1, 256}, 1)) + "," +
                          write_input("state8", tensor_of(sdk::DataType::kFloat, {2, 1, 128}, 2)) + "," +
                          write_input("sr8", int64_scalar(8000));
  Result r = omrun("--model=" + path("part.om") + " --input=" + in8 + " --output=" + path("out8"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(floats(output("out8", 1)), floats(out[1]));
}

TEST_F(OmrunTest, SileroVadLegacy) {
  const std::string in = write_input("input", tensor_of(sdk::DataType::kFloat, {1, 512}, 3)) + "," +
                         write_input("sr", int64_scalar(16000)) + "," +
                         write_input("h", tensor_of(sdk::DataType::kFloat, {2, 1, 64}, 4)) + "," +
                         write_input("c", tensor_of(sdk::DataType::kFloat, {2, 1, 64}, 5));
  std::vector<sdk::Tensor> out = run_three_ways(real_model("silero_vad_legacy.onnx"), in, 3);
  ASSERT_EQ(out.size(), 3u);
  for (float v : floats(out[0])) EXPECT_TRUE(v >= 0 && v <= 1) << v;
}

TEST_F(OmrunTest, PpOcrDetection) {
  const std::string in = write_input("x", tensor_of(sdk::DataType::kFloat, {1, 3, 64, 96}, 6));
  std::vector<sdk::Tensor> out = run_three_ways(real_model("ch_PP-OCRv4_det_infer.onnx"), in, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{1, 1, 64, 96}));
  for (float v : floats(out[0])) ASSERT_TRUE(v >= 0 && v <= 1) << v;  // a sigmoid map
}

TEST_F(OmrunTest, PpOcrRecognitionRowsAreDistributions) {
  const std::string in = write_input("x", tensor_of(sdk::DataType::kFloat, {1, 3, 48, 80}, 7));
  std::vector<sdk::Tensor> out = run_three_ways(real_model("ch_PP-OCRv4_rec_infer.onnx"), in, 1);
  ASSERT_EQ(out.size(), 1u);
  const auto& d = out[0].desc().shape.dims();
  ASSERT_EQ(d.size(), 3u);
  const std::vector<float> v = floats(out[0]);
  for (int64_t t = 0; t < d[1]; ++t) {
    double sum = 0;
    for (int64_t c = 0; c < d[2]; ++c) sum += v[t * d[2] + c];
    EXPECT_NEAR(sum, 1.0, 1e-3) << "time step " << t;
  }
}

TEST_F(OmrunTest, PpOcrClassifier) {
  const std::string in = write_input("x", tensor_of(sdk::DataType::kFloat, {2, 3, 48, 192}, 8));
  std::vector<sdk::Tensor> out = run_three_ways(real_model("ch_ppocr_mobile_v2.0_cls_infer.onnx"), in, 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{2, 2}));
  const std::vector<float> v = floats(out[0]);
  EXPECT_NEAR(v[0] + v[1], 1.0, 1e-5);
  EXPECT_NEAR(v[2] + v[3], 1.0, 1e-5);
}

// A gear model runs the branch of the input's shape and equals the dynamic model's result for it, exactly.
TEST_F(OmrunTest, GearModelPicksTheBranchOfTheInputShape) {
  const std::string model = real_model("ch_PP-OCRv4_det_infer.onnx");
  Result g = atc("--model=" + model + " --output=" + path("gears") +
                 " --input_shape=x:-1,3,64,64 --dynamic_batch_size=1,2");
  ASSERT_EQ(g.code, 0) << g.err;
  Result d = atc("--model=" + model + " --output=" + path("dynamic"));
  ASSERT_EQ(d.code, 0) << d.err;
  for (int64_t batch : {1, 2}) {
    const std::string in =
        write_input("x" + std::to_string(batch), tensor_of(sdk::DataType::kFloat, {batch, 3, 64, 64}, 9));
    const std::string gd = "gear_out" + std::to_string(batch), dd = "dyn_out" + std::to_string(batch);
    Result r1 =
        omrun("--model=" + path("gears.om") + " --input=" + in + " --output=" + path(gd) + " --timing");
    ASSERT_EQ(r1.code, 0) << r1.err;
    // The branch of this batch ran, the other did not (omrun's per-graph summary).
    for (int64_t branch : {0, 1}) {
      const auto at = r1.out.find("  Batch_" + std::to_string(branch) + " ");
      ASSERT_NE(at, std::string::npos) << r1.out;
      const std::string row = r1.out.substr(at, r1.out.find('\n', at) - at);
      EXPECT_NE(row.find(branch == batch - 1 ? " 1 calls" : " 0 calls"), std::string::npos) << row;
    }
    Result r2 = omrun("--model=" + path("dynamic.om") + " --input=" + in + " --output=" + path(dd));
    ASSERT_EQ(r2.code, 0) << r2.err;
    sdk::Tensor a = output(gd, 0), b = output(dd, 0);
    EXPECT_EQ(a.desc().shape.dims(), (std::vector<int64_t>{batch, 1, 64, 64}));
    EXPECT_TRUE(a == b) << "batch " << batch << ": " << compare_tensors(a, b, 0, 0).detail;
  }
  // Batch 3 is no gear: one line naming the gears, exit 1.
  const std::string in3 = write_input("x3", tensor_of(sdk::DataType::kFloat, {3, 3, 64, 64}, 9));
  Result bad = omrun("--model=" + path("gears.om") + " --input=" + in3 + " --output=" + path("bad_out"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("match no gear; the model was compiled for [1] [2]"), std::string::npos) << bad.err;
  EXPECT_FALSE(fs::exists(path("bad_out")));
}

TEST_F(OmrunTest, CompareReportsTheWorstElementAndExitsOne) {
  const std::string node = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_relu";
  ASSERT_EQ(atc("--model=" + node + "/model.onnx --output=" + path("relu")).code, 0);
  const std::string in = node + "/test_data_set_0/input_0.pb";
  Result ok =
      omrun("--model=" + path("relu.om") + " --input=" + in + " --compare=" + node + "/test_data_set_0");
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find("compare: 1 outputs match"), std::string::npos) << ok.out;
  // Expected outputs of another test: a mismatch with the element named.
  const std::string other = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_abs/test_data_set_0";
  Result bad = omrun("--model=" + path("relu.om") + " --input=" + in + " --compare=" + other);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("omrun: mismatch: output 0 'y': element "), std::string::npos) << bad.err;
}

TEST_F(OmrunTest, LoopAndTimingSummary) {
  const std::string node = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_relu";
  ASSERT_EQ(atc("--model=" + node + "/model.onnx --output=" + path("relu")).code, 0);
  Result r = omrun("--model=" + path("relu.om") + " --random_input --seed=3 --loop=5 --timing");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run:     5 iterations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Relu"), std::string::npos) << r.out;  // the segment's first node
  EXPECT_NE(r.out.find("per engine:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("per graph:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 segments static"), std::string::npos) << r.out;  // test_relu: one static segment
  EXPECT_NE(r.out.find("   whole\n"), std::string::npos) << r.out;  // compiled as the root graph, not copied
  EXPECT_NE(r.out.find("5 calls"), std::string::npos) << r.out;
  // Memory: test_relu's one value is its result, 3x4x5 floats outside any arena.
  r = omrun("--model=" + path("relu.om") + " --random_input --loop=1 --timing");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("memory: planned 0 bytes (the largest of 0 arenas sharing a buffer); tensor peak 240 bytes "
                 "(planned + 240 outside the "
                 "arenas); peak resident "),
      std::string::npos)
      << r.out;
  // Warm-up runs are neither timed nor counted.
  r = omrun("--model=" + path("relu.om") + " --random_input --warmup=4 --loop=2 --timing");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("run:     2 iterations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" 2 calls"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" 6 calls"), std::string::npos) << r.out;
  // The same seed gives the same outputs.
  ASSERT_EQ(omrun("--model=" + path("relu.om") + " --random_input --seed=3 --output=" + path("a")).code, 0);
  ASSERT_EQ(omrun("--model=" + path("relu.om") + " --random_input --seed=3 --output=" + path("b")).code, 0);
  EXPECT_EQ(slurp(path("a/output_0.pb")), slurp(path("b/output_0.pb")));
}

// Bad input: one line, exit 1, no outputs written.
class OmrunBadInput : public OmrunTest {
 protected:
  void SetUp() override {
    OmrunTest::SetUp();
    const std::string node = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_add";
    ASSERT_EQ(atc("--model=" + node + "/model.onnx --output=" + path("add")).code, 0);
    a_ = node + "/test_data_set_0/input_0.pb";
    b_ = node + "/test_data_set_0/input_1.pb";
  }
  void expect_error(const std::string& args, const std::string& fragment) {
    Result r = omrun(args + " --output=" + path("out"));
    EXPECT_EQ(r.code, 1) << args;
    EXPECT_EQ(r.err.rfind("omrun: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err << "expected: " << fragment;
    EXPECT_FALSE(fs::exists(path("out")));
  }
  std::string a_, b_;
};

TEST_F(OmrunBadInput, WrongInputCount) {
  expect_error("--model=" + path("add.om") + " --input=" + a_, "--input names 1 files, but");
}

TEST_F(OmrunBadInput, WrongDataType) {
  const std::string i64 = write_input("i", tensor_of(sdk::DataType::kInt64, {3, 4, 5}, 1));
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + i64,
               "input 1 'y' must be float32, got int64");
}

TEST_F(OmrunBadInput, WrongRank) {
  const std::string r2 = write_input("r", tensor_of(sdk::DataType::kFloat, {3, 20}, 1));
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + r2,
               "must have shape [3,4,5], got rank 2");
}

TEST_F(OmrunBadInput, NotATensor) {
  std::ofstream(path("junk.pb"), std::ios::binary) << "this is not a protobuf \xff\xff\xff";
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + path("junk.pb"),
               "junk.pb: not an ONNX TensorProto");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + path("missing.pb"), "missing.pb");
}

TEST_F(OmrunBadInput, TruncatedModel) {
  const std::string om = slurp(path("add.om"));
  std::ofstream(path("cut.om"), std::ios::binary) << om.substr(0, om.size() / 2);
  expect_error("--model=" + path("cut.om") + " --input=" + a_ + "," + b_, "cut.om");
}

// Declared dims too large to allocate (2^63-1 overflowed the byte count and crashed; 2^61 threw bad_alloc).
TEST_F(OmrunBadInput, RandomInputsTooLargeToAllocate) {
  const std::string relu = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_relu/model.onnx";
  for (const std::string dim : {"9223372036854775807", "2305843009213693952"}) {
    ASSERT_EQ(atc("--model=" + relu + " --output=" + path("huge") + " --input_shape=x:-1,4," + dim).code, 0);
    expect_error("--model=" + path("huge.om") + " --random_input",
                 "--random_input: input 'x' float32[1,4," + dim + "] would take more than 17179869184 bytes");
  }
  expect_error("--model=" + path("huge.om") + " --random_input --max_tensor_bytes=1000",
               "would take more than 1000 bytes");
}

TEST_F(OmrunBadInput, GearOptionNeedsGearsAndRandomInputs) {
  expect_error("--model=" + path("add.om") + " --random_input --gear=0", "was not compiled with gears");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --gear=1",
               "--gear applies to --random_input");
}

TEST_F(OmrunBadInput, BadOptions) {
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --loop=0",
               "--loop must be at least 1");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --warmup=-1",
               "--warmup must not be negative");
  expect_error("--jit --model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --warmup=1",
               "--warmup is for compiled models, not --jit");
  expect_error("--model=" + path("add.om"), "takes 2 inputs: pass --input files or --random_input");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --random_input",
               "pass either --input or --random_input, not both");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --rtol=-1", "--rtol and --atol");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --max_loop_iterations=0",
               "--max_loop_iterations must be at least 1");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --concurrent=sometimes",
               "--concurrent: 'sometimes' is not one of 'auto', 'always', 'never'");
}

// --random_input on a gear model takes the shapes of a gear (the first, or --gear=K), for each kind of gear.
TEST_F(OmrunTest, RandomInputsTakeTheShapesOfAGear) {
  const std::string det = real_model("ch_PP-OCRv4_det_infer.onnx");
  struct Case {
    std::string name, options;
    std::vector<int64_t> gear0, gear1;  // det's output dims for each gear
  };
  const Case cases[] = {
      {"batch", "--input_shape=x:-1,3,32,32 --dynamic_batch_size=1,2", {1, 1, 32, 32}, {2, 1, 32, 32}},
      {"image",
       "--input_shape=x:1,3,-1,-1 --dynamic_image_size='32,32;64,96'",
       {1, 1, 32, 32},
       {1, 1, 64, 96}},
      {"dims",
       "--input_shape=x:-1,3,-1,-1 --input_format=ND --dynamic_dims='1,32,32;2,64,32'",
       {1, 1, 32, 32},
       {2, 1, 64, 32}},
  };
  for (const Case& c : cases) {
    Result a = atc("--model=" + det + " --output=" + path(c.name) + " " + c.options);
    ASSERT_EQ(a.code, 0) << c.name << ": " << a.err;
    const std::string om = "--model=" + path(c.name + ".om") + " --random_input";
    Result first = omrun(om + " --output=" + path(c.name + "_0"));
    ASSERT_EQ(first.code, 0) << c.name << ": " << first.err;
    EXPECT_EQ(output(c.name + "_0", 0).desc().shape.dims(), c.gear0) << c.name;
    Result second = omrun(om + " --gear=1 --output=" + path(c.name + "_1"));
    ASSERT_EQ(second.code, 0) << c.name << ": " << second.err;
    EXPECT_EQ(output(c.name + "_1", 0).desc().shape.dims(), c.gear1) << c.name;
    for (const std::string gear : {"2", "-1"}) {
      Result bad = omrun(om + " --gear=" + gear);
      EXPECT_EQ(bad.code, 1);
      EXPECT_NE(bad.err.find("--gear=" + gear + ": " + path(c.name + ".om") + " has 2 gears (0 to 1)"),
                std::string::npos)
          << bad.err;
    }
  }
}

// Every input of a model compiled with --dynamic_batch_size takes the gear's one value (as the compile gave
// it them), so the gear of a run is the batch its inputs agree on; inputs in different gears are refused.
TEST_F(OmrunTest, EveryInputOfADynamicBatchTakesTheGear) {
  const std::string node = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_add";
  const std::string data = node + "/test_data_set_0";
  Result a = atc("--model=" + node + "/model.onnx --output=" + path("add_gears") +
                 " --input_shape='x:-1,4,5;y:-1,4,5' --dynamic_batch_size=1,3");
  ASSERT_EQ(a.code, 0) << a.err;
  const std::string om = "--model=" + path("add_gears.om");
  Result run = omrun(om + " --input=" + data + "/input_0.pb," + data + "/input_1.pb --compare=" + data +
                     " --rtol=0 --atol=0");
  EXPECT_EQ(run.code, 0) << run.err;
  for (int gear : {0, 1}) {
    const std::string out = "gear" + std::to_string(gear);
    Result random = omrun(om + " --random_input --gear=" + std::to_string(gear) + " --output=" + path(out));
    ASSERT_EQ(random.code, 0) << random.err;
    EXPECT_EQ(output(out, 0).desc().shape.dims(), (std::vector<int64_t>{gear == 0 ? 1 : 3, 4, 5}));
  }
  const std::string one = write_input("one", tensor_of(sdk::DataType::kFloat, {1, 4, 5}, 1));
  Result mixed = omrun(om + " --input=" + data + "/input_0.pb," + one);
  EXPECT_EQ(mixed.code, 1);
  EXPECT_NE(mixed.err.find(
                "inputs 'x' and 'y' must be in the same gear, but their gear dimensions differ: 3 and 1"),
            std::string::npos)
      << mixed.err;
}

// omrun --jit: a sequence of input sets through one session (--input_list), the report, and the outputs of
// the last set equal to atc + omrun's for that shape.
TEST_F(OmrunTest, JitRunsASequenceOfShapesAndReportsItsCache) {
  const std::string model = real_model("ch_PP-OCRv4_rec_infer.onnx");
  const std::string wide = write_input("wide", tensor_of(sdk::DataType::kFloat, {1, 3, 48, 320}, 3));
  const std::string narrow = write_input("narrow", tensor_of(sdk::DataType::kFloat, {1, 3, 48, 160}, 4));
  std::ofstream(path("list.txt")) << "# rec at two widths\n"
                                  << narrow << "\n"
                                  << wide << "\n\n"
                                  << narrow << "\n"
                                  << wide << "\n";
  Result j =
      omrun("--jit --model=" + model + " --input_list=" + path("list.txt") + " --output=" + path("out_jit") +
            " --jit_report=" + path("report.json") + " --timing --threads=1");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("1 execution points, 2 compiles, 2 cache hits"), std::string::npos) << j.out;
  const std::string report = slurp(path("report.json"));
  EXPECT_NE(report.find("\"runs\": 4, \"compiles\": 2, \"cache_hits\": 2"), std::string::npos) << report;
  EXPECT_NE(
      report.find("{\"slice\": 0, \"symbol\": \"x.dim[3] (p2o.DynamicDimension.1)\", \"before\": \"160\", "
                  "\"after\": \"320\"}"),
      std::string::npos)
      << report;
  ASSERT_EQ(atc("--model=" + model + " --input_shape=x:1,3,48,320 --output=" + path("rec")).code, 0);
  Result r = omrun("--model=" + path("rec.om") + " --input=" + wide + " --output=" + path("out_static") +
                   " --threads=1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(output("out_jit", 0) == output("out_static", 0))
      << compare_tensors(output("out_jit", 0), output("out_static", 0), 0, 0).detail;
  Result c = omrun("--jit --model=" + model + " --input=" + wide + " --compare=" + path("out_static") +
                   " --rtol=0 --atol=0 --threads=1");
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("compare: 1 outputs match"), std::string::npos) << c.out;
  // The same model compiled by atc without input shapes, run online from its .om.
  ASSERT_EQ(atc("--model=" + model + " --output=" + path("dyn")).code, 0);
  Result o = omrun("--jit --model=" + path("dyn.om") + " --input=" + wide + " --output=" + path("out_om") +
                   " --threads=1");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(output("out_om", 0) == output("out_static", 0));
}

TEST_F(OmrunTest, JitCutsADataDependentModel) {
  std::string bytes;
  jit_models::nonzero_middle().SerializeToString(&bytes);
  std::ofstream(path("nz.onnx"), std::ios::binary) << bytes;
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape(std::vector<int64_t>{3, 4});
  const std::vector<float> v = {1, -1, 2, 0, 0, 3, -4, 5, 6, 0, 0, 7};
  const std::string x =
      write_input("x", sdk::Tensor(d, std::string(reinterpret_cast<const char*>(v.data()), 48)));
  Result j = omrun("--jit --jit_cut=data --model=" + path("nz.onnx") + " --input=" + x +
                   " --jit_report=" + path("r.json") + " --loop=3");
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("output:  y float32[6,2]"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("2 execution points, 2 compiles, 4 cache hits"), std::string::npos) << j.out;
  EXPECT_NE(slurp(path("r.json")).find("\"cuts\": [\"nz\"]"), std::string::npos);
}

TEST_F(OmrunBadInput, JitOptions) {
  const std::string node = std::string(GRAPHSPLIT_TESTDATA_DIR) + "/node/test_add/model.onnx";
  expect_error("--model=" + node + " --input=" + a_ + "," + b_,
               "is an ONNX model: compile it with atc, or run it online with --jit");
  expect_error("--jit --jit_cut=sometimes --model=" + node + " --input=" + a_ + "," + b_,
               "--jit_cut must be auto, data or never, got 'sometimes'");
  expect_error("--model=" + path("add.om") + " --input_list=x.txt", "--input_list needs --jit");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --jit_report=r.json",
               "--jit_report needs --jit");
  expect_error("--model=" + path("add.om") + " --input=" + a_ + "," + b_ + " --input_shape=x:3,4,5",
               "--input_shape needs --jit");
  expect_error("--jit --model=" + node + " --input=" + a_ + "," + b_ + " --input_list=x.txt",
               "pass one of --input, --random_input and --input_list");
  expect_error("--jit --model=" + node + " --input_list=" + path("none.txt"), "none.txt");
  std::ofstream(path("bad.txt")) << a_ << "," << b_ << "\n" << a_ << "\n";
  expect_error("--jit --model=" + node + " --input_list=" + path("bad.txt"),
               "bad.txt:2: --input names 1 files");
  expect_error("--jit --model=" + node + " --input=" + a_ + "," + b_ + " --jit_dynamic_after=-1",
               "--jit_dynamic_after must not be negative");
  expect_error("--jit --model=" + path("add.om") + " --input_shape=x:3,4,5 --input=" + a_ + "," + b_,
               "--input_shape applies to an .onnx model");
  ASSERT_EQ(atc("--model=" + real_model("ch_ppocr_mobile_v2.0_cls_infer.onnx") +
                " --input_shape=x:-1,3,48,192 --dynamic_batch_size=1,4 --output=" + path("gear"))
                .code,
            0);
  expect_error("--jit --model=" + path("gear.om") + " --random_input",
               "gear.om: a model compiled with gears cannot run online; use its .onnx instead");
  Result r = omrun("--jit --model=" + node + " --input=" + a_ + "," + a_ + "," + b_ +
                   " --jit_report=" + path("r.json"));
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(fs::exists(path("r.json")));
}

TEST_F(OmrunBadInput, TensorSizeLimitNamesTheNode) {
  // test_add's output is float32[3,4,5] = 240 bytes: a 100-byte limit stops the run at node 'Add_0'...
  // whatever its name, the message names the node and the limit.
  Result r = omrun("--model=" + path("add.om") + " --input=" + a_ + "," + b_ +
                   " --max_tensor_bytes=100 --output=" + path("out"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("(Add): a float32[3,4,5] output exceeds the tensor size limit"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("out")));
}

}  // namespace
}  // namespace graphsplit::testing
