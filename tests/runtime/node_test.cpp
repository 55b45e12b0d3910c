// Proof by running: every ONNX backend node test in Debian's libonnx-testdata is compiled with the default
// pipeline (what atc does), written to .om bytes and read back, run on the engines (what omrun does), and its
// outputs compared with the test's expected outputs at ONNX's tolerances (rtol 1e-3, atol 1e-7).
//
// Variants: the default pipeline; PartitionedCall expanded into parent graphs; and a stress pipeline that
// splits as much as possible (engines alternate per node, ge.exec.static_model_ops_lower_limit = 1), whose
// outputs must equal the default run's outputs exactly.
//
// A test is skipped only for a stated reason (the importer refuses the model, an input is not a tensor, no
// engine or kernel exists for an operator, a data type is unsupported); the report lists every test with its
// outcome (build/node_tests_<variant>.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "common/log.h"
#include "config/config.h"
#include "import/onnx_import.h"
#include "jit/jit_session.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"
#include "runtime/compare.h"
#include "runtime/runtime.h"

namespace graphsplit::testing {
namespace {

namespace fs = std::filesystem;

enum class Kind { kPass, kSkip, kFail };

struct Outcome {
  Kind kind = Kind::kPass;
  std::string detail;
  std::vector<sdk::Tensor> outputs;
  size_t segments = 0;
};

Outcome skip(std::string why) {
  return {Kind::kSkip, std::move(why), {}};
}
Outcome fail(std::string why) {
  return {Kind::kFail, std::move(why), {}};
}

std::unique_ptr<Pipeline> make_pipeline(const std::string& toml_path,
                                        std::vector<std::pair<std::string, std::string>> ge = {}) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  sdk::Status s = parse_pipeline_config(toml_path, &config, &diags);
  EXPECT_TRUE(s.is_ok()) << s.message();
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR, GRAPHSPLIT_TEST_PLUGIN_DIR};
  settings.ge_overrides = std::move(ge);
  std::unique_ptr<Pipeline> p;
  s = Pipeline::create(config, settings, &p, &diags);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return p;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (size_t i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    files.push_back(p);
  }
  return files;
}

// The backend suites of Debian's libonnx-testdata with expected outputs: the operator tests and the
// `simple`, `pytorch-converted` and `pytorch-operator` models.
const char* const kSuites[] = {"node", "simple", "pytorch-converted", "pytorch-operator"};

