// atc end to end (import, the default pipeline, writing the .om) against protobuf parsing the same file, on
// the synthetic shapes of bench_graphs.h at 100k and 1M nodes: the process as a user runs it, its wall time
// and peak resident memory (wait4). Models are generated once into $TMPDIR/graphsplit_atc_bench. Never run by
// CI. Run: build/bin/atc_bench [--benchmark_filter=...]; figures go in the README with the machine.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_graphs.h"
#include "common/process_memory.h"
#include "import/onnx_import.h"
#include "model/om_io.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace graphsplit::bench;

fs::path work_dir() {
  return fs::temp_directory_path() / "graphsplit_atc_bench";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The model file for (shape, n), written on first use.
fs::path model_file(Shape shape, int n) {
  const fs::path p = work_dir() / (std::string(kShapeNames[shape]) + "_" + std::to_string(n) + ".onnx");
  if (!fs::exists(p)) {
    fs::create_directories(work_dir());
    std::ofstream(p, std::ios::binary) << build_atc_onnx(make_dag(shape, n));
  }
  return p;
}

// Reading the file and protobuf's parse of it, the floor atc is measured against (best of three).
double parse_seconds(const fs::path& file) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    onnx::ModelProto m;
    if (!m.ParseFromString(slurp(file))) return -1;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct Run {
  int status = -1;
  double seconds = 0;
  long peak_kb = 0;
};

Run run_atc(const fs::path& model, const fs::path& out, const std::string& extra = {}) {
  const std::string atc = std::string(GRAPHSPLIT_BUILD_DIR) + "/bin/atc";
  std::vector<std::string> args = {atc, "--model=" + model.string(), "--output=" + out.string(),
                                   "--log=error"};
  if (!extra.empty()) args.push_back(extra);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  Run r;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, atc.c_str(), &actions, nullptr, argv.data(), environ) != 0) return r;
  // Peak memory from the child's own VmHWM, sampled while it runs: wait4's ru_maxrss would include this
  // process's peak (posix_spawn's child shares our memory until it execs, and Linux keeps that high-water
  // mark).
  int status = 0;
  const std::string proc = "/proc/" + std::to_string(pid) + "/status";
  for (;;) {
    std::ifstream in(proc);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("VmHWM:", 0) == 0) r.peak_kb = std::max(r.peak_kb, std::stol(line.substr(6)));
    }
    if (waitpid(pid, &status, WNOHANG) == pid) break;
    usleep(2000);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  posix_spawn_file_actions_destroy(&actions);
  return r;
}

// range(2) = 1: the chain with a dynamic batch (--input_shape "n0:-1,64"), which the dynamic-shape
// partitioner turns into one dynamic subgraph of every operator; range(0) must be the chain.
void BM_AtcEndToEnd(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const bool dynamic_batch = state.range(2) == 1;
  const fs::path model = model_file(shape, n);
  const fs::path om = work_dir() / (std::string(kShapeNames[shape]) + (dynamic_batch ? "_dynamic" : "") +
                                    "_" + std::to_string(n) + ".om");
  const double parse = parse_seconds(model);
  if (parse < 0) state.SkipWithError("the generated model does not parse");
  onnx::ModelProto m;
  m.ParseFromString(slurp(model));
  const double nodes = m.graph().node_size() + 3;  // the inputs and the NetOutput are nodes of the IR too
  Run last;
  for (auto _ : state) {
    last = run_atc(model, om, dynamic_batch ? "--input_shape=n0:-1,64" : "");
    if (last.status != 0) state.SkipWithError("atc failed (rerun it by hand to see why)");
    state.SetIterationTime(last.seconds);
  }
  state.SetLabel(std::string(kShapeNames[shape]) + (dynamic_batch ? ", dynamic batch" : ""));
  state.counters["parse_s"] = parse;
  state.counters["x_parse"] = last.seconds / parse;
  state.counters["peak_MB"] = static_cast<double>(last.peak_kb) / 1024;
  state.counters["B/node"] = static_cast<double>(last.peak_kb) * 1024 / nodes;
  state.counters["onnx_MB"] = static_cast<double>(fs::file_size(model)) / 1e6;
  if (fs::exists(om)) state.counters["om_MB"] = static_cast<double>(fs::file_size(om)) / 1e6;
}

// Lowers the high-water mark to the current resident size (Linux: "5" to clear_refs), so that the peak of
// one step can be read after it.
void reset_peak() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// The .om writer and loader alone on the imported model (before the pipeline: every node in the root graph).
// range(2) = 1: the compiled model instead, as BM_AtcEndToEnd left it (attributes on every node, subgraphs).
void BM_OmWriteAndLoad(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  std::unique_ptr<graphsplit::sdk::Graph> root;
  const fs::path om = work_dir() / (std::string(kShapeNames[shape]) + "_" + std::to_string(n) + ".om");
  if (state.range(2) == 1 && !fs::exists(om)) run_atc(model_file(shape, n), om);
  const graphsplit::sdk::Status read =
      state.range(2) == 1 ? graphsplit::read_om_file(om.string(), &root)
                          : graphsplit::import_onnx_file(model_file(shape, n).string(), {}, &root);
  if (!read.is_ok()) {
    state.SkipWithError(read.message().c_str());
    return;
  }
  double write_s = 0, load_s = 0;
  long load_peak_kb = 0;  // what the load added to the resident size at its peak, the loaded graph included
  std::string bytes;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!graphsplit::serialize_om(*root, &bytes).is_ok()) state.SkipWithError("write failed");
    reset_peak();
    const long before_kb = graphsplit::process_memory().resident_kb;
    const auto t1 = std::chrono::steady_clock::now();
    std::unique_ptr<graphsplit::sdk::Graph> loaded;
    if (!graphsplit::parse_om(bytes, "bench.om", &loaded).is_ok()) state.SkipWithError("load failed");
    const auto t2 = std::chrono::steady_clock::now();
    write_s = std::chrono::duration<double>(t1 - t0).count();
    load_s = std::chrono::duration<double>(t2 - t1).count();
    load_peak_kb = graphsplit::process_memory().peak_kb - before_kb;
    state.SetIterationTime(write_s + load_s);
    state.PauseTiming();
    loaded.reset();
    state.ResumeTiming();
  }
  state.SetLabel(std::string(kShapeNames[shape]) + (state.range(2) ? " compiled" : " imported"));
  state.counters["write_ms"] = write_s * 1e3;
  state.counters["load_ms"] = load_s * 1e3;
  state.counters["om_MB"] = static_cast<double>(bytes.size()) / 1e6;
  state.counters["load_peak_MB"] = static_cast<double>(load_peak_kb) / 1024;
}

BENCHMARK(BM_OmWriteAndLoad)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {100'000, 1'000'000}, {0, 1}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_AtcEndToEnd)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {100'000, 1'000'000}, {0}})
    ->Args({kChain, 100'000, 1})
    ->Args({kChain, 1'000'000, 1})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
