// atc end to end: the real binary on real and deliberately broken inputs. Every failure must be one line on
// stderr naming the file or option, exit code 1, and no output file.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "../framework/onnx_builders.h"
#include "../support/process.h"
#include "driver/compile.h"
#include "graphsplit/sdk/version.h"
#include "model/om_io.h"
#include "report/partition.pb.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using namespace graphsplit::testing;

class AtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("gs_atc_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_model(const std::string& name, const onnx::ModelProto& m) const {
    write_bytes(path(name), to_bytes(m));
    return path(name);
  }

  Result atc(const std::string& args) const {
    return run_command(std::string(GRAPHSPLIT_ATC) + " " + args, dir_);
  }

  // The failure contract: exit 1, one line "atc: error: ..." containing `fragment`, and nothing new in the
  // folder.
  void expect_error(const std::string& args, const std::string& fragment) const {
    std::set<std::string> before = listing();
    Result r = atc(args);
    EXPECT_EQ(r.code, 1) << args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("atc: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << "stderr: " << r.err << "expected: " << fragment;
    EXPECT_EQ(listing(), before) << "files appeared or vanished";
  }

  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.insert(e.path().filename().string());
    return names;
  }

  fs::path dir_;
};

TEST_F(AtcTest, ConvertsAModelAndPrintsASummary) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  Result r = atc("--model=" + model + " --output=" + path("tiny"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("tiny.om")));
  // The default pipeline splits off the dynamic part (N is symbolic): Data, one PartitionedCall, NetOutput.
  EXPECT_NE(r.out.find("graph:     'tiny': 3 nodes in the root graph, 1 subgraphs, 7 nodes in all"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("inputs:    x float32[N,4]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote:     " + path("tiny.om")), std::string::npos) << r.out;

  r = atc("--mode=1 --om=" + path("tiny.om") + " --json=" + path("tiny.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string json = slurp(path("tiny.json"));
  EXPECT_NE(json.find("\"magic\": \"GSOM\""), std::string::npos);
  EXPECT_NE(json.find("\"type\": \"Sigmoid\""), std::string::npos);

  EXPECT_NE(json.find("\"_op_engine_name\""), std::string::npos);  // the default pipeline placed the nodes
  EXPECT_NE(json.find("\"values\": [\n         \"y\"\n"), std::string::npos) << "string lists read as text";

  // ONNX straight to JSON shows the imported graph: the same document as an .om made by an empty pipeline.
  r = atc("--mode=1 --om=" + model + " --json=" + path("direct.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::ofstream(path("empty.toml")) << "schema_version = 1\n[plugins]\nrequired = []\n";
  ASSERT_EQ(atc("--model=" + model + " --output=" + path("plain") + " --pipeline=" + path("empty.toml")).code,
            0);
  ASSERT_EQ(atc("--mode=1 --om=" + path("plain.om") + " --json=" + path("plain.json")).code, 0);
  EXPECT_EQ(slurp(path("direct.json")), slurp(path("plain.json")));
}

TEST_F(AtcTest, OutputIsDeterministic) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  ASSERT_EQ(atc("--model=" + model + " --output=" + path("a")).code, 0);
  ASSERT_EQ(atc("--model=" + model + " --output=" + path("b.om")).code, 0);
  EXPECT_EQ(slurp(path("a.om")), slurp(path("b.om")));
  // The heap's backing (huge pages or not, apps/common/huge_heap.h; the default depends on the machine) must
  // not show in the output.
  for (const char* heap : {"1", "0"}) {
    const std::string out = path(std::string("heap") + heap + ".om");
    ASSERT_EQ(run_command(std::string("GRAPHSPLIT_HUGE_HEAP=") + heap + " " + GRAPHSPLIT_ATC +
                              " --model=" + model + " --output=" + out,
                          dir_)
                  .code,
              0);
    EXPECT_EQ(slurp(path("a.om")), slurp(out)) << "GRAPHSPLIT_HUGE_HEAP=" << heap;
  }
}

// A disabled entry ran nothing: its timing line says so and shows no memory, while the entries around it do.
TEST_F(AtcTest, TimingShowsNoMemoryForADisabledEntry) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  std::string config = slurp(GRAPHSPLIT_DEFAULT_PIPELINE);
  const std::string entry = "pass = \"fusion.conv_bn\"";
  const size_t at = config.find(entry);
  ASSERT_NE(at, std::string::npos);
  config.insert(config.find('\n', at) + 1, "enabled = false\n");
  std::ofstream(path("p.toml")) << config;
  Result r = atc("--model=" + model + " --output=" + path("t") + " --timing --pipeline=" + path("p.toml"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto line_of = [&](const std::string& start) {
    const size_t b = r.out.find(start);
    return b == std::string::npos ? std::string() : r.out.substr(b, r.out.find('\n', b) - b);
  };
  const std::string disabled = line_of("2   pass fusion.conv_bn");
  ASSERT_FALSE(disabled.empty()) << r.out;
  EXPECT_EQ(disabled.substr(disabled.find_last_not_of(' ') - 7, 8), "disabled") << "'" << disabled << "'";
  const std::string ran = line_of("3   pass fusion.conv_scale");
  ASSERT_FALSE(ran.empty()) << r.out;
  EXPECT_GT(std::stol(ran.substr(ran.find_last_of(' ') + 1)), 0) << ran;
}

// atc keeps the decision log only for the options that read it; the same graph comes out either way, and a
// report asked of a compile that did not keep it is refused, not given without its decisions.
TEST_F(AtcTest, DecisionsAreKeptOnlyWhenAReportNeedsThem) {
  CompileRequest r;
  r.model = "tiny.onnx";
  tiny_model().SerializeToString(&r.model_bytes);
  r.pipeline = GRAPHSPLIT_DEFAULT_PIPELINE;
  r.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  Compilation kept, dropped;
  ASSERT_TRUE(compile_model(r, &kept).is_ok());
  r.keep_decisions = false;
  ASSERT_TRUE(compile_model(r, &dropped).is_ok());
  EXPECT_FALSE(kept.pipeline->decisions().empty());
  EXPECT_TRUE(dropped.pipeline->decisions().empty());
  ASSERT_TRUE(kept.write_om(path("kept.om"), nullptr).is_ok());
  ASSERT_TRUE(dropped.write_om(path("dropped.om"), nullptr).is_ok());
  EXPECT_EQ(slurp(path("kept.om")), slurp(path("dropped.om")));
  std::string text;
  EXPECT_TRUE(kept.partition_report(&text).is_ok());
  for (const sdk::Status& s : {dropped.partition_report(&text), dropped.placement_report(&text),
                               dropped.partition_report_html(&text), dropped.explain("relu", &text)}) {
    EXPECT_NE(s.message().find("did not keep its decisions"), std::string::npos) << s.message();
  }
  // Through atc: --explain still has the decisions to show.
  const std::string model = write_model("tiny.onnx", tiny_model());
  Result cli = atc("--model=" + model + " --output=" + path("t") + " --explain=relu");
  ASSERT_EQ(cli.code, 0) << cli.err;
  EXPECT_NE(cli.out.find("AIcoreEngine"), std::string::npos) << cli.out;
  // Without a report the log is dropped, but --log=debug still shows placement's decisions: the host tells
  // the pass that it keeps them (PassContext::keeps_decisions).
  cli = atc("--model=" + model + " --output=" + path("d") + " --log=debug");
  ASSERT_EQ(cli.code, 0) << cli.err;
  EXPECT_NE((cli.out + cli.err).find("COST_ORDER tiny: relu [AIcoreEngine]"), std::string::npos) << cli.err;
}

TEST_F(AtcTest, InputShapeFixesTheShapes) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  Result r = atc("--model=" + model + " --output=" + path("t") + " --input_shape=x:2,4");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs:   y float32[2,4]"), std::string::npos) << r.out;
}

TEST_F(AtcTest, ManyOutputsAreSummarisedNotListed) {
  onnx::ModelProto m = tiny_model();
  onnx::GraphProto* g = m.mutable_graph();
  g->clear_output();
  for (int k = 0; k < 12; ++k) {
    add_node(g, "Relu", {"y"}, {"o" + std::to_string(k)});
    set_tensor_type(g->add_output(), "o" + std::to_string(k), onnx::TensorProto::FLOAT, {-1, 4});
  }
  Result r = atc("--model=" + write_model("wide.onnx", m) + " --output=" + path("t"));
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t at = r.out.find("outputs:   ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find("o7 float32[N,4], ... (12 outputs)"), std::string::npos) << line;
  EXPECT_EQ(line.find("o8"), std::string::npos) << line;
  EXPECT_NE(r.out.find("inputs:    x float32[N,4]\n"), std::string::npos) << r.out;  // short lists stay whole
}

TEST_F(AtcTest, HelpAndVersion) {
  Result r = atc("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--input_shape"), std::string::npos);
  r = atc("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("atc (graphsplit) "), std::string::npos);
}

TEST_F(AtcTest, MissingFile) {
  expect_error("--model=" + path("nope.onnx") + " --output=" + path("o"), "nope.onnx: No such file");
}

TEST_F(AtcTest, NotAnOnnxFile) {
  std::ofstream(path("text.onnx")) << "hello, I am not a model\n";
  expect_error("--model=" + path("text.onnx") + " --output=" + path("o"), "text.onnx: not a");
}

TEST_F(AtcTest, TruncatedFile) {
  std::string bytes = to_bytes(tiny_model());
  write_bytes(path("cut.onnx"), bytes.substr(0, bytes.size() - 7));
  expect_error("--model=" + path("cut.onnx") + " --output=" + path("o"), "cut.onnx: not a valid ONNX model");
}

TEST_F(AtcTest, TruncatedRealModel) {
  const std::string real = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  ASSERT_TRUE(fs::exists(real)) << "run scripts/fetch_models.sh";
  const std::string bytes = slurp(real);
  write_bytes(path("half.onnx"), bytes.substr(0, bytes.size() / 2));
  expect_error("--model=" + path("half.onnx") + " --output=" + path("o"),
               "half.onnx: not a valid ONNX model");
}

TEST_F(AtcTest, UnsupportedIrAndOpsetVersions) {
  auto m = tiny_model();
  m.set_ir_version(42);
  expect_error("--model=" + write_model("ir.onnx", m) + " --output=" + path("o"),
               "ir.onnx: ONNX IR version 42 is newer");
  expect_error("--model=" + write_model("opset.onnx", tiny_model(30)) + " --output=" + path("o"),
               "opset.onnx: opset 30 of domain 'ai.onnx' is not supported");
}

TEST_F(AtcTest, GraphWithACycle) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");
  expect_error("--model=" + write_model("cycle.onnx", m) + " --output=" + path("o"),
               "cycle.onnx: graph 'tiny' has a cycle through node 'relu'");
}

TEST_F(AtcTest, DanglingInputName) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  expect_error("--model=" + write_model("dangling.onnx", m) + " --output=" + path("o"),
               "dangling.onnx: node 'sigmoid' (Sigmoid) input 0 is 'ghost'");
}

TEST_F(AtcTest, DuplicateOutputNames) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_output(0, "r");
  expect_error("--model=" + write_model("dup.onnx", m) + " --output=" + path("o"),
               "dup.onnx: value 'r' is produced twice");
}

TEST_F(AtcTest, UnknownOption) {
  expect_error("--frobnicate=1", "--frobnicate");
}

TEST_F(AtcTest, BadOptionValues) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  expect_error("--model=" + model + " --output=" + path("o") + " --log=loud", "--log: 'loud' is not one of");
  expect_error("--model=" + model + " --output=" + path("o") + " --framework=3",
               "--framework=3 is not supported");
  expect_error("--model=" + model + " --output=" + path("o") + " --mode=7", "--mode=7 is not supported");
  expect_error("--model=" + model + " --output=" + path("o") + " --input_shape=x:1,two",
               "E10014: --input_shape dimension 'two' of input 'x' is not a number");
  expect_error("--model=" + model + " --output=" + path("o") + " --input_shape=q:1,4",
               "--input_shape names 'q', which is not an input of the model (inputs: x)");
  expect_error("--model=" + model, "--output is required");
  expect_error("--model=" + model + " --output=" + path("no/such/dir/o"), "does not exist");
}

