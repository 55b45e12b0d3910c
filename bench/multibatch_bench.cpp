// multibatch.clone on a large model: N gears of a 100k-node graph, each branch cloned and re-inferred with
// its gear's shapes by graphsplit's shape inference. Reports the whole pass, the share spent inferring (all
// branches, on every core), and the heap the branches take. Run: build/bin/multibatch_bench (figures go in
// the README).
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <onnx/onnx_pb.h>

#include "graphsplit/sdk/testing/contexts.h"
#include "import/onnx_import.h"
#include "multibatch_clone.h"

namespace {

using namespace graphsplit;

// x[-1,64] -> blocks of (MatMul with a 64x64 weight, Relu, Add skip) -> output; `nodes` operators in all.
std::string build_model(int nodes) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("big");
  auto* in = g->add_input();
  in->set_name("x");
  auto* t = in->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("N");
  t->mutable_shape()->add_dim()->set_dim_value(64);
  std::string prev = "x";
  int k = 0;
  for (int block = 0; k < nodes; ++block) {
    const std::string w = "w" + std::to_string(block);
    onnx::TensorProto* init = g->add_initializer();
    init->set_name(w);
    init->set_data_type(onnx::TensorProto::FLOAT);
    init->add_dims(64);
    init->add_dims(64);
    init->set_raw_data(std::string(64 * 64 * 4, '\0'));
    auto add = [&](const std::string& type, std::vector<std::string> inputs) {
      onnx::NodeProto* n = g->add_node();
      const std::string name = "n" + std::to_string(k++);
      n->set_name(name);
      n->set_op_type(type);
      for (const auto& i : inputs) n->add_input(i);
      n->add_output(name);
      return name;
    };
    const std::string mm = add("MatMul", {prev, w});
    const std::string relu = add("Relu", {mm});
    prev = add("Add", {relu, prev});
  }
  auto* out = g->add_output();
  out->set_name(prev);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

void BM_MultiBatchClone(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int gears = static_cast<int>(state.range(1));
  const std::string bytes = build_model(nodes);
  std::string batch;
  for (int i = 1; i <= gears; ++i) batch += (i > 1 ? "," : "") + std::to_string(i);
  sdk::OptionValues ge;
  ge.set("ge.inputShape", sdk::AttrValue::String("x:-1,64"));
  ge.set("ge.dynamicBatchSize", sdk::AttrValue::String(batch));
  sdk::testing::TestPassContext ctx({}, ge);
  double infer_ms = 0;  // the pass's own shape inference of the branches (from its log)
  sdk::testing::TestPluginContext pc("clone");
  plugins::multibatch::MultiBatchClone pass(pc);
  size_t heap = 0, total_nodes = 0;
  int iterations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<sdk::Graph> root;
    OnnxImportOptions options;
    options.input_shapes.push_back({"x", {-1, 64}});
    if (!import_onnx_bytes(bytes, "big.onnx", ".", options, &root).is_ok())
      state.SkipWithError("import failed");
    ctx.messages.clear();
    const size_t before = mallinfo2().uordblks;
    state.ResumeTiming();
    bool changed = false;
    const sdk::Status s = pass.run(*root, ctx, &changed);
    state.PauseTiming();
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
    heap = mallinfo2().uordblks - before;
    for (const std::string& m : ctx.messages) {
      if (auto at = m.find(" threads: "); m.rfind("shape inference of ", 0) == 0 && at != std::string::npos)
        infer_ms = std::stod(m.substr(at + 10));
    }
    total_nodes = root->total_nodes();
    ++iterations;
    root.reset();
    state.ResumeTiming();
  }
  state.counters["gears"] = gears;
  state.counters["nodes_after"] = static_cast<double>(total_nodes);
  state.counters["infer_ms"] = infer_ms;
  state.counters["heap_MB"] = static_cast<double>(heap) / 1e6;
}

BENCHMARK(BM_MultiBatchClone)
    ->Args({10'000, 16})
    ->Args({100'000, 4})
    ->Args({100'000, 16})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
