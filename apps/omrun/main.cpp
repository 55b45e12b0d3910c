// omrun: runs a compiled .om on the engine plugins.
//   omrun --model=X.om --input=a.pb,b.pb --output=DIR [--compare=DIR --rtol=1e-3 --atol=1e-7] [--loop=N]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "common/atomic_file.h"
#include "common/install_paths.h"
#include "common/log.h"
#include "graphsplit/kernels/kernels.h"
#ifdef GRAPHSPLIT_HUGE_HEAP
#include "huge_heap.h"
#endif
#include "graphsplit/sdk/strings.h"
#include "import/onnx_import.h"
#include "jit/jit_session.h"
#include "leak_at_exit.h"
#include "model/om_io.h"
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
  int warmup = 0;
  int threads = 0;
  int64_t max_tensor_bytes = 0;
  int64_t max_loop_iterations = 100'000'000;
  bool timing = false;
  bool expand_partitioned_calls = false;
  std::string concurrent = "auto";
  std::string pipeline;
  std::vector<std::string> plugin_paths;
  std::string log = "warning";
  // The online mode.
  bool jit = false;
  size_t jit_cache = 16;
  int64_t jit_cache_bytes = int64_t{1} << 32;
  int jit_dynamic_after = 2;
  std::string jit_cut = "auto";
  std::string jit_report;
  std::string input_list;
  std::string input_shape;
  std::string profile;      // Chrome trace-event JSON of the runs
  std::optional<int> gear;  // --random_input on a model with gears: which gear's shapes (default 0)
};

int fail(const std::string& message) {
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "omrun: error: %s\n", line.c_str());
  return 1;
}

// A value file read as the kind the model declares (TensorProto, SequenceProto or OptionalProto). ONNX up to
// 1.13 wrote bfloat16 test data as uint16 bits: such a tensor is taken as bfloat16 where the model wants it.
Status read_value(const std::string& path, const sdk::TensorDesc& want, sdk::Tensor* out) {
  GS_RETURN_IF_ERROR(read_value_proto_file(path, want.kind, out, nullptr));
  if (want.dtype == sdk::DataType::kBFloat16 && !out->is_container() &&
      out->desc().dtype == sdk::DataType::kUint16) {
    sdk::TensorDesc d = out->desc();
    d.dtype = sdk::DataType::kBFloat16;
    *out = sdk::Tensor(d, std::string(out->bytes()));
  }
  return Status::ok();
}

Status read_inputs(const Options& o, const std::string& list, const std::vector<RuntimeIo>& want,
                   std::vector<sdk::Tensor>* inputs) {
  std::vector<std::string> files = sdk::split(list, ',');
  std::erase(files, std::string());
  if (files.size() != want.size())
    return Status::invalid_argument("--input names " + std::to_string(files.size()) + " files, but " +
                                    o.model + " takes " + std::to_string(want.size()) + " inputs");
  for (size_t i = 0; i < files.size(); ++i) {
    sdk::Tensor t;
    GS_RETURN_IF_ERROR(read_value(files[i], want[i].desc, &t));
    inputs->push_back(std::move(t));
  }
  return Status::ok();
}

using GearDims = std::vector<std::vector<std::vector<int64_t>>>;

// The bytes a random input of these dims takes, refused past what this run may allocate (--max_tensor_bytes,
// or 16 GiB) or when the product does not fit in 64 bits.
Status random_input_bytes(const Options& o, const RuntimeIo& in, const sdk::TensorDesc& d) {
  const int64_t limit = o.max_tensor_bytes > 0 ? o.max_tensor_bytes : int64_t{1} << 34;
  int64_t bytes = sdk::element_size(d.dtype);
  for (int64_t v : d.shape.dims()) {
    if (v != 0 && bytes > limit / v)
      return Status::resource_exhausted("--random_input: input '" + in.name + "' " + d.to_string() +
                                        " would take more than " + std::to_string(limit) +
                                        " bytes; pass --input files, or set --input_shape at compile time");
    bytes *= v;
  }
  return Status::ok();
}