TEST_F(AtcTest, ModelWithoutOnnxExtensionNeedsFramework) {
  write_bytes(path("model.bin"), to_bytes(tiny_model()));
  expect_error("--model=" + path("model.bin") + " --output=" + path("o"), "pass --framework=5");
  EXPECT_EQ(atc("--model=" + path("model.bin") + " --framework=5 --output=" + path("o")).code, 0);
}

TEST_F(AtcTest, CorruptOmInJsonMode) {
  write_bytes(path("bad.om"), "\x0a\x04GSOX garbage");
  expect_error("--mode=1 --om=" + path("bad.om") + " --json=" + path("bad.json"),
               "bad.om: not a graphsplit model");
}

TEST_F(AtcTest, FailedRunRemovesAStaleOutput) {
  std::ofstream(path("o.om")) << "output of an earlier run";
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_input(0, "ghost");
  const std::string model = write_model("bad.onnx", m);
  Result r = atc("--model=" + model + " --output=" + path("o"));
  EXPECT_EQ(r.code, 1);
  EXPECT_FALSE(fs::exists(path("o.om")));
}

TEST_F(AtcTest, ListPluginsShowsDescriptorsAndComponents) {
  Result r = atc("--list_plugins");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("plugin std 0.1.0, SDK 0.1.0, ABI " GS_SDK_ABI_STRING), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pass std.topological_sort"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("engine template: Example engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("op table"), std::string::npos) << r.out;
  // Broken libraries are listed with the reason, and listing carries on.
  r = atc(std::string("--list_plugins --plugin_path=") + BAD_PLUGIN_DIR);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("libgsplugin_no_entry.so\n  refused: refusing plugin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("plugin thrower 1.0"), std::string::npos) << r.out;
}

