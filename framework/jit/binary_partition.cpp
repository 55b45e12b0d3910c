#include "jit/binary_partition.h"

#include <algorithm>
#include <map>

#include "common/ask_ahead.h"
#include "graphsplit/sdk/ir/names.h"

namespace graphsplit::jit {
namespace {

using sdk::Graph;
using sdk::Node;
using sdk::Status;
using Port = std::pair<std::string, int32_t>;

void remove_with_subgraphs(Graph& root, Node* n) {
  for (Graph* sg : n->subgraphs()) root.remove_subgraph(sg);
  root.remove_node(n);
}

Node* find_net_output(const Graph& g) {
  for (Node* n : g.nodes())
    if (n->type() == sdk::op::kNetOutput) return n;
  return nullptr;
}

// Data first (in `index` order), then the other nodes in their order, the NetOutput last: a valid order,
// since the copied nodes were in one and the new Data have no inputs.
Status put_in_order(Graph& g) {
  std::vector<Node*> data, body, tail;
  for (Node* n : g.nodes()) {
    if (sdk::is_data_like(n->type()))
      data.push_back(n);
    else if (n->type() == sdk::op::kNetOutput)
      tail.push_back(n);
    else
      body.push_back(n);
  }
  std::stable_sort(data.begin(), data.end(), [](const Node* a, const Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  data.insert(data.end(), body.begin(), body.end());
  data.insert(data.end(), tail.begin(), tail.end());
  return g.reorder(data);
}

std::vector<std::string> output_names(const Node& net) {
  const sdk::AttrValue* v = net.attrs().get(sdk::attr::kOutputNames);
  return v && v->as_strings() ? *v->as_strings() : std::vector<std::string>{};
}

// A NetOutput fed by `ports` (replacing `old`, whose control inputs it keeps); a value keeps the name the old
// NetOutput gave it, a new one takes its own.
Status rebuild_net_output(Graph& g, Node* old, const std::vector<Port>& ports) {
  std::vector<Node*> controls = old ? old->control_inputs() : std::vector<Node*>{};
  std::map<Port, std::string> known;
  if (old) {
    const std::vector<std::string> names = output_names(*old);
    for (size_t i = 0; i < old->num_inputs() && i < names.size(); ++i)
      if (old->input(i).node) known.emplace(Port{old->input(i).node->name(), old->input(i).index}, names[i]);
  }
  const std::string name = old ? old->name() : g.unique_node_name(sdk::op::kNetOutput);
  if (old) g.remove_node(old);
  Node* net = g.add_node(name, sdk::op::kNetOutput, ports.size(), 0);
  std::vector<std::string> names;
  for (size_t i = 0; i < ports.size(); ++i) {
    Node* p = g.find_node(ports[i].first);
    if (!p) return Status::internal("binary partition: lost the producer '" + ports[i].first + "'");
    GS_RETURN_IF_ERROR(g.add_edge({p, ports[i].second}, {net, static_cast<int32_t>(i)}));
    const std::string& value = p->output_name(static_cast<size_t>(ports[i].second));
    auto it = known.find(ports[i]);
    if (it != known.end())
      names.push_back(it->second);
    else
      names.push_back(value.empty() ? p->name() + ":" + std::to_string(ports[i].second) : value);
  }
  net->attrs().set(sdk::attr::kOutputNames, sdk::AttrValue::Strings(std::move(names)));
  for (Node* c : controls) GS_RETURN_IF_ERROR(g.add_control_edge(c, net));
  return Status::ok();
}

void external_edges(const Graph& g, const std::unordered_set<const Node*>& keep, BuiltGraph* out) {
  for (const Node* n : g.nodes()) {
    if (!keep.count(n)) continue;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (p.node && !keep.count(p.node))
        out->inputs.push_back({p.node->name(), p.index, n->name(), static_cast<int32_t>(i)});
    }
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      for (const sdk::InPort& c : n->consumers(o)) {
        if (keep.count(c.node)) continue;
        out->outputs.emplace_back(n->name(), static_cast<int32_t>(o));
        break;
      }
    }
  }
}

Status add_inputs(const Graph& g, Graph& copy, BuiltGraph* out) {
  int64_t index = 0;
  for (const Node* n : copy.nodes())
    if (sdk::is_data_like(n->type())) ++index;
  for (const BuiltGraph::Input& in : out->inputs) {
    const Node* producer = g.find_node(in.producer);
    Node* consumer = copy.find_node(in.consumer);
    const std::string& value = producer->output_name(static_cast<size_t>(in.producer_port));
    const std::string name = copy.unique_node_name(value.empty() ? in.producer : value);
    Node* d = copy.add_node(name, sdk::op::kData, 0, 0);
    d->add_output(producer->output_desc(static_cast<size_t>(in.producer_port)), name);
    d->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index++));
    GS_RETURN_IF_ERROR(copy.add_edge({d, 0}, {consumer, in.consumer_port}));
  }
  return Status::ok();
}

}  // namespace

