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

// build_frames, one step per method, sharing the frame of every node and the calls being built.
class FrameBuilder {
 public:
  FrameBuilder(Graph& graph, const std::vector<FrameSpec>& specs, const FrameOptions& options)
      : graph_(graph), specs_(specs), options_(options), pending_(specs.size()) {
    for (const std::string& name : options.copy_to_inner_data) copied_keys_.emplace_back(name);
  }

  Status run(std::vector<Frame>* frames) {
    GS_RETURN_IF_ERROR(index_members());
    // Which frame each node of the old order joins, taken now: moving a node changes its id.
    const std::vector<Node*> old_order = graph_.node_list();
    std::vector<int> old_frame(old_order.size());
    for (size_t i = 0; i < old_order.size(); ++i) old_frame[i] = frame_of_[old_order[i]->id()];
    GS_RETURN_IF_ERROR(create_calls());
    // Outputs first: consumers outside a frame move to its call, so that a consumer inside another frame then
    // sees the call as its producer.
    for (size_t k = 0; k < specs_.size(); ++k) GS_RETURN_IF_ERROR(rewire_outputs(k));
    GS_RETURN_IF_ERROR(rewire_inputs());
    for (size_t k = 0; k < specs_.size(); ++k) GS_RETURN_IF_ERROR(rewire_control(k));
    for (size_t k = 0; k < specs_.size(); ++k) {
      GS_RETURN_IF_ERROR(fill_subgraph(k));
      frames->push_back({pending_[k].call, pending_[k].subgraph});
    }
    return restore_order(old_order, old_frame);
  }

 private:
  Status index_members() {
    frame_of_.assign(graph_.id_bound(), -1);
    for (size_t k = 0; k < specs_.size(); ++k) {
      if (specs_[k].members.empty())
        return Status::invalid_argument("build_frames: frame '" + specs_[k].subgraph_name +
                                        "' has no members");
      for (Node* m : specs_[k].members) {
        if (!m || m->owner() != &graph_)
          return Status::invalid_argument("build_frames: frame '" + specs_[k].subgraph_name +
                                          "' lists a node of another graph");
        if (frame_of_[m->id()] >= 0)
          return Status::invalid_argument("build_frames: node '" + m->name() + "' is in two frames");
        frame_of_[m->id()] = static_cast<int>(k);
      }
    }
    return Status::ok();
  }

  int frame_index(const Node* n) const {
    return (n->owner() == &graph_ && static_cast<size_t>(n->id()) < frame_of_.size()) ? frame_of_[n->id()]
                                                                                      : -1;
  }

  // Sorted once: four steps walk every frame's members in graph order, and a frame can hold a million nodes.
  const std::vector<Node*>& members_in_order(size_t k) {
    if (sorted_.empty()) {
      sorted_.resize(specs_.size());
      for (size_t f = 0; f < specs_.size(); ++f) {
        sorted_[f] = specs_[f].members;
        // Partitioners usually list members in node order already (a one-frame shortcut walks the graph):
        // checking is one pass, where sorting 100k sorted pointers was 45M instructions.
        const auto by_id = [](const Node* a, const Node* b) { return a->id() < b->id(); };
        if (!std::is_sorted(sorted_[f].begin(), sorted_[f].end(), by_id))
          std::sort(sorted_[f].begin(), sorted_[f].end(), by_id);
      }
    }
    return sorted_[k];
  }

  Status create_calls() {
    Graph* root = graph_.root();
    for (size_t k = 0; k < specs_.size(); ++k) {
      Node* call = graph_.add_node(specs_[k].call_name, op::kPartitionedCall);
      if (!call)
        return Status::invalid_argument("build_frames: graph '" + graph_.name() +
                                        "' already has a node named '" + specs_[k].call_name + "'");
      Graph* sub = root->add_subgraph(specs_[k].subgraph_name, call);
      if (!sub)
        return Status::invalid_argument("build_frames: subgraph name '" + specs_[k].subgraph_name +
                                        "' is taken");
      call->attrs().set("f", AttrValue::OfGraph(sub));
      for (const auto& [key, value] : specs_[k].call_attrs.entries()) call->attrs().set(key, value);
      for (const auto& [key, value] : specs_[k].subgraph_attrs.entries()) sub->attrs().set(key, value);
      pending_[k].call = call;
      pending_[k].subgraph = sub;
    }
    frame_of_.resize(graph_.id_bound(), -1);  // calls belong to no frame
    return Status::ok();
  }