TEST_F(AtcTest, PrintPipelineShowsTheResolvedDefault) {
  Result r = atc("--print_pipeline --options=ge.topoSortingMode=2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("pass = \"std.prune_unused\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"ge.topoSortingMode\" = \"2\"  # --options"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"ge.tiling_schedule_optimize\" = \"0\"  # default"), std::string::npos) << r.out;
}

TEST_F(AtcTest, ValidatePipelineListsEveryProblem) {
  std::ofstream(path("bad.toml"))
      << "schema_version = 1\n[plugins]\nrequired = [\"std\"]\n[[pipeline]]\n"
         "pass = \"std.prune_unsed\"\n[[pipeline]]\npass = \"std.topological_sort\"\n"
         "options = { mode = 3 }\n";
  Result r = atc("--validate_pipeline=" + path("bad.toml"));
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, path("bad.toml") +
                       ":5:8: error: unknown pass 'std.prune_unsed'; did you mean 'std.prune_unused' (plugin "
                       "std 0.1.0)?\n" +
                       path("bad.toml") + ":8:20: error: option 'mode' must be a string, got integer 3\n");
  std::ofstream(path("good.toml"))
      << "schema_version = 1\n[plugins]\nrequired = [\"std\"]\n[[pipeline]]\npass = \"std.prune_unused\"\n";
  r = atc("--validate_pipeline=" + path("good.toml"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, path("good.toml") + ": ok\n");
}

