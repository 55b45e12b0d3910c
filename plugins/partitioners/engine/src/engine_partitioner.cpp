#include "engine_partitioner.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "graphsplit/sdk/cluster_graph.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/union_find.h"

namespace graphsplit::plugins::engine {
namespace {

using sdk::AttrValue;
using sdk::ClusterGraph;
using sdk::Graph;
using sdk::Node;
using sdk::Status;

// GE's data-like nodes: without inputs they go to the default data engine and end in the input graph.
bool is_data_like_source(const Node& n) {
  const std::string_view t = n.type();
  if (!sdk::is_data_like(t) && !sdk::is_const_like(t) && !sdk::is_variable_like(t) && t != "FileConstant")
    return false;
  for (const sdk::OutPort& p : n.inputs()) {
    if (p.node) return false;
  }
  return n.control_inputs().empty();
}

std::string_view engine_attr(Mode mode) {
  return mode == Mode::kComposite ? sdk::attr::kCompositeEngineName : sdk::attr::kOpEngineName;
}

std::string engine_key(const Node& n, Mode mode) {
  return n.attrs().get_string(engine_attr(mode));
}

const sdk::EngineRef* find_engine(const std::vector<sdk::EngineRef>& engines, const std::string& name) {
  const sdk::EngineRef* ref = nullptr;
  for (const sdk::EngineRef& e : engines) {
    if (e.name == name) ref = &e;
  }
  return ref;
}

// What an optimiser added inherits its subgraph's stream label and engine (GE re-runs placement here).
void inherit(Node* n, const std::string& engine, const std::string& label, const sdk::EngineRef* ref) {
  if (!label.empty() && !n->attrs().has(sdk::attr::kStreamLabel))
    n->attrs().set(sdk::attr::kStreamLabel, AttrValue::String(label));
  const AttrValue* placed = ref ? n->attrs().get(sdk::attr::kOpEngineName) : nullptr;
  if (ref && (!placed || !placed->as_string() || placed->as_string()->empty())) {
    n->attrs().set(sdk::attr::kOpEngineName, AttrValue::String(engine));
    if (ref->table) n->attrs().set(sdk::attr::kOpKernelLibName, AttrValue::String(ref->table->kernel_lib()));
  }
}

// Clusters of one graph: the cluster engine does the cycle check exactly (GE bounds a DFS per edge instead).
class Splitter {
 public:
  Splitter(Graph& graph, const Options& options) : graph_(graph), options_(options) {}

  // Which part each node joins (GE's clustering and numbering); nothing in the graph moves yet.
  Status plan() {
    nodes_ = graph_.node_list();
    GS_RETURN_IF_ERROR(classify());
    if (!options_.stable && !options_.no_shortcut && one_key()) {
      join_components();
      number();
      return Status::ok();
    }
    GS_RETURN_IF_ERROR(ClusterGraph::build(graph_, &clusters_));
    if (options_.stable) {
      merge_stable();
    } else {
      merge_normal();
      if (options_.merge_siblings) merge_siblings();
    }
    number();
    clusters_.reset();  // the parts are numbered: its memory goes to the cut's new nodes, not to the peak
    return Status::ok();
  }

  // Cuts the graph into the planned subgraphs, joined by End/PlaceHolder pairs.
  Status cut(int64_t partition_index, int64_t* next_pair, GraphPartition* out) {
    make_pairs(next_pair, out);
    return move_out(partition_index, out);
  }

  // Whether an engine of some part rewrites its subgraphs; if none does, cut() and merge_back() change only
  // what join_in_place() changes.
  bool any_part_optimised(const std::vector<sdk::EngineRef>& engines) const {
    for (const Part& p : parts_) {
      for (const sdk::EngineRef& e : engines) {
        if (e.name == p.engine && e.engine && e.engine->optimizes()) return true;
      }
    }
    return false;
  }

  // The graph as cut() and merge_back() leave it when no engine changed a subgraph: nodes in part order
  // (input graph first, then by rank), each edge that crosses parts re-added where joining its pair puts it
  // (last in its producer's and consumer's lists, in pair order), merge_back's attributes, the same pair
  // count.
  Status join_in_place(int64_t partition_index, const std::vector<sdk::EngineRef>& engines,
                       sdk::TopoSortMode sort_mode, int64_t* next_pair, int64_t* pairs,
                       std::vector<std::string>* summary) {
    const std::vector<int> rank = ranks();
    const std::vector<size_t> by_rank = rank_order();
    // The nodes by part in rank order, each part's in node order: counted, then placed (a list per part grew
    // by doubling and was copied again into the order, for as many nodes as the graph has).
    std::vector<size_t> count(parts_.size(), 0), begin(parts_.size(), 0);
    for (Node* n : nodes_) ++count[part(n)];
    size_t at = 0;
    for (size_t p : by_rank) {
      begin[p] = at;
      at += count[p];
    }
    // Built only when used: a graph left in place below needs no copy of a million pointers.
    std::vector<Node*> order;
    const auto place_in_part_order = [&] {
      std::vector<size_t> next(begin);
      order.resize(nodes_.size());
      for (Node* n : nodes_) order[next[static_cast<size_t>(part(n))]++] = n;
    };
    // Nothing was added since plan(), so in atomic mode inherit() has nothing to change: classify() required
    // every operator's engine, a part's label is its members' own, and the input part names no engine.
    const bool inherits = options_.mode != Mode::kAtomic;
    if (inherits) place_in_part_order();
    Graph& tree = *graph_.root();
    for (size_t p : by_rank) {
      const std::string name = tree.unique_subgraph_name(subgraph_base(partition_index, p, rank[p]));
      const sdk::EngineRef* ref = find_engine(engines, parts_[p].engine);
      if (inherits) {
        for (size_t k = begin[p]; k < begin[p] + count[p]; ++k)
          inherit(order[k], parts_[p].engine, parts_[p].label, ref);
      }
      summary->push_back(name + "|" + parts_[p].engine + "|" + parts_[p].label + "|" +
                         std::to_string(count[p]));
    }
    std::vector<sdk::InPort> cut;
    Status control_status = Status::ok();
    int64_t control_pairs = 0;
    for_each_crossing([&](sdk::OutPort, sdk::InPort dst) { cut.push_back(dst); },
                      [&](Node* producer, Node* consumer) {
                        ++control_pairs;
                        if (control_status.is_ok())
                          control_status = graph_.remove_control_edge(producer, consumer);
                        if (control_status.is_ok())
                          control_status = graph_.add_control_edge(producer, consumer);
                      });
    GS_RETURN_IF_ERROR(control_status);
    *pairs = control_pairs + static_cast<int64_t>(cut.size());
    *next_pair += *pairs;
    graph_.move_consumers_last(cut);  // as cutting them all and joining their pairs in order would
    // The caller sorts next. A BFS or DFS sort depends on the edges and on the sources' order alone: if the
    // graph is still in the order such a sort left (the cut moved no consumer and re-added no control edge)
    // and the parts' order keeps the sources' relative order, that sort would put every node back where it is
    // now. So nothing moves, and the sort finds the order it remembers (a chain of a million nodes spent a
    // fifth of its engine partition moving its nodes to part order and a third sorting them back).
    if (sdk::is_topologically_sorted(graph_, sort_mode) && sources_keep_order(rank)) return Status::ok();
    if (order.empty()) place_in_part_order();
    return graph_.reorder(order);
  }

