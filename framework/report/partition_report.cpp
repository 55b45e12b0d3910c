#include "report/partition_report.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/type_resolver_util.h>

#include <memory>

#include "graphsplit/sdk/strings.h"
#include "report/partition.pb.h"
#include "report/partition_report_impl.h"

namespace graphsplit {

std::string graph_kind(const sdk::Graph& g) {
  if (g.is_root()) return "root";
  const sdk::Node* parent = g.parent_node();
  const std::string& t = parent->type();
  if (t == sdk::op::kPartitionedCall)
    return parent->attrs().has(sdk::attr::kStageLevel) ? "stage" : "partitioned_call";
  if (t == sdk::op::kCase) return "case_branch";
  if (t == sdk::op::kIf) return "if_branch";
  if (t == sdk::op::kLoop || t == sdk::op::kScan || t == sdk::op::kWhile) return "loop_body";
  return "subgraph";
}

namespace {

void add_graph_entry(const sdk::Graph* g, report::PartitionReport* rp) {
  report::PartitionReport& r = *rp;
  report::Summary* summary = r.mutable_summary();
  report::GraphEntry* e = r.add_graphs();
  e->set_name(g->name());
  if (g->parent_node())
    e->mutable_parent_node()->set_string_value(g->parent_node()->name());
  else
    e->mutable_parent_node()->set_null_value(google::protobuf::NULL_VALUE);
  const std::string kind = graph_kind(*g);
  e->set_kind(kind);
  const bool unknown = g->attrs().get_bool(sdk::attr::kIsUnknownShape, false);
  e->set_unknown_shape(unknown);
  if (g->parent_node()) {
    const std::string engine = g->parent_node()->attrs().get_string(sdk::attr::kOpEngineName);
    if (!engine.empty()) e->set_engine(engine);
  }
  if (const sdk::AttrValue* s = g->attrs().get(sdk::attr::kStageLevel); s && s->as_int())
    e->set_stage(*s->as_int());
  e->set_node_count(static_cast<int64_t>(g->num_nodes()));
  (*summary->mutable_by_kind())[kind] += 1;
  summary->set_graphs(summary->graphs() + 1);
  if (!g->is_root()) {
    if (unknown)
      summary->set_dynamic_graphs(summary->dynamic_graphs() + 1);
    else
      summary->set_static_graphs(summary->static_graphs() + 1);
  }
}

// What enters a subgraph through its parent node, and what leaves through its NetOutput.
void add_boundary_edges(const sdk::Graph* g, report::PartitionReport* rp) {
  report::PartitionReport& r = *rp;
  const sdk::Node* parent = g->parent_node();
  if (!parent) return;
  for (const sdk::Node* n : g->nodes()) {
    if (n->type() == sdk::op::kData) {
      const int64_t index = n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (index < 0 || static_cast<size_t>(index) >= parent->num_inputs()) continue;
      const sdk::OutPort src = parent->input(static_cast<size_t>(index));
      if (!src.node) continue;
      report::BoundaryEdge* b = r.add_boundary_edges();
      b->set_from_graph(parent->owner()->name());
      b->set_from_node(src.node->name());
      b->set_from_output(src.index);
      b->set_to_graph(g->name());
      b->set_to_node(n->name());
      b->set_to_input(static_cast<int32_t>(index));
      b->set_tensor(src.node->output_desc(src.index).to_string());
    } else if (n->type() == sdk::op::kNetOutput && parent->type() == sdk::op::kPartitionedCall) {
      for (size_t j = 0; j < n->num_inputs() && j < parent->num_outputs(); ++j) {
        const sdk::OutPort src = n->input(j);
        if (!src.node) continue;
        for (const sdk::InPort& c : parent->consumers(j)) {
          report::BoundaryEdge* b = r.add_boundary_edges();
          b->set_from_graph(g->name());
          b->set_from_node(src.node->name());
          b->set_from_output(src.index);
          b->set_to_graph(parent->owner()->name());
          b->set_to_node(c.node->name());
          b->set_to_input(c.index);
          b->set_tensor(src.node->output_desc(src.index).to_string());
        }
      }
    }
  }
}

// The engine partitioner's subgraphs exist between its split and its merge-back; each partitioned graph keeps
// the list ("name|engine|stream label|node count").
void add_engine_subgraphs(const std::vector<const sdk::Graph*>& graphs, report::PartitionReport* rp) {
  report::PartitionReport& r = *rp;
  report::Summary* summary = r.mutable_summary();
  for (const sdk::Graph* g : graphs) {
    const sdk::AttrValue* parts = g->attrs().get(sdk::attr::kEnginePartitions);
    if (!parts || !parts->as_strings()) continue;
    for (const std::string& entry : *parts->as_strings()) {
      const std::vector<std::string> f = sdk::split(entry, '|');
      if (f.size() != 4) continue;
      report::GraphEntry* e = r.add_graphs();
      e->set_name(f[0]);
      e->mutable_parent_node()->set_null_value(google::protobuf::NULL_VALUE);
      e->set_kind("engine_subgraph");
      e->set_unknown_shape(g->attrs().get_bool(sdk::attr::kIsUnknownShape, false));
      e->set_engine(f[1]);
      if (!f[2].empty()) e->set_stream_label(f[2]);
      e->set_parent_graph(g->name());
      e->set_node_count(std::stoll(f[3]));
      (*summary->mutable_by_kind())["engine_subgraph"] += 1;
      summary->set_engine_subgraphs(summary->engine_subgraphs() + 1);
    }
  }
}

void add_decisions(const std::vector<sdk::Decision>& decisions, report::PartitionReport* rp) {
  report::PartitionReport& r = *rp;
  for (const sdk::Decision& d : decisions) {
    if (d.stage.rfind("placement.", 0) == 0) continue;  // the placement report has those
    report::Decision* dec = r.add_decisions();
    dec->set_code(std::string(sdk::to_string(d.code)));
    for (const std::string& n : d.nodes) dec->add_nodes(n);
    dec->set_detail(d.detail);
    dec->set_graph(d.graph);
    dec->set_node_count(static_cast<int64_t>(d.node_count));
    dec->set_stage(d.stage);
  }
}

}  // namespace

void build_partition_report(const sdk::Graph& root, const std::string& model,
                            const std::vector<sdk::Decision>& decisions, report::PartitionReport* out) {
  report::PartitionReport& r = *out;
  r.set_model(model);
  std::vector<const sdk::Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (const sdk::Graph* g : graphs) {
    add_graph_entry(g, &r);
    add_boundary_edges(g, &r);
  }
  r.mutable_summary()->set_boundary_edges(r.boundary_edges_size());
  add_engine_subgraphs(graphs, &r);
  add_decisions(decisions, &r);
}

sdk::Status partition_report_to_json(const report::PartitionReport& r, std::string* json) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  // The printer walks a map in its hash order, which differs from process to process; deterministic binary
  // serialization sorts map entries by key, and the binary-to-JSON path keeps that order.
  std::string binary;
  {
    google::protobuf::io::StringOutputStream stream(&binary);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    r.SerializeToCodedStream(&coded);
  }
  static const std::unique_ptr<google::protobuf::util::TypeResolver> resolver(
      google::protobuf::util::NewTypeResolverForDescriptorPool(
          "type.googleapis.com", google::protobuf::DescriptorPool::generated_pool()));
  auto st = google::protobuf::util::BinaryToJsonString(
      resolver.get(), "type.googleapis.com/" + r.GetDescriptor()->full_name(), binary, json, options);
  if (!st.ok()) return sdk::Status::internal("partition report: " + std::string(st.message()));
  return sdk::Status::ok();
}

sdk::Status partition_report_json(const sdk::Graph& root, const std::string& model,
                                  const std::vector<sdk::Decision>& decisions, std::string* json) {
  report::PartitionReport r;
  build_partition_report(root, model, decisions, &r);
  return partition_report_to_json(r, json);
}

}  // namespace graphsplit