TEST_F(AtcTest, BadPipelineOrOptionsStopTheConversion) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  std::ofstream(path("bad.toml"))
      << "schema_version = 1\n[plugins]\nrequired = [\"std\"]\n[[pipeline]]\npass = \"std.nope\"\n";
  expect_error("--model=" + model + " --output=" + path("o") + " --pipeline=" + path("bad.toml"),
               path("bad.toml") + ":5:8: error: unknown pass 'std.nope'");
  expect_error("--model=" + model + " --output=" + path("o") + " --pipeline=" + path("missing.toml"),
               "missing.toml: cannot open the pipeline file");
  expect_error(
      "--model=" + model + " --output=" + path("o") + " --options=ge.exec.static_model_ops_lower_limit=-5",
      "E10001: value '-5' for option 'ge.exec.static_model_ops_lower_limit' is invalid");
  expect_error("--model=" + model + " --output=" + path("o") + " --options=novalue",
               "--options: 'novalue' must be key=value");
}

TEST_F(AtcTest, PluginFailureDuringTheRunWritesNothing) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  std::ofstream(path("p.toml")) << "schema_version = 1\n[plugins]\nrequired = [\"thrower\"]\n[[pipeline]]\n"
                                   "pass = \"thrower.throws_on_run\"\n";
  expect_error(
      "--model=" + model + " --output=" + path("o") + " --pipeline=" + path("p.toml") +
          " --plugin_path=" + BAD_PLUGIN_DIR,
      "pipeline entry 1 (pass thrower.throws_on_run) (libgsplugin_thrower.so 1.0, SDK ABI " GS_SDK_ABI_STRING
      ") "
      "threw a non-standard exception");
}

// The summary prints symbolic sizes as expressions: MaxPool k3 s2 on x[N,1,H,W] gives floor((H-3)/2)+1, kept
// in canonical form as floor((H+1)/2)-1.
TEST_F(AtcTest, SummaryPrintsSymbolicSizes) {
  onnx::ModelProto m = tiny_model();
  auto* g = m.mutable_graph();
  g->clear_node();
  g->clear_input();
  g->clear_output();
  testing::set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {-1, 1, -1, -1});
  auto* dims = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  dims->mutable_dim(2)->set_dim_param("H");
  dims->mutable_dim(3)->set_dim_param("W");
  auto* pool = testing::add_node(g, "MaxPool", {"x"}, {"y"}, "pool");
  for (const char* name : {"kernel_shape", "strides"}) {
    auto* a = pool->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(std::string(name) == "strides" ? 2 : 3);
    a->add_ints(std::string(name) == "strides" ? 2 : 3);
  }
  g->add_output()->set_name("y");
  Result r = atc("--model=" + write_model("pool.onnx", m) + " --output=" + path("pool"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("outputs:   y float32[N,1,floor((H+1)/2)-1,floor((W+1)/2)-1]"), std::string::npos)
      << r.out;
}

TEST_F(AtcTest, TimingAndDumps) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  Result r = atc("--model=" + model + " --output=" + path("t") + " --timing --dump_graph=" + path("dump"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The tiny model's shapes are all static already: shape inference changes nothing.
  EXPECT_NE(r.out.find("1   pass shape.infer"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2   pass fusion.conv_bn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3   pass fusion.conv_scale"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4   pass std.prune_unused"), std::string::npos) << r.out;
  // Each entry's line ends with the resident memory and the peak so far, in MB: a process holding its code
  // and the graph has some, the peak never falls and is never below what is resident.
  // The columns line up: each entry's time ends where the header's "ms" does, whatever the plugin's name
  // (partition_dynamic_shape's pushed its row out of line).
  const size_t header = r.out.find("#   entry");
  ASSERT_NE(header, std::string::npos) << r.out;
  const std::string head = r.out.substr(header, r.out.find('\n', header) - header);
  const size_t ms_end = head.find(" ms  ") + 3;
  std::istringstream lines(r.out);
  int entries = 0;
  long last_peak = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" pass ") == std::string::npos && line.find(" partition ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string x; fields >> x;) f.push_back(x);
    ASSERT_GE(f.size(), 7u) << line;
    const std::string& ms = f[f.size() - 4];
    EXPECT_EQ(line.find(" " + ms + "  ") + 1 + ms.size(), ms_end) << head << "\n" << line;
    const long rss = std::stol(f[f.size() - 2]), peak = std::stol(f.back());
    EXPECT_GT(rss, 0) << line;
    EXPECT_GE(peak, rss) << line;
    EXPECT_GE(peak, last_peak) << line;
    last_peak = peak;
    ++entries;
  }
  EXPECT_GE(entries, 10) << r.out;
  EXPECT_NE(r.out.find("rss MB peak MB"), std::string::npos) << r.out;
  const size_t summary = r.out.find("atc: plugins ");
  ASSERT_NE(summary, std::string::npos) << r.out;
  const std::string line = r.out.substr(summary, r.out.find('\n', summary) - summary);
  EXPECT_NE(line.find("ms (rss "), std::string::npos) << line;
  const size_t peak = line.find("; peak ");
  ASSERT_NE(peak, std::string::npos) << line;
  EXPECT_GE(std::stol(line.substr(peak + 7)), last_peak) << line;
  EXPECT_NE(r.out.find("5   pass std.topological_sort"), std::string::npos) << r.out;
  for (const char* f :
       {"000_input.json", "000_input.dot", "001_shape.infer.json", "002_fusion.conv_bn.json",
        "003_fusion.conv_scale.json", "004_std.prune_unused.json", "005_std.topological_sort.dot"}) {
    EXPECT_TRUE(fs::exists(path("dump") + "/" + f)) << f;
  }
  EXPECT_NE(slurp(path("dump") + "/005_std.topological_sort.dot").find("digraph \"tiny\""),
            std::string::npos);
}

