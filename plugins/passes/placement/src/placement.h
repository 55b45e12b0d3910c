// The "placement" pass plugin: GE's EnginePlacer and HostcpuEngineUpdatePass.
#pragma once

#include <string>
#include <string_view>

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::placement {

// Attributes written on every placed node. GE keeps the engine and kernel library on the op; here they are
// node attributes, with the decision and every asked engine's verdict beside them
// ("engine|REASON_CODE|detail").
inline constexpr std::string_view kEngineAttr = "_op_engine_name";
inline constexpr std::string_view kKernelLibAttr = "_op_kernel_lib_name";
inline constexpr std::string_view kDecisionAttr = "_placement_decision";
inline constexpr std::string_view kVerdictsAttr = "_placement_verdicts";
// User overrides (GE's names).
inline constexpr std::string_view kSpecifiedEngine = "_specified_engine_name";
inline constexpr std::string_view kSpecifiedKernelLib = "_specified_kernel_lib_name";
inline constexpr std::string_view kLxEngine = "_lxfusion_engine_name";
inline constexpr std::string_view kLxKernelLib = "_lxfusion_op_kernel_lib_name";
// Structural nodes run in GE's own local engine, which is part of the host rather than a plugin.
inline constexpr std::string_view kGeLocalEngine = "DNN_VM_GE_LOCAL";
inline constexpr std::string_view kGeLocalKernelLib = "DNN_VM_GE_LOCAL_OP_STORE";
inline constexpr std::string_view kHostCpuEngine = "DNN_VM_HOST_CPU";
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
