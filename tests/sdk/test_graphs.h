// Small graph builders shared by the SDK tests.
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/testing/graph_builder.h"

namespace graphsplit::sdk::testing {

// A node with `inputs` (producer names, output 0 each) and one output.
inline Node* add(Graph& g, const std::string& name, const std::string& type,
                 const std::vector<std::string>& inputs = {}) {
  return add_plain(g, name, type, inputs);
}

inline std::vector<std::string> names(const std::vector<Node*>& nodes) {
  std::vector<std::string> out;
  for (const Node* n : nodes) out.push_back(n->name());
  return out;
}

// True if every edge goes forward in `order`.
inline bool is_topological(const Graph& g, const std::vector<Node*>& order) {
  std::vector<int64_t> pos(g.id_bound(), -1);
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]->id()] = static_cast<int64_t>(i);
  if (order.size() != g.num_nodes()) return false;
  for (const Node* n : g.nodes()) {
    if (pos[n->id()] < 0) return false;
    for (const OutPort& p : n->inputs()) {
      if (p.node && pos[p.node->id()] >= pos[n->id()]) return false;
    }
    for (const Node* c : n->control_inputs()) {
      if (pos[c->id()] >= pos[n->id()]) return false;
    }
  }
  return true;
}

}  // namespace graphsplit::sdk::testing
