#include "graphsplit/sdk/ir/verify.h"

#include <algorithm>
#include <iterator>
#include <unordered_set>

#include "graphsplit/sdk/ir/topo.h"
#include "topo_internal.h"

namespace graphsplit::sdk {
namespace {

std::string where(const Graph& g, const Node* n) {
  return "graph '" + g.name() + "': node '" + n->name() + "' (" + n->type() + ")";
}

Status fail(const Graph& g, const Node* n, const std::string& what) {
  return Status::failed_precondition("IR verification failed: " + where(g, n) + ": " + what);
}

// Linear in the edges (a hub with 100k consumers must not cost 100k^2): every edge is seen from both ends,
// counted per producer output, and the consumer lists are checked for duplicates after a sort.
using ControlEdges = std::vector<std::pair<int64_t, int64_t>>;  // (from id, to id)
// Per node id and output: how many inputs name it; one flat array (a vector per node was a million heap
// blocks for a million nodes), node id k's outputs from first[k].
struct Uses {
  std::vector<size_t> first;
  std::vector<size_t> count;
  size_t& at(const Node* n, size_t output) { return count[first[static_cast<size_t>(n->id())] + output]; }
};

// Every data input names an existing output of a node of this graph.
Status verify_inputs(const Graph& g, const Node* n, Uses* uses) {
  for (size_t i = 0; i < n->num_inputs(); ++i) {
    const OutPort p = n->input(i);
    if (!p.node) continue;
    if (p.node->owner() != &g) {
      return fail(
          g, n, "input " + std::to_string(i) + " comes from node '" + p.node->name() + "' of another graph");
    }
    if (p.index < 0 || static_cast<size_t>(p.index) >= p.node->num_outputs()) {
      return fail(g, n,
                  "input " + std::to_string(i) + " names missing output " + std::to_string(p.index) +
                      " of node '" + p.node->name() + "'");
    }
    ++uses->at(p.node, static_cast<size_t>(p.index));
  }
  return Status::ok();
}

// Whether a consumer list names one input twice. Most lists are short: comparing every pair in place costs
// less than the sorted copy a long list needs (a heap block and a sort per output with two consumers or more
// was a third of the verifier's time on an imported random graph).
bool has_repeat(const std::vector<InPort>& cons) {
  constexpr size_t kPairwise = 16;
  if (cons.size() <= kPairwise) {
    for (size_t i = 1; i < cons.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (cons[i].node == cons[j].node && cons[i].index == cons[j].index) return true;
      }
    }
    return false;
  }
  std::vector<std::pair<int64_t, int32_t>> keys;
  keys.reserve(cons.size());
  for (const InPort& c : cons) keys.emplace_back(c.node->id(), c.index);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

// Every consumer an output lists points back at it, once.
Status verify_consumers(const Graph& g, const Node* n) {
  for (size_t o = 0; o < n->num_outputs(); ++o) {
    const auto& cons = n->consumers(o);
    for (const InPort& c : cons) {
      if (!c.node || c.node->owner() != &g) {
        return fail(g, n, "output " + std::to_string(o) + " feeds a node of another graph");
      }
      if (c.index < 0 || static_cast<size_t>(c.index) >= c.node->num_inputs() ||
          c.node->input(c.index) != OutPort{const_cast<Node*>(n), static_cast<int32_t>(o)}) {
        return fail(g, n,
                    "output " + std::to_string(o) + " lists consumer '" + c.node->name() + "' input " +
                        std::to_string(c.index) + ", which does not point back");
      }
    }
    if (has_repeat(cons)) return fail(g, n, "output " + std::to_string(o) + " lists a consumer twice");
  }
  return Status::ok();
}

// Control edges are mirrored exactly once; the message names one offending edge.
Status verify_control_mirror(const Graph& g, ControlEdges& ctrl_out, ControlEdges& ctrl_in) {
  std::sort(ctrl_out.begin(), ctrl_out.end());
  std::sort(ctrl_in.begin(), ctrl_in.end());
  if (ctrl_out != ctrl_in || std::adjacent_find(ctrl_out.begin(), ctrl_out.end()) != ctrl_out.end()) {
    // Name one offending edge.
    ControlEdges diff;
    std::set_symmetric_difference(ctrl_out.begin(), ctrl_out.end(), ctrl_in.begin(), ctrl_in.end(),
                                  std::back_inserter(diff));
    if (diff.empty()) diff.push_back(*std::adjacent_find(ctrl_out.begin(), ctrl_out.end()));
    const Node* a = nullptr;
    const Node* b = nullptr;
    for (const Node* n : g.nodes()) {
      if (n->id() == diff.front().first) a = n;
      if (n->id() == diff.front().second) b = n;
    }
    return fail(g, a ? a : b,
                "control edge to '" + (b ? b->name() : std::string("?")) + "' is not mirrored exactly once");
  }
  return Status::ok();
}

Status verify_edges(const Graph& g) {
  size_t seen = 0, outputs = 0;
  Uses uses;
  uses.first.assign(g.id_bound(), 0);
  ControlEdges ctrl_out, ctrl_in;
  for (const Node* n : g.nodes()) {
    ++seen;
    if (n->owner() != &g) return fail(g, n, "owner pointer does not point at this graph");
    if (g.find_node(n->name()) != n) return fail(g, n, "name index disagrees (duplicate or renamed node)");
    uses.first[static_cast<size_t>(n->id())] = outputs;
    outputs += n->num_outputs();
  }
  uses.count.assign(outputs, 0);
  for (const Node* n : g.nodes()) {
    GS_RETURN_IF_ERROR(verify_inputs(g, n, &uses));
    GS_RETURN_IF_ERROR(verify_consumers(g, n));
    if (!n->any_control_edges()) continue;
    for (const Node* c : n->control_outputs()) {
      if (c->owner() != &g) return fail(g, n, "control edge to a node of another graph");
      ctrl_out.emplace_back(n->id(), c->id());
    }
    for (const Node* p : n->control_inputs()) {
      if (p->owner() != &g) return fail(g, n, "control edge from a node of another graph");
      ctrl_in.emplace_back(p->id(), n->id());
    }
  }
  // Every input is listed among its producer's consumers: each consumer entry points back (above) and there
  // are as many entries as inputs naming the output.
  for (const Node* n : g.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      if (uses.at(n, o) != n->consumers(o).size()) {
        return fail(g, n,
                    "output " + std::to_string(o) + " has " + std::to_string(n->consumers(o).size()) +
                        " consumers listed but " + std::to_string(uses.at(n, o)) + " inputs read it");
      }
    }
  }
  GS_RETURN_IF_ERROR(verify_control_mirror(g, ctrl_out, ctrl_in));
  if (seen != g.num_nodes())
    return Status::failed_precondition("IR verification failed: graph '" + g.name() +
                                       "': node count mismatch");
  return Status::ok();
}

const Node* find_net_output(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->type() == op::kNetOutput) return n;
  }
  return nullptr;
}

