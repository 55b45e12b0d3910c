// Graphviz DOT view of a graph and its subgraphs (atc --dump_graph).
#pragma once

#include <string>

#include "graphsplit/sdk/ir/graph.h"

namespace graphsplit {

std::string graph_to_dot(const sdk::Graph& root);

}  // namespace graphsplit