TEST_F(AtcTest, DumpPlacementAndExplain) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  Result r = atc("--model=" + model + " --output=" + path("t") + " --dump_placement=" + path("p.json") +
                 " --explain=relu");
  ASSERT_EQ(r.code, 0) << r.err;
  // relu, sigmoid and their call on AI Core; Data, NetOutput and the call's inner Data and NetOutput
  // GE-local.
  EXPECT_NE(r.out.find("placement: DNN_VM_GE_LOCAL 4, AIcoreEngine 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node 'relu' (Relu) in graph 'tiny_sub_0_unknow'\n  inputs:  float32[-1(N),4]\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  engine:  AIcoreEngine (kernel lib AIcoreEngine), decision COST_ORDER\n  + "
                       "AIcoreEngine: OK (cost 5)"),
            std::string::npos)
      << r.out;
  const std::string json = slurp(path("p.json"));
  EXPECT_NE(json.find("\"placed\": \"7\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"decision\": \"STRUCTURAL\""), std::string::npos);
  // Excluding AI Core moves the operators to AI CPU, and the reason says why.
  r = atc("--model=" + model + " --output=" + path("t") +
          " --options=ge.exec.exclude_engines=AiCore --explain=sigmoid");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(
      r.out.find("  - AIcoreEngine: ENGINE_DISABLED (excluded by ge.exec.exclude_engines or ge.engineType)\n"
                 "  + DNN_VM_AICPU: OK (cost 100)"),
      std::string::npos)
      << r.out;
  expect_error("--model=" + model + " --output=" + path("o") + " --explain=sigmod",
               "--explain: no node named 'sigmod'; did you mean 'sigmoid'?");
}

// exclude_ops in an [engines.X] table: that engine no longer takes the op type, the next engine in cost order
// does; the other op types stay; a name the engine's table does not list is an error at its position.
TEST_F(AtcTest, ExcludeOpsMovesOneOpTypeToAnotherEngine) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  std::string config = slurp(GRAPHSPLIT_DEFAULT_PIPELINE);
  const std::string header = "[engines.AIcoreEngine]\n";
  ASSERT_NE(config.find(header), std::string::npos);
  auto with = [&](const std::string& line) {
    std::string text = config;
    text.insert(text.find(header) + header.size(), line + "\n");
    std::ofstream(path("p.toml")) << text;
    return " --pipeline=" + path("p.toml");
  };
  const std::string excluded = " --output=" + path("t") + with("exclude_ops = [\"Sigmoid\"]");
  Result r = atc("--model=" + model + excluded + " --explain=sigmoid");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  engine:  DNN_VM_AICPU (kernel lib aicpu_ascend_kernel), decision COST_ORDER"),
            std::string::npos)
      << r.out;
  r = atc("--model=" + model + excluded + " --explain=relu");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  engine:  AIcoreEngine (kernel lib AIcoreEngine), decision COST_ORDER"),
            std::string::npos)
      << "relu stays on AI Core: " << r.out;
  const auto line = std::count(config.begin(), config.begin() + config.find(header), '\n') + 2;
  r = atc("--print_pipeline" + with("exclude_ops = [\"Sigmoid\", \"Relu\"]"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("exclude_ops = [\"Relu\", \"Sigmoid\"]"), std::string::npos) << r.out;
  expect_error("--model=" + model + " --output=" + path("o") + with("exclude_ops = [\"Sigmoud\"]"),
               "p.toml:" + std::to_string(line) +
                   ":16: error: exclude_ops of [engines.AIcoreEngine]: op type 'Sigmoud' is not in the "
                   "engine's op table; did you mean 'Sigmoid'?");
  expect_error("--model=" + model + " --output=" + path("o") + with("exclude_ops = \"Sigmoid\""),
               "'engines.AIcoreEngine.exclude_ops' must be an array of strings");
}

