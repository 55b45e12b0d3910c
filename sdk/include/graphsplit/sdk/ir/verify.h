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
//  - every subgraph is referenced by its parent node, every referenced graph is registered on this root, and
//  the
//    parent chain ends at the root;
//  - PartitionedCall / If / Case / Loop / Scan / While inputs and outputs agree with their subgraphs' Data
//    (_parent_node_index) and NetOutput.
// The message names the graph and the offending node.
GS_SDK_API Status verify(const Graph& root);

}  // namespace graphsplit::sdk
