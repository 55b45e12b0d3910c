// The runtime on real networks, compiled by the default pipeline and run on the engine plugins (what omrun
// does): a ResNet-18 (generated here: the torchvision architecture, random weights, 11.7M parameters) at
// batch 4 and 224x224, and the pinned real models. Each model single-threaded (BLAS threads = 1) and with the
// BLAS default. Run: build/bin/omrun_bench (figures go in the README).
#include <benchmark/benchmark.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <random>

#include "common/log.h"
#include "config/config.h"
#include "graphsplit/kernels/kernels.h"
#include "import/onnx_import.h"
#include "runtime/compare.h"
#include "runtime/session.h"

namespace {

using namespace graphsplit;

class ResNetBuilder {
 public:
  ResNetBuilder() {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(17);
    g_ = model_.mutable_graph();
    g_->set_name("resnet18");
    auto* in = g_->add_input();
    in->set_name("x");
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {int64_t{-1}, int64_t{3}, int64_t{224}, int64_t{224}}) {
      if (d < 0)
        t->mutable_shape()->add_dim()->set_dim_param("N");
      else
        t->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }

  std::string build() {
    std::string x = conv_bn("x", 3, 64, 7, 2, 3, true);
    x = node("MaxPool", {x}, {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}});
    int64_t channels = 64;
    for (int64_t stage = 0; stage < 4; ++stage) {
      const int64_t out = 64 << stage;
      for (int block = 0; block < 2; ++block) {
        const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
        std::string y = conv_bn(x, channels, out, 3, stride, 1, true);
        y = conv_bn(y, out, out, 3, 1, 1, false);
        std::string skip = x;
        if (stride != 1 || channels != out) skip = conv_bn(x, channels, out, 1, stride, 0, false);
        x = node("Relu", {node("Add", {y, skip}, {})}, {});
        channels = out;
      }
    }
    x = node("Flatten", {node("GlobalAveragePool", {x}, {})}, {});
    x = node("Gemm", {x, weight({1000, 512}), weight({1000})}, {}, true);
    auto* out = g_->add_output();
    out->set_name(x);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    return model_.SerializeAsString();
  }

 private:
  using Ints = std::vector<int64_t>;

  std::string weight(const Ints& dims) {
    const std::string name = "w" + std::to_string(next_++);
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    std::normal_distribution<float> dist(0.0f, 0.05f);
    std::string raw(static_cast<size_t>(n) * 4, '\0');
    auto* f = reinterpret_cast<float*>(raw.data());
    for (int64_t i = 0; i < n; ++i) f[i] = dist(rng_);
    t->set_raw_data(raw);
    return name;
  }

  std::string node(const std::string& type, const std::vector<std::string>& inputs,
                   const std::vector<std::pair<std::string, Ints>>& attrs, bool trans_b = false) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(type);
    n->set_name(type + std::to_string(next_));
    for (const std::string& i : inputs) n->add_input(i);
    const std::string out = "v" + std::to_string(next_++);
    n->add_output(out);
    for (const auto& [key, values] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(key);
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : values) a->add_ints(v);
    }
    if (trans_b) {
      auto* a = n->add_attribute();
      a->set_name("transB");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    }
    return out;
  }

  std::string conv_bn(const std::string& x, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                      bool relu) {
    std::string y =
        node("Conv", {x, weight({out, in, k, k})},
             {{"kernel_shape", {k, k}}, {"strides", {stride, stride}}, {"pads", {pad, pad, pad, pad}}});
    std::string var = weight({out});
    y = node("BatchNormalization", {y, weight({out}), weight({out}), weight({out}), abs_of(var)}, {});
    return relu ? node("Relu", {y}, {}) : y;
  }

  // Variances must be positive.
  std::string abs_of(const std::string& name) {
    for (auto& t : *g_->mutable_initializer()) {
      if (t.name() != name) continue;
      auto* f = reinterpret_cast<float*>(t.mutable_raw_data()->data());
      for (size_t i = 0; i < t.raw_data().size() / 4; ++i) f[i] = std::abs(f[i]) + 0.5f;
    }
    return name;
  }

  onnx::ModelProto model_;
  onnx::GraphProto* g_ = nullptr;
  std::mt19937 rng_{42};
  int next_ = 0;
};

std::string pipeline_path() {
  return std::string(GRAPHSPLIT_BUILD_DIR) + "/share/graphsplit/pipeline.toml";
}

// Imports, compiles with the default pipeline and opens a session.
bool open_session(std::unique_ptr<sdk::Graph> root, const std::string& name, ModelSession* session) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  PipelineSettings settings;
  settings.plugin_paths = {std::string(GRAPHSPLIT_BUILD_DIR) + "/lib/graphsplit/plugins"};
  std::unique_ptr<Pipeline> pipeline;
  if (!parse_pipeline_config(pipeline_path(), &config, &diags).is_ok() ||
      !Pipeline::create(config, settings, &pipeline, &diags).is_ok() || !pipeline->run(*root).is_ok())
    return false;
  return open_graph_session(std::move(root), name, pipeline_path(), settings.plugin_paths, {}, session)
      .is_ok();
}