 private:
  // Whether grouping the nodes by part rank keeps the sources' relative order, the data-like ones and the
  // others apart (a sort seeds them so: the data-like ones first, by their index attribute, then the others).
  // A source is a node without a connected input or a control input.
  bool sources_keep_order(const std::vector<int>& rank) const {
    int last_data = 0, last_other = 0;  // ranks are 0 (the input graph) or more
    for (const Node* n : nodes_) {
      if (n->any_control_edges() && !n->control_inputs().empty()) continue;
      const auto& inputs = n->inputs();
      if (std::any_of(inputs.begin(), inputs.end(), [](const sdk::OutPort& p) { return p.node != nullptr; }))
        continue;
      int& last = sdk::is_data_like(n->type()) ? last_data : last_other;
      const int r = rank[static_cast<size_t>(part(n))];
      if (r < last) return false;
      last = r;
    }
    return true;
  }

  // Each node's (engine, stream label) as a small key id; the strings are kept once per key.
  Status classify() {
    key_.resize(nodes_.size());
    node_key_.resize(nodes_.size());
    data_.assign(nodes_.size(), 0);
    std::map<std::pair<std::string, std::string>, int> ids;
    int last = -1;  // most nodes repeat the previous node's key, which is compared without a copy
    const sdk::AttrKey engine_key(engine_attr(options_.mode)), label_key(sdk::attr::kStreamLabel);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node* n = nodes_[i];
      std::string_view engine_name;
      if (is_data_like_source(*n)) {
        data_[i] = 1;
        engine_name = kDefaultDataEngine;
        n->attrs().remove(sdk::attr::kUserStreamLabel);  // GE clears it on data nodes only
      }
      const auto [engine, label] = engine_and_label(*n, engine_key, label_key);
      if (!data_[i]) {
        const std::string* name = engine ? engine->as_string() : nullptr;
        if (name) engine_name = *name;
        if (engine_name.empty() && options_.mode == Mode::kAtomic) {
          return Status::failed_precondition("engine partition of graph '" + graph_.name() + "': node '" +
                                             n->name() + "' (" + n->type() +
                                             ") has no _op_engine_name; run placement.engine_place first");
        }
      }
      const std::string* text = label ? label->as_string() : nullptr;
      const std::string_view label_text = text ? std::string_view(*text) : std::string_view();
      if (last < 0 || keys_[last].first != engine_name || keys_[last].second != label_text) {
        std::pair<std::string, std::string> kl(engine_name, label_text);
        auto [it, fresh] = ids.emplace(kl, static_cast<int>(keys_.size()));
        if (fresh) keys_.push_back(std::move(kl));
        last = it->second;
      }
      key_[i] = node_key_[i] = last;
    }
    return Status::ok();
  }

  // A node's engine attribute (for the mode) and stream label in one walk, keys compared as interned pointers
  // (made once per graph: two string compares per attribute cost more).
  static std::pair<const AttrValue*, const AttrValue*> engine_and_label(const Node& n, sdk::AttrKey engine,
                                                                        sdk::AttrKey label) {
    std::pair<const AttrValue*, const AttrValue*> found{nullptr, nullptr};
    for (const sdk::AttrMap::Entry& e : n.attrs().entries()) {
      if (!found.first && e.first == engine) found.first = &e.second;
      if (!found.second && e.first == label) found.second = &e.second;
    }
    return found;
  }

