// Fuzz targets: each entry point takes arbitrary bytes and must return a Status, never crash, hang or
// allocate without bound. Built two ways (fuzz/CMakeLists.txt): with libFuzzer (clang, GRAPHSPLIT_FUZZ=ON,
// scripts/fuzz.sh) for long runs, and with smoke_driver.cpp into the normal test suite for a bounded run on
// every build.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "common/log.h"
#include "config/config.h"
#include "config/op_table_loader.h"
#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/gears.h"
#include "import/onnx_import.h"
#include "model/om_io.h"
#include "pipeline/pipeline.h"
#include "runtime/compare.h"
#include "runtime/runtime.h"

namespace graphsplit::fuzz {
namespace {
// Warnings about each broken input would cost more than the input itself.
const bool kQuiet = init_logging("null").is_ok();
}  // namespace

int onnx_import(const uint8_t* data, size_t size) {
  std::unique_ptr<sdk::Graph> root;
  OnnxImportOptions options;
  options.max_nodes = 100000;  // keep one input's work bounded
  (void)import_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx",
                          "/nonexistent", options, &root);
  return 0;
}

int om_load(const uint8_t* data, size_t size) {
  std::unique_ptr<sdk::Graph> root;
  std::string json;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (parse_om(bytes, "fuzz.om", &root).is_ok()) (void)graph_to_json(*root, &json);
  return 0;
}

int pipeline_toml(const uint8_t* data, size_t size) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  (void)parse_pipeline_config_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.toml",
                                   &config, &diags);
  return 0;
}

int op_table_toml(const uint8_t* data, size_t size) {
  sdk::OpSupportTable table;
  (void)parse_op_table(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.ops.toml", &table);
  return 0;
}

// atc's gear options: the bytes split at '\n' into --input_shape, --dynamic_batch_size, --dynamic_image_size,
// --dynamic_dims and --input_format.
int gear_options(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string parts[5];
  size_t k = 0;
  for (char c : text) {
    if (c == '\n' && k < 4)
      ++k;
    else
      parts[k] += c;
  }
  sdk::GearRequest request;
  if (sdk::parse_gear_options({parts[0], parts[1], parts[2], parts[3], parts[4]}, &request).is_ok() &&
      request.kind != sdk::GearKind::kNone) {
    std::vector<std::vector<std::vector<int64_t>>> per_gear;
    (void)sdk::distribute_gears(request, &per_gear);
  }
  return 0;
}

// omrun's input files: an ONNX TensorProto .pb; a tensor that parses is compared with itself, which walks
// every element its descriptor claims.
int tensor_pb(const uint8_t* data, size_t size) {
  sdk::Tensor t;
  if (parse_tensor_proto(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.pb", &t, nullptr)
          .is_ok())
    (void)compare_tensors(t, t, 1e-3, 1e-7);
  return 0;
}

// omrun on arbitrary .om bytes: load, compile on the real engine plugins, run once with random inputs.
// Tensors are capped at 64 MB and loops at 1,000 iterations so that one input's work stays bounded.
int om_run(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Pipeline> engines = [] {
    kernels::set_blas_threads(1);
    PipelineConfig config;
    std::vector<Diagnostic> diags;
    PipelineSettings settings;
    settings.plugin_paths = {GRAPHSPLIT_FUZZ_PLUGIN_DIR};
    settings.ge_overrides.emplace_back(sdk::option::kMaxTensorBytes, std::to_string(int64_t{64} << 20));
    std::unique_ptr<Pipeline> p;
    if (!parse_pipeline_config(GRAPHSPLIT_FUZZ_PIPELINE, &config, &diags).is_ok() ||
        !Pipeline::create(config, settings, &p, &diags).is_ok())
      std::abort();  // a broken build, not a finding
    return p;
  }();
  std::unique_ptr<sdk::Graph> root;
  if (!parse_om(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.om", &root).is_ok())
    return 0;
  RuntimeOptions options;
  options.max_loop_iterations = 1000;
  std::unique_ptr<Runtime> rt;
  const Pipeline* p = engines.get();
  if (!Runtime::create(
           std::move(root), "fuzz.om", [p](const std::string& n) { return p->find_engine(n); }, options, &rt)
           .is_ok())
    return 0;
  std::vector<sdk::Tensor> inputs, outputs;
  for (const RuntimeIo& io : rt->inputs()) {
    sdk::TensorDesc d = io.desc;
    if (d.shape.is_unknown_rank() || sdk::element_size(d.dtype) == 0) return 0;
    for (int64_t& v : d.shape.mutable_dims()) v = v < 0 ? 1 : v;
    const auto n = d.shape.num_elements();
    if (!n || *n > (1 << 20)) return 0;
    inputs.push_back(random_tensor(d, 7));
  }
  (void)rt->run(inputs, &outputs);
  return 0;
}

}  // namespace graphsplit::fuzz
