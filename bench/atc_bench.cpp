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

Run run_atc(const fs::path& model, const fs::path& out) {
  const std::string atc = std::string(GRAPHSPLIT_BUILD_DIR) + "/bin/atc";
  std::vector<std::string> args = {atc, "--model=" + model.string(), "--output=" + out.string(),
                                   "--log=error"};
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
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_kb = usage.ru_maxrss;
  posix_spawn_file_actions_destroy(&actions);
  return r;
}

void BM_AtcEndToEnd(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const fs::path model = model_file(shape, n);
  const fs::path om = work_dir() / (std::string(kShapeNames[shape]) + "_" + std::to_string(n) + ".om");
  const double parse = parse_seconds(model);
  if (parse < 0) state.SkipWithError("the generated model does not parse");
  onnx::ModelProto m;
  m.ParseFromString(slurp(model));
  const double nodes = m.graph().node_size() + 3;  // the inputs and the NetOutput are nodes of the IR too
  Run last;
  for (auto _ : state) {
    last = run_atc(model, om);
    if (last.status != 0) state.SkipWithError("atc failed (rerun it by hand to see why)");
    state.SetIterationTime(last.seconds);
  }
  state.SetLabel(kShapeNames[shape]);
  state.counters["parse_s"] = parse;
  state.counters["x_parse"] = last.seconds / parse;
  state.counters["peak_MB"] = static_cast<double>(last.peak_kb) / 1024;
  state.counters["B/node"] = static_cast<double>(last.peak_kb) * 1024 / nodes;
  state.counters["onnx_MB"] = static_cast<double>(fs::file_size(model)) / 1e6;
  if (fs::exists(om)) state.counters["om_MB"] = static_cast<double>(fs::file_size(om)) / 1e6;
}

BENCHMARK(BM_AtcEndToEnd)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {100'000, 1'000'000}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
