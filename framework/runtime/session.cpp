#include "runtime/session.h"

#include "common/install_paths.h"
#include "config/config.h"
#include "model/om_io.h"

namespace graphsplit {

sdk::Status open_graph_session(std::unique_ptr<sdk::Graph> root, const std::string& source,
                               const std::string& pipeline_toml, const std::vector<std::string>& plugin_paths,
                               const RuntimeOptions& options, ModelSession* out) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  GS_RETURN_IF_ERROR(parse_pipeline_config(pipeline_toml, &config, &diags));
  PipelineSettings settings;
  settings.plugin_paths = plugin_paths;
  settings.builtin_paths = builtin_plugin_paths();
  if (options.max_tensor_bytes > 0)
    settings.ge_overrides.emplace_back(sdk::option::kMaxTensorBytes,
                                       std::to_string(options.max_tensor_bytes));
  ModelSession session;
  GS_RETURN_IF_ERROR(Pipeline::create(config, settings, &session.engines, &diags));
  const Pipeline* engines = session.engines.get();
  GS_RETURN_IF_ERROR(Runtime::create(
      std::move(root), source, [engines](const std::string& name) { return engines->find_engine(name); },
      options, &session.runtime));
  *out = std::move(session);
  return sdk::Status::ok();
}

sdk::Status open_model_session(const std::string& om_path, const std::string& pipeline_toml,
                               const std::vector<std::string>& plugin_paths, const RuntimeOptions& options,
                               ModelSession* out) {
  std::unique_ptr<sdk::Graph> root;
  GS_RETURN_IF_ERROR(read_om_file(om_path, &root));
  return open_graph_session(std::move(root), om_path, pipeline_toml, plugin_paths, options, out);
}

}  // namespace graphsplit
