// The dynamic-shape partitioner on synthetic graphs of 10k, 100k and 1M nodes, against protobuf parsing the
// same graph as an .onnx model. Run: build/bin/partition_bench (figures go in the README with the machine).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <onnx/onnx_pb.h>

#include <random>

#include "bench_graphs.h"
#include "common/log.h"
#include "driver/compile.h"
#include "dynamic_shape_partitioner.h"
#include "engine_partitioner.h"
#include "graphsplit/sdk/cluster_graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/testing/contexts.h"

namespace {

using namespace graphsplit;
using sdk::Graph;
using sdk::Node;
using namespace graphsplit::bench;

std::unique_ptr<Graph> build_ir(const Dag& d) {
  auto g = Graph::create("bench");
  sdk::TensorDesc stat, dyn;
  stat.dtype = dyn.dtype = sdk::DataType::kFloat;
  stat.shape = sdk::Shape({8, 64});
  dyn.shape = sdk::Shape({-1, 64});
  std::vector<Node*> nodes(d.inputs.size());
  for (size_t k = 0; k < d.inputs.size(); ++k) {
    nodes[k] = g->add_node("n" + std::to_string(k), k == 0 ? "Data" : d.type[k], d.inputs[k].size(), 0);
    nodes[k]->add_output(d.dynamic[k] ? dyn : stat);
    for (size_t j = 0; j < d.inputs[k].size(); ++j)
      (void)g->add_edge({nodes[d.inputs[k][j]], 0}, {nodes[k], static_cast<int32_t>(j)});
  }
  Node* out = g->add_node("out", sdk::op::kNetOutput, 1, 0);
  (void)g->add_edge({nodes.back(), 0}, {out, 0});
  return g;
}

std::string build_onnx(const Dag& d) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("n0");
  for (size_t k = 1; k < d.inputs.size(); ++k) {
    onnx::NodeProto* n = g->add_node();
    n->set_name("n" + std::to_string(k));
    n->set_op_type(d.type[k]);
    for (int i : d.inputs[k]) n->add_input("n" + std::to_string(i));
    n->add_output("n" + std::to_string(k));
    auto* vi = g->add_value_info();
    vi->set_name("n" + std::to_string(k));
    auto* shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_value(8);
    shape->add_dim()->set_dim_value(64);
  }
  g->add_output()->set_name("n" + std::to_string(d.inputs.size() - 1));
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

void BM_DynamicShapePartition(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const Dag dag = make_dag(shape, n);
  sdk::testing::TestPluginContext pc("dynamic_shape");
  plugins::dynamic_shape::DynamicShapePartitioner partitioner(pc);
  sdk::OptionValues ge;
  ge.set("ge.exec.static_model_ops_lower_limit", sdk::AttrValue::Int(4));
  sdk::testing::TestPassContext ctx({}, ge);
  size_t subgraphs = 0, heap = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto g = build_ir(dag);
    const size_t before = mallinfo2().uordblks;
    state.ResumeTiming();
    bool changed = false;
    sdk::Status s = partitioner.partition(*g, ctx, &changed);
    state.PauseTiming();
    heap = mallinfo2().uordblks - before;
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
    subgraphs = g->subgraphs().size();
    g.reset();
    state.ResumeTiming();
  }
  state.SetLabel(kShapeNames[shape]);
  state.counters["nodes/s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["subgraphs"] = static_cast<double>(subgraphs);
  state.counters["heap_MB"] = static_cast<double>(heap) / 1e6;
}

void BM_ProtobufParseOnnx(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const std::string bytes = build_onnx(make_dag(shape, n));
  for (auto _ : state) {
    onnx::ModelProto m;
    if (!m.ParseFromString(bytes)) state.SkipWithError("parse failed");
    benchmark::DoNotOptimize(m.graph().node_size());
  }
  state.SetLabel(kShapeNames[shape]);
  state.counters["nodes/s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MB"] = static_cast<double>(bytes.size()) / 1e6;
}

// The engine partitioner (atomic mode: split, merge back; no engine optimises) on the same graphs, placed as
// the torch.fx comparison places them: every tenth operator on AI CPU, the rest on AI Core.
void BM_EnginePartition(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  const Dag dag = make_dag(shape, n);
  sdk::testing::TestPluginContext pc("engine");
  plugins::engine::EnginePartitioner partitioner(pc);
  sdk::OptionValues own;
  own.set("modes", sdk::AttrValue::Strings({"atomic"}));
  sdk::testing::TestPassContext ctx(own, {});
  size_t subgraphs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto g = build_ir(dag);
    int k = 0;
    for (Node* node : g->nodes()) {
      const bool structural = node->type() == "Data" || node->type() == sdk::op::kNetOutput;
      node->attrs().set(sdk::attr::kOpEngineName,
                        sdk::AttrValue::String(structural      ? std::string(sdk::engine::kGeLocal)
                                               : k++ % 10 == 9 ? std::string(sdk::engine::kAiCpu)
                                                               : std::string(sdk::engine::kAiCore)));
    }
    state.ResumeTiming();
    bool changed = false;
    sdk::Status s = partitioner.partition(*g, ctx, &changed);
    state.PauseTiming();
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
    const sdk::AttrValue* summary = g->attrs().get(sdk::attr::kEnginePartitions);
    subgraphs = summary && summary->as_strings() ? summary->as_strings()->size() : 0;
    g.reset();
    state.ResumeTiming();
  }
  state.SetLabel(kShapeNames[shape]);
  state.counters["nodes/s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["engine_subgraphs"] = static_cast<double>(subgraphs);
}

// The whole default pipeline (share/graphsplit/pipeline.toml, the built plugins) on the ONNX form of the
// graph (bench_graphs.h's build_atc_onnx), imported outside the timing.
void BM_DefaultPipeline(benchmark::State& state) {
  const auto shape = static_cast<Shape>(state.range(0));
  const int n = static_cast<int>(state.range(1));
  (void)init_logging("warning");
  CompileRequest r;
  r.model = "bench.onnx";
  r.model_bytes = build_atc_onnx(make_dag(shape, n));
  r.pipeline = GRAPHSPLIT_BUILD_DIR "/share/graphsplit/pipeline.toml";
  std::unique_ptr<Pipeline> pipeline;
  std::vector<Diagnostic> diags;
  if (sdk::Status s = build_pipeline(r, r.pipeline, &pipeline, &diags); !s.is_ok()) {
    state.SkipWithError(s.message().c_str());
    return;
  }
  size_t subgraphs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Graph> root;
    if (sdk::Status s = load_model(r, &root); !s.is_ok()) state.SkipWithError(s.message().c_str());
    state.ResumeTiming();
    if (sdk::Status s = pipeline->run(*root); !s.is_ok()) state.SkipWithError(s.message().c_str());
    state.PauseTiming();
    subgraphs = root->subgraphs().size();
    root.reset();
    state.ResumeTiming();
  }
  state.SetLabel(kShapeNames[shape]);
  state.counters["nodes/s"] = benchmark::Counter(n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["subgraphs"] = static_cast<double>(subgraphs);
}

BENCHMARK(BM_DynamicShapePartition)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EnginePartition)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DefaultPipeline)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtobufParseOnnx)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