namespace {

// The nodes, edges and control edges of `src` into the empty `dst`; attributes come later (they may name
// subgraphs not yet created). `twin` gets each copy by its original's Node::id(): looking copies up by name
// cost three hash lookups a node.
Status clone_nodes(const Graph& src, Graph& dst, std::vector<Node*>* twin) {
  twin->assign(src.id_bound(), nullptr);
  dst.reserve_nodes(src.num_nodes());
  // Each name's slot in the copy's index is asked for ahead (a cache miss each on a large graph).
  const std::vector<Node*> nodes = src.node_list();
  AskAhead ahead(nodes.size(), [&](size_t k) { dst.prefetch_name(nodes[k]->name()); });
  for (size_t k = 0; k < nodes.size(); ++k) {
    ahead.at(k);
    const Node* n = nodes[k];
    Node* m = dst.add_node(n->name(), n->type(), n->num_inputs(), 0);
    if (!m) return Status::internal("copy of graph '" + src.name() + "': node '" + n->name() + "' twice");
    for (size_t o = 0; o < n->num_outputs(); ++o) m->add_output(n->output_desc(o), n->output_name(o));
    (*twin)[n->id()] = m;
  }
  for (const Node* n : src.nodes()) {
    Node* m = (*twin)[n->id()];
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (p.node)
        GS_RETURN_IF_ERROR(dst.add_edge({(*twin)[p.node->id()], p.index}, {m, static_cast<int32_t>(i)}));
    }
    for (const Node* c : n->control_inputs()) GS_RETURN_IF_ERROR(dst.add_control_edge((*twin)[c->id()], m));
  }
  return Status::ok();
}

// Attributes, with every graph reference moved to the copy of that graph. Tensors share their bytes (they
// are immutable), so weights are not copied.
void clone_attrs(const Graph& src, Graph& dst, const std::vector<Node*>& twin,
                 const std::map<const Graph*, Graph*>& graphs) {
  for (const Node* n : src.nodes()) {
    Node* m = twin[n->id()];
    m->attrs() = n->attrs();
    for (const auto& [key, value] : n->attrs().entries()) {
      if (Graph* sg = value.as_graph()) {
        m->attrs().set(key, sdk::AttrValue::OfGraph(graphs.at(sg)));
      } else if (const auto* list = value.as_graphs()) {
        std::vector<Graph*> mapped;
        for (Graph* sg : *list) mapped.push_back(sg ? graphs.at(sg) : nullptr);
        m->attrs().set(key, sdk::AttrValue::Graphs(std::move(mapped)));
      }
    }
  }
  for (const auto& [key, value] : src.attrs().entries()) dst.attrs().set(key, value);
}

}  // namespace

Status copy_graph(const Graph& g, std::unique_ptr<Graph>* out, std::vector<Node*>* root_twins) {
  if (!g.is_root()) return Status::invalid_argument("copy of graph '" + g.name() + "': not a root graph");
  auto root = Graph::create(g.name());
  std::map<const Graph*, Graph*> graphs{{&g, root.get()}};
  std::map<const Graph*, std::vector<Node*>> twins;
  GS_RETURN_IF_ERROR(clone_nodes(g, *root, &twins[&g]));
  // Subgraphs in registration order, each once its parent's graph exists.
  std::vector<Graph*> pending(g.subgraphs().begin(), g.subgraphs().end());
  while (!pending.empty()) {
    std::vector<Graph*> later;
    for (Graph* sg : pending) {
      Graph* copy = nullptr;
      if (sg->is_detached()) {
        copy = root->add_detached_subgraph(sg->name());
      } else if (graphs.count(sg->parent_graph())) {
        copy = root->add_subgraph(sg->name(), twins.at(sg->parent_graph())[sg->parent_node()->id()]);
      } else {
        later.push_back(sg);
        continue;
      }
      if (!copy)
        return Status::internal("copy of graph '" + g.name() + "': subgraph '" + sg->name() + "' twice");
      graphs.emplace(sg, copy);
      GS_RETURN_IF_ERROR(clone_nodes(*sg, *copy, &twins[sg]));
    }
    if (later.size() == pending.size())
      return Status::internal("copy of graph '" + g.name() + "': a subgraph's parent is not in the model");
    pending = std::move(later);
  }
  std::vector<Graph*> order;
  for (Graph* sg : g.subgraphs()) order.push_back(graphs.at(sg));
  GS_RETURN_IF_ERROR(root->reorder_subgraphs(order));
  for (const auto& [from, to] : graphs) clone_attrs(*from, *to, twins.at(from), graphs);
  if (root_twins) *root_twins = std::move(twins.at(&g));
  *out = std::move(root);
  return Status::ok();
}