void run_model(benchmark::State& state, std::unique_ptr<sdk::Graph> root, const std::string& name,
               const std::vector<sdk::Tensor>& inputs) {
  kernels::set_blas_threads(static_cast<int>(state.range(0)));
  ModelSession session;
  if (!open_session(std::move(root), name, &session)) {
    state.SkipWithError("could not compile the model");
    return;
  }
  std::vector<sdk::Tensor> outputs;
  if (!session.runtime->run(inputs, &outputs).is_ok()) {  // warm-up: first touch of the arenas
    state.SkipWithError("run failed");
    return;
  }
  for (auto _ : state) {
    sdk::Status s = session.runtime->run(inputs, &outputs);
    benchmark::DoNotOptimize(outputs);
    if (!s.is_ok()) state.SkipWithError(s.message().c_str());
  }
  int64_t arena = 0;
  for (const auto& s : session.runtime->segment_stats()) arena += std::max<int64_t>(s.arena_bytes, 0);
  state.counters["segments"] = static_cast<double>(session.runtime->segment_stats().size());
  state.counters["arena_MB"] = static_cast<double>(arena) / 1e6;
}

sdk::Tensor random_input(sdk::DataType dtype, std::vector<int64_t> dims, uint64_t seed) {
  sdk::TensorDesc d;
  d.dtype = dtype;
  d.shape = sdk::Shape(std::move(dims));
  return random_tensor(d, seed);
}

void BM_ResNet18Batch4(benchmark::State& state) {
  static const std::string bytes = ResNetBuilder().build();
  std::unique_ptr<sdk::Graph> root;
  OnnxImportOptions options;
  options.input_shapes = {{"x", {4, 3, 224, 224}}};  // atc --input_shape: static, so segments get arenas
  if (!import_onnx_bytes(bytes, "resnet18", "/", options, &root).is_ok()) {
    state.SkipWithError("import failed");
    return;
  }
  run_model(state, std::move(root), "resnet18", {random_input(sdk::DataType::kFloat, {4, 3, 224, 224}, 1)});
}
BENCHMARK(BM_ResNet18Batch4)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);

// Compiled with the inputs' shapes fixed (atc --input_shape), as a deployment would.
void real_model(benchmark::State& state, const std::string& file, const std::vector<std::string>& names,
                const std::vector<sdk::Tensor>& inputs) {
  const std::string path = std::string(GRAPHSPLIT_MODEL_DIR) + "/" + file;
  OnnxImportOptions options;
  for (size_t i = 0; i < names.size(); ++i)
    options.input_shapes.push_back({names[i], inputs[i].desc().shape.dims()});
  std::unique_ptr<sdk::Graph> root;
  if (!std::filesystem::exists(path) || !import_onnx_file(path, options, &root).is_ok()) {
    state.SkipWithError("model missing: run scripts/fetch_models.sh");
    return;
  }
  run_model(state, std::move(root), file, inputs);
}

sdk::Tensor sample_rate() {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt64;
  d.shape = sdk::Shape(std::vector<int64_t>{});
  std::string b(8, '\0');
  const int64_t sr = 16000;
  std::memcpy(b.data(), &sr, 8);
  return sdk::Tensor(d, b);
}

void BM_PpOcrDet_1x3x640x640(benchmark::State& state) {
  real_model(state, "ch_PP-OCRv4_det_infer.onnx", {"x"},
             {random_input(sdk::DataType::kFloat, {1, 3, 640, 640}, 2)});
}
void BM_PpOcrRec_1x3x48x320(benchmark::State& state) {
  real_model(state, "ch_PP-OCRv4_rec_infer.onnx", {"x"},
             {random_input(sdk::DataType::kFloat, {1, 3, 48, 320}, 3)});
}
void BM_PpOcrCls_6x3x48x192(benchmark::State& state) {
  real_model(state, "ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x"},
             {random_input(sdk::DataType::kFloat, {6, 3, 48, 192}, 4)});
}
void BM_SileroVadV5_512(benchmark::State& state) {
  real_model(state, "silero_vad_v5.onnx", {"input", "state", "sr"},
             {random_input(sdk::DataType::kFloat, {1, 512}, 5),
              random_input(sdk::DataType::kFloat, {2, 1, 128}, 6), sample_rate()});
}
BENCHMARK(BM_PpOcrDet_1x3x640x640)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3);
BENCHMARK(BM_PpOcrRec_1x3x48x320)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);
BENCHMARK(BM_PpOcrCls_6x3x48x192)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);
BENCHMARK(BM_SileroVadV5_512)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

const bool kQuiet = init_logging("error").is_ok();

}  // namespace

BENCHMARK_MAIN();