// The progress line: drawn on a terminal (script(1) gives atc one) once the delay has passed, erased before
// the summary; never when stderr is not a terminal or with --log=error.
TEST_F(AtcTest, ProgressLineOnlyOnATerminal) {
  const std::string model = write_model("tiny.onnx", tiny_model());
  const std::string run = std::string(GRAPHSPLIT_ATC) + " --model=" + model + " --output=" + path("t");
  auto on_terminal = [&](const std::string& args) {
    return run_command("GRAPHSPLIT_PROGRESS_DELAY=0 script -qec '" + run + args + "' /dev/null", dir_);
  };
  Result r = on_terminal("");
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t line = r.out.find("\r\x1b[Katc: ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const size_t erased = r.out.find("\r\x1b[Kmodel:     ");
  EXPECT_NE(erased, std::string::npos) << "the line is erased before the summary: " << r.out;
  EXPECT_LT(line, erased);
  r = on_terminal(" --log=error");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("\x1b[K"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("model:     ", 0), 0u) << r.out;
  r = run_command("GRAPHSPLIT_PROGRESS_DELAY=0 " + run, dir_);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.find("\x1b[K"), std::string::npos) << r.out;
}

// The default pipeline on the real models, through atc: the partition report's summary against what the ONNX
// file and the report itself say.
TEST_F(AtcTest, PartitionReportOnRealModels) {
  for (const char* name : {"ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer",
                           "silero_vad_v5", "silero_vad_legacy"}) {
    SCOPED_TRACE(name);
    const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/" + name + ".onnx";
    ASSERT_TRUE(fs::exists(model)) << "run scripts/fetch_models.sh";
    Result r = atc("--model=" + model + " --output=" + path("m") + " --partition_report=" + path("r.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string json = slurp(path("r.json"));
    onnx::ModelProto proto;
    ASSERT_TRUE(proto.ParseFromString(slurp(model)));
    size_t ifs = 0;
    std::function<void(const onnx::GraphProto&)> count = [&](const onnx::GraphProto& g) {
      for (const auto& n : g.node()) {
        ifs += n.op_type() == sdk::op::kIf;
        for (const auto& a : n.attribute()) {
          if (a.has_g()) count(a.g());
        }
      }
    };
    count(proto.graph());
    // Every If keeps its two branches; the root is split into at least one dynamic call (all five have
    // dynamic inputs).
    if (ifs) {
      EXPECT_NE(json.find("\"if_branch\": \"" + std::to_string(2 * ifs) + "\""), std::string::npos)
          << json.substr(0, 400);
    }
    EXPECT_NE(json.find("\"root\": \"1\""), std::string::npos);
    EXPECT_NE(json.find("\"kind\": \"partitioned_call\""), std::string::npos);
    EXPECT_NE(json.find("\"unknown_shape\": true"), std::string::npos);
    EXPECT_NE(json.find("\"parent_node\": null"), std::string::npos);
    EXPECT_NE(json.find("\"code\": \"SHAPE_UNKNOWN\""), std::string::npos);
    // The engine partitioner cut every graph into engine subgraphs and merged them back: per graph, the
    // engine subgraphs hold exactly its nodes, each on one engine the pipeline knows (or the input graph).
    report::PartitionReport parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
    std::map<std::string, int64_t> graph_nodes, engine_nodes;
    const std::set<std::string> known = {"inputNodesSubGraph", "DNN_VM_GE_LOCAL", "AIcoreEngine",
                                         "DNN_VM_AICPU",       "DNN_VM_DVPP",     "DNN_VM_HOST_CPU"};
    for (const report::GraphEntry& e : parsed.graphs()) {
      if (e.kind() != "engine_subgraph") {
        graph_nodes[e.name()] = e.node_count();
        continue;
      }
      EXPECT_TRUE(known.count(e.engine())) << e.engine();
      engine_nodes[e.parent_graph()] += e.node_count();
    }
    EXPECT_EQ(engine_nodes, graph_nodes);
    EXPECT_GT(parsed.summary().engine_subgraphs(), static_cast<int64_t>(graph_nodes.size()));
  }
}

TEST_F(AtcTest, AFailingEngineOptimiseHookStopsAtcWithTheEngineAndSubgraphAndWritesNothing) {
  // Two Relus placed on the test engine (the only one enabled), whose optimise hook is told to fail.
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Relu");
  const std::string model = write_model("relu.onnx", m);
  for (const char* behaviour : {"fail", "break"}) {
    std::ofstream(path("p.toml"))
        << "schema_version = 1\n[plugins]\nrequired = [\"placement\", \"fusing_test\", "
           "\"partition_engine\"]\n[engines.FUSING_TEST]\noptions = { behaviour = \""
        << behaviour
        << "\" }\n[[pipeline]]\npass = \"placement.engine_place\"\n[[pipeline]]\n"
           "partition = \"engine\"\n";
    expect_error(
        "--model=" + model + " --output=" + path("o") + " --pipeline=" + path("p.toml"),
        "engine 'FUSING_TEST' optimising subgraph 'partition0_rank1_new_sub_graph1' of graph 'tiny'");
    fs::remove(path("p.toml"));
  }
}

TEST_F(AtcTest, AnEntryPastTheTimeLimitStopsAtcNamingTheEntryAndPlugin) {
  onnx::ModelProto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("Relu");
  const std::string model = write_model("relu.onnx", m);
  std::ofstream(path("p.toml"))
      << "schema_version = 1\n[plugins]\nrequired = [\"placement\", \"fusing_test\", "
         "\"partition_engine\"]\n[engines.FUSING_TEST]\noptions = { behaviour = \"sleep\" "
         "}\n[[pipeline]]\npass = \"placement.engine_place\"\n[[pipeline]]\npartition = "
         "\"engine\"\n";
  const auto start = std::chrono::steady_clock::now();
  expect_error(
      "--model=" + model + " --output=" + path("o") + " --pipeline=" + path("p.toml") + " --entry_timeout=1",
      "pipeline entry 2 (partition engine) (libgsplugin_partition_engine.so 0.1.0, SDK ABI " GS_SDK_ABI_STRING
      ") exceeded "
      "the time limit of 1 s");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

TEST_F(AtcTest, UnplaceableNodeFailsWithEZ3003AndWritesNothing) {
  auto m = tiny_model();
  m.mutable_graph()->mutable_node(1)->set_op_type("NonZero");
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  const std::string model = write_model("nz.onnx", m);
  expect_error(
      "--model=" + model + " --output=" + path("o") + " --options='ge.exec.exclude_engines=AiCpu|HostCpu'",
      "EZ3003: no engine can run node 'sigmoid' (NonZero) in graph 'tiny'");
}

// ---- dynamic gears (multibatch.clone)

const sdk::Node* find_case(const sdk::Graph& root) {
  std::vector<const sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (const sdk::Graph* g : graphs) {
    for (const sdk::Node* n : g->nodes()) {
      if (n->type() == sdk::op::kCase && n->attrs().get_bool(sdk::attr::kMbatchInsertedNode, false)) return n;
    }
  }
  return nullptr;
}

// Every output descriptor of a graph and of the graphs nested under it that is not static.
size_t dynamic_values(const sdk::Graph& g) {
  size_t count = 0;
  for (const sdk::Node* n : g.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) count += n->output_desc(o).is_static() ? 0 : 1;
    for (const sdk::Graph* sub : n->subgraphs()) count += dynamic_values(*sub);
  }
  return count;
}

TEST_F(AtcTest, GearOptionErrorsCarryGeCodesAndWriteNothing) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx";
  const std::string out = " --output=" + path("o");
  expect_error(
      "--model=" + model + out + " --input_shape=x:-1,3,-1,-1 --dynamic_batch_size=1,2 --dynamic_dims=1,2,3",
      "E10009: --dynamic_batch_size, --dynamic_image_size and --dynamic_dims exclude each other");
  expect_error("--model=" + model + out + " --dynamic_batch_size=1,2", "E10004: --input_shape is required");
  expect_error("--model=" + model + out + " --input_shape=x:-1,3,-1,-1 --dynamic_dims='1,640,640;1,640'",
               "E10003: --dynamic_dims gear '1,640' has 2 values but --input_shape has 3 -1 dimensions");
  expect_error("--model=" + model + out + " --input_shape=x:-1,3,640,640 --dynamic_batch_size=4",
               "E10035: --dynamic_batch_size gives 1 gear(s); at least 2 are needed");
  // --input_format defaults to NCHW as in GE's atc, so image gears need no format; a wrong one is still
  // refused.
  expect_error("--model=" + model + out +
                   " --input_shape=x:1,3,-1,-1 --input_format=ND --dynamic_image_size='640,640;960,960'",
               "E10003: --dynamic_image_size needs --input_format=NCHW or NHWC");
  expect_error("--model=" + model + out + " --input_shape=image:-1,3,640,640 --dynamic_batch_size=1,2",
               "--input_shape names 'image', which is not an input of the model (inputs: x)");
}

TEST_F(AtcTest, DynamicImageSizeDefaultsToNchw) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx";
  Result r = atc("--model=" + model + " --output=" + path("i") +
                 " --input_shape=x:1,3,-1,-1 --dynamic_image_size='64,64;96,128'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(read_om_file(path("i.om"), &root).is_ok());
  const sdk::Node* c = find_case(*root);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs().get_string("mbatch_dynamic_type"), "DYNAMIC_IMAGE");
  ASSERT_EQ(c->subgraphs().size(), 2u);
  // H and W are dimensions 2 and 3 (NCHW): the branches' outputs are the maps at 64x64 and 96x128.
  const std::vector<int64_t> want[] = {{1, 1, 64, 64}, {1, 1, 96, 128}};
  for (size_t g = 0; g < 2; ++g) {
    for (const sdk::Node* n : c->subgraphs()[g]->nodes()) {
      if (n->type() != sdk::op::kNetOutput) continue;
      const sdk::OutPort p = n->input(0);
      EXPECT_EQ(p.node->output_desc(p.index).shape.dims(), want[g]);
    }
  }
}

TEST_F(AtcTest, DynamicDimsOnPpOcrDetGiveOneStaticBranchPerGear) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx";
  ASSERT_TRUE(fs::exists(model)) << "run scripts/fetch_models.sh";
  const std::string args =
      "--model=" + model + " --input_shape=x:-1,3,-1,-1 --dynamic_dims='1,640,640;1,960,960;4,640,640'";
  Result r = atc(args + " --output=" + path("det") + " --partition_report=" + path("r.json"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(read_om_file(path("det.om"), &root).is_ok());
  EXPECT_TRUE(root->attrs().get_bool(sdk::attr::kEnableDynamicBatch, false));
  const sdk::Node* c = find_case(*root);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs().get_int(sdk::attr::kBatchNum, 0), 3);
  EXPECT_EQ(c->attrs().get_string("mbatch_dynamic_type"), "DYNAMIC_DIMS");
  const std::vector<std::vector<int64_t>> gears = {{1, 640, 640}, {1, 960, 960}, {4, 640, 640}};
  const std::vector<sdk::Graph*> branches = c->subgraphs();
  ASSERT_EQ(branches.size(), 3u);
  for (size_t g = 0; g < 3; ++g) {
    SCOPED_TRACE(g);
    const sdk::AttrValue* pred = c->attrs().get("_pred_value_" + std::to_string(g));
    ASSERT_TRUE(pred && pred->as_ints());
    EXPECT_EQ(*pred->as_ints(), gears[g]);
    EXPECT_EQ(branches[g]->name(), "Batch_" + std::to_string(g));
    EXPECT_FALSE(branches[g]->attrs().get_bool(sdk::attr::kIsUnknownShape, true));
    EXPECT_EQ(dynamic_values(*branches[g]), 0u) << "a branch must be fully static";
    bool found = false;
    for (const sdk::Node* n : branches[g]->nodes()) {
      if (n->name() == "x_ascend_mbatch_batch_" + std::to_string(g)) {
        found = true;
        EXPECT_EQ(n->output_desc(0).shape.dims(),
                  (std::vector<int64_t>{gears[g][0], 3, gears[g][1], gears[g][2]}));
      }
    }
    EXPECT_TRUE(found);
  }
  // The root Data takes the gear with the most elements (4x3x640x640).
  EXPECT_EQ(root->find_node("x")->output_desc(0).shape.dims(), (std::vector<int64_t>{4, 3, 640, 640}));
  EXPECT_NE(slurp(path("r.json")).find("\"case_branch\": \"3\""), std::string::npos);
  // Deterministic.
  ASSERT_EQ(atc(args + " --output=" + path("again")).code, 0);
  EXPECT_EQ(slurp(path("det.om")), slurp(path("again.om")));
}

TEST_F(AtcTest, DynamicBatchSizeOnACnnGivesFourStaticBranches) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/ch_PP-OCRv4_det_infer.onnx";
  Result r = atc("--model=" + model + " --output=" + path("b") +
                 " --input_shape=x:-1,3,320,320 --dynamic_batch_size=1,4,8,16");
  ASSERT_EQ(r.code, 0) << r.err;
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(read_om_file(path("b.om"), &root).is_ok());
  const sdk::Node* c = find_case(*root);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs().get_string("mbatch_dynamic_type"), "DYNAMIC_BATCH");
  ASSERT_EQ(c->subgraphs().size(), 4u);
  const int64_t batches[] = {1, 4, 8, 16};
  for (size_t g = 0; g < 4; ++g) {
    EXPECT_EQ(dynamic_values(*c->subgraphs()[g]), 0u) << g;
    // The model's output in this branch: batch b, one channel, the full 320x320 map.
    for (const sdk::Node* n : c->subgraphs()[g]->nodes()) {
      if (n->type() != sdk::op::kNetOutput) continue;
      const sdk::OutPort p = n->input(0);
      EXPECT_EQ(p.node->output_desc(p.index).shape.dims(), (std::vector<int64_t>{batches[g], 1, 320, 320}));
    }
  }
  EXPECT_EQ(root->find_node("x")->output_desc(0).shape.dims(), (std::vector<int64_t>{16, 3, 320, 320}));
}

