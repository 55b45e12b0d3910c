#include "graphsplit/sdk/ir/graph.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "graphsplit/sdk/strings.h"
#include "interned.h"

namespace graphsplit::sdk {
namespace {

// Consumer lists up to this long keep insertion order when one is removed (see disconnect_input).
constexpr size_t kOrderedConsumers = 256;

// Removes the elements in `doomed` from `v`, keeping the order, touching only the tail that holds them all.
template <class T, class Key>
void erase_from_tail(std::vector<T>& v, const std::unordered_set<const Graph*>& doomed, Key key) {
  size_t from = v.size(), left = doomed.size();
  while (left > 0 && from > 0) left -= doomed.count(key(v[--from]));
  v.erase(std::remove_if(v.begin() + static_cast<std::ptrdiff_t>(from), v.end(),
                         [&](const T& x) { return doomed.count(key(x)) > 0; }),
          v.end());
}

template <class T>
bool erase_first(std::vector<T>& v, const T& value) {
  auto it = std::find(v.begin(), v.end(), value);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

std::string describe(const Node* n) {
  return "'" + n->name() + "' (" + n->type() + ")";
}

}  // namespace

// ---------------------------------------------------------------- Node

Node::Node(Graph* owner, std::string&& name, std::string_view type)
    : owner_(owner), name_(std::move(name)), type_(intern_op_type(type)) {}

Node::~Node() = default;

const TensorDesc* Node::input_desc(size_t index) const {
  const OutPort& p = inputs_[index];
  return p.node ? &p.node->outputs_[p.index].desc : nullptr;
}

bool Node::has_consumers() const {
  for (const OutputSlot& o : outputs_) {
    if (!o.consumers.empty()) return true;
  }
  return control_ && !control_->outputs.empty();
}

namespace {
const std::vector<Node*>& no_nodes() {
  static const std::vector<Node*> empty;
  return empty;
}
}  // namespace

const std::vector<Node*>& Node::control_inputs() const {
  return control_ ? control_->inputs : no_nodes();
}
const std::vector<Node*>& Node::control_outputs() const {
  return control_ ? control_->outputs : no_nodes();
}

Node::ControlEdges& Node::control() {
  if (!control_) control_ = std::make_unique<ControlEdges>();
  return *control_;
}

int32_t Node::add_input() {
  inputs_.push_back({});
  return static_cast<int32_t>(inputs_.size() - 1);
}

int32_t Node::add_output(TensorDesc desc, std::string value_name) {
  outputs_.push_back({std::move(desc), std::move(value_name), {}});
  return static_cast<int32_t>(outputs_.size() - 1);
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [key, value] : attrs_.entries()) {
    if (Graph* g = value.as_graph()) out.push_back(g);
    if (const auto* gs = value.as_graphs()) {
      for (Graph* g : *gs) {
        if (g) out.push_back(g);
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- Graph

Graph::Graph(std::string name, Graph* root, Node* parent_node)
    : name_(std::move(name)), root_(root ? root : this), parent_node_(parent_node) {}

Graph::~Graph() = default;

std::unique_ptr<Graph> Graph::create(std::string name) {
  return std::unique_ptr<Graph>(new Graph(std::move(name), nullptr, nullptr));
}

namespace {

// `base` if free, else base_k for a free k. Suffixes are handed out from 1 upwards, so the taken ones are
// usually 1..m: galloping finds a free suffix in O(log m) probes, and a binary search then the first free one
// above the last taken one found, m + 1 when there is no gap. Scanning from 1 made n nodes that share a name
// (ONNX does not require unique node names; the Python builder names unnamed nodes by their type) cost n^2/2
// probes: an import of 10k nodes all named "same" took 2.5 s, of 40k 66 s.
template <class Taken>
std::string free_name(std::string_view base, Taken taken) {
  std::string name(base);
  if (!taken(name)) return name;
  const auto with = [&](size_t k) { return std::string(base) + "_" + std::to_string(k); };
  size_t lo = 0, hi = 1;  // suffix lo is taken (0 stands for the base itself), hi is the next to try
  while (taken(with(hi))) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const size_t mid = lo + (hi - lo) / 2;
    (taken(with(mid)) ? lo : hi) = mid;
  }
  return with(hi);
}

// Rebuilds the name index with `size` slots (a power of two). A template so that the private slot type needs
// no name here.
template <class Slots>
void rebuild_index(Slots& slots, size_t size) {
  Slots old = std::move(slots);
  slots.assign(size, {});
  const size_t mask = size - 1;
  for (const auto& s : old) {
    if (!s.node) continue;
    size_t i = s.hash & mask;
    while (slots[i].node) i = (i + 1) & mask;
    slots[i] = s;
  }
}

// Empties slot `i`. Backward-shift deletion keeps every probe chain unbroken without tombstones.
template <class Slots>
void erase_slot(Slots& slots, size_t i) {
  const size_t mask = slots.size() - 1;
  for (size_t j = (i + 1) & mask; slots[j].node; j = (j + 1) & mask) {
    const size_t home = slots[j].hash & mask;
    const bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      slots[i] = slots[j];
      i = j;
    }
  }
  slots[i] = {};
}

// A node's own slot, found by its address: a node leaving its graph knows itself, and comparing names read
// every colliding node's name (a cache miss each on a million-node graph).
template <class Slots>
void erase_node(Slots& slots, const Node* n, uint64_t hash) {
  if (slots.empty()) return;
  const size_t mask = slots.size() - 1;
  for (size_t i = hash & mask; slots[i].node; i = (i + 1) & mask) {
    if (slots[i].node == n) return erase_slot(slots, i);
  }
}

// An index left eight times larger than its graph (most nodes moved to subgraphs or removed) is shrunk to a
// quarter full: a partitioned million-node graph kept 32 MB of empty slots in its root.
template <class Slots>
void fit_index(Slots& slots, size_t live) {
  if (slots.size() <= 16 || live * 8 >= slots.size()) return;
  size_t size = 16;
  while (size < live * 4) size *= 2;
  rebuild_index(slots, size);
}
}  // namespace

// How far ahead a loop over many nodes asks for their names' index slots (prefetch_name): about the misses
// one node's work can overlap.
constexpr size_t kNamesAhead = 8;

size_t Graph::index_find(std::string_view name, uint64_t hash) const {
  if (name_slots_.empty()) return SIZE_MAX;
  const size_t mask = name_slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const NameSlot& s = name_slots_[i];
    if (!s.node) return SIZE_MAX;
    if (s.hash == hash && s.node->name_ == name) return i;
  }
}

void Graph::index_insert(Node* node, uint64_t hash) {
  if ((live_nodes_ + 1) * 2 > name_slots_.size()) index_reserve(std::max<size_t>(8, name_slots_.size()));
  const size_t mask = name_slots_.size() - 1;
  size_t i = hash & mask;
  while (name_slots_[i].node) i = (i + 1) & mask;
  name_slots_[i] = {hash, node};
}

void Graph::index_reserve(size_t nodes) {
  if (nodes * 2 <= name_slots_.size()) return;
  size_t size = std::max<size_t>(16, name_slots_.size());
  while (nodes * 2 > size) size *= 2;
  rebuild_index(name_slots_, size);
}

void Graph::reserve_nodes(size_t count) {
  slots_.reserve(slots_.size() + count);
  index_reserve(live_nodes_ + count);
}

Node* Graph::add_node(std::string name, std::string_view type, size_t num_inputs, size_t num_outputs) {
  const uint64_t hash = name_hash(name);
  if (index_find(name, hash) != SIZE_MAX) return nullptr;
  auto node = std::unique_ptr<Node>(new Node(this, std::move(name), type));
  node->inputs_.resize(num_inputs);
  node->outputs_.resize(num_outputs);
  node->id_ = static_cast<int64_t>(slots_.size());
  Node* raw = node.get();
  index_insert(raw, hash);
  slots_.push_back(std::move(node));
  ++live_nodes_;
  touch();
  return raw;
}

std::string Graph::unique_node_name(std::string_view base) const {
  return free_name(base, [this](const std::string& name) { return find_node(name) != nullptr; });
}

void Graph::unlink_all(Node* node) {
  for (size_t i = 0; i < node->inputs_.size(); ++i) disconnect_input({node, static_cast<int32_t>(i)});
  for (size_t o = 0; o < node->outputs_.size(); ++o) {
    for (const InPort& c : node->outputs_[o].consumers) c.node->inputs_[c.index] = {};
    node->outputs_[o].consumers.clear();
  }
  if (!node->control_) return;
  for (Node* src : node->control_->inputs) erase_first(src->control_->outputs, node);
  for (Node* dst : node->control_->outputs) erase_first(dst->control_->inputs, node);
  node->control_->inputs.clear();
  node->control_->outputs.clear();
}

void Graph::remove_node(Node* node) {
  if (!node || node->owner_ != this) return;
  touch();
  unlink_all(node);
  erase_node(name_slots_, node, name_hash(node->name_));
  slots_[node->id_].reset();
  --live_nodes_;
  fit_index(name_slots_, live_nodes_);
}

Node* Graph::find_node(std::string_view name) const {
  const size_t i = index_find(name, name_hash(name));
  return i == SIZE_MAX ? nullptr : name_slots_[i].node;
}

void Graph::prefetch_name(std::string_view name) const {
  if (name_slots_.empty()) return;
  const NameSlot* slot = &name_slots_[name_hash(name) & (name_slots_.size() - 1)];
  __builtin_prefetch(slot);
  // GCC counts a prefetch as free of side effects and would drop calls made here in the library, where it can
  // see that this function does nothing else. The empty asm keeps them.
  asm volatile("" : : "r"(slot));
}

std::vector<Node*> Graph::node_list() const {
  std::vector<Node*> out;
  out.reserve(live_nodes_);
  for (Node* n : nodes()) out.push_back(n);
  return out;
}

Status Graph::reorder(const std::vector<Node*>& order) {
  if (order.size() != live_nodes_) {
    return Status::invalid_argument("reorder of graph '" + name_ + "': order has " +
                                    std::to_string(order.size()) + " nodes, graph has " +
                                    std::to_string(live_nodes_));
  }
  // The current order again (a sort of a sorted graph, the usual case) is valid by construction: comparing
  // pointers with the slots reads no node, where validating would touch every one.
  if (slots_.size() == order.size() &&
      std::equal(order.begin(), order.end(), slots_.begin(),
                 [](const Node* n, const std::unique_ptr<Node>& slot) { return n == slot.get(); })) {
    return Status::ok();
  }
  // Each entry is checked as it moves: its slot must still hold it, and a moved-from slot is empty, so an
  // entry listed twice fails there too (no separate marks, one visit per node). A refused order moves
  // everything back, by the ids that are not yet renumbered, and leaves the graph as it was.
  std::vector<std::unique_ptr<Node>> next(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    if (!n || n->owner_ != this || static_cast<size_t>(n->id_) >= slots_.size() ||
        slots_[n->id_].get() != n) {
      for (size_t j = 0; j < i; ++j) slots_[next[j]->id_] = std::move(next[j]);
      return Status::invalid_argument("reorder of graph '" + name_ + "': entry " + std::to_string(i) +
                                      " is not a live node of this graph or appears twice");
    }
    next[i] = std::move(slots_[n->id_]);
  }
  touch();
  slots_ = std::move(next);
  for (size_t i = 0; i < slots_.size(); ++i) slots_[i]->id_ = static_cast<int64_t>(i);
  return Status::ok();
}

Status Graph::move_nodes_to(const std::vector<Node*>& nodes, Graph* dst) {
  if (!dst || dst == this || dst->root_ != root_) {
    return Status::invalid_argument("move_nodes_to: the target must be another graph of the same root");
  }
  // Which nodes move: a flag per slot when they are many; when they are few (a partitioner moving each of 20k
  // small parts out of a 100k-node graph must not clear 100k flags per part), each moving node's owner is
  // cleared while the edges are checked, and restored before anything else happens. A live node always has an
  // owner, and no edge leaves a graph, so a neighbour without one is a moving node.
  const bool few = nodes.size() * 16 < slots_.size();
  std::vector<char> moving(few ? 0 : slots_.size(), 0);
  size_t marked = 0;
  const auto admit = [&](Node* n) {
    if (n && (few ? !n->owner_ : n->owner_ == this && moving[n->id_]))
      return Status::invalid_argument("move_nodes_to: node " + describe(n) + " is listed twice");
    if (!n || n->owner_ != this)
      return Status::invalid_argument("move_nodes_to: a node does not belong to graph '" + name_ + "'");
    if (few) {
      n->owner_ = nullptr;
      ++marked;
    } else {
      moving[n->id_] = 1;
    }
    return Status::ok();
  };
  // Moving every node (a partitioner's largest part, a subgraph merged back) needs no per-name index work in
  // this graph, and into an empty graph none at all: the index goes with the nodes.
  const bool all = nodes.size() == live_nodes_;
  const bool into_empty = dst->live_nodes_ == 0;
  Status refused = Status::ok();
  for (auto it = nodes.begin(); refused.is_ok() && it != nodes.end(); ++it) refused = admit(*it);
  for (auto it = nodes.begin(); refused.is_ok() && it != nodes.end(); ++it)
    refused = check_movable(*it, few, moving, *dst, into_empty);
  for (size_t i = 0; i < marked; ++i) nodes[i]->owner_ = this;  // the marks go before anything else happens
  GS_RETURN_IF_ERROR(refused);
  // In this graph's order: from the flags when many move (sorting a million pointers by id is a cache miss
  // per comparison), by sorting when few.
  std::vector<Node*> ordered;
  ordered.reserve(nodes.size());
  if (few) {
    ordered = nodes;
    std::sort(ordered.begin(), ordered.end(), [](const Node* a, const Node* b) { return a->id_ < b->id_; });
  } else {
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (moving[i]) ordered.push_back(slots_[i].get());
    }
  }
  touch();
  dst->touch();
  const bool steal = all && into_empty;
  // Most of the graph into an empty one (a partition that frames nearly everything): the index goes with the
  // nodes too, and only the few that stay leave it for a new one of their own.
  const bool hand_over = !all && into_empty && nodes.size() * 2 > live_nodes_;
  const bool whole_index = steal || hand_over;
  if (!whole_index) dst->index_reserve(dst->live_nodes_ + ordered.size());
  dst->slots_.reserve(dst->slots_.size() + ordered.size());
  for (size_t k = 0; k < ordered.size(); ++k) {
    if (!whole_index && k + kNamesAhead < ordered.size()) {
      const std::string& ahead = ordered[k + kNamesAhead]->name_;
      if (!all && !hand_over) prefetch_name(ahead);
      dst->prefetch_name(ahead);
    }
    Node* n = ordered[k];
    std::unique_ptr<Node> owned = std::move(slots_[n->id_]);
    const uint64_t hash = whole_index ? 0 : name_hash(n->name_);  // once for both indexes
    if (!all && !hand_over) erase_node(name_slots_, n, hash);
    n->owner_ = dst;
    n->id_ = static_cast<int64_t>(dst->slots_.size());
    if (!whole_index) dst->index_insert(n, hash);
    dst->slots_.push_back(std::move(owned));
  }
  live_nodes_ -= ordered.size();
  dst->live_nodes_ += ordered.size();
  if (whole_index) {
    dst->name_slots_ = std::move(name_slots_);
    name_slots_.clear();
  }
  if (hand_over) {
    index_reserve(live_nodes_);
    for (const auto& slot : slots_) {
      if (!slot) continue;
      const uint64_t hash = name_hash(slot->name_);
      erase_node(dst->name_slots_, slot.get(), hash);
      index_insert(slot.get(), hash);
    }
  } else if (!all) {
    fit_index(name_slots_, live_nodes_);
  } else if (!steal) {
    name_slots_.clear();
  }
  return Status::ok();
}

Status Graph::check_movable(const Node* n, bool few, const std::vector<char>& moving, const Graph& dst,
                            bool into_empty) const {
  auto inside = [&](const Node* other) {
    return few ? other->owner_ == nullptr : other->owner_ == this && moving[other->id_] != 0;
  };
  for (const OutPort& p : n->inputs_) {
    if (p.node && !inside(p.node)) {
      return Status::invalid_argument("move_nodes_to: node " + describe(n) + " still has an input from " +
                                      describe(p.node));
    }
  }
  for (const Node::OutputSlot& o : n->outputs_) {
    for (const InPort& c : o.consumers) {
      if (!inside(c.node))
        return Status::invalid_argument("move_nodes_to: node " + describe(n) + " still feeds " +
                                        describe(c.node));
    }
  }
  for (const Node* c : n->control_inputs()) {
    if (!inside(c))
      return Status::invalid_argument("move_nodes_to: node " + describe(n) + " has a control input from " +
                                      describe(c));
  }
  for (const Node* c : n->control_outputs()) {
    if (!inside(c))
      return Status::invalid_argument("move_nodes_to: node " + describe(n) + " has a control output to " +
                                      describe(c));
  }
  // Names are unique within this graph, so only a graph that already has nodes can clash.
  if (!into_empty && dst.find_node(n->name_)) {
    return Status::invalid_argument("move_nodes_to: graph '" + dst.name_ + "' already has a node named '" +
                                    n->name_ + "'");
  }
  return Status::ok();
}

Status Graph::add_edge(OutPort src, InPort dst) {
  if (!src.node || !dst.node) return Status::invalid_argument("add_edge: null endpoint");
  if (src.node->owner_ != this || dst.node->owner_ != this) {
    return Status::invalid_argument("add_edge " + describe(src.node) + " -> " + describe(dst.node) +
                                    ": both nodes must belong to graph '" + name_ + "'");
  }
  if (src.index < 0 || static_cast<size_t>(src.index) >= src.node->outputs_.size()) {
    return Status::invalid_argument("add_edge: node " + describe(src.node) + " has no output " +
                                    std::to_string(src.index));
  }
  if (dst.index < 0 || static_cast<size_t>(dst.index) >= dst.node->inputs_.size()) {
    return Status::invalid_argument("add_edge: node " + describe(dst.node) + " has no input " +
                                    std::to_string(dst.index));
  }
  if (dst.node->inputs_[dst.index].node) {
    return Status::invalid_argument("add_edge: input " + std::to_string(dst.index) + " of node " +
                                    describe(dst.node) + " is already connected");
  }
  dst.node->inputs_[dst.index] = src;
  src.node->outputs_[src.index].consumers.push_back(dst);
  touch();
  return Status::ok();
}

Status Graph::remove_edge(OutPort src, InPort dst) {
  if (!src.node || !dst.node || dst.index < 0 || static_cast<size_t>(dst.index) >= dst.node->inputs_.size() ||
      dst.node->inputs_[dst.index] != src) {
    return Status::not_found("remove_edge: no such edge in graph '" + name_ + "'");
  }
  disconnect_input(dst);
  return Status::ok();
}

void Graph::disconnect_input(InPort dst) {
  OutPort& src = dst.node->inputs_[dst.index];
  if (!src.node) return;
  touch();
  std::vector<InPort>& consumers = src.node->outputs_[src.index].consumers;
  if (consumers.size() <= kOrderedConsumers) {
    erase_first(consumers, dst);
  } else if (auto it = std::find(consumers.begin(), consumers.end(), dst); it != consumers.end()) {
    // A hub (a shape input read by 100k Reshapes): closing the gap would move the whole list for every
    // consumer a partitioner disconnects, quadratic in the hub's size; the last consumer fills it instead.
    *it = consumers.back();
    consumers.pop_back();
  }
  src = {};
}

void Graph::compact_consumers(std::vector<OutPort>& outputs) {
  if (outputs.empty()) return;
  // Many producers (an engine partition cuts thousands of edges): a single-output producer is marked once by
  // id and its list compacted, linear where sorting the ports was most of disconnect_inputs.
  size_t bound = 0;
  for (const OutPort& out : outputs) bound = std::max(bound, static_cast<size_t>(out.node->id_) + 1);
  if (outputs.size() * 16 >= bound) {
    std::vector<char> seen(bound, 0);
    // A producer with several outputs has only the touched ones compacted, after a sort below: compacting all
    // of them per cut made a call with 10k outputs (a gear's Case) cost 10k^2 when each output was cut alone.
    std::vector<OutPort> several;
    for (const OutPort& out : outputs) {
      Node* n = out.node;
      if (n->outputs_.size() > 1) {
        several.push_back(out);
        continue;
      }
      if (seen[n->id_]) continue;  // a flag, not a count: a char would wrap after 255 cuts of one hub
      seen[n->id_] = 1;
      std::erase_if(n->outputs_[0].consumers,
                    [&](const InPort& c) { return c.node->inputs_[c.index] != out; });
    }
    outputs.swap(several);
  }
  std::sort(outputs.begin(), outputs.end(), [](const OutPort& a, const OutPort& b) {
    return a.node != b.node ? std::less<const Node*>()(a.node, b.node) : a.index < b.index;
  });
  outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
  for (const OutPort& out : outputs) {
    std::vector<InPort>& consumers = out.node->outputs_[out.index].consumers;
    std::erase_if(consumers, [&](const InPort& c) { return c.node->inputs_[c.index] != out; });
  }
}

void Graph::disconnect_inputs(const std::vector<InPort>& dsts) {
  touch();
  std::vector<OutPort> touched;
  for (const InPort& d : dsts) {
    if (!d.node || d.node->owner_ != this || d.index < 0 ||
        static_cast<size_t>(d.index) >= d.node->inputs_.size())
      continue;
    OutPort& src = d.node->inputs_[d.index];
    if (!src.node) continue;
    touched.push_back(src);
    src = {};
  }
  compact_consumers(touched);
}

void Graph::move_consumers_last(const std::vector<InPort>& inputs) {
  // The listed inputs' positions, grouped by producer, each group in the order listed: by an insertion sort
  // when few (a small subgraph's crossings), counted by producer id when many for the graph (an engine
  // partition's thousands), a stable sort otherwise. Positions, not copies of the ports: four bytes an entry,
  // where the root of a graph cut into 60k subgraphs lists hundreds of thousands. Each producer's id is read
  // once, into producer_of: the grouping reads it several times an entry, through the consumer's inputs.
  const auto source = [&](uint32_t i) { return inputs[i].node->inputs_[inputs[i].index]; };
  std::vector<uint32_t> order, producer_of(inputs.size());
  order.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InPort& d = inputs[i];
    if (!d.node || d.node->owner_ != this || d.index < 0 ||
        static_cast<size_t>(d.index) >= d.node->inputs_.size())
      continue;
    if (const Node* from = d.node->inputs_[d.index].node) {
      order.push_back(static_cast<uint32_t>(i));
      producer_of[i] = static_cast<uint32_t>(from->id_);
    }
  }
  if (order.empty()) return;
  const auto producer = [&](uint32_t i) { return static_cast<size_t>(producer_of[i]); };
  const auto by_producer = [&](uint32_t a, uint32_t b) { return producer(a) < producer(b); };
  if (order.size() <= 32) {
    for (size_t i = 1; i < order.size(); ++i) {
      for (size_t j = i; j > 0 && by_producer(order[j], order[j - 1]); --j) std::swap(order[j], order[j - 1]);
    }
  } else if (order.size() * 16 >= slots_.size()) {
    std::vector<uint32_t> begin(slots_.size() + 1, 0);
    for (uint32_t i : order) ++begin[producer(i) + 1];
    for (size_t i = 1; i < begin.size(); ++i) begin[i] += begin[i - 1];
    std::vector<uint32_t> grouped(order.size());
    for (uint32_t i : order) grouped[begin[producer(i)]++] = i;
    order.swap(grouped);
  } else {
    std::stable_sort(order.begin(), order.end(), by_producer);
  }
  bool changed = false;
  std::vector<InPort> listed, sorted;
  for (size_t g = 0; g < order.size();) {
    Node* from = source(order[g]).node;
    size_t end = g;
    while (end < order.size() && producer_of[order[end]] == producer_of[order[g]]) ++end;
    // A producer's outputs one at a time, its entries ordered by output first (stably: each output's stay in
    // the order listed). A call node can have hundreds; the usual producer has one, and its entries are not
    // read again for their output.
    const bool outputs = from->outputs_.size() > 1;
    if (outputs) {
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(g),
                       order.begin() + static_cast<std::ptrdiff_t>(end),
                       [&](uint32_t a, uint32_t b) { return source(a).index < source(b).index; });
    }
    for (size_t k = g; k < end;) {
      const int32_t output = outputs ? source(order[k]).index : 0;
      listed.clear();
      for (; k < end && (!outputs || source(order[k]).index == output); ++k)
        listed.push_back(inputs[order[k]]);
      changed = move_last(from->outputs_[output].consumers, listed, sorted) || changed;
    }
    g = end;
  }
  if (changed) touch();
}

