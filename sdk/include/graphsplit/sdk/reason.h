// The one decision vocabulary: a stable code for every placement, partition, demotion or skip decision, and
// the record a component reports it in (PassContext::record). Reports, `atc --explain` and the logs read the
// records; nothing packs codes into strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

// X(enumerator, value, name, meaning). Values are part of the ABI (SupportVerdict carries them): never reuse
// one.
#define GS_REASON_CODES(X)                                                                                 \
  /* engine verdicts (Engine::check_support) */                                                            \
  X(kOk, 0, "OK", "the engine takes the node")                                                             \
  X(kEngineUnsupportedOp, 1, "ENGINE_UNSUPPORTED_OP",                                                      \
    "the op type (or its opset) is not in the engine's table")                                             \
  X(kEngineUnsupportedDtype, 2, "ENGINE_UNSUPPORTED_DTYPE", "a data type the engine's row does not allow") \
  X(kEngineUnsupportedFormat, 3, "ENGINE_UNSUPPORTED_FORMAT", "a format the engine's row does not allow")  \
  X(kEngineNoDynamicShape, 4, "ENGINE_NO_DYNAMIC_SHAPE", "an unknown shape the engine cannot run")         \
  X(kEngineCheckFailed, 5, "ENGINE_CHECK_FAILED", "the engine's own shape-dependent check refused it")     \
  X(kEngineDisabled, 6, "ENGINE_DISABLED", "excluded by ge.exec.exclude_engines or ge.engineType")         \
  X(kShapeUnknown, 8, "SHAPE_UNKNOWN", "a tensor has an unknown dimension or rank")                        \
  X(kCycle, 9, "CYCLE", "merging would create a cycle")                                                    \
  X(kColourMismatch, 10, "COLOUR_MISMATCH", "the subgraphs' operators run on different engines")           \
  X(kSizeBelowLimit, 12, "SIZE_BELOW_LIMIT",                                                               \
    "a static cluster smaller than ge.exec.static_model_ops_lower_limit")                                  \
  X(kSizeAboveLimit, 13, "SIZE_ABOVE_LIMIT", "more than the engine's limit (rank, size)")                  \
  /* placement decisions (placement.engine_place, placement.hostcpu_engine_update) */                      \
  X(kSpecified, 20, "SPECIFIED", "the user named the engine (_specified_engine_name)")                     \
  X(kCostOrder, 21, "COST_ORDER", "the cheapest engine that takes the node, in priority order")            \
  X(kKept, 22, "KEPT", "already placed; left as it was")                                                   \
  X(kLxfusion, 23, "LXFUSION", "placed by _lxfusion_engine_name")                                          \
  X(kStructural, 24, "STRUCTURAL", "a structural node, run by GE's local engine")                          \
  X(kComposite, 25, "COMPOSITE", "a control-flow node placed by its subgraphs")                            \
  X(kCompositeHost, 26, "COMPOSITE_HOST", "a control-flow node whose subgraphs run on the host")           \
  X(kHostCpuUpdate, 28, "HOST_CPU_UPDATE", "moved to the host CPU engine (HostcpuEngineUpdatePass)")       \
  /* dynamic-shape partition: why a node or graph is dynamic */                                            \
  X(kForced, 40, "FORCED", "_is_unknown_shape or _force_unknown_shape is set")                             \
  X(kHostCpu, 41, "HOST_CPU", "runs on DNN_VM_HOST_CPU")                                                   \
  X(kSubgraphUnknown, 42, "SUBGRAPH_UNKNOWN", "a subgraph holds a dynamic node")                           \
  X(kTilingDepend, 43, "TILING_DEPEND", "needs run-time tiling data and cannot sink its tiling to AI CPU") \
  X(kNoAddrRefresh, 44, "NO_ADDR_REFRESH", "its kernel cannot repoint addresses")                          \
  X(kWholeGraphDynamic, 45, "WHOLE_GRAPH_DYNAMIC", "the whole graph is dynamic and nothing is split")      \
  X(kHostScheduling, 46, "HOST_SCHEDULING", "a small static graph scheduled on the host as a whole")       \
  X(kNoTilingReverted, 47, "NO_TILING_REVERTED", "mixed no-tiling and dynamic nodes: no-tiling reverted")  \
  X(kStackRepartition, 48, "STACK_REPARTITION", "a stack group partitioned again as one")                  \
  X(kNotATensor, 49, "NOT_A_TENSOR", "a sequence or optional value, whose size only the run can tell")

enum class ReasonCode : int {
#define GS_REASON_ENUM(e, v, name, meaning) e = v,
  GS_REASON_CODES(GS_REASON_ENUM)
#undef GS_REASON_ENUM
};

// "ENGINE_UNSUPPORTED_OP", ...; "UNKNOWN" for a value outside the table.
GS_SDK_API std::string_view to_string(ReasonCode code);
// What the code means, in one sentence (reports, --explain).
GS_SDK_API std::string_view reason_meaning(ReasonCode code);
// The code of a name, or nothing.
GS_SDK_API std::optional<ReasonCode> parse_reason_code(std::string_view name);

// One decision, as a component reports it through PassContext::record.
struct Decision {
  ReasonCode code = ReasonCode::kOk;
  std::string graph;               // where the nodes are
  std::vector<std::string> nodes;  // the nodes it concerns (at most kMaxDecisionNodes, see node_count)
  size_t node_count = 0;           // how many nodes it concerns in all
  std::string engine;              // the engine concerned, if any
  std::string detail;              // one sentence
  // false: one engine's verdict on the way to a placement decision (placement reports list them per node).
  bool final = true;
  std::string stage;  // filled by the host: the pipeline entry that recorded it
};
inline constexpr size_t kMaxDecisionNodes = 8;

}  // namespace graphsplit::sdk
