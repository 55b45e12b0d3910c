// A loaded model ready to run: the engine plugins (from a pipeline configuration, as atc loads them) and the
// runtime that compiled the model's segments on them. omrun and the tests open models this way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "runtime/runtime.h"

namespace graphsplit {

struct ModelSession {
  std::unique_ptr<Pipeline> engines;  // owns the engine objects; outlives the runtime
  std::unique_ptr<Runtime> runtime;
  ModelSession() = default;
  ModelSession(ModelSession&&) = default;
  ModelSession& operator=(ModelSession&& other) noexcept {
    runtime.reset();  // before the engines its executables came from
    engines = std::move(other.engines);
    runtime = std::move(other.runtime);
    return *this;
  }
  ~ModelSession() { runtime.reset(); }
};

// Loads the engines named by `pipeline_toml` (searching `plugin_paths` first, then beside the executable),
// reads the .om and compiles it.
sdk::Status open_model_session(const std::string& om_path, const std::string& pipeline_toml,
                               const std::vector<std::string>& plugin_paths, const RuntimeOptions& options,
                               ModelSession* out);
// The same from a graph already in memory (tests).
sdk::Status open_graph_session(std::unique_ptr<sdk::Graph> root, const std::string& source,
                               const std::string& pipeline_toml, const std::vector<std::string>& plugin_paths,
                               const RuntimeOptions& options, ModelSession* out);

}  // namespace graphsplit
