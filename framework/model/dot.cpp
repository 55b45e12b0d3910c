#include "model/dot.h"

#include <sstream>

namespace graphsplit {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void emit_graph(const sdk::Graph& g, size_t index, std::ostringstream& out) {
  const std::string prefix = "g" + std::to_string(index) + "_";
  out << "  subgraph cluster_" << index << " {\n    label=" << quote(g.name()) << ";\n";
  for (const sdk::Node* n : g.nodes()) {
    const std::string shape = n->type() == sdk::op::kData || n->type() == sdk::op::kNetOutput ? "ellipse"
                              : n->type() == sdk::op::kConst                                  ? "note"
                                                                                              : "box";
    std::string label = n->name() + "\\n" + n->type();
    if (const sdk::AttrValue* engine = n->attrs().get(sdk::attr::kOpEngineName);
        engine && engine->as_string()) {
      label += "\\n@" + *engine->as_string();
    }
    out << "    " << quote(prefix + std::to_string(n->id())) << " [shape=" << shape
        << ", label=" << quote(label) << "];\n";
  }
  for (const sdk::Node* n : g.nodes()) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (!p.node) continue;
      out << "    " << quote(prefix + std::to_string(p.node->id())) << " -> "
          << quote(prefix + std::to_string(n->id()))
          << " [label=" << quote(p.node->output_desc(p.index).to_string()) << "];\n";
    }
    for (const sdk::Node* c : n->control_inputs()) {
      out << "    " << quote(prefix + std::to_string(c->id())) << " -> "
          << quote(prefix + std::to_string(n->id())) << " [style=dashed];\n";
    }
  }
  out << "  }\n";
}

}  // namespace

std::string graph_to_dot(const sdk::Graph& root) {
  std::ostringstream out;
  out << "digraph " << quote(root.name()) << " {\n  compound=true;\n  node [fontsize=10];\n";
  emit_graph(root, 0, out);
  for (size_t i = 0; i < root.subgraphs().size(); ++i) emit_graph(*root.subgraphs()[i], i + 1, out);
  out << "}\n";
  return out.str();
}

}  // namespace graphsplit