std::vector<fs::path> node_tests() {
  std::vector<fs::path> dirs;
  for (const char* suite : kSuites)
    for (const auto& e : fs::directory_iterator(fs::path(GRAPHSPLIT_TESTDATA_DIR) / suite))
      if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// "test_abs" for the operator tests, "simple/test_sequence_model1" for the other suites.
std::string test_name(const fs::path& dir) {
  const std::string suite = dir.parent_path().filename().string();
  return suite == "node" ? dir.filename().string() : suite + "/" + dir.filename().string();
}

fs::path test_dir(const std::string& name) {
  const fs::path data(GRAPHSPLIT_TESTDATA_DIR);
  return name.find('/') == std::string::npos ? data / "node" / name : data / name;
}

// A test's value files, read as the kinds the model declares (a .pb does not say whether it holds a tensor,
// a sequence or an optional). ONNX 1.12 stores bfloat16 test data as uint16 bits: read back as bfloat16.
sdk::Status read_values(const std::vector<fs::path>& files, const std::vector<RuntimeIo>& io,
                        std::vector<sdk::Tensor>* out) {
  for (size_t i = 0; i < files.size(); ++i) {
    const sdk::TensorDesc want = i < io.size() ? io[i].desc : sdk::TensorDesc{};
    sdk::Tensor t;
    GS_RETURN_IF_ERROR(read_value_proto_file(files[i].string(), want.kind, &t, nullptr));
    if (want.dtype == sdk::DataType::kBFloat16 && t.desc().dtype == sdk::DataType::kUint16) {
      sdk::TensorDesc d = t.desc();
      d.dtype = sdk::DataType::kBFloat16;
      t = sdk::Tensor(d, std::string(t.bytes()));
    }
    out->push_back(std::move(t));
  }
  return sdk::Status::ok();
}

sdk::Status read_test_data(const fs::path& data, const Runtime& rt, std::vector<sdk::Tensor>* inputs,
                           std::vector<sdk::Tensor>* expected) {
  GS_RETURN_IF_ERROR(read_values(numbered(data, "input_"), rt.inputs(), inputs));
  return read_values(numbered(data, "output_"), rt.outputs(), expected);
}

// Tests whose expected data disagree with the ONNX specification as graphsplit (and ONNX Runtime) implement
// it; each is listed in the README with this reason.
const std::map<std::string, std::string>& known_data_errors() {
  static const std::map<std::string, std::string> kErrors = {
      {"test_cast_FLOAT_to_BFLOAT16",
       "ONNX 1.12's expected data truncates float32 to bfloat16; graphsplit rounds to nearest even (ONNX "
       "1.14+ "
       "data, ONNX Runtime)"},
      {"test_adam_multiple",
       "the expected data were computed with epsilon 1e-2, but the model leaves epsilon at its default 1e-6"},
  };
  return kErrors;
}

// A test whose input data contradicts the model's own declared static shape (ONNX 1.12's CastLike tests feed
// `like` as [1] to a model declaring [3,4]); the runtime refuses such an input, as it should.
std::optional<std::string> contradicts_declaration(const std::vector<sdk::Tensor>& inputs,
                                                   const Runtime& rt) {
  for (size_t i = 0; i < inputs.size() && i < rt.inputs().size(); ++i) {
    const sdk::TensorDesc& want = rt.inputs()[i].desc;
    if (inputs[i].is_container() || !want.shape.is_static()) continue;
    if (inputs[i].desc().shape.dims() != want.shape.dims())
      return "test data: input " + std::to_string(i) + " has shape " + inputs[i].desc().shape.to_string() +
             " but the model declares " + want.shape.to_string();
  }
  return std::nullopt;
}

// The elements of a float, double, bool or integer tensor.
std::vector<double> values_of(const sdk::Tensor& t) {
  std::vector<double> v;
  const int64_t n = t.desc().shape.num_elements().value_or(0);
  for (int64_t i = 0; i < n; ++i) {
    switch (t.desc().dtype) {
      case sdk::DataType::kFloat:
        v.push_back(reinterpret_cast<const float*>(t.data())[i]);
        break;
      case sdk::DataType::kDouble:
        v.push_back(reinterpret_cast<const double*>(t.data())[i]);
        break;
      case sdk::DataType::kBool:
        v.push_back(reinterpret_cast<const bool*>(t.data())[i] ? 1 : 0);
        break;
      default:
        ADD_FAILURE() << "values_of: unexpected type " << t.desc().to_string();
        return v;
    }
  }
  return v;
}

// Random generators cannot match numpy's draws: their outputs are checked for type, shape and range instead.
// Bernoulli (and its expansion through RandomUniformLike) gives 0 or 1; Dropout in training mode gives 0 or
// x / (1 - ratio), with a mask that is true where it kept x, and drops some but not all.
bool is_random_test(const std::string& name) {
  const bool dropout =
      name.rfind("test_training_dropout", 0) == 0 && name.find("zero_ratio") == std::string::npos;
  return name.rfind("test_bernoulli", 0) == 0 || dropout;
}

std::optional<std::string> check_dropout(const std::vector<sdk::Tensor>& inputs,
                                         const std::vector<sdk::Tensor>& got) {
  const std::vector<double> y = values_of(got[0]), x = values_of(inputs[0]);
  const double ratio = inputs.size() > 1 ? values_of(inputs[1])[0] : 0.5;
  const std::vector<double> mask = got.size() > 1 ? values_of(got[1]) : std::vector<double>{};
  size_t dropped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const bool kept = y[i] != 0 || x[i] == 0;
    dropped += !kept;
    const double scaled = x[i] / (1 - ratio);
    if (kept && std::abs(y[i] - scaled) > 1e-5 * std::abs(scaled))
      return "element " + std::to_string(i) + " is " + std::to_string(y[i]) +
             ", neither 0 nor x / (1 - ratio)";
    if (!mask.empty() && x[i] != 0 && (mask[i] != 0) != kept)
      return "mask element " + std::to_string(i) + " disagrees with the output";
  }
  if (dropped == 0 || dropped == y.size())
    return "dropped " + std::to_string(dropped) + " of " + std::to_string(y.size()) + " elements";
  return std::nullopt;
}

