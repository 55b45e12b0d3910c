#include "graphsplit/sdk/plugin.h"
#include "placement.h"

namespace {

using namespace graphsplit::plugins::placement;

constexpr gs_option_desc kPlaceOptions[] = {
    {"stop_on_no_dynamic_shape", GS_OPT_BOOL, "true", 1, 0, nullptr,
     "As GE: an engine answering 'no dynamic shape' ends the search with EZ3002 instead of falling back",
     nullptr},
    {"record_verdicts", GS_OPT_BOOL, "true", 1, 0, nullptr,
     "Keep every asked engine's verdict on the node (for --dump_placement and --explain)", nullptr},
    {"record_kept", GS_OPT_BOOL, "true", 1, 0, nullptr,
     "Record KEPT for nodes that already have an engine (false for a placement run after an earlier one, "
     "which recorded them)",
     nullptr},
};
constexpr gs_option_desc kUpdateOptions[] = {
    {"max_small_elements", GS_OPT_INT, "8", 1, 1e9, nullptr,
     "Largest static tensor (elements) counted as small host-side shape data", nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("engine_place",
                      "GE's EnginePlacer: one engine per node, by cost order, overrides and exclusions",
                      EnginePlace, GS_OPTIONS(kPlaceOptions)),
    GS_PASS_COMPONENT("hostcpu_engine_update",
                      "GE's HostcpuEngineUpdatePass: small shape computation to the host CPU",
                      HostcpuEngineUpdate, GS_OPTIONS(kUpdateOptions)),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
