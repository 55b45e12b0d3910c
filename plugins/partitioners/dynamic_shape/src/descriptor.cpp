#include "dynamic_shape_partitioner.h"
#include "graphsplit/sdk/plugin.h"

namespace {

// The partitioner reads GE options (ge.exec.static_model_ops_lower_limit, ge.topoSortingMode,
// ge.host_scheduling_max_threshold, ge.tiling_schedule_optimize, ge.buildGraphMode, ge.exec.placement) and
// declares the merge strategy, which GE picks from its ffts+ switch.
constexpr gs_option_desc kOptions[] = {
    {"strategy", GS_OPT_ENUM, "\"normal\"", 1, 0, "normal|known_first",
     "normal: path absorption first; known_first: GE's ffts+ order (static merges, demotion, dynamic merges) "
     "without path absorption. ge.topoSortingMode = 3 selects stable mode over both",
     nullptr},
    {"known_first_limit", GS_OPT_INT, "6", -1, 9.2e18, nullptr,
     "The static-cluster floor in known_first mode (GE's ffts+ default); -1 still makes the graph dynamic "
     "through ge.exec.static_model_ops_lower_limit",
     nullptr},
    {"always_cluster", GS_OPT_BOOL, "false", 0, 0, nullptr,
     "Run the cluster engine even where every framed node is dynamic and connected, a case the partitioner "
     "otherwise settles without it (same result; for tests and comparisons)",
     nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_PARTITIONER_COMPONENT(
        "dynamic_shape", "GE's DynamicShapePartitioner: static and dynamic parts in PartitionedCalls",
        graphsplit::plugins::dynamic_shape::DynamicShapePartitioner, GS_OPTIONS(kOptions), "dynamic_shape"),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
