// omrun: runs a compiled .om on the engine plugins.
//   omrun --model=X.om --input=a.pb,b.pb --output=DIR [--compare=DIR --rtol=1e-3 --atol=1e-7] [--loop=N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "common/atomic_file.h"
#include "common/install_paths.h"
#include "common/log.h"
#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/strings.h"
#include "import/onnx_import.h"
#include "runtime/compare.h"
#include "runtime/session.h"

namespace graphsplit::omrun {
namespace {

using sdk::Status;
namespace fs = std::filesystem;

struct Options {
  std::string model;
  std::string inputs;
  bool random_input = false;
  uint64_t seed = 0;
  std::string output;
  std::string compare;
  double rtol = 1e-3;
  double atol = 1e-7;
  int loop = 1;
  int threads = 0;
  int64_t max_tensor_bytes = 0;
  int64_t max_loop_iterations = 100'000'000;
  bool timing = false;
  bool expand_partitioned_calls = false;
  std::string pipeline;
  std::vector<std::string> plugin_paths;
  std::string log = "warning";
};

int fail(const std::string& message) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "omrun: error: %s\n", line.c_str());
  return 1;
}

Status gather_inputs(const Options& o, const Runtime& rt, std::vector<sdk::Tensor>* inputs) {
  const auto& want = rt.inputs();
  if (o.random_input) {
    for (size_t i = 0; i < want.size(); ++i) {
      sdk::TensorDesc d = want[i].desc;
      if (d.shape.is_unknown_rank())
        return Status::invalid_argument("--random_input: input '" + want[i].name +
                                        "' has unknown rank; pass --input files instead");
      for (int64_t& v : d.shape.mutable_dims())
        if (v < 0) v = 1;  // unknown dimensions become 1
      if (sdk::element_size(d.dtype) == 0)
        return Status::unsupported("--random_input: input '" + want[i].name + "' has type " +
                                   std::string(sdk::to_string(d.dtype)));
      inputs->push_back(random_tensor(d, o.seed + i));
    }
    return Status::ok();
  }
  if (o.inputs.empty() && !want.empty())
    return Status::invalid_argument(o.model + " takes " + std::to_string(want.size()) +
                                    " inputs: pass --input files or --random_input");
  std::vector<std::string> files = sdk::split(o.inputs, ',');
  std::erase(files, std::string());
  if (files.size() != want.size())
    return Status::invalid_argument("--input names " + std::to_string(files.size()) + " files, but " +
                                    o.model + " takes " + std::to_string(want.size()) + " inputs");
  for (const std::string& f : files) {
    sdk::Tensor t;
    GS_RETURN_IF_ERROR(read_tensor_proto_file(f, &t, nullptr));
    inputs->push_back(std::move(t));
  }
  return Status::ok();
}

Status expected_outputs(const std::string& dir, size_t count, std::vector<sdk::Tensor>* out) {
  for (size_t i = 0; i < count; ++i) {
    const std::string path = (fs::path(dir) / ("output_" + std::to_string(i) + ".pb")).string();
    sdk::Tensor t;
    GS_RETURN_IF_ERROR(read_tensor_proto_file(path, &t, nullptr));
    out->push_back(std::move(t));
  }
  const std::string extra = (fs::path(dir) / ("output_" + std::to_string(count) + ".pb")).string();
  if (fs::exists(extra))
    return Status::invalid_argument(dir + " holds more expected outputs than the model's " +
                                    std::to_string(count));
  return Status::ok();
}

