#include "report/placement_report.h"

#include <google/protobuf/util/json_util.h>

#include <sstream>

#include "config/config.h"
#include "report/placement.pb.h"

namespace graphsplit {
namespace {

std::vector<const sdk::Graph*> all_graphs(const sdk::Graph& root) {
  std::vector<const sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  return graphs;
}

void fill(const sdk::Node& n, report::NodePlacement* p) {
  p->set_graph(n.owner()->name());
  p->set_node(n.name());
  p->set_type(n.type());
  p->set_engine(n.attrs().get_string(sdk::attr::kOpEngineName));
  p->set_kernel_lib(n.attrs().get_string(sdk::attr::kOpKernelLibName));
  p->set_decision(n.attrs().get_string(sdk::attr::kPlacementDecision));
  if (const sdk::AttrValue* v = n.attrs().get(sdk::attr::kPlacementVerdicts); v && v->as_strings()) {
    for (const std::string& s : *v->as_strings()) {
      const size_t a = s.find('|'), b = s.find('|', a == std::string::npos ? 0 : a + 1);
      report::EngineVerdict* e = p->add_verdicts();
      e->set_engine(s.substr(0, a));
      if (a != std::string::npos && b != std::string::npos) {
        e->set_reason(s.substr(a + 1, b - a - 1));
        e->set_detail(s.substr(b + 1));
        e->set_supported(e->reason() == "OK");
      }
    }
  }
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const sdk::TensorDesc* d = n.input_desc(i);
    p->add_inputs(d ? d->to_string() : "none");
  }
  for (size_t o = 0; o < n.num_outputs(); ++o) p->add_outputs(n.output_desc(o).to_string());
}

}  // namespace

std::map<std::string, size_t> placement_summary(const sdk::Graph& root) {
  std::map<std::string, size_t> out;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) ++out[n->attrs().get_string(sdk::attr::kOpEngineName)];
  }
  return out;
}

sdk::Status placement_report_json(const sdk::Graph& root, const std::string& model, std::string* json) {
  report::PlacementReport r;
  r.set_model(model);
  int64_t nodes = 0, placed = 0;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) {
      fill(*n, r.add_placements());
      ++nodes;
      placed += n->attrs().get_string(sdk::attr::kOpEngineName).empty() ? 0 : 1;
    }
  }
  r.set_nodes(nodes);
  r.set_placed(placed);
  for (const auto& [engine, count] : placement_summary(root)) {
    report::EngineCount* c = r.add_summary();
    c->set_engine(engine);
    c->set_nodes(static_cast<int64_t>(count));
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  auto st = google::protobuf::util::MessageToJsonString(r, json, options);
  if (!st.ok()) return sdk::Status::internal("placement report: " + std::string(st.message()));
  return sdk::Status::ok();
}

sdk::Status explain_node(const sdk::Graph& root, const std::string& name, std::string* text) {
  std::ostringstream out;
  std::vector<std::string> names;
  size_t found = 0;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) names.push_back(n->name());
    const sdk::Node* n = g->find_node(name);
    if (!n) continue;
    ++found;
    report::NodePlacement p;
    fill(*n, &p);
    out << "node '" << p.node() << "' (" << p.type() << ") in graph '" << p.graph() << "'\n";
    out << "  inputs:  ";
    for (int i = 0; i < p.inputs_size(); ++i) out << (i ? ", " : "") << p.inputs(i);
    out << "\n  outputs: ";
    for (int i = 0; i < p.outputs_size(); ++i) out << (i ? ", " : "") << p.outputs(i);
    if (p.engine().empty()) {
      out << "\n  engine:  not placed (the pipeline has no placement pass)\n";
      continue;
    }
    out << "\n  engine:  " << p.engine() << " (kernel lib " << p.kernel_lib() << "), decision "
        << p.decision() << "\n";
    for (const report::EngineVerdict& v : p.verdicts()) {
      out << "  " << (v.supported() ? "+ " : "- ") << v.engine() << ": " << v.reason()
          << (v.detail().empty() ? "" : " (" + v.detail() + ")") << "\n";
    }
  }
  if (!found) {
    const std::string dym = did_you_mean(name, names);
    return sdk::Status::not_found("--explain: no node named '" + name + "'" +
                                  (dym.empty() ? "" : "; " + dym));
  }
  *text = out.str();
  return sdk::Status::ok();
}

}  // namespace graphsplit