  // Whether GE's rule can be had without the cluster engine: every node but the data-like sources and the
  // sinks has one (engine, stream label) key, the main key, kept in main_key_ (-1 when there is no such
  // node), and each sink has that key or a key of its own. The usual graph: one engine takes every operator,
  // and NetOutput is GE-local.
  bool one_key() {
    main_key_ = -1;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (data_[i] || is_sink(*nodes_[i])) continue;
      if (main_key_ >= 0 && node_key_[i] != main_key_) return false;
      main_key_ = node_key_[i];
    }
    std::set<int> sink_keys;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (data_[i] || node_key_[i] == main_key_) continue;       // the others are sinks: the loop above
      if (!sink_keys.insert(node_key_[i]).second) return false;  // two such sinks might merge as siblings
    }
    return true;
  }
  static bool is_sink(const Node& n) {
    for (size_t o = 0; o < n.num_outputs(); ++o) {
      if (!n.consumers(o).empty()) return false;
    }
    return n.control_outputs().empty();
  }

  // GE's rule under one_key(), without the cluster engine. Every merge of two nodes of the main key is then
  // allowed: a second path from a parent's cluster would run through another parent's cluster, which holds
  // all of that parent's ancestors of the main key, the parent included, and a sink of another key is on no
  // path. So each cluster ends as a connected component of the main key's nodes (data and control edges,
  // either direction); data-like sources and the other sinks stay alone. With merge_siblings, the readers of
  // one data node also join: no path runs between two components. The engine partitioner tests check this
  // against the cluster engine on random graphs (Options::no_shortcut).
  void join_components() {
    components_.emplace(nodes_.size());
    std::vector<uint32_t> position(graph_.id_bound(), 0);
    for (size_t i = 0; i < nodes_.size(); ++i)
      position[static_cast<size_t>(nodes_[i]->id())] = static_cast<uint32_t>(i);
    std::vector<uint32_t> data_reader(options_.merge_siblings ? nodes_.size() : 0, UINT32_MAX);
    auto join = [&](uint32_t v, uint32_t u) {
      if (!data_[u]) {
        components_->unite(v, u);  // u has v as a consumer: no sink, so of the main key
      } else if (options_.merge_siblings) {
        if (data_reader[u] == UINT32_MAX)
          data_reader[u] = v;
        else
          components_->unite(v, data_reader[u]);
      }
    };
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (data_[i] || node_key_[i] != main_key_) continue;
      const auto v = static_cast<uint32_t>(i);
      for (const sdk::OutPort& p : nodes_[i]->inputs()) {
        if (p.node) join(v, position[static_cast<size_t>(p.node->id())]);
      }
      if (!nodes_[i]->any_control_edges()) continue;
      for (const Node* c : nodes_[i]->control_inputs()) join(v, position[static_cast<size_t>(c->id())]);
    }
  }
  // The cluster of the node at position i: its component's root under the shortcut, a cluster id otherwise.
  uint32_t cluster_at(size_t i) {
    return clusters_ ? clusters_->cluster_of_position(i) : components_->find(static_cast<uint32_t>(i));
  }

  int key(ClusterGraph::Id c) const { return key_[c]; }  // a cluster keeps its first node's key
  bool data_cluster(ClusterGraph::Id c) const { return data_[c]; }

  bool mergeable(ClusterGraph::Id a, ClusterGraph::Id b) const {
    return a != b && key(a) == key(b) && !data_cluster(a) && !data_cluster(b);
  }

  // GE's rule: each cluster, in order, absorbs its input clusters, those with the fewest consumers first, as
  // long as engine and stream label agree and no second path joins them.
  void merge_normal() {
    std::vector<ClusterGraph::Id> parents;
    for (ClusterGraph::Id c : clusters_->topological_order()) {
      if (!clusters_->is_live(c) || data_cluster(c)) continue;
      clusters_->predecessors(c, &parents);
      // Only parents that may join are sorted: their keys do not change while c absorbs the others (a merge
      // gives the merged cluster c's key), so mergeable() below refuses the rest whatever the order. A
      // NetOutput reading 100k clusters of other engines sorted them all for nothing.
      const int k = key(c);
      parents.erase(std::remove_if(parents.begin(), parents.end(),
                                   [&](ClusterGraph::Id p) { return key(p) != k || data_cluster(p); }),
                    parents.end());
      // Fewest consumers first, then in order (predecessors() come in rank order, and ranks are unique):
      // stable_sort's order without its buffer per cluster.
      if (parents.size() > 1) {
        std::sort(parents.begin(), parents.end(), [&](ClusterGraph::Id a, ClusterGraph::Id b) {
          const size_t sa = clusters_->num_successors(a), sb = clusters_->num_successors(b);
          return sa != sb ? sa < sb : clusters_->rank(a) < clusters_->rank(b);
        });
      }
      ClusterGraph::Id cur = c;
      for (ClusterGraph::Id p : parents) {
        if (!clusters_->is_live(p) || !mergeable(p, cur)) continue;
        const ClusterGraph::Id m = clusters_->try_merge(p, cur);
        if (m == ClusterGraph::kNone) continue;
        key_[m] = k;
        cur = m;
      }
    }
  }

  // Beyond GE (option merge_siblings): clusters of one engine that read the same cluster merge when neither
  // reaches the other, as torch.fx's partitioner joins the partitions of a node's users; fewer subgraphs,
  // fewer End/PlaceHolder pairs. Repeated until nothing merges, since each merge can open another.
  void merge_siblings() {
    for (bool merged = true; merged;) {
      merged = false;
      for (ClusterGraph::Id c : clusters_->topological_order()) {
        if (clusters_->is_live(c)) merged = merge_children(c) || merged;
      }
      if (merged) merge_normal();
    }
  }

  // Each successor of `c`, in order, absorbs the later ones it may merge with; true if any merged.
  bool merge_children(ClusterGraph::Id c) {
    std::vector<ClusterGraph::Id>& children = children_;
    clusters_->successors(c, &children);
    bool merged = false;
    for (size_t i = 0; i < children.size(); ++i) {
      for (size_t j = i + 1; j < children.size() && clusters_->is_live(children[i]); ++j) {
        if (!clusters_->is_live(children[j]) || !mergeable(children[i], children[j])) continue;
        const int k = key(children[i]);
        const ClusterGraph::Id m = clusters_->try_merge(children[i], children[j]);
        if (m == ClusterGraph::kNone) continue;
        key_[m] = k;
        children[i] = children[j] = m;
        merged = true;
      }
    }
    return merged;
  }

  // ge.topoSortingMode = 3: neighbours in node order (data nodes aside) merge, from the last pair down.
  void merge_stable() {
    std::vector<size_t> order;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!data_[i]) order.push_back(i);
    }
    for (size_t i = order.size(); i-- > 1;) {
      const ClusterGraph::Id a = clusters_->cluster_of_position(order[i - 1]);
      const ClusterGraph::Id b = clusters_->cluster_of_position(order[i]);
      if (!mergeable(a, b)) continue;
      const int k = key(a);
      const ClusterGraph::Id m = clusters_->try_merge(a, b);
      if (m != ClusterGraph::kNone) key_[m] = k;
    }
  }

  // GE's numbering: walking the nodes, each cluster met first gets new_sub_graph<K>; non-data clusters also
  // get the next rank, data clusters all share the input graph (rank 0).
  void number() {
    part_of_cluster_.assign(nodes_.size(), -1);
    part_of_node_.assign(graph_.id_bound(), -1);
    sub_number_.clear();
    int k = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const ClusterGraph::Id c = cluster_at(i);
      if (part_of_cluster_[c] == -1) {
        const int number = k++;
        if (!data_cluster(c)) {
          part_of_cluster_[c] = static_cast<int>(parts_.size());
          parts_.push_back({number, keys_[node_key_[i]].first, keys_[node_key_[i]].second, {}});
        } else {
          if (input_part_ == -1) {
            input_part_ = static_cast<int>(parts_.size());
            parts_.push_back({-1, std::string(kInputGraphEngine), std::string(), {}});
          }
          part_of_cluster_[c] = input_part_;
        }
      }
      part_of_node_[static_cast<size_t>(nodes_[i]->id())] = part_of_cluster_[c];
    }
  }

  int part(const Node* n) const { return part_of_node_[static_cast<size_t>(n->id())]; }
  std::string part_name(int p) const {
    std::string s;
    append_part_name(&s, p);
    return s;
  }
  void append_part_name(std::string* s, int p) const {
    if (parts_[p].number < 0) {
      *s += "inputNodeGraph";
    } else {
      *s += "new_sub_graph";
      append_number(s, parts_[p].number);
    }
  }
  static void append_number(std::string* s, int64_t v) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    s->append(digits, end);
  }
  void assign(Node* n, int p) {
    if (static_cast<size_t>(n->id()) >= part_of_node_.size()) part_of_node_.resize(n->id() + 1, -1);
    part_of_node_[static_cast<size_t>(n->id())] = p;
  }

  // Every edge between two parts in pair order: consumers in node order, each one's data inputs, then its
  // control inputs. cut() and join_in_place() walk the same order, so that their results agree.
  template <class OnData, class OnControl>
  void for_each_crossing(OnData on_data, OnControl on_control) {
    for (Node* consumer : nodes_) {
      const int dst = part(consumer);
      for (size_t i = 0; i < consumer->num_inputs(); ++i) {
        const sdk::OutPort src = consumer->input(i);
        if (src.node && part(src.node) != dst) on_data(src, sdk::InPort{consumer, static_cast<int32_t>(i)});
      }
      if (!consumer->any_control_edges()) continue;
      for (Node* producer : std::vector<Node*>(consumer->control_inputs())) {
        if (part(producer) != dst) on_control(producer, consumer);
      }
    }
  }

  // One End/PlaceHolder pair per crossing edge, data or control, with GE's attributes; no fan-out sharing.
  // Data edges are cut all at once after the walk (a hub read across parts is searched once).
  void make_pairs(int64_t* next_pair, GraphPartition* out) {
    struct Cut {
      sdk::OutPort src;
      sdk::InPort dst;
      Node *end, *placeholder;
    };
    std::vector<Cut> cuts;
    for_each_crossing(
        [&](sdk::OutPort src, sdk::InPort dst) {
          auto [end, placeholder] = add_pair(src.node, dst.node, src.index, (*next_pair)++);
          cuts.push_back({src, dst, end, placeholder});
          ++out->pairs;
        },
        [&](Node* producer, Node* consumer) {
          auto [end, placeholder] = add_pair(producer, consumer, -1, (*next_pair)++);
          (void)graph_.remove_control_edge(producer, consumer);
          (void)graph_.add_control_edge(producer, end);
          (void)graph_.add_control_edge(placeholder, consumer);
          ++out->pairs;
        });
    std::vector<sdk::InPort> inputs;
    for (const Cut& c : cuts) inputs.push_back(c.dst);
    graph_.disconnect_inputs(inputs);
    for (const Cut& c : cuts) {
      (void)graph_.add_edge(c.src, {c.end, 0});
      (void)graph_.add_edge({c.placeholder, 0}, c.dst);
    }
  }

  std::pair<Node*, Node*> add_pair(Node* producer, Node* consumer, int32_t anchor, int64_t index) {
    const int src = part(producer), dst = part(consumer);
    const std::string engine_src = parts_[src].engine, engine_dst = parts_[dst].engine;
    Node* end = graph_.add_node(graph_.unique_node_name(part_name(src) + "_End" + std::to_string(index)),
                                std::string(sdk::op::kEnd), 1, 0);
    Node* ph =
        graph_.add_node(graph_.unique_node_name(part_name(dst) + "_PlaceHolder" + std::to_string(index)),
                        std::string(sdk::op::kPlaceHolder), 0, 0);
    ph->add_output(anchor >= 0 ? producer->output_desc(anchor) : sdk::TensorDesc{},
                   anchor >= 0 ? producer->output_name(anchor) : std::string());
    end->attrs().reserve(3);
    ph->attrs().reserve(8);
    end->attrs().set(kPeerIndex, AttrValue::Int(index));
    end->attrs().set(kParentOpType, AttrValue::String(consumer->type()));
    end->attrs().set(kRearEngine, AttrValue::String(engine_key_of(*consumer)));
    ph->attrs().set(kPeerIndex, AttrValue::Int(index));
    ph->attrs().set(kParentOpType, AttrValue::String(producer->type()));
    ph->attrs().set(kParentNodeName, AttrValue::String(producer->name()));
    ph->attrs().set(kFrontEngine, AttrValue::String(engine_key_of(*producer)));
    ph->attrs().set(kParentId, AttrValue::String(part_name(src) + ":" + std::to_string(producer->id())));
    ph->attrs().set(kAnchorIndex, AttrValue::Int(anchor));
    ph->attrs().set(kPeerNodeName, AttrValue::String(end->name()));
    assign(end, src);
    assign(ph, dst);
    return {end, ph};
  }

  std::string engine_key_of(const Node& n) const {
    return is_data_like_source(n) ? std::string(kDefaultDataEngine) : engine_key(n, options_.mode);
  }

  // Ranks: the input graph first, then the others as they were met.
  std::vector<int> ranks() const {
    std::vector<int> rank(parts_.size());
    int next_rank = 1;
    for (size_t p = 0; p < parts_.size(); ++p) rank[p] = static_cast<int>(p) == input_part_ ? 0 : next_rank++;
    return rank;
  }

  std::vector<size_t> rank_order() const {
    const std::vector<int> rank = ranks();
    std::vector<size_t> by_rank(parts_.size());
    std::iota(by_rank.begin(), by_rank.end(), size_t{0});
    std::sort(by_rank.begin(), by_rank.end(), [&](size_t a, size_t b) { return rank[a] < rank[b]; });
    return by_rank;
  }

  // part_name() behind "partition<index>_rank<rank>_", built in one string: a graph of 100k parts spent 1,300
  // instructions a name on the temporaries of a chain of operator+.
  std::string subgraph_base(int64_t partition_index, size_t p, int rank) const {
    std::string s;
    s.reserve(64);
    s += "partition";
    append_number(&s, partition_index);
    s += "_rank";
    append_number(&s, rank);
    s += '_';
    append_part_name(&s, static_cast<int>(p));
    return s;
  }

  Status move_out(int64_t partition_index, GraphPartition* out) {
    Graph& tree = *graph_.root();
    const std::vector<int> rank = ranks();
    std::vector<std::vector<Node*>> members(parts_.size());
    // Pairs first in a subgraph's order is no requirement; node order is kept, PlaceHolders lead.
    for (Node* n : graph_.node_list()) {
      if (n->type() == sdk::op::kPlaceHolder && n->attrs().has(kPeerIndex)) members[part(n)].push_back(n);
    }
    for (Node* n : graph_.node_list()) {
      if (!(n->type() == sdk::op::kPlaceHolder && n->attrs().has(kPeerIndex))) members[part(n)].push_back(n);
    }
    const std::vector<size_t> by_rank = rank_order();
    std::vector<Graph*> sub(parts_.size());
    for (size_t p : by_rank) {
      sub[p] =
          tree.add_detached_subgraph(tree.unique_subgraph_name(subgraph_base(partition_index, p, rank[p])));
      sub[p]->attrs().set(sdk::attr::kParentGraphName, AttrValue::String(graph_.name()));
      if (graph_.is_root()) sub[p]->attrs().set(sdk::attr::kIsRootGraph, AttrValue::Bool(true));
      if (const AttrValue* v = graph_.attrs().get(sdk::attr::kIsUnknownShape))
        sub[p]->attrs().set(sdk::attr::kIsUnknownShape, *v);
      if (const AttrValue* v = graph_.attrs().get(sdk::attr::kSessionGraphId))
        sub[p]->attrs().set(sdk::attr::kSessionGraphId, *v);
      out->subgraphs.push_back({sub[p], parts_[p].engine, parts_[p].label, rank[p]});
    }
    // The largest part last: it then takes every remaining node, and the graph's name index goes with them
    // instead of a million erase-and-insert steps (the order of moves changes nothing else).
    std::vector<size_t> by_size = by_rank;
    std::stable_sort(by_size.begin(), by_size.end(),
                     [&](size_t a, size_t b) { return members[a].size() < members[b].size(); });
    for (size_t p : by_size) GS_RETURN_IF_ERROR(graph_.move_nodes_to(members[p], sub[p]));
    out->source = &graph_;
    return Status::ok();
  }

  struct Part {
    int number;  // K of new_sub_graph<K>; -1 for the input graph
    std::string engine, label;
    std::vector<Node*> unused;
  };

  Graph& graph_;
  const Options& options_;
  std::vector<Node*> nodes_;
  std::vector<ClusterGraph::Id> children_;                 // merge_children()'s, reused
  std::vector<int> key_;                                   // per cluster (a cluster keeps its first node's)
  std::vector<int> node_key_;                              // per node position
  std::vector<std::pair<std::string, std::string>> keys_;  // engine and stream label of each key
  std::vector<char> data_;
  std::unique_ptr<ClusterGraph> clusters_;    // null under the one-key shortcut
  std::optional<sdk::UnionFind> components_;  // over positions, under the one-key shortcut
  int main_key_ = -1;                         // one_key()'s main key
  std::vector<int> part_of_cluster_, part_of_node_;
  std::vector<int> sub_number_;
  std::vector<Part> parts_;
  int input_part_ = -1;
};