// How a control-flow node's inputs and outputs map onto one of its subgraphs.
struct IoContract {
  int64_t first_data_index;  // smallest legal _parent_node_index
  int64_t extra_outputs;     // subgraph outputs minus node outputs
  bool exact_inputs;         // every node input needs its Data (PartitionedCall)
};

bool contract_for(const Node* n, IoContract* c) {
  const std::string& t = n->type();
  if (t == op::kPartitionedCall)
    *c = {0, 0, true};
  else if (t == op::kIf || t == op::kCase)
    *c = {1, 0, false};
  else if (t == op::kLoop)
    *c = {0, 1, false};  // the body also returns the loop condition
  else if (t == op::kScan || t == op::kWhile)
    *c = {0, 0, false};
  else
    return false;
  return true;
}

Status verify_subgraph_io(const Graph& parent_graph, const Node* n, const Graph& sub) {
  IoContract contract;
  if (!contract_for(n, &contract)) return Status::ok();
  const auto inputs = static_cast<int64_t>(n->num_inputs());
  std::vector<char> covered(n->num_inputs(), 0);
  for (const Node* d : sub.nodes()) {
    if (d->type() != op::kData) continue;
    const AttrValue* a = d->attrs().get(attr::kParentNodeIndex);
    if (!a || !a->as_int()) {
      return fail(
          parent_graph, n,
          "Data '" + d->name() + "' of subgraph '" + sub.name() + "' has no integer _parent_node_index");
    }
    const int64_t idx = *a->as_int();
    if (idx < contract.first_data_index || idx >= inputs) {
      return fail(parent_graph, n,
                  "Data '" + d->name() + "' of subgraph '" + sub.name() + "' has _parent_node_index " +
                      std::to_string(idx) + " but the node has " + std::to_string(inputs) + " inputs");
    }
    covered[idx] = 1;
  }
  if (contract.exact_inputs) {
    for (int64_t i = 0; i < inputs; ++i) {
      if (!covered[i]) {
        return fail(parent_graph, n,
                    "input " + std::to_string(i) + " has no Data in subgraph '" + sub.name() + "'");
      }
    }
  }
  const Node* out = find_net_output(sub);
  const int64_t sub_outputs = out ? static_cast<int64_t>(out->num_inputs()) : 0;
  const int64_t expected = static_cast<int64_t>(n->num_outputs()) + contract.extra_outputs;
  if (sub_outputs != expected) {
    return fail(parent_graph, n,
                "subgraph '" + sub.name() + "' returns " + std::to_string(sub_outputs) +
                    " values but the node expects " + std::to_string(expected));
  }
  return Status::ok();
}