Status random_inputs(const Options& o, const std::vector<RuntimeIo>& want, const GearDims& gears,
                     std::vector<sdk::Tensor>* inputs) {
  if (o.gear && gears.empty())
    return Status::invalid_argument("--gear=" + std::to_string(*o.gear) + ": " + o.model +
                                    " was not compiled with gears");
  const int gear_arg = o.gear.value_or(0);
  if (!gears.empty() && (gear_arg < 0 || static_cast<size_t>(gear_arg) >= gears.size()))
    return Status::invalid_argument("--gear=" + std::to_string(gear_arg) + ": " + o.model + " has " +
                                    std::to_string(gears.size()) + " gears (0 to " +
                                    std::to_string(gears.size() - 1) + ")");
  for (size_t i = 0; i < want.size(); ++i) {
    sdk::TensorDesc d = want[i].desc;
    if (d.kind != sdk::ValueKind::kTensor)
      return Status::unsupported("--random_input: input '" + want[i].name + "' is a " +
                                 std::string(sdk::to_string(d.kind)) + "; pass --input files instead");
    if (d.shape.is_unknown_rank())
      return Status::invalid_argument("--random_input: input '" + want[i].name +
                                      "' has unknown rank; pass --input files instead");
    if (!gears.empty()) d.shape = sdk::Shape(gears[static_cast<size_t>(gear_arg)][i]);
    for (int64_t& v : d.shape.mutable_dims())
      if (v < 0) v = 1;  // unknown dimensions become 1
    if (sdk::element_size(d.dtype) == 0)
      return Status::unsupported("--random_input: input '" + want[i].name + "' has type " +
                                 std::string(sdk::to_string(d.dtype)));
    GS_RETURN_IF_ERROR(random_input_bytes(o, want[i], d));
    try {
      inputs->push_back(random_tensor(d, o.seed + i));
    } catch (const std::bad_alloc&) {
      return Status::resource_exhausted("--random_input: input '" + want[i].name + "' " + d.to_string() +
                                        " does not fit in memory");
    }
  }
  return Status::ok();
}

Status gather_inputs(const Options& o, const std::vector<RuntimeIo>& want, std::vector<sdk::Tensor>* inputs,
                     const GearDims& gears = {}) {
  if (o.gear && !o.random_input) return Status::invalid_argument("--gear applies to --random_input");
  if (o.random_input) return random_inputs(o, want, gears, inputs);
  if (o.inputs.empty() && !want.empty())
    return Status::invalid_argument(o.model + " takes " + std::to_string(want.size()) +
                                    " inputs: pass --input files or --random_input");
  return read_inputs(o, o.inputs, want, inputs);
}

Status expected_outputs(const std::string& dir, const std::vector<RuntimeIo>& want,
                        std::vector<sdk::Tensor>* out) {
  const size_t count = want.size();
  for (size_t i = 0; i < count; ++i) {
    const std::string path = (fs::path(dir) / ("output_" + std::to_string(i) + ".pb")).string();
    sdk::Tensor t;
    GS_RETURN_IF_ERROR(read_value(path, want[i].desc, &t));
    out->push_back(std::move(t));
  }
  const std::string extra = (fs::path(dir) / ("output_" + std::to_string(count) + ".pb")).string();
  if (fs::exists(extra))
    return Status::invalid_argument(dir + " holds more expected outputs than the model's " +
                                    std::to_string(count));
  return Status::ok();
}

