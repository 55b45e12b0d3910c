#include "graphsplit/sdk/partition_frames.h"

#include <algorithm>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::sdk {
namespace {

struct InputRecord {
  int32_t call_input;
  Node* member;
  int32_t member_input;
  TensorDesc desc;
};

struct OutputRecord {
  int32_t call_output;
  Node* member;
  int32_t member_output;
};

struct Pending {
  Node* call = nullptr;
  Graph* subgraph = nullptr;
  std::vector<InputRecord> inputs;
  std::vector<OutputRecord> outputs;
  std::vector<Node*> control_to_output;  // members whose control edges leave the frame
};

}  // namespace

Status build_frames(Graph& graph, const std::vector<FrameSpec>& specs, const FrameOptions& options,
                    std::vector<Frame>* frames) {
  frames->clear();
  Graph* root = graph.root();
  std::vector<int> frame_of(graph.id_bound(), -1);
  const std::vector<Node*> old_order = graph.node_list();
  for (size_t k = 0; k < specs.size(); ++k) {
    if (specs[k].members.empty()) {
      return Status::invalid_argument("build_frames: frame '" + specs[k].subgraph_name + "' has no members");
    }
    for (Node* m : specs[k].members) {
      if (!m || m->owner() != &graph) {
        return Status::invalid_argument("build_frames: frame '" + specs[k].subgraph_name +
                                        "' lists a node of another graph");
      }
      if (frame_of[m->id()] >= 0) {
        return Status::invalid_argument("build_frames: node '" + m->name() + "' is in two frames");
      }
      frame_of[m->id()] = static_cast<int>(k);
    }
  }
  // Which frame each node of the old order joins, taken now: moving a node changes its id.
  std::vector<int> old_frame(old_order.size());
  for (size_t i = 0; i < old_order.size(); ++i) old_frame[i] = frame_of[old_order[i]->id()];
  auto frame_index = [&](const Node* n) -> int {
    return (n->owner() == &graph && static_cast<size_t>(n->id()) < frame_of.size()) ? frame_of[n->id()] : -1;
  };

  // Calls and subgraphs.
  std::vector<Pending> pending(specs.size());
  for (size_t k = 0; k < specs.size(); ++k) {
    Node* call = graph.add_node(specs[k].call_name, std::string(op::kPartitionedCall));
    if (!call)
      return Status::invalid_argument("build_frames: graph '" + graph.name() +
                                      "' already has a node named '" + specs[k].call_name + "'");
    Graph* sub = root->add_subgraph(specs[k].subgraph_name, call);
    if (!sub)
      return Status::invalid_argument("build_frames: subgraph name '" + specs[k].subgraph_name +
                                      "' is taken");
    call->attrs().set("f", AttrValue::OfGraph(sub));
    for (const auto& [key, value] : specs[k].call_attrs.entries()) call->attrs().set(key, value);
    for (const auto& [key, value] : specs[k].subgraph_attrs.entries()) sub->attrs().set(key, value);
    pending[k].call = call;
    pending[k].subgraph = sub;
  }
  frame_of.resize(graph.id_bound(), -1);  // calls belong to no frame

  auto members_in_order = [&](size_t k) {
    std::vector<Node*> m = specs[k].members;
    std::sort(m.begin(), m.end(), [](const Node* a, const Node* b) { return a->id() < b->id(); });
    return m;
  };

  // Outputs first: consumers outside the frame move to the call, so that a consumer inside another frame then
  // sees the call as its producer.
  for (size_t k = 0; k < specs.size(); ++k) {
    Pending& p = pending[k];
    for (Node* m : members_in_order(k)) {
      for (size_t o = 0; o < m->num_outputs(); ++o) {
        std::vector<InPort> outside;
        for (const InPort& c : m->consumers(o)) {
          if (frame_index(c.node) != static_cast<int>(k)) outside.push_back(c);
        }
        if (outside.empty()) continue;
        const int32_t j = p.call->add_output(m->output_desc(o), m->output_name(o));
        for (const InPort& c : outside) {
          graph.disconnect_input(c);
          GS_RETURN_IF_ERROR(graph.add_edge({p.call, j}, c));
        }
        p.outputs.push_back({j, m, static_cast<int32_t>(o)});
      }
    }
  }
  // Inputs: one call input per member input fed from outside.
  for (size_t k = 0; k < specs.size(); ++k) {
    Pending& p = pending[k];
    for (Node* m : members_in_order(k)) {
      for (size_t i = 0; i < m->num_inputs(); ++i) {
        const OutPort src = m->input(i);
        if (!src.node || frame_index(src.node) == static_cast<int>(k)) continue;
        const int32_t idx = p.call->add_input();
        const TensorDesc desc = src.node->output_desc(src.index);
        graph.disconnect_input({m, static_cast<int32_t>(i)});
        GS_RETURN_IF_ERROR(graph.add_edge(src, {p.call, idx}));
        p.inputs.push_back({idx, m, static_cast<int32_t>(i), desc});
      }
    }
  }
  // Control edges that cross a frame boundary end on the calls.
  for (size_t k = 0; k < specs.size(); ++k) {
    Pending& p = pending[k];
    for (Node* m : members_in_order(k)) {
      for (Node* x : std::vector<Node*>(m->control_inputs())) {
        const int fx = frame_index(x);
        if (fx == static_cast<int>(k)) continue;
        GS_RETURN_IF_ERROR(graph.remove_control_edge(x, m));
        Node* src = fx >= 0 ? pending[fx].call : x;
        GS_RETURN_IF_ERROR(graph.add_control_edge(src, p.call));
        if (fx >= 0) pending[fx].control_to_output.push_back(x);
      }
      for (Node* y : std::vector<Node*>(m->control_outputs())) {
        const int fy = frame_index(y);
        if (fy == static_cast<int>(k)) continue;
        GS_RETURN_IF_ERROR(graph.remove_control_edge(m, y));
        Node* dst = fy >= 0 ? pending[fy].call : y;
        GS_RETURN_IF_ERROR(graph.add_control_edge(p.call, dst));
        p.control_to_output.push_back(m);
      }
    }
  }
  // Members move into their subgraphs, which get their inner Data and NetOutput.
  for (size_t k = 0; k < specs.size(); ++k) {
    Pending& p = pending[k];
    Graph* sub = p.subgraph;
    const std::vector<Node*> members = members_in_order(k);
    GS_RETURN_IF_ERROR(graph.move_nodes_to(members, sub));
    std::vector<Node*> order;
    for (const InputRecord& in : p.inputs) {
      const std::string prefix =
          options.inner_data_prefix.empty() ? sub->name() + "_Data_" : options.inner_data_prefix;
      Node* d = sub->add_node(sub->unique_node_name(prefix + std::to_string(in.call_input)),
                              std::string(op::kData), 0, 0);
      d->add_output(in.desc);
      d->attrs().set(attr::kIndex, AttrValue::Int(in.call_input));
      d->attrs().set(attr::kParentNodeIndex, AttrValue::Int(in.call_input));
      for (const std::string& name : options.copy_to_inner_data) {
        if (const AttrValue* v = in.member->attrs().get(name)) d->attrs().set(name, *v);
      }
      GS_RETURN_IF_ERROR(sub->add_edge({d, 0}, {in.member, in.member_input}));
      order.push_back(d);
    }
    order.insert(order.end(), members.begin(), members.end());
    std::sort(p.control_to_output.begin(), p.control_to_output.end(),
              [](const Node* a, const Node* b) { return a->id() < b->id(); });
    p.control_to_output.erase(std::unique(p.control_to_output.begin(), p.control_to_output.end()),
                              p.control_to_output.end());
    if (!p.outputs.empty() || !p.control_to_output.empty()) {
      const std::string out_name =
          options.inner_output_name.empty() ? sub->name() + "_Node_Output" : options.inner_output_name;
      Node* out =
          sub->add_node(sub->unique_node_name(out_name), std::string(op::kNetOutput), p.outputs.size(), 0);
      for (const OutputRecord& o : p.outputs) {
        GS_RETURN_IF_ERROR(sub->add_edge({o.member, o.member_output}, {out, o.call_output}));
      }
      for (Node* m : p.control_to_output) GS_RETURN_IF_ERROR(sub->add_control_edge(m, out));
      order.push_back(out);
    }
    GS_RETURN_IF_ERROR(sub->reorder(order));
    frames->push_back({p.call, sub});
  }
  // Each call takes its first member's place, then a stable sort repairs whatever that made invalid.
  std::vector<Node*> order;
  std::vector<char> placed(specs.size(), 0);
  for (size_t i = 0; i < old_order.size(); ++i) {
    const int k = old_frame[i];
    if (k < 0) {
      order.push_back(old_order[i]);
    } else if (!placed[k]) {
      placed[k] = 1;
      order.push_back(pending[k].call);
    }
  }
  GS_RETURN_IF_ERROR(graph.reorder(order));
  return topological_sort(graph, TopoSortMode::kStableRDFS).with_context("build_frames: ");
}

}  // namespace graphsplit::sdk