std::optional<std::string> check_random_outputs(const std::string& name,
                                                const std::vector<sdk::Tensor>& inputs,
                                                const std::vector<sdk::Tensor>& got,
                                                const std::vector<sdk::Tensor>& want) {
  for (size_t o = 0; o < got.size(); ++o)
    if (got[o].desc().dtype != want[o].desc().dtype ||
        got[o].desc().shape.dims() != want[o].desc().shape.dims())
      return "output " + std::to_string(o) + " is " + got[o].desc().to_string() + ", expected " +
             want[o].desc().to_string();
  if (name.rfind("test_bernoulli", 0) != 0) return check_dropout(inputs, got);
  const std::vector<double> y = values_of(got[0]);
  for (size_t i = 0; i < y.size(); ++i)
    if (y[i] != 0 && y[i] != 1) return "element " + std::to_string(i) + " is " + std::to_string(y[i]);
  return std::nullopt;
}

Outcome run_case(const fs::path& dir, Pipeline& pipeline, const RuntimeOptions& options) {
  std::unique_ptr<sdk::Graph> root;
  sdk::Status s = import_onnx_file((dir / "model.onnx").string(), {}, &root);
  if (!s.is_ok()) return skip("import refuses the model: " + s.message());
  s = pipeline.run(*root);
  if (!s.is_ok()) return fail("pipeline: " + s.message());
  std::string om;
  if (!(s = serialize_om(*root, &om)).is_ok()) return fail("serialize: " + s.message());
  std::unique_ptr<sdk::Graph> loaded;
  if (!(s = parse_om(om, dir.filename().string() + ".om", &loaded)).is_ok())
    return fail("parse: " + s.message());
  std::unique_ptr<Runtime> rt;
  s = Runtime::create(
      std::move(loaded), dir.filename().string(),
      [&](const std::string& name) { return pipeline.find_engine(name); }, options, &rt);
  if (s.code() == sdk::StatusCode::kUnsupported) return skip(s.message());
  if (!s.is_ok()) return fail("load: " + s.message());
  std::vector<sdk::Tensor> inputs, expected;
  if (!(s = read_test_data(dir / "test_data_set_0", *rt, &inputs, &expected)).is_ok())
    return fail(s.message());
  if (auto why = contradicts_declaration(inputs, *rt)) return skip(*why);
  std::vector<sdk::Tensor> outputs;
  s = rt->run(inputs, &outputs);
  if (s.code() == sdk::StatusCode::kUnsupported) return skip(s.message());
  if (!s.is_ok()) return fail("run: " + s.message());
  if (outputs.size() != expected.size())
    return fail("got " + std::to_string(outputs.size()) + " outputs, expected " +
                std::to_string(expected.size()));
  if (is_random_test(test_name(dir))) {
    if (auto why = check_random_outputs(test_name(dir), inputs, outputs, expected)) return fail(*why);
    expected.clear();  // checked by range, not by value
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    CompareResult c = compare_tensors(outputs[i], expected[i], 1e-3, 1e-7);
    const auto known = known_data_errors().find(test_name(dir));
    if (!c.equal && known != known_data_errors().end()) return skip("expected data: " + known->second);
    if (!c.equal) return fail("output " + std::to_string(i) + ": " + c.detail);
  }
  Outcome ok;
  ok.outputs = std::move(outputs);
  ok.segments = rt->segment_stats().size();
  return ok;
}

// Skip reasons shortened to their category for the summary ("no CPU kernel for operator X" etc.).
std::string category(const std::string& detail) {
  for (const char* key : {"no CPU kernel for operator ", "is not supported", "import refuses",
                          "test data:", "expected data:"}) {
    auto at = detail.find(key);
    if (at == std::string::npos) continue;
    if (std::string(key).rfind("no CPU", 0) == 0) {
      auto end = detail.find_first_of(" ;,", at + std::strlen(key));
      return detail.substr(at, end == std::string::npos ? std::string::npos : end - at);
    }
    return key;
  }
  return detail.substr(0, 60);
}