bool Graph::move_last(std::vector<InPort>& consumers, std::vector<InPort>& listed,
                      std::vector<InPort>& sorted) {
  // Repeats keep their first place; then the listed entries are looked up in the list, linearly when they are
  // few (the usual one or two per producer), by binary search in a sorted copy otherwise (a hub's readers).
  constexpr size_t kFew = 8;
  const auto less = [](const InPort& a, const InPort& b) {
    return a.node != b.node ? std::less<const Node*>()(a.node, b.node) : a.index < b.index;
  };
  if (listed.size() <= kFew) {
    size_t kept = 0;
    for (size_t i = 0; i < listed.size(); ++i) {
      if (std::find(listed.begin(), listed.begin() + static_cast<std::ptrdiff_t>(kept), listed[i]) ==
          listed.begin() + static_cast<std::ptrdiff_t>(kept))
        listed[kept++] = listed[i];
    }
    listed.resize(kept);
  } else {
    sorted = listed;
    std::sort(sorted.begin(), sorted.end(), less);
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      std::vector<char> taken(sorted.size(), 0);
      std::erase_if(listed, [&](const InPort& p) {
        const auto at =
            static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), p, less) - sorted.begin());
        return taken[at]++ != 0;
      });
    }
  }
  if (listed.size() <= consumers.size() &&
      std::equal(listed.begin(), listed.end(), consumers.end() - static_cast<std::ptrdiff_t>(listed.size())))
    return false;
  if (listed.size() <= kFew) {
    std::erase_if(consumers, [&](const InPort& c) {
      return std::find(listed.begin(), listed.end(), c) != listed.end();
    });
  } else {
    std::erase_if(consumers,
                  [&](const InPort& c) { return std::binary_search(sorted.begin(), sorted.end(), c, less); });
  }
  consumers.insert(consumers.end(), listed.begin(), listed.end());
  return true;
}