Status verify_structure(const Graph& root) {
  const std::vector<Graph*>& subs = root.subgraphs();
  std::unordered_set<const Graph*> registered(subs.begin(), subs.end());
  registered.insert(&root);
  std::unordered_set<const Graph*> referenced;
  std::vector<const Graph*> graphs{&root};
  graphs.insert(graphs.end(), subs.begin(), subs.end());
  for (const Graph* g : graphs) {
    for (const Node* n : g->nodes()) {
      for (const auto& [key, value] : n->attrs().entries()) {
        std::vector<Graph*> refs;
        if (value.kind() == AttrValue::Kind::kGraph) refs.push_back(value.as_graph());
        if (value.as_graphs()) refs = *value.as_graphs();
        for (const Graph* r : refs) {
          // Membership is checked on the address alone, before anything is read through the pointer.
          if (!r || !registered.count(r) || r == &root) {
            return fail(*g, n,
                        "attribute '" + key.str() + "' references a graph that is not registered on root '" +
                            root.name() + "'");
          }
          if (r->parent_node() != n) {
            return fail(*g, n,
                        "attribute '" + key.str() + "' references subgraph '" + r->name() +
                            "', whose parent node is another node");
          }
          if (!referenced.insert(r).second) {
            return fail(*g, n, "subgraph '" + r->name() + "' is referenced more than once");
          }
          GS_RETURN_IF_ERROR(verify_subgraph_io(*g, n, *r));
        }
      }
    }
  }
  for (const Graph* s : subs) {
    if (s->is_detached()) {
      return Status::failed_precondition("IR verification failed: subgraph '" + s->name() +
                                         "' is a detached work graph that was never put back");
    }
    if (!referenced.count(s)) {
      return Status::failed_precondition("IR verification failed: subgraph '" + s->name() +
                                         "' is registered but no node references it (unreachable)");
    }
    // The parent chain must end at the root: at most one step per registered graph.
    const Graph* cur = s;
    size_t steps = 0;
    while (cur != &root) {
      const Node* p = cur->parent_node();
      if (!p || !registered.count(p->owner()) || ++steps > subs.size()) {
        return Status::failed_precondition("IR verification failed: subgraph '" + s->name() +
                                           "' is not reachable from the root through parent nodes");
      }
      cur = p->owner();
    }
  }
  return Status::ok();
}

}  // namespace

Status verify(const Graph& root) {
  return verify(root, VerifyOptions{});
}

Status verify(const Graph& root, const VerifyOptions& options) {
  if (!root.is_root())
    return Status::invalid_argument("verify() takes the root graph, got '" + root.name() + "'");
  if (options.edges) {
    GS_RETURN_IF_ERROR(verify_edges(root));
    for (const Graph* g : root.subgraphs()) GS_RETURN_IF_ERROR(verify_edges(*g));
  }
  GS_RETURN_IF_ERROR(verify_structure(root));
  GS_RETURN_IF_ERROR(check_acyclic(root));
  for (const Graph* g : root.subgraphs()) GS_RETURN_IF_ERROR(check_acyclic(*g));
  return Status::ok();
}

Status verify_graph(const Graph& graph) {
  GS_RETURN_IF_ERROR(verify_edges(graph));
  for (const Node* n : graph.nodes()) {
    for (const Graph* sub : n->subgraphs()) {
      if (!graph.root()->owns_graph(sub) || sub == graph.root())
        return fail(graph, n, "references a graph that is not registered on its root");
      GS_RETURN_IF_ERROR(verify_subgraph_io(graph, n, *sub));
    }
  }
  return check_acyclic(graph);
}

}  // namespace graphsplit::sdk
