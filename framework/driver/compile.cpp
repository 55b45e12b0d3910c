#include "driver/compile.h"

#include <chrono>
#include <filesystem>

#include "common/install_paths.h"
#include "common/process_memory.h"
#include "graphsplit/sdk/gears.h"
#include "graphsplit/sdk/strings.h"
#include "model/om_io.h"
#include "report/partition_html.h"
#include "report/partition_report.h"
#include "report/placement_report.h"

namespace graphsplit {

using sdk::Status;
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status check_framework(const CompileRequest& r) {
  if (r.framework) {
    if (*r.framework != 5) {
      return Status::unsupported("--framework=" + std::to_string(*r.framework) +
                                 " is not supported; graphsplit reads ONNX models (--framework=5)");
    }
    return Status::ok();
  }
  if (r.model_bytes.empty() && !ends_with(r.model, ".onnx")) {
    return Status::invalid_argument(
        r.model + ": cannot tell the model's framework from its name; pass --framework=5 for ONNX");
  }
  return Status::ok();
}

// GE's V rules on the gear options, before any file is read; with gears, the options reach the multi-batch
// pass as GE options.
Status gear_options(const CompileRequest& r, std::vector<std::pair<std::string, std::string>>* ge) {
  // GE's atc defaults an empty --input_format before any check (CheckInputFormat: NHWC for TensorFlow, NCHW
  // for every other framework); graphsplit reads ONNX only, so NCHW.
  const std::string format = r.input_format.empty() ? std::string("NCHW") : r.input_format;
  sdk::GearOptionText text{r.input_shape, r.dynamic_batch_size, r.dynamic_image_size, r.dynamic_dims, format};
  sdk::GearRequest request;
  GS_RETURN_IF_ERROR(sdk::parse_gear_options(text, &request));
  if (request.kind == sdk::GearKind::kNone) return Status::ok();
  ge->emplace_back("ge.inputShape", r.input_shape);
  if (!r.dynamic_batch_size.empty()) ge->emplace_back("ge.dynamicBatchSize", r.dynamic_batch_size);
  if (!r.dynamic_image_size.empty()) ge->emplace_back("ge.dynamicImageSize", r.dynamic_image_size);
  if (!r.dynamic_dims.empty()) ge->emplace_back("ge.dynamicDims", r.dynamic_dims);
  ge->emplace_back("ge.inputFormat", format);
  return Status::ok();
}

}  // namespace

Status parse_ge_options(const std::vector<std::string>& values,
                        std::vector<std::pair<std::string, std::string>>* out) {
  for (const std::string& value : values) {
    for (const std::string& item : sdk::split(value, ';')) {
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        return Status::invalid_argument("--options: '" + item +
                                        "' must be key=value (e.g. ge.topoSortingMode=3)");
      }
      out->emplace_back(item.substr(0, eq), item.substr(eq + 1));
    }
  }
  return Status::ok();
}

Status parse_input_shape(const std::string& text, std::vector<InputShapeOverride>* out) {
  // GE's --input_shape rules and error codes are the SDK's gear parser's (the multi-batch pass reads the same
  // text): one parser, so a model loaded without a compile refuses what a compile refuses.
  sdk::GearOptionText options;
  options.input_shape = text;
  sdk::GearRequest request;
  GS_RETURN_IF_ERROR(sdk::parse_gear_options(options, &request));
  out->clear();
  for (sdk::GearInput& in : request.inputs) out->push_back({std::move(in.name), std::move(in.dims)});
  return Status::ok();
}

std::string pipeline_path(const CompileRequest& r) {
  return r.pipeline.empty() ? default_pipeline_path() : r.pipeline;
}

std::vector<std::string> plugin_search_paths(const CompileRequest& r) {
  return split_search_paths(r.plugin_paths);
}

Status build_pipeline(const CompileRequest& r, const std::string& path, std::unique_ptr<Pipeline>* out,
                      std::vector<Diagnostic>* diags) {
  PipelineConfig config;
  GS_RETURN_IF_ERROR(parse_pipeline_config(path, &config, diags));
  return build_pipeline(r, config, out, diags);
}

Status build_pipeline_from_text(const CompileRequest& r, std::string_view text, const std::string& name,
                                std::unique_ptr<Pipeline>* out, std::vector<Diagnostic>* diags) {
  PipelineConfig config;
  GS_RETURN_IF_ERROR(parse_pipeline_config_text(text, name, &config, diags));
  return build_pipeline(r, config, out, diags);
}