// GE's composite assignment (reference 4.2): deepest graphs first; a node with subgraphs takes the composite
// engine its subgraphs' operators share, NetOutput gets "", the others map atomic -> composite.
void assign_composite(Graph& root, const Options& options) {
  std::vector<Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  auto depth = [](const Graph* g) {
    int d = 0;
    for (; !g->is_root() && g->parent_node(); g = g->parent_graph()) ++d;
    return d;
  };
  std::stable_sort(graphs.begin(), graphs.end(), [&](Graph* a, Graph* b) { return depth(a) > depth(b); });
  for (Graph* g : graphs) {
    for (Node* n : g->nodes()) {
      std::string composite;
      if (n->type() == sdk::op::kNetOutput) {
        composite.clear();
      } else if (!n->subgraphs().empty()) {
        std::set<std::string> seen;
        bool empty = false;
        for (const Graph* sub : n->subgraphs()) {
          size_t ops = 0;
          for (const Node* inner : sub->nodes()) {
            if (inner->type() == sdk::op::kNetOutput || inner->type() == sdk::op::kNoOp ||
                is_data_like_source(*inner))
              continue;
            ++ops;
            seen.insert(inner->attrs().get_string(sdk::attr::kCompositeEngineName));
          }
          empty = empty || ops == 0;
        }
        if (!empty && seen.size() == 1) composite = *seen.begin();
      } else {
        auto it = options.composite_map.find(n->attrs().get_string(sdk::attr::kOpEngineName));
        if (it != options.composite_map.end()) composite = it->second;
      }
      if (composite.empty() && n->type() != sdk::op::kNetOutput) {
        n->attrs().remove(sdk::attr::kCompositeEngineName);
        n->attrs().remove(sdk::attr::kCompositeEngineKernelLibName);
      } else {
        n->attrs().set(sdk::attr::kCompositeEngineName, AttrValue::String(composite));
        n->attrs().set(sdk::attr::kCompositeEngineKernelLibName, AttrValue::String(composite));
      }
    }
  }
}

