// GE's JIT binary partitioner (reference section 8.2, catalogue BIN/BGB): cuts a root graph into the slice
// that can be compiled now (the inferred set) and the graph that waits for its values (the remaining graph).
//
// Both graphs are new roots; the input graph is not changed. Subgraphs of the nodes a graph keeps are deep
// copies. One deliberate difference from GE: a Data left outside the inferred set is an error here (GE's
// helper fails, returns an empty list, and the partition then "succeeds" with the whole graph as the slice).
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::jit {

// A root graph holding copies of some nodes of another graph (GE's graph builder).
struct BuiltGraph {
  std::unique_ptr<sdk::Graph> graph;  // null when no node was asked for
  // Per new Data, in `index` order: the outside producer and the consumer input it stands for.
  struct Input {
    std::string producer;
    int32_t producer_port = 0;
    std::string consumer;
    int32_t consumer_port = 0;
  };
  std::vector<Input> inputs;
  // Per input of the graph's NetOutput: the producer (in both graphs by the same name).
  std::vector<std::pair<std::string, int32_t>> outputs;
};

// Copies `nodes` (nodes of `g`, which must be a root) into a new root graph of the same name: every input of
// a copied node whose producer is not copied becomes its own Data (one per consumer input, GE's rule), and
// every output with a consumer outside becomes an input of the graph's NetOutput (created when `nodes` holds
// none; appended to otherwise). Nodes keep their names, descriptors, attributes and subgraphs (deep copies).
sdk::Status build_graph_from_nodes(const sdk::Graph& g, const std::unordered_set<const sdk::Node*>& nodes,
                                   BuiltGraph* out);

struct BinaryPartition {
  std::unique_ptr<sdk::Graph> sliced;
  std::unique_ptr<sdk::Graph> remaining;  // null when the slice is the whole graph
  // (sliced output index, remaining input index): what feeds each remaining input.
  std::vector<std::pair<int32_t, int32_t>> io;
};

// GE's Partition(graph, inferred): GRAPH_FAILED for an empty set, E19999 for a Data outside it,
// GRAPH_PARAM_INVALID for an inferred node with a data or control input from outside. The NetOutput belongs
// to the slice only when the slice is the whole graph. Const and Variable outputs that the remaining graph
// needs are copied into it (the sliced NetOutput keeps them as control inputs only); remaining inputs fed by
// one sliced output are merged; each remaining Data takes its consumer's input descriptor.
sdk::Status binary_partition(const sdk::Graph& g, const std::unordered_set<const sdk::Node*>& inferred,
                             BinaryPartition* out);

// A deep copy of a root graph and all its subgraphs. `root_twins`, when given, gets each root node's copy by
// the original's Node::id().
sdk::Status copy_graph(const sdk::Graph& g, std::unique_ptr<sdk::Graph>* out,
                       std::vector<sdk::Node*>* root_twins = nullptr);

}  // namespace graphsplit::jit
