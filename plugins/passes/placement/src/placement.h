// The "placement" pass plugin: GE's EnginePlacer and HostcpuEngineUpdatePass.
#pragma once

#include <string>
#include <string_view>

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::placement {

// Every placed node gets sdk::attr::kOpEngineName and kOpKernelLibName (GE keeps them on the op; here they
// are node attributes), with the decision and every asked engine's verdict beside them. Structural nodes run
// in GE's own local engine (sdk::engine::kGeLocal), which is part of the host rather than a plugin.
inline constexpr int kMaxSubgraphDepth = 25;

bool is_structural(std::string_view type);

// Places every node of the root and of all subgraphs, deepest subgraphs first (GE's EnginePlacer, reference
// section 4.1; docs/engines.md).
class EnginePlace final : public sdk::Pass {
 public:
  explicit EnginePlace(const sdk::PluginContext& ctx);
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;

 private:
  bool stop_on_no_dynamic_shape_;
  bool record_verdicts_;
  bool record_kept_;
};

// Moves small host-side shape computation to the host CPU engine (GE's HostcpuEngineUpdatePass, reference
// section 4.2). Runs only on graphs with dynamic shapes, after placement.
class HostcpuEngineUpdate final : public sdk::Pass {
 public:
  explicit HostcpuEngineUpdate(const sdk::PluginContext& ctx);
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;

 private:
  int64_t max_small_elements_;
};

}  // namespace graphsplit::plugins::placement
