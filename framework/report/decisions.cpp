#include "report/decisions.h"

#include <algorithm>

namespace graphsplit {

std::string describe(const sdk::Decision& d) {
  std::string s = (d.stage.empty() ? "" : "[" + d.stage + "] ") + std::string(sdk::to_string(d.code));
  if (!d.final) s += " (verdict)";
  if (!d.graph.empty() || !d.nodes.empty()) s += " " + d.graph + ":";
  for (size_t i = 0; i < d.nodes.size(); ++i) s += (i ? ", " : " ") + d.nodes[i];
  if (d.node_count > d.nodes.size()) s += ", ... (" + std::to_string(d.node_count) + " nodes)";
  if (!d.engine.empty()) s += " [" + d.engine + "]";
  if (!d.detail.empty()) s += ": " + d.detail;
  return s;
}

bool decided_above(const sdk::Decision& d, const sdk::Node& n) {
  for (const sdk::Graph* g = n.owner(); g; g = g->parent_graph()) {
    if (g->name() == d.graph) return true;
  }
  return false;
}

std::vector<const sdk::Decision*> decisions_about(const std::vector<sdk::Decision>& log, const sdk::Node& n) {
  std::vector<const sdk::Decision*> out;
  for (const sdk::Decision& d : log) {
    if (std::find(d.nodes.begin(), d.nodes.end(), n.name()) != d.nodes.end() && decided_above(d, n))
      out.push_back(&d);
  }
  return out;
}

}  // namespace graphsplit
