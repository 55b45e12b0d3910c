#include <algorithm>
#include <set>
#include <unordered_set>

#include "graphsplit/sdk/ir/verify.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {

using namespace runtime_detail;

// ---------------------------------------------------------------- expansion (reference section 9, R18)
namespace {

// Calls already expanded and their emptied subgraphs, removed together at the end. One at a time, each
// removal searched the root's subgraph list from its tail while expansion empties it from its head: on a
// model with 67k calls that was 51 s of a 56 s omrun start. A call stays in its graph until then, read by
// nothing.
struct Expanded {
  std::vector<Graph*> subgraphs;
  std::map<Graph*, std::vector<Node*>> calls;  // by graph, in expansion order
  std::unordered_set<const Node*> call_set;

  bool pending(const Node* n) const { return n && call_set.count(n) > 0; }
  void flush(Graph& root) {
    root.remove_subgraphs(subgraphs);  // clears each call's reference first, while the call still exists
    for (auto& [graph, nodes] : calls) graph->remove_nodes(nodes);
    subgraphs.clear();
    calls.clear();
    call_set.clear();
  }
};

// Whether names could come out otherwise than when each call was removed at once: a node of the subgraph
// named as a call still held, or a taken NoOp name (unique_node_name then probes names a held call may have).
// Flushing first keeps names exactly as before; it is rare, so the flushes cost little.
bool needs_flush(const Graph& parent, const Graph& sub, const std::string& call_name, const Expanded& done) {
  if (done.call_set.empty()) return false;
  for (const char* suffix : {"_pre_noop", "_post_noop"}) {
    if (parent.find_node(call_name + suffix)) return true;
  }
  for (const Node* n : sub.nodes()) {
    if (done.pending(parent.find_node(n->name()))) return true;
  }
  return false;
}

Status expand_one(Graph& root, Node* call, Expanded* done) {
  Graph& parent = *call->owner();
  const sdk::AttrValue* f = call->attrs().get("f");
  Graph* sub = f ? f->as_graph() : nullptr;
  if (!sub) return Status::invalid_argument("PartitionedCall '" + call->name() + "' has no subgraph");
  if (needs_flush(parent, *sub, call->name(), *done)) done->flush(root);
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
  sub->remove_nodes(doomed);
  std::vector<Node*> rest = sub->node_list();
  GS_RETURN_IF_ERROR(sub->move_nodes_to(rest, &parent));
  // The call's readers are rewired below, so they leave it now. Its own inputs and control edges go when
  // flush() removes it, all calls at once: a producer that feeds thousands of calls (a shape input) has its
  // consumer list compacted once, where a removal per call searched it each time.
  std::vector<sdk::InPort> readers;
  for (const auto& consumers : call_consumers)
    readers.insert(readers.end(), consumers.begin(), consumers.end());
  parent.disconnect_inputs(readers);
  done->subgraphs.push_back(sub);
  done->calls[&parent].push_back(call);
  done->call_set.insert(call);
  std::set<const Node*> ordered;  // pre's control outputs so far: one search each, not a walk of the list
  for (const auto& [src, consumers] : feeds) {
    for (const sdk::InPort& c : consumers) {
      GS_RETURN_IF_ERROR(parent.add_edge(src, c));
      if (ordered.insert(c.node).second) GS_RETURN_IF_ERROR(parent.add_control_edge(pre, c.node));
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

// The calls of `g` in node order, those flush() has yet to remove left out.
std::vector<Node*> calls_of(const Graph& g, const Expanded& done) {
  std::vector<Node*> out;
  for (Node* n : g.nodes()) {
    if (n->type() == sdk::op::kPartitionedCall && !done.pending(n)) out.push_back(n);
  }
  return out;
}

}  // namespace

Status expand_partitioned_calls(Graph& root, size_t* expanded) {
  *expanded = 0;
  // The order of expanding one call at a time, always the first left (the root's nodes first, then each
  // subgraph's in registration order), without searching from the start each time: a graph's calls are
  // expanded in node order, and the calls their subgraphs brought in, appended behind, in the next round.
  // Graphs before the current one gain nothing, since an expansion moves nodes into the call's own graph.
  Expanded done;
  std::vector<Graph*> graphs = {&root};
  for (Graph* g : root.subgraphs()) graphs.push_back(g);
  const Status status = [&]() -> Status {
    for (Graph* g : graphs) {
      if (g != &root && !root.owns_graph(g)) continue;  // removed by a flush (compares the address only)
      for (std::vector<Node*> round = calls_of(*g, done); !round.empty(); round = calls_of(*g, done)) {
        for (Node* call : round) {
          GS_RETURN_IF_ERROR(expand_one(root, call, &done));
          ++*expanded;
        }
      }
    }
    return Status::ok();
  }();
  done.flush(root);  // on a failure too: the calls expanded before it leave as they did one by one
  GS_RETURN_IF_ERROR(status);
  // Rewired through Graph's functions alone, which keep both directions of an edge.
  return sdk::verify(root, {.edges = false});
}

}  // namespace graphsplit
