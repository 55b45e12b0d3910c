#include "graphsplit/sdk/plugin.h"
#include "stage_partitioner.h"

namespace {

constexpr gs_component_desc kComponents[] = {
    GS_PARTITIONER_COMPONENT("stage",
                             "GE's StagePartitioner: one PartitionedCall per _stage_level pipeline stage",
                             graphsplit::plugins::stage::StagePartitioner, GS_NO_OPTIONS, "stage"),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
