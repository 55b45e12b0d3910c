#include "engine_partitioner.h"
#include "graphsplit/sdk/plugin.h"

namespace {

// Also reads the GE option ge.topoSortingMode (3 = adjacent merging, and the sort used before and after).
constexpr gs_option_desc kOptions[] = {
    {"modes", GS_OPT_LIST, "[\"composite\", \"atomic\"]", 1, 0, nullptr,
     "The passes to run, in order, as GE: \"composite\" (clusters by composite engine; skipped when none is "
     "registered), then \"atomic\" (one engine per subgraph)",
     nullptr},
    {"composite_engines", GS_OPT_LIST, "[]", 1, 0, nullptr,
     "Composite mode: the atomic->composite registry, as \"ATOMIC=COMPOSITE\" entries", nullptr},
    {"merge_siblings", GS_OPT_BOOL, "false", 1, 0, nullptr,
     "Beyond GE: clusters of one engine reading the same cluster also merge when no path joins them (fewer "
     "engine subgraphs; GE's own rule only merges a cluster into its consumer)",
     nullptr},
    {"cut_always", GS_OPT_BOOL, "false", 1, 0, nullptr,
     "Cut every graph into engine subgraphs and End/PlaceHolder pairs even when no engine of its parts "
     "overrides optimize (by default such a graph is left as merging back would leave it, without the "
     "round trip); the result is the same",
     nullptr},
    {"threads", GS_OPT_INT, "1", 0, 256, nullptr,
     "Workers for the per-subgraph optimise hooks (0 = one per core); the result never depends on it",
     nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_PARTITIONER_COMPONENT("engine",
                             "GE's EnginePartitioner: engine subgraphs with End/PlaceHolder pairs, each "
                             "optimised by its engine, then merged back",
                             graphsplit::plugins::engine::EnginePartitioner, GS_OPTIONS(kOptions), "engine"),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