TEST_F(AtcTest, SileroWithDynamicDimsKeepsItsIfNodesInsideEachBranch) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/silero_vad_v5.onnx";
  Result r = atc("--model=" + model + " --output=" + path("s") +
                 " --input_shape='input:1,-1;state:2,1,128;sr:' --dynamic_dims='256;512;640'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::unique_ptr<sdk::Graph> root;
  ASSERT_TRUE(read_om_file(path("s.om"), &root).is_ok());
  const sdk::Node* c = find_case(*root);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->subgraphs().size(), 3u);
  // Every If of the model appears once per branch, its branches registered under the branch's copy.
  size_t ifs = 0;
  for (const sdk::Graph* g : root->subgraphs()) {
    if (g->parent_node() && g->parent_node()->type() == sdk::op::kIf) {
      ++ifs;
      const sdk::Graph* up = g;
      while (up->parent_node() && up->parent_node() != c) up = up->parent_node()->owner();
      EXPECT_EQ(up->parent_node(), c) << g->name() << " is not nested in a gear branch";
    }
  }
  EXPECT_EQ(ifs, 3u * 50u);
  for (size_t g = 0; g < 3; ++g) {
    const sdk::Node* input = nullptr;
    for (const sdk::Node* n : c->subgraphs()[g]->nodes()) {
      if (n->name() == "input_ascend_mbatch_batch_" + std::to_string(g)) input = n;
    }
    ASSERT_NE(input, nullptr) << g;
    const int64_t samples[] = {256, 512, 640};
    EXPECT_EQ(input->output_desc(0).shape.dims(), (std::vector<int64_t>{1, samples[g]}));
  }
}

// Silero VAD v5 takes 512 samples at 16 kHz and 256 at 8 kHz: with 1024 samples its Squeeze and LSTM shapes
// cannot work on either path (the old compiler accepted it and failed at run time, "X must be 3-D"). Shape
// inference finds every branch of the sample-rate If impossible and refuses the gear, naming the nodes.
TEST_F(AtcTest, SileroGearThatNoBranchCanRunIsRefused) {
  const std::string model = std::string(GRAPHSPLIT_MODEL_DIR) + "/silero_vad_v5.onnx";
  Result r = atc("--model=" + model + " --output=" + path("s") +
                 " --input_shape='input:1,-1;state:2,1,128;sr:' --dynamic_dims='512;1024'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(
      r.err.find("shape inference for gear 1: node 'If_0_ascend_mbatch_batch_1' (If): no branch is possible"),
      std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("s.om")));
}

}  // namespace
}  // namespace graphsplit
