// Helpers for tests that build small graphs by hand and run them through a real pipeline with the built
// plugins.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
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
// runs it; `decisions` receives the run's decision log. `keep_decisions` as PipelineSettings'.
inline sdk::Status run_pipeline(sdk::Graph& g, const std::string& toml, std::vector<std::string> plugin_paths,
                                std::vector<std::pair<std::string, std::string>> ge_overrides = {},
                                std::vector<sdk::Decision>* decisions = nullptr, bool keep_decisions = true) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  sdk::Status s = parse_pipeline_config_text(toml, "p.toml", &config, &diags);
  if (!s.is_ok()) return s;
  PipelineSettings settings;
  settings.plugin_paths = std::move(plugin_paths);
  settings.ge_overrides = std::move(ge_overrides);
  settings.verify_each = true;
  settings.keep_decisions = keep_decisions;
  std::unique_ptr<Pipeline> pipeline;
  s = Pipeline::create(config, settings, &pipeline, &diags);
  if (!s.is_ok()) return s;
  s = pipeline->run(g);
  if (decisions) *decisions = pipeline->decisions();
  return s;
}

// The final decision about a node ("" if none), and the verdicts on the way as "engine|CODE|detail".
inline std::string decision_about(const std::vector<sdk::Decision>& log, const sdk::Graph& g,
                                  const std::string& node) {
  std::string out;
  for (const sdk::Decision& d : log) {
    if (d.final && d.graph == g.name() && std::find(d.nodes.begin(), d.nodes.end(), node) != d.nodes.end())
      out = std::string(sdk::to_string(d.code));
  }
  return out;
}
inline std::vector<std::string> verdicts_about(const std::vector<sdk::Decision>& log, const sdk::Graph& g,
                                               const std::string& node) {
  std::vector<std::string> out;
  for (const sdk::Decision& d : log) {
    if (!d.final && d.graph == g.name() && std::find(d.nodes.begin(), d.nodes.end(), node) != d.nodes.end())
      out.push_back(d.engine + "|" + std::string(sdk::to_string(d.code)) + "|" + d.detail);
  }
  return out;
}

}  // namespace graphsplit::testing
