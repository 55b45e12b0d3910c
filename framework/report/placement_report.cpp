#include "report/placement_report.h"

#include <google/protobuf/util/json_util.h>

#include <sstream>
#include <unordered_map>

#include "config/config.h"
#include "report/decisions.h"
#include "report/placement.pb.h"

namespace graphsplit {
namespace {

std::vector<const sdk::Graph*> all_graphs(const sdk::Graph& root) {
  std::vector<const sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  return graphs;
}

// The placement records by node name; fill() keeps those of the node's graph or its ancestors.
using PlacementLog = std::unordered_map<std::string, std::vector<const sdk::Decision*>>;

PlacementLog placement_log(const std::vector<sdk::Decision>& decisions) {
  PlacementLog log;
  for (const sdk::Decision& d : decisions) {
    if (d.stage.rfind("placement.", 0) != 0) continue;
    for (const std::string& node : d.nodes) log[node].push_back(&d);
  }
  return log;
}

void fill(const sdk::Node& n, const PlacementLog& log, report::NodePlacement* p) {
  p->set_graph(n.owner()->name());
  p->set_node(n.name());
  p->set_type(n.type());
  p->set_engine(n.attrs().get_string(sdk::attr::kOpEngineName));
  p->set_kernel_lib(n.attrs().get_string(sdk::attr::kOpKernelLibName));
  if (auto it = log.find(n.name()); it != log.end()) {
    for (const sdk::Decision* d : it->second) {
      if (!decided_above(*d, n)) continue;
      if (d->final) {
        // The last decision wins (the host-CPU update after placement); KEPT only says a later run changed
        // nothing.
        if (d->code != sdk::ReasonCode::kKept || p->decision().empty())
          p->set_decision(std::string(sdk::to_string(d->code)));
        continue;
      }
      report::EngineVerdict* e = p->add_verdicts();
      e->set_engine(d->engine);
      e->set_reason(std::string(sdk::to_string(d->code)));
      e->set_detail(d->detail);
      e->set_supported(d->code == sdk::ReasonCode::kOk);
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
  // Neighbours mostly share an engine: the last entry is tried before the map (a million-node summary
  // was a string copy and a map search per node).
  std::pair<const std::string, size_t>* last = nullptr;
  static const std::string kNone;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) {
      const sdk::AttrValue* v = n->attrs().get(sdk::attr::kOpEngineName);
      const std::string* engine = v && v->as_string() ? v->as_string() : &kNone;
      if (!last || last->first != *engine) last = &*out.try_emplace(*engine).first;
      ++last->second;
    }
  }
  return out;
}

sdk::Status placement_report_json(const sdk::Graph& root, const std::string& model,
                                  const std::vector<sdk::Decision>& decisions, std::string* json) {
  const PlacementLog log = placement_log(decisions);
  report::PlacementReport r;
  r.set_model(model);
  int64_t nodes = 0, placed = 0;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) {
      fill(*n, log, r.add_placements());
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

sdk::Status explain_node(const sdk::Graph& root, const std::string& name,
                         const std::vector<sdk::Decision>& decisions, std::string* text) {
  const PlacementLog log = placement_log(decisions);
  std::ostringstream out;
  std::vector<std::string> names;
  size_t found = 0;
  for (const sdk::Graph* g : all_graphs(root)) {
    for (const sdk::Node* n : g->nodes()) names.push_back(n->name());
    const sdk::Node* n = g->find_node(name);
    if (!n) continue;
    ++found;
    report::NodePlacement p;
    fill(*n, log, &p);
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
    // What the partitioners decided about it.
    for (const sdk::Decision* d : decisions_about(decisions, *n)) {
      if (d->stage.rfind("placement.", 0) == 0) continue;
      out << "  " << d->stage << ": " << sdk::to_string(d->code) << " (" << d->detail << ")\n";
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
