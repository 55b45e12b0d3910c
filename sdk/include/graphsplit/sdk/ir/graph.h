// The graph IR shared by the host and every plugin.
//
// A Graph owns its Nodes; the root Graph also owns every subgraph (as GE does) and indexes them by name.
// Edges are typed by port: a data edge joins (producer, output index) to (consumer, input index); a consumer
// input holds at most one producer, a producer output may feed many consumers. Control edges join nodes. Both
// directions are stored, so a walk in either direction costs the degree and nothing else.
//
// Nodes never move in memory once created, so a Node* stays valid until the node is removed. Node::id() is
// the node's slot in its graph's order: after topological_sort() it is the topological position (GE's op id).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/attr.h"
#include "graphsplit/sdk/ir/names.h"
#include "graphsplit/sdk/ir/types.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

class Graph;
class Node;

// A producer's output port.
struct OutPort {
  Node* node = nullptr;
  int32_t index = -1;
  bool valid() const { return node != nullptr; }
  friend bool operator==(const OutPort& a, const OutPort& b) {
    return a.node == b.node && a.index == b.index;
  }
  friend bool operator!=(const OutPort& a, const OutPort& b) { return !(a == b); }
};

// A consumer's input port.
struct InPort {
  Node* node = nullptr;
  int32_t index = -1;
  friend bool operator==(const InPort& a, const InPort& b) { return a.node == b.node && a.index == b.index; }
  friend bool operator!=(const InPort& a, const InPort& b) { return !(a == b); }
};

class GS_SDK_API Node final {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  const std::string& name() const { return name_; }
  // Interned: every node of one type shares the string.
  const std::string& type() const { return *type_; }
  Graph* owner() const { return owner_; }
  int64_t id() const { return id_; }

  // Data inputs: the producer port of each input slot (invalid when the slot is unconnected, e.g. an omitted
  // optional ONNX input).
  size_t num_inputs() const { return inputs_.size(); }
  OutPort input(size_t index) const { return inputs_[index]; }
  const std::vector<OutPort>& inputs() const { return inputs_; }
  // The descriptor of the value arriving on an input: the producer's output descriptor, or nullptr.
  const TensorDesc* input_desc(size_t index) const;

  // Data outputs.
  size_t num_outputs() const { return outputs_.size(); }
  const TensorDesc& output_desc(size_t index) const { return outputs_[index].desc; }
  TensorDesc& mutable_output_desc(size_t index) { return outputs_[index].desc; }
  // The value's name (the ONNX tensor name); may be empty.
  const std::string& output_name(size_t index) const { return outputs_[index].name; }
  void set_output_name(size_t index, std::string name) { outputs_[index].name = std::move(name); }
  const std::vector<InPort>& consumers(size_t output_index) const { return outputs_[output_index].consumers; }
  bool has_consumers() const;

  const std::vector<Node*>& control_inputs() const;
  const std::vector<Node*>& control_outputs() const;
  // Whether either control list is non-empty, without a call: walks over every node skip both lists.
  bool any_control_edges() const {
    return control_ && !(control_->inputs.empty() && control_->outputs.empty());
  }

  // Appends an unconnected input slot and returns its index.
  int32_t add_input();
  // Appends an output slot and returns its index.
  int32_t add_output(TensorDesc desc = {}, std::string value_name = {});

  const AttrMap& attrs() const { return attrs_; }
  AttrMap& attrs() { return attrs_; }
  // The subgraphs this node references, in attribute order.
  std::vector<Graph*> subgraphs() const;

 private:
  friend class Graph;
  GS_SDK_LOCAL Node(Graph* owner, std::string&& name, std::string_view type);

  struct OutputSlot {
    TensorDesc desc;
    std::string name;
    std::vector<InPort> consumers;
  };

  Graph* owner_;
  int64_t id_ = 0;
  std::string name_;
  const std::string* type_;
  std::vector<OutPort> inputs_;
  std::vector<OutputSlot> outputs_;
  // Few nodes have control edges: one pointer in every node instead of two empty vectors.
  struct ControlEdges {
    std::vector<Node*> inputs, outputs;
  };
  GS_SDK_LOCAL ControlEdges& control();  // made on first use
  std::unique_ptr<ControlEdges> control_;
  AttrMap attrs_;
};

// Iterates the live nodes of a graph in order.
class GS_SDK_API NodeRange {
 public:
  class iterator {
   public:
    using value_type = Node*;
    using difference_type = std::ptrdiff_t;
    iterator(const std::unique_ptr<Node>* p, const std::unique_ptr<Node>* end) : p_(p), end_(end) { skip(); }
    Node* operator*() const { return p_->get(); }
    iterator& operator++() {
      ++p_;
      skip();
      return *this;
    }
    bool operator==(const iterator& o) const { return p_ == o.p_; }
    bool operator!=(const iterator& o) const { return p_ != o.p_; }