// Each engine optimises its own subgraphs, on `threads` workers. A failure is reported for the first failing
// subgraph in rank order, whatever thread met it, so the message never depends on scheduling.
Status optimise(const GraphPartition& p, const std::vector<sdk::EngineRef>& engines, sdk::PassContext& ctx,
                int64_t threads, size_t* changed_count) {
  struct Job {
    sdk::Engine* engine;
    const EngineSubgraph* sub;
  };
  std::vector<Job> jobs;
  for (const EngineSubgraph& s : p.subgraphs) {
    for (const sdk::EngineRef& e : engines) {
      if (e.name == s.engine && e.engine) jobs.push_back({e.engine, &s});
    }
  }
  std::vector<Status> results(jobs.size(), Status::ok());
  std::vector<char> job_changed(jobs.size(), 0);
  auto run_job = [&](size_t i) {
    bool c = false;
    Status s;
    try {
      s = jobs[i].engine->optimize(*jobs[i].sub->graph, ctx, &c);
    } catch (const std::exception& e) {
      s = Status::internal(std::string("threw: ") + e.what());
    } catch (...) {
      s = Status::internal("threw a non-standard exception");
    }
    if (s.is_ok()) {
      const Status v = sdk::verify_graph(*jobs[i].sub->graph);
      if (!v.is_ok()) s = Status::internal("left a broken subgraph: " + v.message());
    }
    results[i] = s;
    job_changed[i] = c;
  };
  if (threads == 1 || jobs.size() < 2) {
    for (size_t i = 0; i < jobs.size(); ++i) run_job(i);
  } else {
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < std::min<int64_t>(threads, static_cast<int64_t>(jobs.size())); ++t) {
      pool.emplace_back([&] {
        for (size_t i; (i = next.fetch_add(1)) < jobs.size();) run_job(i);
      });
    }
    for (std::thread& t : pool) t.join();
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!results[i].is_ok()) {
      return Status(results[i].code(), "engine '" + jobs[i].sub->engine + "' optimising subgraph '" +
                                           jobs[i].sub->graph->name() + "' of graph '" + p.source->name() +
                                           "': " + results[i].message());
    }
    *changed_count += job_changed[i] ? 1 : 0;
  }
  return Status::ok();
}

}  // namespace