  Status rewire_outputs(size_t k) {
    Pending& p = pending_[k];
    std::vector<InPort>& outside = outside_;  // one block for every output of every frame
    for (Node* m : members_in_order(k)) {
      for (size_t o = 0; o < m->num_outputs(); ++o) {
        outside.clear();
        for (const InPort& c : m->consumers(o)) {
          if (frame_index(c.node) != static_cast<int>(k)) outside.push_back(c);
        }
        if (outside.empty()) continue;
        const int32_t j = p.call->add_output(m->output_desc(o), m->output_name(o));
        graph_.disconnect_inputs(outside);
        for (const InPort& c : outside) GS_RETURN_IF_ERROR(graph_.add_edge({p.call, j}, c));
        p.outputs.push_back({j, m, static_cast<int32_t>(o)});
      }
    }
    return Status::ok();
  }

  // One call input per member input fed from outside. All frames' inputs are cut together, then wired: a hub
  // feeding members of many frames has its consumer list compacted once, not once per frame or per member.
  Status rewire_inputs() {
    std::vector<InPort> cut;
    std::vector<std::pair<OutPort, InPort>> wires;
    for (size_t k = 0; k < specs_.size(); ++k) {
      Pending& p = pending_[k];
      for (Node* m : members_in_order(k)) {
        for (size_t i = 0; i < m->num_inputs(); ++i) {
          const OutPort src = m->input(i);
          if (!src.node || frame_index(src.node) == static_cast<int>(k)) continue;
          const int32_t idx = p.call->add_input();
          cut.push_back({m, static_cast<int32_t>(i)});
          wires.push_back({src, {p.call, idx}});
          p.inputs.push_back({idx, m, static_cast<int32_t>(i), src.node->output_desc(src.index)});
        }
      }
    }
    graph_.disconnect_inputs(cut);
    for (const auto& [src, dst] : wires) GS_RETURN_IF_ERROR(graph_.add_edge(src, dst));
    return Status::ok();
  }

  // Control edges that cross a frame boundary end on the calls.
  Status rewire_control(size_t k) {
    Pending& p = pending_[k];
    for (Node* m : members_in_order(k)) {
      for (Node* x : std::vector<Node*>(m->control_inputs())) {
        const int fx = frame_index(x);
        if (fx == static_cast<int>(k)) continue;
        GS_RETURN_IF_ERROR(graph_.remove_control_edge(x, m));
        GS_RETURN_IF_ERROR(graph_.add_control_edge(fx >= 0 ? pending_[fx].call : x, p.call));
        if (fx >= 0) pending_[fx].control_to_output.push_back(x);
      }
      for (Node* y : std::vector<Node*>(m->control_outputs())) {
        const int fy = frame_index(y);
        if (fy == static_cast<int>(k)) continue;
        GS_RETURN_IF_ERROR(graph_.remove_control_edge(m, y));
        GS_RETURN_IF_ERROR(graph_.add_control_edge(p.call, fy >= 0 ? pending_[fy].call : y));
        p.control_to_output.push_back(m);
      }
    }
    return Status::ok();
  }