void Graph::remove_nodes(const std::vector<Node*>& nodes) {
  touch();
  std::vector<char> doomed(slots_.size(), 0);
  std::vector<Node*> unique;
  for (Node* n : nodes) {
    if (n && n->owner_ == this && !doomed[n->id_]++) unique.push_back(n);
  }
  auto is_doomed = [&](const Node* x) { return x->owner_ == this && doomed[x->id_]; };
  std::vector<OutPort> producers;
  std::vector<Node*> neighbours;  // control edges to compact
  for (Node* n : unique) {
    for (OutPort& src : n->inputs_) {
      if (src.node && !is_doomed(src.node)) producers.push_back(src);
      src = {};
    }
    for (Node::OutputSlot& o : n->outputs_) {
      for (const InPort& c : o.consumers) c.node->inputs_[c.index] = {};
      o.consumers.clear();
    }
    neighbours.insert(neighbours.end(), n->control_inputs().begin(), n->control_inputs().end());
    neighbours.insert(neighbours.end(), n->control_outputs().begin(), n->control_outputs().end());
  }
  compact_consumers(producers);
  std::sort(neighbours.begin(), neighbours.end());
  neighbours.erase(std::unique(neighbours.begin(), neighbours.end()), neighbours.end());
  for (Node* x : neighbours) {
    if (is_doomed(x) || !x->control_) continue;
    std::erase_if(x->control_->inputs, is_doomed);
    std::erase_if(x->control_->outputs, is_doomed);
  }
  for (size_t k = 0; k < unique.size(); ++k) {
    if (k + kNamesAhead < unique.size()) prefetch_name(unique[k + kNamesAhead]->name_);
    Node* n = unique[k];
    erase_node(name_slots_, n, name_hash(n->name_));
    slots_[n->id_].reset();
    --live_nodes_;
  }
  fit_index(name_slots_, live_nodes_);
}