Status split(Graph& graph, const Options& options, sdk::TopoSortMode sort_mode, int64_t partition_index,
             int64_t* next_pair, GraphPartition* out) {
  *out = GraphPartition{};
  GS_RETURN_IF_ERROR(sdk::topological_sort(graph, sort_mode));
  if (graph.num_nodes() == 0) {
    out->source = &graph;
    return Status::ok();
  }
  Splitter splitter(graph, options);
  GS_RETURN_IF_ERROR(splitter.plan());
  return splitter.cut(partition_index, next_pair, out);
}

namespace {

// Every node of the subgraphs back into the source graph, in subgraph order. The largest subgraph moves
// first, into the empty graph, taking its name index along; the order is then restored (the sort after
// depends on it).
Status move_back(GraphPartition& partition) {
  Graph& graph = *partition.source;
  std::vector<Node*> order;
  const EngineSubgraph* largest = nullptr;
  for (const EngineSubgraph& s : partition.subgraphs) {
    for (Node* n : s.graph->nodes()) order.push_back(n);
    if (!largest || s.graph->num_nodes() > largest->graph->num_nodes()) largest = &s;
  }
  auto move = [&](const EngineSubgraph& s) {
    const Status moved = s.graph->move_nodes_to(s.graph->node_list(), &graph);
    if (moved.is_ok()) return moved;
    return Status::failed_precondition("engine partition: merging subgraph '" + s.graph->name() +
                                       "' back into '" + graph.name() + "': " + moved.message());
  };
  if (graph.num_nodes() == 0 && largest) GS_RETURN_IF_ERROR(move(*largest));
  for (const EngineSubgraph& s : partition.subgraphs) {
    if (s.graph->num_nodes() > 0) GS_RETURN_IF_ERROR(move(s));
  }
  return graph.num_nodes() == order.size() ? graph.reorder(order) : Status::ok();
}

}  // namespace