Status build_graph_from_nodes(const Graph& g, const std::unordered_set<const Node*>& nodes, BuiltGraph* out) {
  *out = BuiltGraph{};
  if (nodes.empty()) return Status::ok();
  external_edges(g, nodes, out);
  std::unique_ptr<Graph> copy;
  GS_RETURN_IF_ERROR(copy_graph(g, &copy));
  std::vector<std::string> doomed;
  for (const Node* n : g.nodes())
    if (!nodes.count(n)) doomed.push_back(n->name());
  for (const std::string& d : doomed) remove_with_subgraphs(*copy, copy->find_node(d));
  GS_RETURN_IF_ERROR(add_inputs(g, *copy, out));
  Node* net = find_net_output(*copy);
  std::vector<Port> ports;
  if (net) {
    for (const sdk::OutPort& p : net->inputs()) ports.emplace_back(p.node->name(), p.index);
    // Values already there keep their names; the new ones take theirs.
    ports.insert(ports.end(), out->outputs.begin(), out->outputs.end());
    out->outputs = ports;
  } else {
    ports = out->outputs;
  }
  GS_RETURN_IF_ERROR(rebuild_net_output(*copy, net, ports));
  GS_RETURN_IF_ERROR(put_in_order(*copy));
  out->graph = std::move(copy);
  return Status::ok();
}

namespace {

Status check_cut(const Graph& g, const std::unordered_set<const Node*>& slice,
                 const std::unordered_set<const Node*>& rest) {
  const std::string where = "binary partition of graph '" + g.name() + "': ";
  for (const Node* n : g.nodes()) {
    if (rest.count(n) && sdk::is_data_like(n->type()))
      return Status::invalid_argument(where + "Data '" + n->name() +
                                      "' is not in the inferred set: every graph input must be symbolized "
                                      "(E19999)");
  }
  for (const Node* n : g.nodes()) {
    if (!slice.count(n)) continue;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const Node* p = n->input(i).node;
      if (p && rest.count(p))
        return Status::invalid_argument(where + "inferred node '" + n->name() + "' takes input " +
                                        std::to_string(i) + " from '" + p->name() +
                                        "', which is not inferred (GRAPH_PARAM_INVALID)");
    }
    for (const Node* c : n->control_inputs()) {
      if (rest.count(c))
        return Status::invalid_argument(where + "inferred node '" + n->name() +
                                        "' has a control input from '" + c->name() +
                                        "', which is not inferred (GRAPH_PARAM_INVALID)");
    }
  }
  return Status::ok();
}

// The remaining graph's Data in `index` order (all of them are new: the graph's own Data are in the slice).
std::vector<Node*> data_by_index(const Graph& g, size_t count) {
  std::vector<Node*> data(count, nullptr);
  for (Node* n : g.nodes()) {
    const int64_t i = n->attrs().get_int(sdk::attr::kIndex, -1);
    if (sdk::is_data_like(n->type()) && i >= 0 && static_cast<size_t>(i) < count) data[i] = n;
  }
  return data;
}

