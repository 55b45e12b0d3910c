// Frame building, shared by the partitioners (GE reference, section 2.3): each cluster of nodes becomes a
// PartitionedCall in its graph and a subgraph holding the members.
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

struct FrameSpec {
  std::vector<Node*> members;  // nodes of one cluster, all in the graph being partitioned
  std::string subgraph_name;   // unique across the root; inner nodes are named "<subgraph>_Data_<i>" and
                               // "<subgraph>_Node_Output" as in GE
  std::string call_name;       // the PartitionedCall in the parent graph
  AttrMap call_attrs;          // set on the call node
  AttrMap subgraph_attrs;      // set on the subgraph
};

struct FrameOptions {
  // Inner node names: "<prefix><i>" for the Data of call input i, and the NetOutput's name. Empty: GE's DSP
  // names, "<subgraph>_Data_<i>" and "<subgraph>_Node_Output".
  std::string inner_data_prefix;
  std::string inner_output_name;
  // GE's REGISTER_PARTITION_ATTR_NAME, as data instead of a process-wide registry: attribute names copied
  // from the consumer of an external input onto the inner Data made for it.
  std::vector<std::string> copy_to_inner_data;
};

struct Frame {
  Node* call = nullptr;
  Graph* subgraph = nullptr;
};

// Builds one frame per spec:
//  - call inputs: one per member input fed from outside the cluster (per consumer slot, not per
//    producer), with an inner Data carrying `_parent_node_index` and the producer's descriptor;
//  - call outputs: one per member output with a consumer outside the cluster, with an inner NetOutput
//    input in the same position; outside consumers are rewired to the call;
//  - a control edge between members of different frames becomes call -> call (de-duplicated), one from
//    or to a node outside every frame ends on the call; a member with control edges leaving the frame
//    also gets a control edge to the inner NetOutput, so that the call finishes after it;
//  - the members move into the subgraph in their order; the parent graph is re-sorted (stable) so that
//    it stays topologically ordered with each call where its first member was whenever that is valid.
// The specs must be disjoint and each cluster must be convex (no path leaves it and comes back); otherwise
// the re-sort reports the cycle this would create.
GS_SDK_API Status build_frames(Graph& graph, const std::vector<FrameSpec>& specs, const FrameOptions& options,
                               std::vector<Frame>* frames);

}  // namespace graphsplit::sdk