Status check_options(const Options& o) {
  if (o.loop < 1) return Status::invalid_argument("--loop must be at least 1");
  if (o.warmup < 0) return Status::invalid_argument("--warmup must not be negative");
  if (o.warmup > 0 && o.jit) return Status::invalid_argument("--warmup is for compiled models, not --jit");
  if (!o.inputs.empty() && o.random_input)
    return Status::invalid_argument("pass either --input or --random_input, not both");
  if (o.rtol < 0 || o.atol < 0) return Status::invalid_argument("--rtol and --atol must not be negative");
  if (o.max_tensor_bytes < 0 || o.max_loop_iterations < 1)
    return Status::invalid_argument(
        "--max_tensor_bytes must not be negative and --max_loop_iterations must be at least 1");
  const std::pair<const char*, const std::string*> jit_only[] = {
      {"--input_list", &o.input_list}, {"--jit_report", &o.jit_report}, {"--input_shape", &o.input_shape}};
  for (const auto& [name, value] : jit_only)
    if (!o.jit && !value->empty()) return Status::invalid_argument(std::string(name) + " needs --jit");
  if (!o.profile.empty() && o.jit)
    return Status::invalid_argument("--profile traces the offline runtime; it cannot be used with --jit");
  if (!o.profile.empty()) {
    const std::filesystem::path dir = std::filesystem::path(o.profile).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      return Status::invalid_argument("--profile=" + o.profile + ": folder " + dir.string() +
                                      " does not exist");
  }
  if (!o.input_list.empty() && (!o.inputs.empty() || o.random_input))
    return Status::invalid_argument("pass one of --input, --random_input and --input_list");
  return Status::ok();
}

RuntimeOptions runtime_options(const Options& o) {
  RuntimeOptions ro;
  ro.expand_partitioned_calls = o.expand_partitioned_calls;
  ro.max_loop_iterations = o.max_loop_iterations;
  ro.max_tensor_bytes = o.max_tensor_bytes;
  (void)parse_concurrency(o.concurrent, &ro.concurrency);  // the option's validator has refused anything else
  return ro;
}

Status write_outputs(const Options& o, const std::vector<RuntimeIo>& names,
                     const std::vector<sdk::Tensor>& outputs) {
  if (o.output.empty()) return Status::ok();
  std::error_code ec;
  fs::create_directories(o.output, ec);
  if (ec) return Status::invalid_argument(o.output + ": cannot create the output folder: " + ec.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string bytes;
    GS_RETURN_IF_ERROR(serialize_value_proto(outputs[i], names[i].name, &bytes));
    const std::string path = (fs::path(o.output) / ("output_" + std::to_string(i) + ".pb")).string();
    GS_RETURN_IF_ERROR(write_file_atomically(path, bytes));
  }
  return Status::ok();
}

// Prints the mismatches; the exit code.
int compare_outputs(const Options& o, const std::vector<RuntimeIo>& names,
                    const std::vector<sdk::Tensor>& outputs, const std::vector<sdk::Tensor>& expected) {
  bool all = true;
  for (size_t i = 0; i < outputs.size(); ++i) {
    CompareResult c = compare_tensors(outputs[i], expected[i], o.rtol, o.atol);
    if (!c.equal) {
      std::fprintf(stderr, "omrun: mismatch: output %zu '%s': %s\n", i, names[i].name.c_str(),
                   c.detail.c_str());
      all = false;
    }
  }
  if (!all) return 1;
  std::printf("compare: %zu outputs match %s (rtol %g, atol %g)\n", outputs.size(), o.compare.c_str(), o.rtol,
              o.atol);
  return 0;
}

void print_run_summary(std::vector<double> times, const std::vector<RuntimeIo>& names,
                       const std::vector<sdk::Tensor>& outputs) {
  std::sort(times.begin(), times.end());
  double total = 0;
  for (double t : times) total += t;
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("output:  %s %s\n", names[i].name.c_str(), outputs[i].desc().to_string().c_str());
  std::printf("run:     %zu iteration%s, mean %.3f ms, min %.3f ms, median %.3f ms\n", times.size(),
              times.size() == 1 ? "" : "s", total / static_cast<double>(times.size()), times.front(),
              times[times.size() / 2]);
}