Status build_pipeline(const CompileRequest& r, const PipelineConfig& config, std::unique_ptr<Pipeline>* out,
                      std::vector<Diagnostic>* diags) {
  PipelineSettings settings;
  settings.plugin_paths = plugin_search_paths(r);
  settings.builtin_paths = builtin_plugin_paths();
  GS_RETURN_IF_ERROR(gear_options(r, &settings.ge_overrides));
  GS_RETURN_IF_ERROR(parse_ge_options(r.ge_options, &settings.ge_overrides));
  if (!r.model.empty() && r.model_bytes.empty()) {
    // PassContext::infer_value_shapes for plugins that ask: the model is parsed once, on first use.
    auto inferencer = std::make_shared<std::unique_ptr<ShapeInferencer>>();
    settings.infer_shapes = [model = r.model, inferencer](const sdk::InputDims& inputs, sdk::ValueDescs* o) {
      if (!*inferencer) GS_RETURN_IF_ERROR(ShapeInferencer::open(model, inferencer.get()));
      std::vector<InputShapeOverride> shapes;
      for (const auto& [name, dims] : inputs) shapes.push_back({name, dims});
      return (*inferencer)->infer(shapes, o);
    };
  }
  settings.verify_each = r.verify_each;
#ifndef NDEBUG
  if (!settings.verify_each) settings.verify_each = true;
#endif
  if (r.timing) settings.timing = true;
  settings.entry_time_limit_s = r.entry_timeout;
  settings.on_time_limit = r.on_time_limit;
  settings.after_entry = r.after_entry;
  settings.before_entry = r.on_step;
  settings.keep_decisions = r.keep_decisions;
  if (!r.dump_graph.empty()) settings.dump_graph = r.dump_graph;
  return Pipeline::create(config, settings, out, diags);
}

Status load_model(const CompileRequest& r, std::unique_ptr<sdk::Graph>* root, bool infer_shapes) {
  GS_RETURN_IF_ERROR(check_framework(r));
  OnnxImportOptions import;
  import.infer_shapes = infer_shapes;
  import.max_nodes = r.max_nodes;
  import.max_nesting_depth = r.max_nesting_depth;
  if (!r.input_shape.empty()) GS_RETURN_IF_ERROR(parse_input_shape(r.input_shape, &import.input_shapes));
  if (r.model_bytes.empty()) return import_onnx_file(r.model, import, root);
  // External data of an in-memory model is looked up beside the named file, if any (else the working folder).
  const std::string base = r.model.empty() ? std::string(".") : fs::path(r.model).parent_path().string();
  return import_onnx_bytes(r.model_bytes, r.model.empty() ? std::string("<bytes>") : r.model,
                           base.empty() ? std::string(".") : base, import, root);
}

Status compile_model(const CompileRequest& r, Compilation* out) {
  std::vector<Diagnostic> diags;
  using Clock = std::chrono::steady_clock;
  Clock::time_point began = Clock::now();
  // Reports the step to come and returns how long the one before took.
  auto step = [&](const char* what) {
    if (what && r.on_step) r.on_step(what, 0, 0);
    const Clock::time_point now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - began).count();
    began = now;
    return ms;
  };
  // The import would begin by building libonnx's schemas (about 32M instructions): built meanwhile instead.
  const std::jthread schemas = warm_up_onnx_schemas();
  step("loading plugins");
  GS_RETURN_IF_ERROR(build_pipeline(r, pipeline_path(r), &out->pipeline, &diags));
  out->plugins_ms = step("reading the model");
  // A pipeline that starts by inferring shapes (the default one) would repeat the importer's inference: on a
  // 1M-node graph that is a tenth of the compile.
  GS_RETURN_IF_ERROR(load_model(r, &out->root, !out->pipeline->begins_with_shape_inference()));
  out->import_ms = step(nullptr);
  if (out->pipeline->timing_enabled()) out->import_resident_kb = process_memory().resident_kb;
  out->model = r.model_bytes.empty() || !r.model.empty() ? r.model : std::string("<bytes>");
  Status run = out->pipeline->run(*out->root);
  out->pipeline_ms = step(nullptr);
  if (!run) return {run.code(), out->model + ": " + run.message()};
  return Status::ok();
}

Status Compilation::write_om(const std::string& path, size_t* size) const {
  return write_om_file(*root, path, size);
}

namespace {
// A report without the decisions would be silently incomplete.
Status need_decisions(const Pipeline& p) {
  return p.decisions_kept() ? Status::ok()
                            : Status::failed_precondition(
                                  "the compile did not keep its decisions (CompileRequest::keep_decisions)");
}
}  // namespace

Status Compilation::partition_report(std::string* json) const {
  GS_RETURN_IF_ERROR(need_decisions(*pipeline));
  return partition_report_json(*root, model, pipeline->decisions(), json);
}

Status Compilation::partition_report_html(std::string* html) const {
  GS_RETURN_IF_ERROR(need_decisions(*pipeline));
  return graphsplit::partition_report_html(*root, model, pipeline->decisions(), html);
}

Status Compilation::placement_report(std::string* json) const {
  GS_RETURN_IF_ERROR(need_decisions(*pipeline));
  return placement_report_json(*root, model, pipeline->decisions(), json);
}

Status Compilation::explain(const std::string& node, std::string* text) const {
  GS_RETURN_IF_ERROR(need_decisions(*pipeline));
  return explain_node(*root, node, pipeline->decisions(), text);
}

}  // namespace graphsplit