namespace {

using Pairs = std::map<int64_t, std::pair<Node*, Node*>>;

bool is_pair_node(const Node* n) {
  return n && (n->type() == sdk::op::kEnd || n->type() == sdk::op::kPlaceHolder) &&
         n->attrs().has(kPeerIndex);
}

// Each PlaceHolder's readers read its End's source instead, and the pair goes. Edges are cut and nodes
// removed all at once (an End per reader of a hub would each search the hub's list), unless an optimiser left
// a PlaceHolder feeding another pair's End: then each join relies on the ones before, and pairs go one by
// one.
Status join_pairs(Graph& graph, const Pairs& pairs) {
  bool chained = false;
  for (const auto& [index, pair] : pairs) {
    auto [end, ph] = pair;
    if (!end || !ph) {
      return Status::failed_precondition("engine partition of graph '" + graph.name() + "': pair " +
                                         std::to_string(index) + " lost its " +
                                         (end ? "PlaceHolder" : "End") + " during optimisation");
    }
    if (end->num_inputs() && is_pair_node(end->input(0).node)) chained = true;
    for (const Node* c : end->control_inputs()) chained = chained || is_pair_node(c);
  }
  std::vector<sdk::InPort> cut;
  std::vector<std::pair<sdk::OutPort, sdk::InPort>> wires;
  std::vector<Node*> gone;
  for (const auto& [index, pair] : pairs) {
    auto [end, ph] = pair;
    const sdk::OutPort source = end->num_inputs() ? end->input(0) : sdk::OutPort{};
    Node* control_source = end->control_inputs().empty() ? nullptr : end->control_inputs().front();
    for (size_t o = 0; o < ph->num_outputs(); ++o) {
      for (const sdk::InPort& c : std::vector<sdk::InPort>(ph->consumers(o))) {
        if (!source.node) {
          return Status::failed_precondition("engine partition of graph '" + graph.name() +
                                             "': PlaceHolder '" + ph->name() + "' feeds data but its End '" +
                                             end->name() + "' has no data input");
        }
        if (!chained) {
          cut.push_back(c);
          wires.push_back({source, c});
          continue;
        }
        graph.disconnect_input(c);
        GS_RETURN_IF_ERROR(graph.add_edge(source, c));
      }
    }
    Node* from = source.node ? source.node : control_source;
    for (Node* c : std::vector<Node*>(ph->control_outputs())) {
      if (from) GS_RETURN_IF_ERROR(graph.add_control_edge(from, c));
    }
    if (chained) {
      graph.remove_node(end);
      graph.remove_node(ph);
    } else {
      gone.push_back(end);
      gone.push_back(ph);
    }
  }
  graph.disconnect_inputs(cut);
  for (const auto& [src, dst] : wires) GS_RETURN_IF_ERROR(graph.add_edge(src, dst));
  graph.remove_nodes(gone);
  return Status::ok();
}

}  // namespace

Status merge_back(GraphPartition& partition, const std::vector<sdk::EngineRef>& engines,
                  sdk::TopoSortMode sort_mode) {
  Graph& graph = *partition.source;
  Graph& tree = *graph.root();
  std::vector<std::string> summary;
  for (const EngineSubgraph& s : partition.subgraphs) {
    const sdk::EngineRef* ref = find_engine(engines, s.engine);
    size_t count = 0;
    for (Node* n : s.graph->nodes()) {
      if (n->attrs().has(kPeerIndex) && (n->type() == sdk::op::kEnd || n->type() == sdk::op::kPlaceHolder))
        continue;
      ++count;
      inherit(n, s.engine, s.stream_label, ref);
    }
    summary.push_back(s.graph->name() + "|" + s.engine + "|" + s.stream_label + "|" + std::to_string(count));
  }
  GS_RETURN_IF_ERROR(move_back(partition));
  // Every End meets its PlaceHolder, in pair order.
  Pairs pairs;
  for (Node* n : graph.nodes()) {
    const bool end = n->type() == sdk::op::kEnd, ph = n->type() == sdk::op::kPlaceHolder;
    if ((!end && !ph) || !n->attrs().has(kPeerIndex)) continue;
    auto& slot = pairs[n->attrs().get_int(kPeerIndex, -1)];
    (end ? slot.first : slot.second) = n;
  }
  GS_RETURN_IF_ERROR(join_pairs(graph, pairs));
  std::vector<sdk::Graph*> work_areas;
  for (const EngineSubgraph& s : partition.subgraphs) work_areas.push_back(s.graph);
  tree.remove_subgraphs(work_areas);
  if (!summary.empty())
    graph.attrs().set(sdk::attr::kEnginePartitions, AttrValue::Strings(std::move(summary)));
  return sdk::topological_sort(graph, sort_mode);
}

