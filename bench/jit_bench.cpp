// The online mode (docs/jit.md): what a cache hit costs, what a variant's compile costs against atc's compile
// of the same model, how many variants a sweep of batch sizes compiles, and the steady-state run time against
// the same model compiled statically by atc and run by the normal runtime. Run: build/bin/jit_bench.
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <random>

#include "common/log.h"
#include "driver/compile.h"
#include "graphsplit/kernels/kernels.h"
#include "jit/jit_models.h"
#include "jit/jit_session.h"
#include "runtime/compare.h"
#include "runtime/session.h"

// Counts heap allocations, to show that a hit allocates nothing. GCC 12 takes the replaced operators for a
// mismatched pair once it inlines them into the standard allocators; they are the standard replacement.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
static std::atomic<uint64_t> g_allocations{0};
void* operator new(size_t n) {
  ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, size_t) noexcept {
  std::free(p);
}

namespace {

using namespace graphsplit;
namespace jm = graphsplit::testing::jit_models;

std::string pipeline_path() {
  return std::string(GRAPHSPLIT_BUILD_DIR) + "/share/graphsplit/pipeline.toml";
}

CompileRequest request(const std::string& model, const std::string& bytes = {}) {
  CompileRequest r;
  r.model = model;
  r.model_bytes = bytes;
  r.framework = 5;
  r.pipeline = pipeline_path();
  r.plugin_paths = {std::string(GRAPHSPLIT_BUILD_DIR) + "/lib/graphsplit/plugins"};
  return r;
}

std::unique_ptr<jit::JitSession> open_jit(const CompileRequest& r,
                                          jit::CutPolicy cut = jit::CutPolicy::kAuto) {
  jit::JitOptions o;
  o.compile = r;
  o.cut = cut;
  std::unique_ptr<jit::JitSession> s;
  sdk::Status st = jit::JitSession::open(o, &s);
  if (!st) std::fprintf(stderr, "jit_bench: %s\n", st.message().c_str());
  return s;
}

sdk::Tensor random_floats(std::vector<int64_t> dims, uint64_t seed) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape(std::move(dims));
  return random_tensor(d, seed);
}

// k inputs x_i[S_i] each through a Relu: k symbols in the first execution point's key.
std::string many_symbols(int k) {
  auto m = jm::model();
  auto* g = m.mutable_graph();
  for (int i = 0; i < k; ++i) {
    const std::string s = std::to_string(i);
    jm::typed(g->add_input(), "x" + s, jm::kFloat, {("S" + s).c_str()});
    jm::op(g, "Relu", {"x" + s}, {"y" + s});
    jm::untyped_output(g, "y" + s);
  }
  return m.SerializeAsString();
}

// Guard check and dispatch at the first execution point: build the key, probe the cache, take the variant.
void BM_GuardHit(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  auto s = open_jit(request("symbols.onnx", many_symbols(k)));
  std::vector<sdk::Tensor> in;
  for (int i = 0; i < k; ++i) in.push_back(random_floats({i + 1}, static_cast<uint64_t>(i)));
  std::vector<sdk::Tensor> out;
  if (!s || !s->run(in, &out)) {
    state.SkipWithError("the first run failed");
    return;
  }
  uint64_t hits = 0;
  const uint64_t before = g_allocations.load();
  for (auto _ : state) hits += s->probe(in);
  state.counters["allocations_per_hit"] =
      static_cast<double>(g_allocations.load() - before) / static_cast<double>(state.iterations());
  state.counters["symbols"] = k;
  if (hits != static_cast<uint64_t>(state.iterations())) state.SkipWithError("a probe missed");
}
BENCHMARK(BM_GuardHit)->Arg(1)->Arg(8)->Arg(32);

// 1,000 batch sizes through one session (auto policy): the variants each execution point compiled.
void BM_BatchSweep(benchmark::State& state) {
  std::string bytes;
  jm::nonzero_middle().SerializeToString(&bytes);
  uint64_t worst = 0, compiles = 0, points = 0;
  for (auto _ : state) {
    auto s = open_jit(request("sweep.onnx", bytes));
    std::vector<sdk::Tensor> out;
    for (int64_t n = 1; n <= 1000; ++n)
      if (!s->run({random_floats({n, 4}, static_cast<uint64_t>(n))}, &out))
        state.SkipWithError("a run failed");
    const jit::JitStats st = s->stats();
    compiles = st.compiles;
    points = st.slices.size();
    for (const auto& p : st.slices) worst = std::max<uint64_t>(worst, p.compiles);
  }
  state.counters["compiles"] = static_cast<double>(compiles);
  state.counters["execution_points"] = static_cast<double>(points);
  state.counters["max_compiles_per_point"] = static_cast<double>(worst);
}
BENCHMARK(BM_BatchSweep)->Unit(benchmark::kMillisecond)->Iterations(1);

