// The Engine plugin interface.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graphsplit/sdk/context.h"
#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

struct SupportVerdict {
  bool supported = false;
  ReasonCode reason = ReasonCode::kEngineUnsupportedOp;
  std::string detail;  // for messages and reports; never empty when supported is false
};

class GS_SDK_API Engine {
 public:
  virtual ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Can this engine run `node`? The default answers from the op table: op type, opset range, input and output
  // data types and formats, and dynamic shapes. Engines with shape-dependent rows override it and call
  // check_table() first.
  virtual SupportVerdict check_support(const Node& node) const;

  // Optimises one subgraph placed on this engine. Default: nothing to do (*changed = false).
  virtual Status optimize(Graph& subgraph, PassContext& ctx, bool* changed);

  // Compiles one subgraph into an artifact that execute() understands. Default: not_implemented.
  virtual Status compile(const Graph& subgraph, std::string* artifact);

  // Runs a compiled artifact. Default: not_implemented.
  virtual Status execute(const std::string& artifact, const std::vector<Tensor>& inputs,
                         std::vector<Tensor>* outputs);

 protected:
  // Copies what it needs from the context (the context itself is borrowed for the constructor only).
  explicit Engine(const PluginContext& context);
  const OpSupportTable& table() const;
  SupportVerdict check_table(const Node& node) const;

 private:
  std::unique_ptr<const OpSupportTable> table_;
};

}  // namespace graphsplit::sdk
