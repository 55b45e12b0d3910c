// The "std" pass plugin: graph clean-ups GE runs before partitioning.
#pragma once

#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::std_passes {

// GE's PrunePass: removes nodes whose results reach no graph output, through data or control edges, in the
// root graph and every subgraph. Graph inputs (Data) stay, so a graph's signature never changes; a removed
// node's subgraphs go with it.
class PruneUnused final : public sdk::Pass {
 public:
  explicit PruneUnused(const sdk::PluginContext&) {}
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;
};

// Sorts the root graph and every subgraph in a topological order. Option `mode`: auto (ge.topoSortingMode,
// unset = DFS), bfs, dfs, rdfs, stable_rdfs.
class TopologicalSort final : public sdk::Pass {
 public:
  explicit TopologicalSort(const sdk::PluginContext& ctx);
  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;

 private:
  std::string mode_;
};

}  // namespace graphsplit::plugins::std_passes