int run(const Options& o) {
  kernels::set_blas_threads(o.threads);
  ModelSession session;
  const auto t_load = std::chrono::steady_clock::now();
  Status s = open_model_session(o.model, o.pipeline.empty() ? default_pipeline_path() : o.pipeline,
                                split_search_paths(o.plugin_paths), runtime_options(o), &session);
  if (!s) return fail(s.message());
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  Runtime& rt = *session.runtime;
  std::vector<sdk::Tensor> inputs, outputs;
  GearDims gears;
  if (Status g = rt.gear_input_dims(&gears); !g) return fail(g.message());
  if (Status g = gather_inputs(o, rt.inputs(), &inputs, gears); !g) return fail(g.message());
  std::vector<sdk::Tensor> expected;
  if (!o.compare.empty()) {
    if (Status e = expected_outputs(o.compare, rt.outputs(), &expected); !e) return fail(e.message());
  }
  // Untimed runs first: caches, page faults and the libraries' thread start-up stay out of the figures.
  for (int i = 0; i < o.warmup; ++i) {
    if (Status r = rt.run(inputs, &outputs); !r) return fail(r.message());
  }
  rt.reset_timing();
  std::vector<double> times;
  TraceSink trace;
  if (!o.profile.empty()) rt.set_trace(&trace);
  for (int i = 0; i < o.loop; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status r = rt.run(inputs, &outputs);
    const auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    if (!r) return fail(r.message());
    if (!o.profile.empty()) trace.add_run(i + 1, t0, t1);
  }
  rt.set_trace(nullptr);
  if (!o.profile.empty()) {
    if (Status w = write_file_atomically(o.profile, rt.trace_json(trace, o.model)); !w)
      return fail(w.message());
  }
  if (Status w = write_outputs(o, rt.outputs(), outputs); !w) {
    if (!o.profile.empty()) std::filesystem::remove(o.profile);
    return fail(w.message());
  }
  std::printf("model:   %s (loaded and compiled in %.1f ms, %zu engine segments)\n", o.model.c_str(), load_ms,
              rt.segment_stats().size());
  print_run_summary(times, rt.outputs(), outputs);
  if (o.timing) std::fputs(rt.timing_summary().c_str(), stdout);
  const int rc = o.compare.empty() ? 0 : compare_outputs(o, rt.outputs(), outputs, expected);
  apps::leak_at_exit(std::move(session));
  return rc;
}

// The .om starts with its magic as protobuf field 1 (framework/model/om_io.cpp); an ONNX model with its IR
// version (field 1 as a varint).
bool is_om_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  char head[6] = {};
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return n == sizeof head && head[0] == '\n' && head[1] == 4 && std::string_view(head + 2, 4) == kOmMagic;
}

Status jit_options(const Options& o, jit::JitOptions* j) {
  if (o.jit_cut == "auto")
    j->cut = jit::CutPolicy::kAuto;
  else if (o.jit_cut == "data")
    j->cut = jit::CutPolicy::kData;
  else if (o.jit_cut == "never")
    j->cut = jit::CutPolicy::kNever;
  else
    return Status::invalid_argument("--jit_cut must be auto, data or never, got '" + o.jit_cut + "'");
  j->compile.model = o.model;
  j->compile.pipeline = o.pipeline;
  j->compile.plugin_paths = o.plugin_paths;
  j->compile.input_shape = o.input_shape;
  j->compile.framework = 5;  // an ONNX model whatever its name, unless it is an .om
  j->om = is_om_file(o.model);
  if (j->om && !o.input_shape.empty())
    return Status::invalid_argument("--input_shape applies to an .onnx model; " + o.model + " is an .om");
  j->runtime = runtime_options(o);
  j->cache_per_slice = o.jit_cache;
  j->cache_bytes = o.jit_cache_bytes;
  j->dynamic_after = o.jit_dynamic_after;
  return Status::ok();
}

