// An engine whose subgraphs run on the shared CPU kernels: compile() binds exactly the operators its op table
// declares. The built-in engines derive from it; a third-party engine with its own backend derives from
// sdk::Engine and implements compile() itself (sdk/examples/template_engine).
#pragma once

#include <memory>
#include <string>

#include "graphsplit/kernels/export.h"
#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/engine.h"

namespace graphsplit::kernels {

// Limits come from the session options (sdk::option::kMaxTensorBytes).
class GS_KERNELS_API KernelEngine : public sdk::Engine {
 public:
  sdk::Status compile(const sdk::Graph& subgraph, std::unique_ptr<sdk::Executable>* out) override;

 protected:
  KernelEngine(const sdk::PluginContext& context, std::string engine_name);

 private:
  std::string engine_name_;
  CompileOptions options_;
};

}  // namespace graphsplit::kernels
