#include "dynamic_shape_partitioner.h"
#include "graphsplit/sdk/plugin.h"

namespace {

// The partitioner reads GE options (ge.exec.static_model_ops_lower_limit, ge.topoSortingMode,
// ge.host_scheduling_max_threshold, ge.tiling_schedule_optimize, ge.buildGraphMode, ge.exec.placement); it
// declares none of its own.
constexpr gs_component_desc kComponents[] = {
    GS_PARTITIONER_COMPONENT(
        "dynamic_shape", "GE's DynamicShapePartitioner: static and dynamic parts in PartitionedCalls",
        graphsplit::plugins::dynamic_shape::DynamicShapePartitioner, GS_NO_OPTIONS, "dynamic_shape"),
};

}  // namespace

GS_DEFINE_PLUGIN("partition_dynamic_shape", "0.1.0", kComponents)