struct Summary {
  size_t pass = 0, skip = 0, fail = 0, segments = 0;
  std::map<std::string, size_t> skip_reasons;
  std::vector<std::string> failures;
  std::map<std::string, std::vector<sdk::Tensor>> outputs;
};

Summary run_all(Pipeline& pipeline, const RuntimeOptions& options, const std::string& report_name) {
  Summary sum;
  std::ofstream report(std::string(GRAPHSPLIT_BINARY_DIR) + "/" + report_name);
  report << "| test | outcome | detail |\n|---|---|---|\n";
  for (const fs::path& dir : node_tests()) {
    const std::string name = test_name(dir);
    if (std::getenv("NODE_TESTS_VERBOSE")) std::fprintf(stderr, "%s\n", name.c_str());
    Outcome o;
    try {
      o = run_case(dir, pipeline, options);
    } catch (const std::exception& e) {
      o = fail(std::string("exception: ") + e.what());
    }
    std::string detail = o.detail;
    std::replace(detail.begin(), detail.end(), '|', '/');
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    switch (o.kind) {
      case Kind::kPass:
        ++sum.pass;
        sum.segments += o.segments;
        sum.outputs[name] = std::move(o.outputs);
        report << "| " << name << " | pass | |\n";
        break;
      case Kind::kSkip:
        ++sum.skip;
        ++sum.skip_reasons[category(o.detail)];
        report << "| " << name << " | skip | " << detail << " |\n";
        break;
      case Kind::kFail:
        ++sum.fail;
        sum.failures.push_back(name + ": " + o.detail);
        report << "| " << name << " | FAIL | " << detail << " |\n";
        break;
    }
  }
  report << "\npass " << sum.pass << ", skip " << sum.skip << ", fail " << sum.fail << "\n\nskip reasons:\n";
  for (const auto& [why, n] : sum.skip_reasons) report << "- " << why << ": " << n << "\n";
  return sum;
}

void expect_clean(const Summary& sum, size_t min_pass) {
  for (const std::string& f : sum.failures) ADD_FAILURE() << f;
  EXPECT_GE(sum.pass, min_pass);
  std::printf("node tests: pass %zu, skip %zu, fail %zu\n", sum.pass, sum.skip, sum.fail);
  for (const auto& [why, n] : sum.skip_reasons) std::printf("  skip %4zu  %s\n", n, why.c_str());
}

TEST(OnnxNodeTests, DefaultPipelineMatchesExpectedOutputs) {
  ASSERT_TRUE(init_logging("error").is_ok());
  // Every kernel output must have the shape inference wrote before the run: 0 mismatches or the case fails.
  setenv("GRAPHSPLIT_CHECK_SHAPES", "1", 1);
  auto pipeline = make_pipeline(GRAPHSPLIT_DEFAULT_PIPELINE);
  ASSERT_TRUE(pipeline);
  Summary sum = run_all(*pipeline, {}, "node_tests_default.md");
  expect_clean(sum, 600);
}

TEST(OnnxNodeTests, ExpandedPartitionedCallsGiveTheSameResults) {
  ASSERT_TRUE(init_logging("error").is_ok());
  auto pipeline = make_pipeline(GRAPHSPLIT_DEFAULT_PIPELINE);
  ASSERT_TRUE(pipeline);
  RuntimeOptions options;
  options.expand_partitioned_calls = true;
  Summary sum = run_all(*pipeline, options, "node_tests_expanded.md");
  expect_clean(sum, 600);
}

// The default pipeline with stress.stripe_engines before the engine partitioner: operators alternate between
// the engines that can run them, and every static subgraph may be as small as one operator.
std::string stress_pipeline_file() {
  std::ifstream in(GRAPHSPLIT_DEFAULT_PIPELINE);
  std::stringstream text;
  text << in.rdbuf();
  std::string toml = text.str();
  const std::string engine_entry = "[[pipeline]]\npartition = \"engine\"";
  const auto at = toml.find(engine_entry);
  EXPECT_NE(at, std::string::npos);
  toml.insert(at, "[[pipeline]]\npass = \"stress.stripe_engines\"\n\n");
  const auto required = toml.find("required = [");
  EXPECT_NE(required, std::string::npos);
  toml.insert(required + std::string("required = [").size(), "\"stress\", ");
  const std::string path = std::string(GRAPHSPLIT_BINARY_DIR) + "/node_tests_stress_pipeline.toml";
  std::ofstream(path) << toml;
  return path;
}

