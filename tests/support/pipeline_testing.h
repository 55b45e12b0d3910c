// Helpers for tests that build small graphs by hand and run them through a real pipeline with the built
// plugins.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "graphsplit/sdk/ir/graph.h"
#include "pipeline/pipeline.h"

namespace graphsplit::testing {

inline sdk::TensorDesc tensor_desc(sdk::DataType dtype, std::vector<int64_t> dims) {
  sdk::TensorDesc d;
  d.dtype = dtype;
  d.shape = sdk::Shape(std::move(dims));
  return d;
}

// A root graph importing ai.onnx opset 17, as an imported model would.
inline std::unique_ptr<sdk::Graph> opset17_root(const std::string& name = "g") {
  auto g = sdk::Graph::create(name);
  g->attrs().set(sdk::attr::kOnnxOpsetImport, sdk::AttrValue::Strings({"ai.onnx:17"}));
  return g;
}

// Adds a node with one output `out` (named like the node), fed by output 0 of each named input.
inline sdk::Node* add_op(sdk::Graph& g, const std::string& name, const std::string& type,
                         const std::vector<std::string>& inputs, sdk::TensorDesc out) {
  sdk::Node* n = g.add_node(name, type, inputs.size(), 0);
  n->add_output(std::move(out), name);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(g.add_edge({g.find_node(inputs[i]), 0}, {n, static_cast<int32_t>(i)}).is_ok()) << inputs[i];
  }
  return n;
}

inline sdk::Node* add_net_output(sdk::Graph& g, const std::vector<std::string>& inputs) {
  sdk::Node* n = g.add_node("out", sdk::op::kNetOutput, inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i)
    (void)g.add_edge({g.find_node(inputs[i]), 0}, {n, static_cast<int32_t>(i)});
  return n;
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