// A Const or Variable output is not passed between the graphs: the remaining graph gets the node itself.
Status rematerialize(const Node& producer, Graph& r, Node** data) {
  std::vector<sdk::InPort> consumers = (*data)->consumers(0);
  r.remove_node(*data);
  *data = nullptr;
  Node* copy = r.find_node(producer.name());
  if (!copy) {
    copy = r.add_node(producer.name(), producer.type(), 0, 0);
    if (!copy) return Status::internal("binary partition: the name '" + producer.name() + "' is taken");
    for (size_t o = 0; o < producer.num_outputs(); ++o)
      copy->add_output(producer.output_desc(o), producer.output_name(o));
    for (const auto& [key, value] : producer.attrs().entries()) copy->attrs().set(key, value);
  }
  for (const sdk::InPort& c : consumers) {
    const sdk::InPort target{r.find_node(c.node->name()), c.index};
    GS_RETURN_IF_ERROR(r.add_edge({copy, 0}, target));
  }
  return Status::ok();
}

// Several remaining Data for one sliced value become the first of them.
Status merge_duplicates(Graph& r, const std::vector<BuiltGraph::Input>& inputs, std::vector<Node*>* data) {
  std::map<Port, Node*> first;
  for (size_t j = 0; j < data->size(); ++j) {
    Node* d = (*data)[j];
    if (!d) continue;
    auto [it, fresh] = first.emplace(Port{inputs[j].producer, inputs[j].producer_port}, d);
    if (fresh) continue;
    std::vector<sdk::InPort> consumers = d->consumers(0);
    r.remove_node(d);
    (*data)[j] = nullptr;
    for (const sdk::InPort& c : consumers) GS_RETURN_IF_ERROR(r.add_edge({it->second, 0}, c));
  }
  return Status::ok();
}

}  // namespace

Status binary_partition(const Graph& g, const std::unordered_set<const Node*>& inferred,
                        BinaryPartition* out) {
  *out = BinaryPartition{};
  if (inferred.empty())
    return Status::failed_precondition("binary partition of graph '" + g.name() +
                                       "': the inferred set is empty (GRAPH_FAILED)");
  const Node* net = find_net_output(g);
  std::unordered_set<const Node*> slice, rest;
  for (const Node* n : g.nodes()) {
    if (n != net) (inferred.count(n) ? slice : rest).insert(n);
  }
  GS_RETURN_IF_ERROR(check_cut(g, slice, rest));
  if (rest.empty()) return copy_graph(g, &out->sliced);
  if (net) rest.insert(net);
  BuiltGraph s, r;
  GS_RETURN_IF_ERROR(build_graph_from_nodes(g, slice, &s));
  GS_RETURN_IF_ERROR(build_graph_from_nodes(g, rest, &r));
  std::vector<Node*> data = data_by_index(*r.graph, r.inputs.size());
  std::vector<Port> dropped;
  for (size_t j = 0; j < data.size(); ++j) {
    const Node* p = g.find_node(r.inputs[j].producer);
    if (!sdk::is_const_like(p->type()) && !sdk::is_variable_like(p->type())) continue;
    GS_RETURN_IF_ERROR(rematerialize(*p, *r.graph, &data[j]));
    dropped.emplace_back(p->name(), r.inputs[j].producer_port);
  }
  GS_RETURN_IF_ERROR(merge_duplicates(*r.graph, r.inputs, &data));
  std::map<Port, int32_t> sliced_index;
  std::vector<Port> kept;
  for (const Port& p : s.outputs) {
    if (std::find(dropped.begin(), dropped.end(), p) != dropped.end()) continue;
    sliced_index.emplace(p, static_cast<int32_t>(kept.size()));
    kept.push_back(p);
  }
  int32_t next = 0;
  for (size_t j = 0; j < data.size(); ++j) {
    if (!data[j]) continue;
    data[j]->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(next));
    out->io.emplace_back(sliced_index.at({r.inputs[j].producer, r.inputs[j].producer_port}), next++);
  }
  Node* s_net = find_net_output(*s.graph);
  std::unordered_set<const Node*> controlled(s_net->control_inputs().begin(), s_net->control_inputs().end());
  for (const Port& p : dropped) {
    Node* c = s.graph->find_node(p.first);
    if (controlled.insert(c).second) GS_RETURN_IF_ERROR(s.graph->add_control_edge(c, s_net));
  }
  GS_RETURN_IF_ERROR(rebuild_net_output(*s.graph, s_net, kept));
  GS_RETURN_IF_ERROR(put_in_order(*r.graph));
  out->sliced = std::move(s.graph);
  out->remaining = std::move(r.graph);
  return Status::ok();
}

}  // namespace graphsplit::jit
