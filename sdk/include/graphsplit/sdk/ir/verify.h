// The IR verifier: the invariants every pass and partitioner must leave intact.
#pragma once

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

// Checks `root` and every registered subgraph:
//  - edges agree in both directions and never cross graphs;
//  - node names are unique per graph and the name index agrees;
//  - no cycle through data or control edges;
//  - every subgraph is referenced by its parent node, every referenced graph is registered on this
//    root, and the parent chain ends at the root;
//  - PartitionedCall / If / Case / Loop / Scan / While inputs and outputs agree with their subgraphs' Data
//    (_parent_node_index) and NetOutput.
// The message names the graph and the offending node.
GS_SDK_API Status verify(const Graph& root);

// What verify() checks beyond the graph's structure and acyclicity.
struct VerifyOptions {
  // Edges agree in both directions and stay inside one graph, and the name index agrees. Graph's own
  // functions keep these true by construction, so they test the IR's bookkeeping rather than the caller's
  // graph. An importer that builds a graph through add_node, add_output and add_edge alone may turn them off:
  // they were 13-15 % of an import and 9-12 % of an .om load (issue 21). Everything else is always checked.
  bool edges = true;
};
// As verify(root), with the checks `options` selects (SDK ABI 2.2).
GS_SDK_API Status verify(const Graph& root, const VerifyOptions& options);

// The checks that concern one graph alone: its edges, names and acyclicity, and the inputs and outputs of its
// call nodes against the subgraphs they reference. For a graph that is not (yet) in its final place, e.g. a
// detached engine subgraph handed to an engine's optimize hook.
GS_SDK_API Status verify_graph(const Graph& graph);

}  // namespace graphsplit::sdk
