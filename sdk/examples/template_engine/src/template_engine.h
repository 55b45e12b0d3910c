// A minimal engine: float32 Relu, Add and Mul without broadcasting. compile() turns a subgraph into a small
// program (one instruction per node, in topological order); execute() interprets it.
#pragma once

#include "graphsplit/sdk/engine.h"

namespace graphsplit::examples {

class TemplateEngine final : public sdk::Engine {
 public:
  explicit TemplateEngine(const sdk::PluginContext& ctx) : sdk::Engine(ctx) {}

  sdk::SupportVerdict check_support(const sdk::Node& node) const override;
  sdk::Status compile(const sdk::Graph& subgraph, std::string* artifact) override;
  sdk::Status execute(const std::string& artifact, const std::vector<sdk::Tensor>& inputs,
                      std::vector<sdk::Tensor>* outputs) override;
};

}  // namespace graphsplit::examples