// --input_list: one input set per line (comma-separated .pb files); blank lines and '#' comments skipped.
Status input_sets(const Options& o, const std::vector<RuntimeIo>& want,
                  std::vector<std::vector<sdk::Tensor>>* sets) {
  if (o.input_list.empty()) {
    sets->emplace_back();
    return gather_inputs(o, want, &sets->back());
  }
  std::string text;
  GS_RETURN_IF_ERROR(read_file(o.input_list, &text));
  size_t line_no = 0;
  for (const std::string& raw : sdk::split(text, '\n')) {
    ++line_no;
    std::string line = raw;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    sets->emplace_back();
    Status s = read_inputs(o, line, want, &sets->back());
    if (!s) return {s.code(), o.input_list + ":" + std::to_string(line_no) + ": " + s.message()};
  }
  if (sets->empty()) return Status::invalid_argument(o.input_list + ": holds no input set");
  return Status::ok();
}

int run_jit(const Options& o) {
  kernels::set_blas_threads(o.threads);
  jit::JitOptions jo;
  if (Status s = jit_options(o, &jo); !s) return fail(s.message());
  std::unique_ptr<jit::JitSession> session;
  const auto t_load = std::chrono::steady_clock::now();
  if (Status s = jit::JitSession::open(jo, &session); !s) return fail(s.message());
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  std::vector<std::vector<sdk::Tensor>> sets;
  if (Status g = input_sets(o, session->inputs(), &sets); !g) return fail(g.message());
  std::vector<sdk::Tensor> expected, outputs;
  if (!o.compare.empty()) {
    if (Status e = expected_outputs(o.compare, session->outputs(), &expected); !e) return fail(e.message());
  }
  std::vector<double> times;
  for (int i = 0; i < o.loop; ++i) {
    for (const auto& inputs : sets) {
      const auto t0 = std::chrono::steady_clock::now();
      Status r = session->run(inputs, &outputs);
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (!r) return fail(r.message());
    }
  }
  if (Status w = write_outputs(o, session->outputs(), outputs); !w) return fail(w.message());
  if (!o.jit_report.empty()) {
    if (Status w = write_file_atomically(o.jit_report, session->report_json(true)); !w)
      return fail(w.message());
  }
  const jit::JitStats st = session->stats();
  std::printf(
      "model:   %s (online, opened in %.1f ms: %zu execution points, %llu compiles, %llu cache hits)\n",
      o.model.c_str(), load_ms, st.slices.size(), static_cast<unsigned long long>(st.compiles),
      static_cast<unsigned long long>(st.cache_hits));
  print_run_summary(times, session->outputs(), outputs);
  if (o.timing) {
    std::printf("%-6s %-7s %8s %9s %6s %6s %12s %10s\n", "slice", "parent", "nodes", "compiles", "hits",
                "runs", "compile ms", "run ms");
    for (const jit::JitSliceStats& s : st.slices)
      std::printf("%-6d %-7d %8zu %9llu %6llu %6llu %12.1f %10.3f\n", s.id, s.parent, s.nodes,
                  static_cast<unsigned long long>(s.compiles), static_cast<unsigned long long>(s.hits),
                  static_cast<unsigned long long>(s.runs), s.compile_ms, s.run_ms);
  }
  const int rc = o.compare.empty() ? 0 : compare_outputs(o, session->outputs(), outputs, expected);
  apps::leak_at_exit(std::move(session));
  return rc;
}

}  // namespace
}  // namespace graphsplit::omrun