TEST(OnnxNodeTests, StressPartitioningGivesIdenticalOutputs) {
  ASSERT_TRUE(init_logging("error").is_ok());
  auto reference = make_pipeline(GRAPHSPLIT_DEFAULT_PIPELINE);
  auto stress = make_pipeline(stress_pipeline_file(), {{"ge.exec.static_model_ops_lower_limit", "1"}});
  ASSERT_TRUE(reference && stress);
  Summary base = run_all(*reference, {}, "node_tests_default_again.md");
  Summary split = run_all(*stress, {}, "node_tests_stress.md");
  expect_clean(split, 600);
  EXPECT_EQ(split.pass, base.pass);
  // The stress placement really cuts more: far more engine segments for the same tests.
  EXPECT_GT(split.segments, base.segments + base.segments / 4) << base.segments << " -> " << split.segments;
  size_t compared = 0;
  for (const auto& [name, outputs] : base.outputs) {
    auto it = split.outputs.find(name);
    if (it == split.outputs.end()) continue;
    ASSERT_EQ(it->second.size(), outputs.size()) << name;
    for (size_t i = 0; i < outputs.size(); ++i) {
      EXPECT_TRUE(it->second[i] == outputs[i])
          << name << " output " << i << " changed under stress partitioning: "
          << compare_tensors(it->second[i], outputs[i], 0, 0).detail;
    }
    ++compared;
  }
  EXPECT_EQ(compared, base.pass);
  std::printf("engine segments: %zu (default) -> %zu (stress) over %zu tests\n", base.segments,
              split.segments, compared);
}

// The online mode on every test the default pipeline passes: the model opened as omrun --jit opens it (its
// declared shapes; the cut policy "data", so that every data-dependent operator really cuts), run on the
// test's inputs, must give the default run's outputs bit for bit.
TEST(OnnxNodeTests, OnlineModeGivesIdenticalOutputs) {
  ASSERT_TRUE(init_logging("error").is_ok());
  auto pipeline = make_pipeline(GRAPHSPLIT_DEFAULT_PIPELINE);
  ASSERT_TRUE(pipeline);
  Summary base = run_all(*pipeline, {}, "node_tests_default_for_jit.md");
  size_t compared = 0, cut = 0;
  for (const auto& [name, outputs] : base.outputs) {
    const fs::path dir = test_dir(name);
    jit::JitOptions o;
    o.compile.model = (dir / "model.onnx").string();
    o.compile.pipeline = GRAPHSPLIT_DEFAULT_PIPELINE;
    o.compile.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
    o.cut = jit::CutPolicy::kData;
    std::unique_ptr<jit::JitSession> session;
    sdk::Status s = jit::JitSession::open(o, &session);
    ASSERT_TRUE(s.is_ok()) << name << ": " << s.message();
    std::vector<sdk::Tensor> inputs, got;
    s = read_values(numbered(dir / "test_data_set_0", "input_"), session->inputs(), &inputs);
    ASSERT_TRUE(s.is_ok()) << name << ": " << s.message();
    s = session->run(inputs, &got);
    if (!s.is_ok()) {
      ADD_FAILURE() << name << ": " << s.message();
      continue;
    }
    ASSERT_EQ(got.size(), outputs.size()) << name;
    for (size_t i = 0; i < outputs.size(); ++i)
      EXPECT_TRUE(got[i] == outputs[i])
          << name << " output " << i
          << " differs online: " << compare_tensors(got[i], outputs[i], 0, 0).detail;
    cut += session->stats().slices.size() > 1;
    ++compared;
  }
  EXPECT_EQ(compared, base.pass);
  std::printf("online mode: %zu tests identical, %zu of them cut into several slices\n", compared, cut);
}

}  // namespace
}  // namespace graphsplit::testing
