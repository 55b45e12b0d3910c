// The dynamic-shape partitioner on synthetic graphs of 10k, 100k and 1M nodes, against protobuf parsing the
// same graph as an .onnx model. Run: build/bin/partition_bench (figures go in the README with the machine).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <onnx/onnx_pb.h>

#include <random>

#include "dynamic_shape_partitioner.h"
#include "graphsplit/sdk/cluster_graph.h"
#include "graphsplit/sdk/testing/contexts.h"

namespace {

using namespace graphsplit;
using sdk::Graph;
using sdk::Node;

enum Shape { kChain = 0, kLayered = 1, kRandom = 2, kTransformer = 3 };
const char* kShapeNames[] = {"chain", "layered", "random10pct", "transformer"};

// Node k's inputs, and whether its output is dynamic. The same description builds the IR graph and the ONNX
// model.
struct Dag {
  std::vector<std::vector<int>> inputs;
  std::vector<char> dynamic;
  std::vector<const char*> type;
};

Dag make_dag(Shape shape, int n) {
  Dag d;
  d.inputs.resize(n);
  d.dynamic.assign(n, 0);
  d.type.assign(n, "Relu");
  std::mt19937 rng(11);
  for (int k = 1; k < n; ++k) {
    switch (shape) {
      case kChain:
        d.inputs[k] = {k - 1};
        break;
      case kLayered: {
        const int width = 32, layer = k / width;
        if (layer == 0) {
          d.inputs[k] = {0};
        } else {
          const int base = (layer - 1) * width;
          d.inputs[k] = {base + static_cast<int>(rng() % width), base + static_cast<int>(rng() % width)};
          d.type[k] = "Add";
        }
        break;
      }
      case kRandom: {
        // Like a DNN: most edges are short (geometric lengths), one in fifty is a long skip connection.
        auto pick = [&] {
          int back = 1;
          while (rng() % 4 != 0 && back < 64) back *= 2;
          back = 1 + static_cast<int>(rng() % back);
          if (rng() % 50 == 0) back = 1 + static_cast<int>(rng() % 1000);
          return std::max(0, k - back);
        };
        d.inputs[k] = {pick()};
        if (rng() % 2) {
          d.inputs[k].push_back(pick());
          d.type[k] = "Add";
        }
        d.dynamic[k] = rng() % 10 == 0;
        break;
      }
      case kTransformer: {
        // Blocks of 24: attention (q, k, v MatMuls, scores, softmax, context), residual, layer norm, MLP,
        // residual; every 8th block has a dynamic sequence length (a Shape-driven Reshape).
        const int block = (k - 1) / 24, i = (k - 1) % 24, start = 1 + block * 24, in = start - 1;
        if (i < 3)
          d.inputs[k] = {in};
        else if (i == 3)
          d.inputs[k] = {start, start + 1};
        else if (i == 5)
          d.inputs[k] = {k - 1, start + 2};
        else if (i == 8)
          d.inputs[k] = {k - 1, in};
        else if (i == 16)
          d.inputs[k] = {k - 1, start + 8};
        else
          d.inputs[k] = {k - 1};
        d.type[k] = i < 3 || i == 5 ? "MatMul" : i == 4 ? "Softmax" : i == 8 || i == 16 ? "Add" : "Relu";
        d.dynamic[k] = block % 8 == 0 && i == 6;
        break;
      }
    }
  }
  return d;
}

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

BENCHMARK(BM_DynamicShapePartition)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtobufParseOnnx)
    ->ArgsProduct({{kChain, kLayered, kRandom, kTransformer}, {10'000, 100'000, 1'000'000}})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