int main(int argc, char** argv) {
#ifdef GRAPHSPLIT_HUGE_HEAP
  const graphsplit::apps::HugeHeapChoice heap = graphsplit::apps::use_huge_pages_for_heap();
#endif
  using graphsplit::omrun::Options;
  Options o;
  CLI::App app{"omrun: run a graphsplit .om model on the engine plugins"};
  app.option_defaults()->always_capture_default();
  app.add_option("--model", o.model, "The compiled model (.om); with --jit also an .onnx")->required();
  app.add_option("--input", o.inputs,
                 "Input tensors, ONNX TensorProto .pb files, comma-separated, in input order");
  app.add_flag("--random_input", o.random_input, "Random inputs instead (unknown dimensions become 1)");
  app.add_option("--seed", o.seed, "Seed of --random_input");
  app.add_option("--gear", o.gear,
                 "With --random_input on a model compiled with gears: the gear whose shapes the inputs take "
                 "(default 0, the first)");
  app.add_option("--output", o.output, "Folder for the outputs (output_<i>.pb)");
  app.add_option("--compare", o.compare, "Folder of expected outputs (output_<i>.pb); a mismatch exits 1");
  app.add_option("--rtol", o.rtol, "Relative tolerance of --compare");
  app.add_option("--atol", o.atol, "Absolute tolerance of --compare");
  app.add_option("--loop", o.loop, "Runs; the summary gives mean, min and median");
  app.add_option("--warmup", o.warmup, "Untimed runs before the --loop runs (not with --jit)");
  app.add_option(
      "--threads", o.threads,
      "Thread budget of the kernels and of independent segments run at once (1 = single-threaded; 0 = "
      "every processor)");
  app.add_option(
         "--concurrent", o.concurrent,
         "Independent engine segments and control-flow steps at once: auto (time both ways on the first "
         "runs, keep the faster), always, never. Results do not change")
      ->check([](const std::string& v) {
        graphsplit::RuntimeOptions::Concurrency c;
        const graphsplit::sdk::Status s = graphsplit::parse_concurrency(v, &c);
        return s.is_ok() ? std::string() : s.message();
      });
  app.add_option(
      "--max_tensor_bytes", o.max_tensor_bytes,
      "Largest tensor a kernel may allocate; a larger one fails the run naming the node (0 = no limit)");
  app.add_option("--max_loop_iterations", o.max_loop_iterations, "Iterations one Loop node may run");
  app.add_flag("--timing", o.timing, "Time per engine segment and per engine");
  app.add_option("--profile", o.profile,
                 "Write the runs as Chrome trace-event JSON (Perfetto, chrome://tracing): one event per run, "
                 "engine segment and control-flow step");
  app.add_flag(
      "--expand_partitioned_calls", o.expand_partitioned_calls,
      "Flatten every PartitionedCall into its parent graph before running (results must not change)");
  app.add_option("--pipeline", o.pipeline, "Pipeline configuration naming the engines; default: atc's");
  app.add_option("--plugin_path", o.plugin_paths,
                 "Plugin folders searched first (':'-separated, repeatable)");
  app.add_flag(
      "--jit", o.jit,
      "Online mode: compile the model (.onnx, or a gear-free .om) slice by slice as shapes become known");
  app.add_option("--input_shape", o.input_shape, "--jit on an .onnx: atc's --input_shape");
  app.add_option("--input_list", o.input_list,
                 "--jit: a file of input sets, one per line (comma-separated .pb files), run in order");
  app.add_option("--jit_cache", o.jit_cache, "--jit: compiled variants kept per execution point")
      ->check(CLI::PositiveNumber);
  app.add_option("--jit_cache_bytes", o.jit_cache_bytes, "--jit: bytes all compiled variants may hold");
  app.add_option(
      "--jit_dynamic_after", o.jit_dynamic_after,
      "--jit: a cut whose sizes took more values than this is compiled with dynamic segments instead");
  app.add_option("--jit_cut", o.jit_cut,
                 "--jit: where to cut: auto (adaptive), data (after every "
                 "data-dependent node), never (one slice, dynamic segments)");
  app.add_option("--jit_report", o.jit_report, "--jit: write the online report (JSON) here");
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
#ifdef GRAPHSPLIT_HUGE_HEAP
  graphsplit::log_debug(heap.log_line());
#endif
  if (graphsplit::sdk::Status s = graphsplit::omrun::check_options(o); !s)
    return graphsplit::omrun::fail(s.message());
  if (!o.jit && !graphsplit::omrun::is_om_file(o.model) &&
      std::filesystem::path(o.model).extension() == ".onnx")
    return graphsplit::omrun::fail(o.model +
                                   " is an ONNX model: compile it with atc, or run it online with --jit");
  return o.jit ? graphsplit::omrun::run_jit(o) : graphsplit::omrun::run(o);
}