   private:
    void skip() {
      while (p_ != end_ && !*p_) ++p_;
    }
    const std::unique_ptr<Node>* p_;
    const std::unique_ptr<Node>* end_;
  };
  NodeRange(const std::unique_ptr<Node>* b, const std::unique_ptr<Node>* e) : begin_(b), end_(e) {}
  iterator begin() const { return {begin_, end_}; }
  iterator end() const { return {end_, end_}; }

 private:
  const std::unique_ptr<Node>* begin_;
  const std::unique_ptr<Node>* end_;
};

class GS_SDK_API Graph final {
 public:
  // A new, empty root graph.
  static std::unique_ptr<Graph> create(std::string name);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  const std::string& name() const { return name_; }
  bool is_root() const { return root_ == this; }
  Graph* root() const { return root_; }
  // The node that references this subgraph, and the graph that node lives in; nullptr for the root.
  Node* parent_node() const { return parent_node_; }
  Graph* parent_graph() const { return parent_node_ ? parent_node_->owner() : nullptr; }

  // ---- nodes
  // Creates a node with the given number of unconnected inputs and default outputs. Returns nullptr if a node
  // with that name already exists in this graph (names are unique per graph).
  Node* add_node(std::string name, std::string_view type, size_t num_inputs = 0, size_t num_outputs = 0);
  // Room for `count` more nodes without growing the node list or the name index: for an importer that knows
  // how many it is about to add (each growth rehashes every name). SDK ABI 2.2.
  void reserve_nodes(size_t count);
  // A name not yet used in this graph: `base` itself, else base_k for a free k, found in O(log k) lookups.
  // When base_1 ... base_m are taken and nothing above (as this function hands them out), that is base_(m+1).
  std::string unique_node_name(std::string_view base) const;
  // Disconnects every edge of the node and destroys it.
  void remove_node(Node* node);
  // Removes many nodes at once; each neighbour's lists are compacted once (see disconnect_inputs).
  void remove_nodes(const std::vector<Node*>& nodes);
  Node* find_node(std::string_view name) const;
  // A hint that `name` is about to be added or looked up: its place in the name index is fetched into the
  // cache while the caller does other work (as Abseil's hash tables' prefetch()). A loader that knows the
  // names a few nodes ahead hides the cache miss each add_node() otherwise costs in a large graph. SDK
  // ABI 2.3.
  void prefetch_name(std::string_view name) const;
  size_t num_nodes() const { return live_nodes_; }
  NodeRange nodes() const { return {slots_.data(), slots_.data() + slots_.size()}; }
  std::vector<Node*> node_list() const;
  // Moves nodes (in their current order) to the end of `dst`, another graph of the same root. Every data and
  // control edge of a moved node must join it to another moved node, or be absent: edges never cross graphs.
  // Names must be free in `dst`.
  Status move_nodes_to(const std::vector<Node*>& nodes, Graph* dst);
  // Replaces the node order; `order` must hold every live node exactly once. Ids become positions.
  Status reorder(const std::vector<Node*>& order);
  // One past the largest Node::id(); per-node side tables can be indexed by id with this size.
  size_t id_bound() const { return slots_.size(); }

  // ---- edges
  // The consumer input must be unconnected, and both nodes must belong to this graph.
  Status add_edge(OutPort src, InPort dst);
  Status remove_edge(OutPort src, InPort dst);
  // Disconnects whatever feeds this input (no-op if unconnected).
  void disconnect_input(InPort dst);
  // Disconnects many inputs at once, each producer's consumer list compacted once and kept in order: one by
  // one, the consumers of a hub (a shape input read by 100k Reshapes) cost a search of the hub's list each.
  void disconnect_inputs(const std::vector<InPort>& dsts);
  // Moves each listed input's entry to the end of its producer's consumer list, in the order listed: the
  // lists disconnect_inputs(inputs) and then add_edge(producer, input) for each input in turn would leave,
  // without reading the producers' other consumers. For a partitioner that keeps edges where a cut and a
  // merge-back would have put them. Unconnected inputs and inputs of other graphs are skipped; an input
  // listed twice keeps its first place. A list already ending that way is left as it is. SDK ABI 2.4.
  void move_consumers_last(const std::vector<InPort>& inputs);
  // Adds src -> dst unless it already exists; both nodes must belong to this graph.
  Status add_control_edge(Node* src, Node* dst);
  Status remove_control_edge(Node* src, Node* dst);

