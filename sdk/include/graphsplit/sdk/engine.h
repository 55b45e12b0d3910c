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

// One compiled engine subgraph. The host destroys it before the engine that made it, and keeps the plugin
// loaded while it lives.
class GS_SDK_API Executable {
 public:
  virtual ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  // `inputs` in the subgraph's Data `index` order; `outputs` in its NetOutput's input order. Outputs stay
  // valid after later runs (they never alias memory that run() reuses).
  virtual Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) = 0;

  // Bytes of the memory arena planned at compile time for a static-shape subgraph (0 if every value leaves
  // it); -1 when shapes are resolved at run time.
  virtual int64_t arena_bytes() const { return -1; }

 protected:
  Executable() = default;
};

namespace plugin_detail {
struct EngineAccess;
}

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

  // Whether this engine's class overrides optimize(). The engine partitioner cuts a graph into subgraphs and
  // pairs only for engines that do; for the others it leaves the graph as merging back would (a million-node
  // graph cut and joined for nothing cost seconds). Set by GS_ENGINE_COMPONENT; an engine made another way
  // counts as optimising.
  bool optimizes() const { return optimizes_; }

  // Compiles one subgraph that holds Data nodes with `index` 0..k-1 (the executable's inputs in that order),
  // Const, the engine's operators and one NetOutput (its outputs) into something that runs: a standalone copy
  // of a segment, or, when the segment is a whole graph of the model, that graph itself (its Data may then
  // carry other attributes, and it may be a registered subgraph). Called once per segment when a model is
  // loaded. Default: not_implemented.
  virtual Status compile(const Graph& subgraph, std::unique_ptr<Executable>* out);

 protected:
  // Copies what it needs from the context (the context itself is borrowed for the constructor only).
  explicit Engine(const PluginContext& context);
  const OpSupportTable& table() const;
  SupportVerdict check_table(const Node& node) const;

 private:
  friend struct plugin_detail::EngineAccess;
  std::unique_ptr<const OpSupportTable> table_;
  bool optimizes_ = true;
};

}  // namespace graphsplit::sdk