Status Graph::add_control_edge(Node* src, Node* dst) {
  if (!src || !dst || src->owner_ != this || dst->owner_ != this) {
    return Status::invalid_argument("add_control_edge: both nodes must belong to graph '" + name_ + "'");
  }
  std::vector<Node*>& out = src->control().outputs;
  if (std::find(out.begin(), out.end(), dst) != out.end()) return Status::ok();
  touch();
  out.push_back(dst);
  dst->control().inputs.push_back(src);
  return Status::ok();
}

Status Graph::remove_control_edge(Node* src, Node* dst) {
  if (!src || !dst || !src->control_ || !erase_first(src->control_->outputs, dst)) {
    return Status::not_found("remove_control_edge: no such edge in graph '" + name_ + "'");
  }
  touch();
  erase_first(dst->control_->inputs, src);
  return Status::ok();
}

Graph* Graph::add_subgraph(std::string name, Node* parent_node) {
  if (!is_root() || !parent_node || subgraph_by_name_.count(name) || name == name_) return nullptr;
  auto g = std::unique_ptr<Graph>(new Graph(std::move(name), this, parent_node));
  Graph* raw = g.get();
  owned_subgraphs_.push_back(std::move(g));
  subgraph_list_.push_back(raw);
  subgraph_by_name_.emplace(std::string_view(raw->name_), raw);
  subgraph_set_.insert(raw);
  return raw;
}