  // The members move into their subgraph, which gets its inner Data and NetOutput.
  Status fill_subgraph(size_t k) {
    Pending& p = pending_[k];
    Graph* sub = p.subgraph;
    const std::vector<Node*>& members = members_in_order(k);
    GS_RETURN_IF_ERROR(graph_.move_nodes_to(members, sub));
    std::vector<Node*> order;
    GS_RETURN_IF_ERROR(add_inner_data(p, &order));
    order.insert(order.end(), members.begin(), members.end());
    std::sort(p.control_to_output.begin(), p.control_to_output.end(),
              [](const Node* a, const Node* b) { return a->id() < b->id(); });
    p.control_to_output.erase(std::unique(p.control_to_output.begin(), p.control_to_output.end()),
                              p.control_to_output.end());
    if (!p.outputs.empty() || !p.control_to_output.empty()) {
      const std::string out_name =
          options_.inner_output_name.empty() ? sub->name() + "_Node_Output" : options_.inner_output_name;
      Node* out = add_named(
          sub, [&] { return out_name; }, op::kNetOutput, p.outputs.size());
      for (const OutputRecord& o : p.outputs)
        GS_RETURN_IF_ERROR(sub->add_edge({o.member, o.member_output}, {out, o.call_output}));
      for (Node* m : p.control_to_output) GS_RETURN_IF_ERROR(sub->add_control_edge(m, out));
      order.push_back(out);
    }
    return sub->reorder(order);
  }

  Status add_inner_data(Pending& p, std::vector<Node*>* order) {
    Graph* sub = p.subgraph;
    const std::string prefix =
        options_.inner_data_prefix.empty() ? sub->name() + "_Data_" : options_.inner_data_prefix;
    for (InputRecord& in : p.inputs) {
      Node* d = add_named(
          sub, [&] { return prefix + std::to_string(in.call_input); }, op::kData, 0);
      d->add_output(std::move(in.desc));  // the record is not read again
      d->attrs().reserve(2 + copied_keys_.size());
      d->attrs().set(index_key_, AttrValue::Int(in.call_input));
      d->attrs().set(parent_index_key_, AttrValue::Int(in.call_input));
      for (const AttrKey& key : copied_keys_) {
        if (const AttrValue* v = in.member->attrs().get(key)) d->attrs().set(key, *v);
      }
      GS_RETURN_IF_ERROR(sub->add_edge({d, 0}, {in.member, in.member_input}));
      order->push_back(d);
    }
    return Status::ok();
  }

  // A node named name(), or unique_node_name(name()) when a member already has that name. The name is tried
  // first: asking unique_node_name() first copied, hashed and looked the name up once more per inner node.
  template <class MakeName>
  static Node* add_named(Graph* sub, MakeName name, std::string_view type, size_t inputs) {
    if (Node* n = sub->add_node(name(), type, inputs, 0)) return n;
    return sub->add_node(sub->unique_node_name(name()), type, inputs, 0);
  }

  // Each call takes its first member's place, then a stable sort repairs whatever that made invalid.
  Status restore_order(const std::vector<Node*>& old_order, const std::vector<int>& old_frame) {
    std::vector<Node*> order;
    std::vector<char> placed(specs_.size(), 0);
    for (size_t i = 0; i < old_order.size(); ++i) {
      const int k = old_frame[i];
      if (k < 0) {
        order.push_back(old_order[i]);
      } else if (!placed[k]) {
        placed[k] = 1;
        order.push_back(pending_[k].call);
      }
    }
    GS_RETURN_IF_ERROR(graph_.reorder(order));
    return topological_sort(graph_, TopoSortMode::kStableRDFS).with_context("build_frames: ");
  }

  Graph& graph_;
  const std::vector<FrameSpec>& specs_;
  const FrameOptions& options_;
  std::vector<int> frame_of_;
  std::vector<Pending> pending_;
  std::vector<std::vector<Node*>> sorted_;  // each frame's members by id in the graph they came from
  std::vector<InPort> outside_;             // rewire_outputs' consumers of one output in other frames
  // The inner Data nodes' keys, interned once: by name, each of a frame's inputs looked them up again.
  const AttrKey index_key_{attr::kIndex}, parent_index_key_{attr::kParentNodeIndex};
  std::vector<AttrKey> copied_keys_;
};

}  // namespace

Status build_frames(Graph& graph, const std::vector<FrameSpec>& specs, const FrameOptions& options,
                    std::vector<Frame>* frames) {
  frames->clear();
  return FrameBuilder(graph, specs, options).run(frames);
}

}  // namespace graphsplit::sdk
