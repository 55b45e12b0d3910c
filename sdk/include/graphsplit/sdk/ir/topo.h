// Topological sorting with GE's four modes (reference, section 2.4); they define every rank the partitioners
// use.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

enum class TopoSortMode : int {
  kBFS = 0,         // data-like sources first, FIFO, ready successors enqueued in name order
  kDFS = 1,         // same seeding, LIFO, successors pushed per output (data peers, then control peers)
  kRDFS = 2,        // reverse DFS from each sink, then every node delayed to just before its first consumer
  kStableRDFS = 3,  // reverse DFS in existing order: a valid order is kept unchanged
};

// The option ge.topoSortingMode: "0".."3". GE uses DFS for inference graphs when it is unset.
inline constexpr std::string_view kTopoSortingModeOption = "ge.topoSortingMode";
inline constexpr TopoSortMode kDefaultTopoSortMode = TopoSortMode::kDFS;
GS_SDK_API std::optional<TopoSortMode> parse_topo_sorting_mode(std::string_view text);
GS_SDK_API std::string_view to_string(TopoSortMode mode);

// Computes an order without changing the graph. Fails, naming a cycle, if the graph is not a DAG
// (data and control edges both count).
GS_SDK_API Status topological_order(const Graph& graph, TopoSortMode mode, std::vector<Node*>* order);
// Computes the order and applies it (Node::id() becomes the position).
GS_SDK_API Status topological_sort(Graph& graph, TopoSortMode mode);
// topological_sort on the root and every subgraph.
GS_SDK_API Status topological_sort_all(Graph& root, TopoSortMode mode);
// Whether the graph is known to be in the order topological_sort(graph, mode) leaves, without sorting: the
// last BFS or DFS sort in `mode` left it and nothing has changed since (SDK ABI 2.5). False says only that it
// is not known. A BFS or DFS order depends on the edges (in each list's order) and on the sources' order
// alone, so a caller about to move nodes without changing either can tell that a sort would move them back.
GS_SDK_API bool is_topologically_sorted(const Graph& graph, TopoSortMode mode);

}  // namespace graphsplit::sdk