const char* kModels[] = {"ch_ppocr_mobile_v2.0_cls_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
                         "ch_PP-OCRv4_det_infer.onnx"};
const std::vector<int64_t> kShapes[] = {{6, 3, 48, 192}, {1, 3, 48, 320}, {1, 3, 640, 640}};

std::string model_path(int i) {
  return std::string(GRAPHSPLIT_MODEL_DIR) + "/" + kModels[i];
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "x:";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s;
}

// A variant's compile (infer, slice, pipeline, runtime compile) against atc's compile with the shape fixed
// plus omrun's load of the result: the slice is the whole model here, so its share is all of it.
void BM_VariantCompileVsAtc(benchmark::State& state) {
  const int i = static_cast<int>(state.range(0));
  if (!std::filesystem::exists(model_path(i))) {
    state.SkipWithError("model missing: run scripts/fetch_models.sh");
    return;
  }
  kernels::set_blas_threads(1);
  const sdk::Tensor x = random_floats(kShapes[i], 1);
  double jit_ms = 0, atc_ms = 0;
  for (auto _ : state) {
    auto s = open_jit(request(model_path(i)));
    std::vector<sdk::Tensor> out;
    (void)s->run({x}, &out);
    jit_ms = 0;
    for (const auto& p : s->stats().slices) jit_ms += p.compile_ms;
    CompileRequest r = request(model_path(i));
    r.input_shape = shape_text(kShapes[i]);
    // The offline equivalent: atc's compile, then omrun's load (the runtime compiling the segments).
    const auto t0 = std::chrono::steady_clock::now();
    Compilation c;
    if (!compile_model(r, &c)) state.SkipWithError("atc's compile failed");
    const Pipeline* engines = c.pipeline.get();
    std::unique_ptr<Runtime> rt;
    if (!Runtime::create(
            std::move(c.root), kModels[i],
            [engines](const std::string& n) { return engines->find_engine(n); }, {}, &rt))
      state.SkipWithError("the runtime's compile failed");
    atc_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["variant_compile_ms"] = jit_ms;
  state.counters["atc_and_load_ms"] = atc_ms;
  state.counters["ratio"] = jit_ms / atc_ms;
  state.SetLabel(kModels[i]);
}
BENCHMARK(BM_VariantCompileVsAtc)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(3);

// Steady state: the online session's hit path (arg 1 = 1) against the statically compiled model on the
// normal runtime (arg 1 = 0), one BLAS thread, alternating in one process.
void BM_SteadyState(benchmark::State& state) {
  const int i = static_cast<int>(state.range(0));
  const bool online = state.range(1) == 1;
  if (!std::filesystem::exists(model_path(i))) {
    state.SkipWithError("model missing: run scripts/fetch_models.sh");
    return;
  }
  kernels::set_blas_threads(1);
  const sdk::Tensor x = random_floats(kShapes[i], 1);
  std::vector<sdk::Tensor> out;
  if (online) {
    auto s = open_jit(request(model_path(i)));
    (void)s->run({x}, &out);
    for (auto _ : state) (void)s->run({x}, &out);
  } else {
    CompileRequest r = request(model_path(i));
    r.input_shape = shape_text(kShapes[i]);
    Compilation c;
    ModelSession ms;
    if (!compile_model(r, &c) ||
        !open_graph_session(std::move(c.root), kModels[i], pipeline_path(), r.plugin_paths, {}, &ms)) {
      state.SkipWithError("atc's compile failed");
      return;
    }
    for (auto _ : state) (void)ms.runtime->run({x}, &out);
  }
  state.SetLabel(std::string(kModels[i]) + (online ? " online" : " atc static"));
}
BENCHMARK(BM_SteadyState)->ArgsProduct({{0, 1, 2}, {0, 1}})->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  (void)init_logging("error");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