  // ---- attributes
  const AttrMap& attrs() const { return attrs_; }
  AttrMap& attrs() { return attrs_; }

  // ---- subgraphs (the root owns them all)
  // Registers a new subgraph used by `parent_node`. Returns nullptr if the name is taken or this is not the
  // root. The caller still has to reference it from a kGraph/kGraphs attribute of the parent node.
  Graph* add_subgraph(std::string name, Node* parent_node);
  // Registers a subgraph no node references: a work area for a partitioner that must take nodes out of a
  // graph and put them back (GE's engine subgraphs between partition and merge-back). Nodes move in and out
  // with move_nodes_to. verify() refuses a root that still holds one, so it must be removed before the pass
  // ends.
  Graph* add_detached_subgraph(std::string name);
  bool is_detached() const { return !is_root() && parent_node_ == nullptr; }
  Graph* find_subgraph(std::string_view name) const;
  // Registration order.
  const std::vector<Graph*>& subgraphs() const { return subgraph_list_; }
  // Replaces the registration order; `order` must hold every registered subgraph exactly once.
  Status reorder_subgraphs(const std::vector<Graph*>& order);
  // As unique_node_name, among the registered subgraphs' names and this graph's own.
  std::string unique_subgraph_name(std::string_view base) const;
  // Unregisters and destroys a subgraph, every subgraph nested in it, and the parent node's references to it.
  void remove_subgraph(Graph* graph);
  // The same for many at once, costing the graphs removed when they are the latest registered (one
  // remove_subgraph per graph would search the list each time). Graphs that are not registered here are
  // skipped; nested means referenced from a removed graph's nodes, as verify() requires of every subgraph.
  void remove_subgraphs(const std::vector<Graph*>& graphs);
  // True if `graph` is this root or one of its registered subgraphs (compares addresses only, never
  // dereferences).
  bool owns_graph(const Graph* graph) const;

  // Total node count of this graph and, for the root, all subgraphs.
  size_t total_nodes() const;

 private:
  GS_SDK_LOCAL Graph(std::string name, Graph* root, Node* parent_node);
  GS_SDK_LOCAL void unlink_all(Node* node);
  // Drops the consumers of these outputs whose input no longer points back at them.
  GS_SDK_LOCAL static void compact_consumers(std::vector<OutPort>& outputs);
  // move_consumers_last for one producer output and its listed inputs (in order); whether the list changed.
  // `sorted` is scratch.
  GS_SDK_LOCAL static bool move_last(std::vector<InPort>& consumers, std::vector<InPort>& listed,
                                     std::vector<InPort>& sorted);

  // The name index: open addressing with linear probing over (hash, node) pairs, so that a lookup touches one
  // flat array and reads a node's name only when the full hash matches.
  struct NameSlot {
    uint64_t hash = 0;
    Node* node = nullptr;
  };
  GS_SDK_LOCAL size_t index_find(std::string_view name, uint64_t hash) const;
  GS_SDK_LOCAL void index_insert(Node* node, uint64_t hash);
  GS_SDK_LOCAL void index_reserve(size_t nodes);  // room for that many names without growing
  GS_SDK_LOCAL Status check_movable(const Node* n, bool few, const std::vector<char>& moving,
                                    const Graph& dst, bool into_empty) const;

  std::string name_;
  Graph* root_;
  Node* parent_node_;
  std::vector<std::unique_ptr<Node>> slots_;  // nullptr = removed
  size_t live_nodes_ = 0;
  std::vector<NameSlot> name_slots_;
  AttrMap attrs_;
  // Root only.
  std::vector<std::unique_ptr<Graph>> owned_subgraphs_;
  std::vector<Graph*> subgraph_list_;
  std::unordered_map<std::string_view, Graph*> subgraph_by_name_;
  // Membership by address (verify asks for every node with subgraphs; a list search made that quadratic).
  std::unordered_set<const Graph*> subgraph_set_;

  // The BFS or DFS order the last sort left (topo.cpp). Such a sort of a sorted graph leaves it as it is, so
  // a partitioner's sort of a graph that no pass changed since the last one is skipped. Any change of nodes,
  // edges or order forgets it (touch()); the data sources' `index` attributes, which order a sort's seeds and
  // live outside the graph's view, are checked when it is used. Appended in SDK ABI 2.4: nothing outside the
  // SDK creates or copies a Graph, and the members before keep their offsets.
  friend struct SortMemo;
  void touch() { sorted_mode_ = -1; }
  int sorted_mode_ = -1;
  std::vector<Node*> sorted_data_;  // the data-like sources, in the order the sort put them
};

}  // namespace graphsplit::sdk
