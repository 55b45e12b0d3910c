// A minimal engine: float32 Relu, Add and Mul without broadcasting. compile() turns a subgraph into a small
// program (one instruction per node, in topological order) whose run() interprets it. Real engines bind the
// shared CPU kernels instead (graphsplit/kernels/kernels.h, as the built-in engines do).
#pragma once

#include "graphsplit/sdk/engine.h"

namespace graphsplit::examples {

// [snippet:engine-class]
class TemplateEngine final : public sdk::Engine {
 public:
  explicit TemplateEngine(const sdk::PluginContext& ctx) : sdk::Engine(ctx) {}

  sdk::SupportVerdict check_support(const sdk::Node& node) const override;
  sdk::Status compile(const sdk::Graph& subgraph, std::unique_ptr<sdk::Executable>* out) override;
};
// [/snippet:engine-class]

}  // namespace graphsplit::examples
