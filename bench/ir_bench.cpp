// IR scale: build, sort (each GE mode) and verify synthetic graphs of 10k..1M nodes, and the heap bytes per
// node. Run: build/bench/ir_bench  (results go in the README with the machine they came from)
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <random>

#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/ir/verify.h"

namespace {

using namespace graphsplit::sdk;

// A layered DAG shaped like a CNN: each node reads 1-2 nodes from the previous layer of `width`.
std::unique_ptr<Graph> layered(int64_t n, int width) {
  auto g = Graph::create("bench");
  std::mt19937 rng(7);
  std::vector<Node*> prev, cur;
  TensorDesc desc;
  desc.dtype = DataType::kFloat;
  desc.shape = Shape({1, 64, 56, 56});
  for (int64_t i = 0; i < n; ++i) {
    const int fan_in = prev.empty() ? 0 : 1 + static_cast<int>(rng() % 2);
    Node* node = g->add_node("n" + std::to_string(i), fan_in ? "Conv" : "Data", fan_in, 0);
    node->add_output(desc, "v" + std::to_string(i));
    for (int k = 0; k < fan_in; ++k) (void)g->add_edge({prev[rng() % prev.size()], 0}, {node, k});
    cur.push_back(node);
    if (static_cast<int>(cur.size()) == width) {
      prev.swap(cur);
      cur.clear();
    }
  }
  return g;
}

void BM_Build(benchmark::State& state) {
  const int64_t n = state.range(0);
  size_t bytes = 0;
  for (auto _ : state) {
    const size_t before = mallinfo2().uordblks;
    auto g = layered(n, 16);
    bytes = mallinfo2().uordblks - before;
    benchmark::DoNotOptimize(g.get());
  }
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes/node"] = static_cast<double>(bytes) / static_cast<double>(n);
}

void BM_Sort(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto mode = static_cast<TopoSortMode>(state.range(1));
  auto g = layered(n, 16);
  std::vector<Node*> order;
  for (auto _ : state) {
    Status s = topological_order(*g, mode, &order);
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
  }
  state.SetLabel(std::string(to_string(mode)));
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Verify(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto g = layered(n, 16);
  for (auto _ : state) {
    Status s = verify(*g);
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
  }
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Build)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Sort)->ArgsProduct({{10'000, 100'000, 1'000'000}, {0, 1, 2, 3}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Verify)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