Graph* Graph::add_detached_subgraph(std::string name) {
  if (!is_root() || subgraph_by_name_.count(name) || name == name_) return nullptr;
  auto g = std::unique_ptr<Graph>(new Graph(std::move(name), this, nullptr));
  Graph* raw = g.get();
  owned_subgraphs_.push_back(std::move(g));
  subgraph_list_.push_back(raw);
  subgraph_by_name_.emplace(std::string_view(raw->name_), raw);
  subgraph_set_.insert(raw);
  return raw;
}

Graph* Graph::find_subgraph(std::string_view name) const {
  auto it = subgraph_by_name_.find(name);
  return it == subgraph_by_name_.end() ? nullptr : it->second;
}

std::string Graph::unique_subgraph_name(std::string_view base) const {
  return free_name(
      base, [this](const std::string& name) { return subgraph_by_name_.count(name) > 0 || name == name_; });
}

Status Graph::reorder_subgraphs(const std::vector<Graph*>& order) {
  std::vector<Graph*> sorted_new(order), sorted_old(subgraph_list_);
  std::sort(sorted_new.begin(), sorted_new.end(), std::less<>());
  std::sort(sorted_old.begin(), sorted_old.end(), std::less<>());
  if (!is_root() || sorted_new != sorted_old) {
    return Status::invalid_argument("reorder_subgraphs of graph '" + name_ +
                                    "': the order must list every registered subgraph exactly once");
  }
  subgraph_list_ = order;
  return Status::ok();
}

