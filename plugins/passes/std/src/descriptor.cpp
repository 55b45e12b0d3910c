// The only file of this plugin that defines its descriptor.
#include "graphsplit/sdk/plugin.h"
#include "std_passes.h"

namespace {

using namespace graphsplit::plugins::std_passes;

constexpr gs_option_desc kSortOptions[] = {
    {"mode", GS_OPT_ENUM, "\"auto\"", 1, 0, "auto|bfs|dfs|rdfs|stable_rdfs",
     "Sort order; auto follows ge.topoSortingMode (unset: dfs)", nullptr},
};

constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("prune_unused", "Removes nodes whose results reach no graph output (GE's PrunePass)",
                      PruneUnused, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("topological_sort", "Sorts every graph in GE's topological order (ge.topoSortingMode)",
                      TopologicalSort, GS_OPTIONS(kSortOptions)),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