namespace {

struct Counts {
  size_t partitioned = 0, subgraphs = 0, pairs = 0, optimised = 0;
};

// One graph: cut, optimised and merged back; or, when no engine of its parts optimises, left as that would
// leave it without being cut.
Status partition_one(Graph& graph, const Options& options, sdk::TopoSortMode sort_mode,
                     int64_t partition_index, const std::vector<sdk::EngineRef>& engines,
                     sdk::PassContext& ctx, int64_t threads, int64_t* next_pair, Counts* counts) {
  GS_RETURN_IF_ERROR(sdk::topological_sort(graph, sort_mode));
  if (graph.num_nodes() == 0) return Status::ok();
  Splitter splitter(graph, options);
  GS_RETURN_IF_ERROR(splitter.plan());
  ++counts->partitioned;
  if (!options.cut_always && !splitter.any_part_optimised(engines)) {
    std::vector<std::string> summary;
    int64_t pairs = 0;
    GS_RETURN_IF_ERROR(
        splitter.join_in_place(partition_index, engines, sort_mode, next_pair, &pairs, &summary));
    counts->subgraphs += summary.size();
    counts->pairs += static_cast<size_t>(pairs);
    graph.attrs().set(sdk::attr::kEnginePartitions, AttrValue::Strings(std::move(summary)));
    return sdk::topological_sort(graph, sort_mode);
  }
  GraphPartition p;
  GS_RETURN_IF_ERROR(splitter.cut(partition_index, next_pair, &p));
  size_t changed_here = 0;
  GS_RETURN_IF_ERROR(optimise(p, engines, ctx, threads, &changed_here));
  GS_RETURN_IF_ERROR(merge_back(p, engines, sort_mode));
  counts->subgraphs += p.subgraphs.size();
  counts->pairs += static_cast<size_t>(p.pairs);
  counts->optimised += changed_here;
  return Status::ok();
}

}  // namespace

Status EnginePartitioner::partition(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  const sdk::OptionValues& own = ctx.options();
  std::vector<std::string> modes = {"composite", "atomic"};
  if (const AttrValue* list = own.get("modes"); list && list->as_strings()) modes = *list->as_strings();
  for (const std::string& m : modes) {
    if (m != "composite" && m != "atomic") {
      return Status::invalid_argument("engine partitioner: option 'modes' holds '" + m +
                                      "'; the modes are \"composite\" and \"atomic\"");
    }
    bool c = false;
    GS_RETURN_IF_ERROR(run_mode(root, ctx, m == "composite" ? Mode::kComposite : Mode::kAtomic, &c));
    *changed = *changed || c;
  }
  return Status::ok();
}

Status EnginePartitioner::run_mode(Graph& root, sdk::PassContext& ctx, Mode mode, bool* changed) {
  *changed = false;
  Options options;
  const sdk::OptionValues& own = ctx.options();
  options.mode = mode;
  const sdk::OptionValues& ge = ctx.ge_options();
  options.stable = ge.get_string("ge.topoSortingMode") == "3";
  options.merge_siblings = own.get_bool("merge_siblings", false);
  options.cut_always = own.get_bool("cut_always", false);
  sdk::TopoSortMode sort_mode = sdk::kDefaultTopoSortMode;
  if (auto m = sdk::parse_topo_sorting_mode(ge.get_string("ge.topoSortingMode"))) sort_mode = *m;
  if (options.mode == Mode::kComposite) {
    if (root.attrs().get_bool(sdk::attr::kSingleOpScene, false)) return Status::ok();
    if (const AttrValue* list = own.get("composite_engines"); list && list->as_strings()) {
      for (const std::string& entry : *list->as_strings()) {
        const size_t eq = entry.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
          return Status::invalid_argument("engine partitioner: composite_engines entry '" + entry +
                                          "' is not ATOMIC=COMPOSITE");
        }
        options.composite_map[entry.substr(0, eq)] = entry.substr(eq + 1);
      }
    }
    if (options.composite_map.empty()) {
      ctx.log(sdk::LogLevel::kInfo, "composite mode skipped: no composite engine is registered");
      return Status::ok();
    }
    assign_composite(root, options);
  }

  const int64_t partition_index = root.attrs().get_int(kPartitionCounter, 0);
  root.attrs().set(kPartitionCounter, AttrValue::Int(partition_index + 1));
  // The root, then every graph of its flat list, as GE does; the list is taken before anything is added.
  std::vector<Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  // One graph at a time: split, optimise, merge back; so that an optimiser looking into an If branch or a
  // PartitionedCall body finds it whole.
  const std::vector<sdk::EngineRef> engines = ctx.engines();
  int64_t threads = own.get_int("threads", 1);
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t next_pair = 0;
  Counts counts;
  for (Graph* g : graphs) {
    if (g->attrs().get_bool(sdk::attr::kNoNeedPartition, false) ||
        g->attrs().get_bool(sdk::attr::kNoNeedPartitionAndMerge, false) ||
        g->attrs().get_bool(sdk::attr::kNoNeedMerge, false)) {
      ctx.log(sdk::LogLevel::kInfo,
              "graph '" + g->name() + "' is marked not to be partitioned; left as it is");
      continue;
    }
    GS_RETURN_IF_ERROR(
        partition_one(*g, options, sort_mode, partition_index, engines, ctx, threads, &next_pair, &counts));
  }
  *changed = counts.partitioned > 0;
  ctx.log(sdk::LogLevel::kInfo,
          std::string(options.mode == Mode::kComposite ? "composite" : "atomic") + " engine partition: " +
              std::to_string(counts.partitioned) + " graphs, " + std::to_string(counts.subgraphs) +
              " engine subgraphs, " + std::to_string(counts.pairs) + " End/PlaceHolder pairs, " +
              std::to_string(counts.optimised) + " subgraphs changed by their engine, merged back");
  return Status::ok();
}

}  // namespace graphsplit::plugins::engine