int run(const Options& o) {
  if (o.loop < 1) return fail("--loop must be at least 1");
  if (!o.inputs.empty() && o.random_input) return fail("pass either --input or --random_input, not both");
  if (o.rtol < 0 || o.atol < 0) return fail("--rtol and --atol must not be negative");
  if (o.max_tensor_bytes < 0 || o.max_loop_iterations < 1)
    return fail("--max_tensor_bytes must not be negative and --max_loop_iterations must be at least 1");
  kernels::set_blas_threads(o.threads);
  RuntimeOptions ro;
  ro.expand_partitioned_calls = o.expand_partitioned_calls;
  ro.max_loop_iterations = o.max_loop_iterations;
  ro.max_tensor_bytes = o.max_tensor_bytes;
  ModelSession session;
  const auto t_load = std::chrono::steady_clock::now();
  Status s = open_model_session(o.model, o.pipeline.empty() ? default_pipeline_path() : o.pipeline,
                                split_search_paths(o.plugin_paths), ro, &session);
  if (!s) return fail(s.message());
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  Runtime& rt = *session.runtime;
  std::vector<sdk::Tensor> inputs, outputs;
  if (Status g = gather_inputs(o, rt, &inputs); !g) return fail(g.message());
  std::vector<sdk::Tensor> expected;
  if (!o.compare.empty()) {
    if (Status e = expected_outputs(o.compare, rt.outputs().size(), &expected); !e) return fail(e.message());
  }
  std::vector<double> times;
  for (int i = 0; i < o.loop; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status r = rt.run(inputs, &outputs);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!r) return fail(r.message());
  }
  if (!o.output.empty()) {
    std::error_code ec;
    fs::create_directories(o.output, ec);
    if (ec) return fail(o.output + ": cannot create the output folder: " + ec.message());
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string bytes;
      if (Status w = serialize_tensor_proto(outputs[i], rt.outputs()[i].name, &bytes); !w)
        return fail(w.message());
      const std::string path = (fs::path(o.output) / ("output_" + std::to_string(i) + ".pb")).string();
      if (Status w = write_file_atomically(path, bytes); !w) return fail(w.message());
    }
  }
  std::sort(times.begin(), times.end());
  double total = 0;
  for (double t : times) total += t;
  std::printf("model:   %s (loaded and compiled in %.1f ms, %zu engine segments)\n", o.model.c_str(), load_ms,
              rt.segment_stats().size());
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("output:  %s %s\n", rt.outputs()[i].name.c_str(), outputs[i].desc().to_string().c_str());
  std::printf("run:     %d iteration%s, mean %.3f ms, min %.3f ms, median %.3f ms\n", o.loop,
              o.loop == 1 ? "" : "s", total / static_cast<double>(times.size()), times.front(),
              times[times.size() / 2]);
  if (o.timing) std::fputs(rt.timing_summary().c_str(), stdout);
  if (!o.compare.empty()) {
    bool all = true;
    for (size_t i = 0; i < outputs.size(); ++i) {
      CompareResult c = compare_tensors(outputs[i], expected[i], o.rtol, o.atol);
      if (!c.equal) {
        std::fprintf(stderr, "omrun: mismatch: output %zu '%s': %s\n", i, rt.outputs()[i].name.c_str(),
                     c.detail.c_str());
        all = false;
      }
    }
    if (!all) return 1;
    std::printf("compare: %zu outputs match %s (rtol %g, atol %g)\n", outputs.size(), o.compare.c_str(),
                o.rtol, o.atol);
  }
  return 0;
}

}  // namespace
}  // namespace graphsplit::omrun

int main(int argc, char** argv) {
  using graphsplit::omrun::Options;
  Options o;
  CLI::App app{"omrun: run a graphsplit .om model on the engine plugins"};
  app.option_defaults()->always_capture_default();
  app.add_option("--model", o.model, "The compiled model (.om)")->required();
  app.add_option("--input", o.inputs,
                 "Input tensors, ONNX TensorProto .pb files, comma-separated, in input order");
  app.add_flag("--random_input", o.random_input, "Random inputs instead (unknown dimensions become 1)");
  app.add_option("--seed", o.seed, "Seed of --random_input");
  app.add_option("--output", o.output, "Folder for the outputs (output_<i>.pb)");
  app.add_option("--compare", o.compare, "Folder of expected outputs (output_<i>.pb); a mismatch exits 1");
  app.add_option("--rtol", o.rtol, "Relative tolerance of --compare");
  app.add_option("--atol", o.atol, "Absolute tolerance of --compare");
  app.add_option("--loop", o.loop, "Runs; the summary gives mean, min and median");
  app.add_option("--threads", o.threads, "BLAS threads (1 = single-threaded; 0 = the library default)");
  app.add_option(
      "--max_tensor_bytes", o.max_tensor_bytes,
      "Largest tensor a kernel may allocate; a larger one fails the run naming the node (0 = no limit)");
  app.add_option("--max_loop_iterations", o.max_loop_iterations, "Iterations one Loop node may run");
  app.add_flag("--timing", o.timing, "Time per engine segment and per engine");
  app.add_flag(
      "--expand_partitioned_calls", o.expand_partitioned_calls,
      "Flatten every PartitionedCall into its parent graph before running (results must not change)");
  app.add_option("--pipeline", o.pipeline, "Pipeline configuration naming the engines; default: atc's");
  app.add_option("--plugin_path", o.plugin_paths,
                 "Plugin folders searched first (':'-separated, repeatable)");
  app.add_option("--log", o.log, "Log level: debug, info, warning, error")
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "omrun: error: %s\n", e.what());
    return 1;
  }
  (void)graphsplit::init_logging(o.log);
  return graphsplit::omrun::run(o);
}
