#include <algorithm>
#include <set>

#include "graphsplit/sdk/ir/verify.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {

using namespace runtime_detail;

// ---------------------------------------------------------------- expansion (reference section 9, R18)
namespace {

Status expand_one(Graph& root, Node* call) {
  Graph& parent = *call->owner();
  const sdk::AttrValue* f = call->attrs().get("f");
  Graph* sub = f ? f->as_graph() : nullptr;
  if (!sub) return Status::invalid_argument("PartitionedCall '" + call->name() + "' has no subgraph");
  // Checked before anything changes, so a refused expansion leaves the graph as it was.
  for (const Node* n : sub->nodes()) {
    if (n->type() != sdk::op::kData && n->type() != sdk::op::kNetOutput && parent.find_node(n->name()))
      return Status::failed_precondition("cannot expand PartitionedCall '" + call->name() + "': its node '" +
                                         n->name() + "' has the name of a node of graph '" + parent.name() +
                                         "'");
  }
  Node* pre = parent.add_node(parent.unique_node_name(call->name() + "_pre_noop"), sdk::op::kNoOp, 0, 0);
  Node* post = parent.add_node(parent.unique_node_name(call->name() + "_post_noop"), sdk::op::kNoOp, 0, 0);
  // In-control edges go to pre_noop, out-control edges leave from post_noop (GE drops both; R18).
  for (Node* c : std::vector<Node*>(call->control_inputs()))
    GS_RETURN_IF_ERROR(parent.add_control_edge(c, pre));
  for (Node* c : std::vector<Node*>(call->control_outputs()))
    GS_RETURN_IF_ERROR(parent.add_control_edge(post, c));
  // Inner Data: remember the outer source and the inner consumers.
  std::map<std::pair<Node*, int>, sdk::OutPort> data_source;  // inner (Data, 0) -> outer producer
  std::vector<std::pair<sdk::OutPort, std::vector<sdk::InPort>>> feeds;
  std::vector<Node*> doomed;
  Node* net_output = nullptr;
  for (Node* n : sub->nodes()) {
    if (n->type() == sdk::op::kData) {
      const int64_t index = n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
      if (index < 0 || static_cast<size_t>(index) >= call->num_inputs() || !call->input(index).valid())
        return Status::invalid_argument("PartitionedCall '" + call->name() + "': inner Data '" + n->name() +
                                        "' names no connected input");
      const sdk::OutPort src = call->input(index);
      data_source[{n, 0}] = src;
      feeds.emplace_back(src, n->consumers(0));
      doomed.push_back(n);
    } else if (n->type() == sdk::op::kNetOutput) {
      net_output = n;
    }
  }
  if (!net_output)
    return Status::invalid_argument("PartitionedCall '" + call->name() + "': the subgraph has no NetOutput");
  std::vector<sdk::OutPort> producers;
  for (const sdk::OutPort& p : net_output->inputs()) producers.push_back(p);
  std::vector<Node*> finishing(net_output->control_inputs().begin(), net_output->control_inputs().end());
  std::vector<std::vector<sdk::InPort>> call_consumers;
  for (size_t o = 0; o < call->num_outputs(); ++o) call_consumers.push_back(call->consumers(o));
  doomed.push_back(net_output);
  for (Node* d : doomed) sub->remove_node(d);
  std::vector<Node*> rest = sub->node_list();
  GS_RETURN_IF_ERROR(sub->move_nodes_to(rest, &parent));
  root.remove_subgraph(sub);  // empty now; this also clears the call's reference to it
  parent.remove_node(call);
  for (const auto& [src, consumers] : feeds) {
    for (const sdk::InPort& c : consumers) {
      GS_RETURN_IF_ERROR(parent.add_edge(src, c));
      if (std::find(pre->control_outputs().begin(), pre->control_outputs().end(), c.node) ==
          pre->control_outputs().end())
        GS_RETURN_IF_ERROR(parent.add_control_edge(pre, c.node));
    }
  }
  for (size_t o = 0; o < call_consumers.size() && o < producers.size(); ++o) {
    sdk::OutPort p = producers[o];
    if (auto it = data_source.find({p.node, p.index}); it != data_source.end())
      p = it->second;  // pass-through
    for (const sdk::InPort& c : call_consumers[o]) GS_RETURN_IF_ERROR(parent.add_edge(p, c));
  }
  for (Node* f2 : finishing) GS_RETURN_IF_ERROR(parent.add_control_edge(f2, post));
  return Status::ok();
}

}  // namespace

Status expand_partitioned_calls(Graph& root, size_t* expanded) {
  *expanded = 0;
  for (;;) {
    Node* call = nullptr;
    std::vector<Graph*> graphs = {&root};
    for (Graph* g : root.subgraphs()) graphs.push_back(g);
    for (Graph* g : graphs) {
      for (Node* n : g->nodes()) {
        if (n->type() == sdk::op::kPartitionedCall) {
          call = n;
          break;
        }
      }
      if (call) break;
    }
    if (!call) break;
    GS_RETURN_IF_ERROR(expand_one(root, call));
    ++*expanded;
  }
  return sdk::verify(root);
}

}  // namespace graphsplit
