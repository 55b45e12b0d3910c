// Helpers for tests that build small graphs by hand and run them through a real pipeline with the built
// plugins.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/testing/graph_builder.h"
#include "pipeline/pipeline.h"

namespace graphsplit::testing {

using sdk::testing::add_net_output;
using sdk::testing::add_op;
using sdk::testing::tensor_desc;
inline std::unique_ptr<sdk::Graph> opset17_root(const std::string& name = "g") {
  return sdk::testing::opset_root(name, 17);
}

// Parses `toml`, builds the pipeline with the plugins in `plugin_paths` (verification after every entry) and
// runs it.
inline sdk::Status run_pipeline(sdk::Graph& g, const std::string& toml, std::vector<std::string> plugin_paths,
                                std::vector<std::pair<std::string, std::string>> ge_overrides = {}) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  sdk::Status s = parse_pipeline_config_text(toml, "p.toml", &config, &diags);
  if (!s.is_ok()) return s;
  PipelineSettings settings;
  settings.plugin_paths = std::move(plugin_paths);
  settings.ge_overrides = std::move(ge_overrides);
  settings.verify_each = true;
  std::unique_ptr<Pipeline> pipeline;
  s = Pipeline::create(config, settings, &pipeline, &diags);
  if (!s.is_ok()) return s;
  return pipeline->run(g);
}

}  // namespace graphsplit::testing