bool Graph::owns_graph(const Graph* graph) const {
  if (graph == this) return true;
  return subgraph_set_.count(graph) > 0;
}

void Graph::remove_subgraph(Graph* graph) {
  remove_subgraphs({graph});
}

// Work areas and fresh subgraphs sit at the end of the registration list, so the lists are searched from the
// back and only as far as the graphs to remove: removing a partition's engine subgraphs costs their number,
// not the root's subgraph count.
void Graph::remove_subgraphs(const std::vector<Graph*>& graphs) {
  if (!is_root()) return;
  // The given graphs that are registered; pointers are compared before any is dereferenced (they may be
  // stale).
  const std::unordered_set<const Graph*> wanted(graphs.begin(), graphs.end());
  std::unordered_set<const Graph*> doomed;
  for (size_t i = subgraph_list_.size(); i-- > 0 && doomed.size() < wanted.size();) {
    if (wanted.count(subgraph_list_[i])) doomed.insert(subgraph_list_[i]);
  }
  // Everything nested in them goes too: the subgraphs their nodes reference (verify() requires every
  // registered subgraph to be referenced), transitively.
  std::vector<const Graph*> todo(doomed.begin(), doomed.end());
  while (!todo.empty()) {
    const Graph* g = todo.back();
    todo.pop_back();
    for (const Node* n : g->nodes()) {
      for (const Graph* sub : n->subgraphs()) {
        if (doomed.insert(sub).second) todo.push_back(sub);
      }
    }
  }
  if (doomed.empty()) return;
  // Parent nodes that survive lose their references to the removed graphs.
  for (const Graph* graph : doomed) {
    Node* parent = graph->parent_node_;
    if (!parent || doomed.count(parent->owner_)) continue;
    std::vector<std::string> emptied, pruned;
    for (const auto& [key, value] : parent->attrs_.entries()) {
      if (value.as_graph() == graph) emptied.push_back(key);
      if (value.as_graphs()) pruned.push_back(key);
    }
    for (const std::string& key : pruned) {
      auto& list = std::get<std::vector<Graph*>>(parent->attrs_.get_mutable(key)->mutable_storage());
      list.erase(std::remove(list.begin(), list.end(), graph), list.end());
    }
    for (const std::string& key : emptied) parent->attrs_.remove(key);
  }
  for (const Graph* g : doomed) {
    subgraph_by_name_.erase(g->name_);
    subgraph_set_.erase(g);
  }
  erase_from_tail(subgraph_list_, doomed, [](const Graph* g) { return g; });
  erase_from_tail(owned_subgraphs_, doomed, [](const std::unique_ptr<Graph>& g) { return g.get(); });
}

size_t Graph::total_nodes() const {
  size_t n = live_nodes_;
  if (is_root()) {
    for (const Graph* g : subgraph_list_) n += g->live_nodes_;
  }
  return n;
}

}  // namespace graphsplit::sdk
