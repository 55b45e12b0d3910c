// The compact .om encoding (format 2, om.proto's Compact): every recurring string, descriptor and attribute
// list stored once, producers by position. Written and read straight from and into the IR.
#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/strings.h"
#include "model/om.pb.h"
#include "model/om_internal.h"
#include "model/om_io.h"
#include "model/om_values.h"

namespace graphsplit::om_detail {
namespace {

using sdk::AttrValue;
using sdk::Status;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// ------------------------------------------------------------------ IR -> Compact

void append_varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A length-delimited field (wire type 2) holding `message`, as protobuf serialises a repeated message field.
void append_field(std::string* out, uint32_t field, const google::protobuf::MessageLite& message) {
  append_varint(out, (field << 3) | 2);
  append_varint(out, message.ByteSizeLong());
  message.AppendToString(out);
}

// The file is the Compact message as SerializeToString writes it, produced in pieces: its scalar fields, its
// tables (strings, descriptors, attribute sets: encoded as each entry is added, without a message object per
// entry), then the graphs, its last field, one piece per graph, serialised node by node (no message object
// per node). Nothing holds the whole file: at a million nodes the graphs' bytes and the tables' messages were
// the peak of an atc run. Two passes over the graph: the first fills the tables in the order the second
// meets them and keeps each node's table indices for it; the tables are handed over before the second.
class Writer {
 public:
  Writer() { intern(""); }

  Status write(const sdk::Graph& root, const PieceSink& sink) {
    std::vector<const sdk::Graph*> graphs{&root};
    graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
    // Inputs are named by their producer's position in the graph (written graph by graph, from a table by
    // node id); a subgraph names its parent node by position too, kept here for the nodes that have
    // subgraphs.
    size_t refs = 0;
    for (size_t i = 0; i < graphs.size(); ++i) {
      graph_index_[graphs[i]] = static_cast<uint32_t>(i);
      int32_t position = 0;
      refs += 2;
      for (const sdk::Node* n : graphs[i]->nodes()) {
        if (!n->subgraphs().empty()) parent_positions_[n] = position;
        ++position;
        refs += 2 + n->num_outputs();
      }
    }
    refs_.reserve(refs);
    for (const sdk::Graph* g : graphs) fill_tables(*g);
    // The message's scalar fields, then its tables: the bytes SerializeToString gives for the message.
    om::Compact first;
    first.set_magic(std::string(kOmMagic));
    first.set_format_version(kOmFormatVersion);
    first.set_producer("graphsplit " GRAPHSPLIT_VERSION);
    GS_RETURN_IF_ERROR(emit(root, first.SerializeAsString(), sink));
    for (std::string* table : {&strings_bytes_, &descs_bytes_, &attr_sets_bytes_}) {
      GS_RETURN_IF_ERROR(emit(root, *table, sink));
      std::string().swap(*table);
    }
    release_tables();
    for (const sdk::Graph* g : graphs) {
      write_graph(*g);
      GS_RETURN_IF_ERROR(emit(root, prefix_, sink));
      GS_RETURN_IF_ERROR(emit(root, body_, sink));
    }
    return Status::ok();
  }

 private:
  Status emit(const sdk::Graph& root, std::string_view piece, const PieceSink& sink) {
    written_ += piece.size();
    if (written_ > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return Status::resource_exhausted("model '" + root.name() +
                                        "' is too large to serialize (protobuf 2 GiB limit)");
    }
    return sink(piece);
  }

  // A table entry, as protobuf writes an element of the Compact message's repeated field `field`.
  static void append_entry(std::string* table, uint32_t field, std::string_view bytes) {
    append_varint(table, (field << 3) | 2);
    append_varint(table, bytes.size());
    table->append(bytes);
  }

  // Interned strings come from the graph (names, types, attribute values) or are static, and the graph
  // does not change while it is written: the table's keys view them.
  uint32_t intern(std::string_view s) {
    if (auto it = strings_.find(s); it != strings_.end()) return it->second;
    const auto index = static_cast<uint32_t>(strings_.size());
    append_entry(&strings_bytes_, om::Compact::kStringsFieldNumber, s);
    strings_.emplace(s, index);
    return index;
  }

  uint32_t desc(const sdk::TensorDesc& d) {
    key_.clear();
    auto put = [&](int64_t v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<int64_t>(d.kind));
    put(static_cast<int64_t>(d.dtype));
    put(static_cast<int64_t>(d.format));
    put(static_cast<int64_t>(d.shape.dims().size()));
    for (int64_t v : d.shape.dims()) put(v);
    for (const std::string& n : d.shape.dim_names()) put(intern(n));
    if (auto it = descs_.find(std::string_view(key_)); it != descs_.end()) return it->second;
    om::CDesc p;
    p.set_kind(intern(sdk::to_string(d.kind)));
    p.set_dtype(intern(sdk::to_string(d.dtype)));
    p.set_format(intern(sdk::to_string(d.format)));
    for (int64_t v : d.shape.dims()) p.mutable_shape()->add_dims(v);
    for (const std::string& n : d.shape.dim_names()) p.mutable_shape()->add_dim_names(intern(n));
    append_entry(&descs_bytes_, om::Compact::kDescsFieldNumber, p.SerializeAsString());
    const auto index = static_cast<uint32_t>(descs_.size());
    descs_.emplace(key_, index);
    return index;
  }

  void tensor(const sdk::Tensor& t, om::CTensor* p) {
    p->set_desc(desc(t.desc()));
    p->set_data(std::string(t.bytes()));
  }

  void value(const AttrValue& v, om::CValue* p) {
    write_value(
        v, p, [this](std::string_view text) { return intern(text); },
        [this](const sdk::Tensor& t, om::CTensor* m) { tensor(t, m); });
  }

  // Whether two values are written as the same bytes, decided without writing them: floats bit for bit
  // (0.0 == -0.0, NaN != NaN), tensors only when shared.
  static bool same_bytes(const AttrValue& a, const AttrValue& b) {
    using K = AttrValue::Kind;
    if (a.kind() != b.kind()) return false;
    const auto& x = a.storage();
    const auto& y = b.storage();
    switch (a.kind()) {
      case K::kFloat:
        return std::memcmp(&std::get<2>(x), &std::get<2>(y), sizeof(double)) == 0;
      case K::kFloats: {
        const auto& u = std::get<6>(x);
        const auto& v = std::get<6>(y);
        return u.size() == v.size() &&
               (u.empty() || std::memcmp(u.data(), v.data(), u.size() * sizeof(double)) == 0);
      }
      case K::kTensor:
        return std::get<9>(x).tensor == std::get<9>(y).tensor;
      case K::kTensors:
        return false;
      default:
        return a == b;
    }
  }

  static bool same_bytes(const sdk::AttrMap& a, const sdk::AttrMap& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!(a.entries()[i].first == b.entries()[i].first) ||
          !same_bytes(a.entries()[i].second, b.entries()[i].second))
        return false;
    }
    return true;
  }

  // 1 + the index of an equal attribute list already written, or of a new one; 0 for none. Neighbouring
  // nodes mostly carry equal lists (an engine's placement attributes): a list equal to the one before is
  // not serialised again to find its index (its strings are in the table already).
  uint32_t attrs(const sdk::AttrMap& map) {
    if (map.empty()) return 0;
    if (last_attrs_ && same_bytes(*last_attrs_, map)) return last_attr_index_;
    last_attrs_ = &map;
    last_attr_index_ = serialized_attrs(map);
    return last_attr_index_;
  }

  uint32_t serialized_attrs(const sdk::AttrMap& map) {
    scratch_.Clear();
    for (const auto& [k, v] : map.entries()) {
      scratch_.add_names(intern(k));
      value(v, scratch_.add_values());
    }
    scratch_.SerializeToString(&key_);
    if (auto it = attr_sets_.find(std::string_view(key_)); it != attr_sets_.end()) return it->second;
    append_entry(&attr_sets_bytes_, om::Compact::kAttrSetsFieldNumber, key_);
    const auto index = static_cast<uint32_t>(attr_sets_.size() + 1);
    attr_sets_.emplace(key_, index);
    return index;
  }

  // Pass 1, in write_graph's order: a graph's name and attributes, then each node's type, output
  // descriptors and attributes.
  void fill_tables(const sdk::Graph& g) {
    refs_.push_back(intern(g.name()));
    refs_.push_back(attrs(g.attrs()));
    for (const sdk::Node* n : g.nodes()) {
      refs_.push_back(intern(n->type()));
      for (size_t o = 0; o < n->num_outputs(); ++o) refs_.push_back(desc(n->output_desc(o)));
      refs_.push_back(attrs(n->attrs()));
    }
  }

  // The tables are in the file once the head is: pass 2 reads their indices from refs_.
  void release_tables() {
    decltype(strings_)().swap(strings_);
    decltype(descs_)().swap(descs_);
    decltype(attr_sets_)().swap(attr_sets_);
  }

  uint32_t next_ref() { return refs_[next_ref_++]; }

  // CGraph's nodes are its last field: the graph's other fields, then one field per node.
  void write_graph(const sdk::Graph& g) {
    om::CGraph head;
    head.set_name(next_ref());
    head.set_parent_node(-1);
    if (const sdk::Node* parent = g.parent_node()) {
      head.set_parent_graph(graph_index_.at(parent->owner()));
      head.set_parent_node(parent_positions_.at(parent));
    }
    head.set_attrs(next_ref());
    body_.clear();
    head.AppendToString(&body_);
    positions_.assign(g.id_bound(), -1);
    int32_t position = 0;
    for (const sdk::Node* n : g.nodes()) positions_[static_cast<size_t>(n->id())] = position++;
    for (const sdk::Node* n : g.nodes()) {
      node_.Clear();
      write_node(*n, &node_);
      append_field(&body_, om::CGraph::kNodesFieldNumber, node_);
    }
    prefix_.clear();
    append_varint(&prefix_, (om::Compact::kGraphsFieldNumber << 3) | 2);
    append_varint(&prefix_, body_.size());
  }

  int32_t position(const sdk::Node* n) const { return positions_.at(static_cast<size_t>(n->id())); }

  void write_node(const sdk::Node& n, om::CNode* p) {
    p->set_name(n.name());
    p->set_type(next_ref());
    for (const sdk::OutPort& in : n.inputs()) {
      p->add_inputs(in.node ? position(in.node) : -1);
      p->add_inputs(in.node ? in.index : 0);
    }
    for (const sdk::Node* c : n.control_inputs()) p->add_control_inputs(position(c));
    const bool implied = n.num_outputs() == 1 && n.output_name(0) == n.name();
    for (size_t o = 0; o < n.num_outputs(); ++o) {
      if (!implied) p->add_output_names(n.output_name(o));
      p->add_output_descs(next_ref());
    }
    p->set_attrs(next_ref());
  }

  std::string strings_bytes_, descs_bytes_, attr_sets_bytes_;  // the tables, as they go in the file
  std::vector<uint32_t> refs_;
  size_t next_ref_ = 0;
  size_t written_ = 0;
  std::string prefix_, body_;  // the graph being written
  om::CNode node_;             // reused: Clear() keeps its fields' capacity
  std::unordered_map<std::string_view, uint32_t> strings_;
  StringMap<uint32_t> descs_, attr_sets_;
  std::unordered_map<const sdk::Graph*, uint32_t> graph_index_;
  std::unordered_map<const sdk::Node*, int32_t> parent_positions_;
  std::vector<int32_t> positions_;  // the graph being written: position by node id
  std::string key_;
  om::CAttrSet scratch_;
  const sdk::AttrMap* last_attrs_ = nullptr;
  uint32_t last_attr_index_ = 0;
};

// ------------------------------------------------------------------ Compact -> IR

class Reader {
 public:
  Reader(const om::Compact& m, std::string source) : m_(m), source_(std::move(source)) {}

  Status read(std::unique_ptr<sdk::Graph>* out) {
    if (m_.graphs_size() == 0) return err("no root graph");
    GS_RETURN_IF_ERROR(read_descs());
    const om::CGraph& pr = m_.graphs(0);
    if (pr.parent_node() != -1) return err("the first graph is not a root");
    GS_RETURN_IF_ERROR(str(pr.name(), "the root's name"));
    auto root = sdk::Graph::create(m_.strings(static_cast<int>(pr.name())));
    graphs_.assign(m_.graphs_size(), nullptr);
    nodes_.resize(m_.graphs_size());
    graphs_[0] = root.get();
    GS_RETURN_IF_ERROR(create_nodes(pr, root.get(), &nodes_[0]));
    for (int i = 1; i < m_.graphs_size(); ++i) GS_RETURN_IF_ERROR(create_graph(i, root.get(), 0));
    GS_RETURN_IF_ERROR(root->reorder_subgraphs({graphs_.begin() + 1, graphs_.end()}));
    GS_RETURN_IF_ERROR(read_attr_sets());
    for (int i = 0; i < m_.graphs_size(); ++i) GS_RETURN_IF_ERROR(link(m_.graphs(i), graphs_[i], nodes_[i]));
    GS_RETURN_IF_ERROR(sdk::verify(*root).with_context(source_ + ": "));
    *out = std::move(root);
    return Status::ok();
  }

 private:
  Status err(const std::string& what) const { return Status::invalid_argument(source_ + ": " + what); }

  bool has_string(uint32_t index) const { return index < static_cast<uint32_t>(m_.strings_size()); }
  Status str(uint32_t index, const std::string& what) const {
    if (!has_string(index)) return err(what + ": string index " + std::to_string(index) + " out of range");
    return Status::ok();
  }
  const std::string& s(uint32_t index) const { return m_.strings(static_cast<int>(index)); }

  Status read_descs() {
    descs_.resize(m_.descs_size());
    for (int i = 0; i < m_.descs_size(); ++i) {
      const om::CDesc& p = m_.descs(i);
      const std::string what = "descriptor " + std::to_string(i);
      GS_RETURN_IF_ERROR(str(p.kind(), what));
      GS_RETURN_IF_ERROR(str(p.dtype(), what));
      GS_RETURN_IF_ERROR(str(p.format(), what));
      sdk::TensorDesc& d = descs_[i];
      bool kind_ok = false;
      for (int k = 0; k <= static_cast<int>(sdk::ValueKind::kUnknown); ++k) {
        if (sdk::to_string(static_cast<sdk::ValueKind>(k)) == s(p.kind())) {
          d.kind = static_cast<sdk::ValueKind>(k);
          kind_ok = true;
        }
      }
      auto dtype = sdk::parse_data_type(s(p.dtype()));
      auto format = sdk::parse_format(s(p.format()));
      if (!kind_ok || !dtype || !format) {
        return err(what + " is bad (kind '" + s(p.kind()) + "', dtype '" + s(p.dtype()) + "', format '" +
                   s(p.format()) + "')");
      }
      d.dtype = *dtype;
      d.format = *format;
      d.shape = sdk::Shape(std::vector<int64_t>(p.shape().dims().begin(), p.shape().dims().end()));
      if (p.shape().dim_names_size() > 0) {
        if (p.shape().dim_names_size() != p.shape().dims_size())
          return err(what + ": dim_names and dims differ in length");
        std::vector<std::string> names;
        for (uint32_t n : p.shape().dim_names()) {
          GS_RETURN_IF_ERROR(str(n, what));
          names.push_back(s(n));
        }
        d.shape.set_dim_names(std::move(names));
      }
    }
    return Status::ok();
  }

  Status desc(uint32_t index, const std::string& what, const sdk::TensorDesc** out) const {
    if (index >= descs_.size())
      return err(what + ": descriptor index " + std::to_string(index) + " out of range");
    *out = &descs_[index];
    return Status::ok();
  }

  // Parent-first, whatever the file's order; `depth` stops a cycle of parents.
  Status create_graph(int i, sdk::Graph* root, int depth) {
    if (graphs_[i]) return Status::ok();
    const om::CGraph& p = m_.graphs(i);
    GS_RETURN_IF_ERROR(str(p.name(), "graph " + std::to_string(i)));
    const std::string& name = s(p.name());
    if (depth > m_.graphs_size()) return err("subgraph '" + name + "' is its own ancestor");
    if (p.parent_graph() >= static_cast<uint32_t>(m_.graphs_size()) ||
        static_cast<int>(p.parent_graph()) == i)
      return err("subgraph '" + name + "' names a bad parent graph");
    const int parent_graph = static_cast<int>(p.parent_graph());
    GS_RETURN_IF_ERROR(create_graph(parent_graph, root, depth + 1));
    const std::vector<sdk::Node*>& siblings = nodes_[parent_graph];
    if (p.parent_node() < 0 || static_cast<size_t>(p.parent_node()) >= siblings.size())
      return err("subgraph '" + name + "' names a parent node out of range");
    sdk::Graph* sub = root->add_subgraph(name, siblings[p.parent_node()]);
    if (!sub) return err("subgraph '" + name + "' cannot be registered (duplicate name)");
    graphs_[i] = sub;
    by_name_[name] = sub;
    return create_nodes(p, sub, &nodes_[i]);
  }

  Status create_nodes(const om::CGraph& pg, sdk::Graph* g, std::vector<sdk::Node*>* nodes) {
    nodes->reserve(pg.nodes_size());
    for (const om::CNode& pn : pg.nodes()) {
      // Labels for messages are built only when there is a message: per node they were strings made for
      // nothing.
      if (!has_string(pn.type())) GS_RETURN_IF_ERROR(str(pn.type(), "node '" + pn.name() + "'"));
      if (pn.inputs_size() % 2 != 0) return err("node '" + pn.name() + "': odd input list");
      sdk::Node* n = g->add_node(pn.name(), s(pn.type()), pn.inputs_size() / 2, 0);
      if (!n) return err("graph '" + g->name() + "': duplicate node name '" + pn.name() + "'");
      if (pn.output_names_size() != 0 && pn.output_names_size() != pn.output_descs_size())
        return err("node '" + pn.name() + "': output names and descriptors differ in number");
      for (int o = 0; o < pn.output_descs_size(); ++o) {
        const sdk::TensorDesc* d = pn.output_descs(o) < descs_.size() ? &descs_[pn.output_descs(o)] : nullptr;
        if (!d) GS_RETURN_IF_ERROR(desc(pn.output_descs(o), "node '" + pn.name() + "'", &d));
        n->add_output(*d, pn.output_names_size() ? pn.output_names(o) : pn.name());
      }
      nodes->push_back(n);
    }
    return Status::ok();
  }

  Status read_attr_sets() {
    attr_sets_.resize(m_.attr_sets_size());
    for (int i = 0; i < m_.attr_sets_size(); ++i) {
      const om::CAttrSet& p = m_.attr_sets(i);
      const std::string what = "attribute list " + std::to_string(i);
      if (p.names_size() != p.values_size()) return err(what + ": names and values differ in number");
      for (int k = 0; k < p.names_size(); ++k) {
        GS_RETURN_IF_ERROR(str(p.names(k), what));
        const std::string& name = s(p.names(k));
        if (attr_sets_[i].has(name)) return err(what + " has attribute '" + name + "' twice");
        AttrValue v;
        GS_RETURN_IF_ERROR(value(p.values(k), what + " attribute '" + name + "'", &v));
        attr_sets_[i].set(name, std::move(v));
      }
    }
    return Status::ok();
  }

  Status attrs(uint32_t ref, const std::string& owner, sdk::AttrMap* out) const {
    if (ref == 0) return Status::ok();
    if (ref > attr_sets_.size())
      return err(owner + ": attribute list " + std::to_string(ref) + " out of range");
    *out = attr_sets_[ref - 1];
    return Status::ok();
  }

  Status tensor(const om::CTensor& p, const std::string& owner, sdk::Tensor* t) const {
    const sdk::TensorDesc* d = nullptr;
    GS_RETURN_IF_ERROR(desc(p.desc(), owner, &d));
    return make_tensor(*d, p.data(), source_ + ": '" + owner + "'", t);
  }

  Status graph(uint32_t name, const std::string& owner, sdk::Graph** out) const {
    GS_RETURN_IF_ERROR(str(name, owner));
    auto it = by_name_.find(s(name));
    if (it == by_name_.end()) return err(owner + " references unknown subgraph '" + s(name) + "'");
    *out = it->second;
    return Status::ok();
  }

  Status value(const om::CValue& p, const std::string& owner, AttrValue* v) const {
    return read_value(
        p, v,
        [&](uint32_t index, std::string* out) {
          GS_RETURN_IF_ERROR(str(index, owner));
          *out = s(index);
          return Status::ok();
        },
        [&](const om::CTensor& m, sdk::Tensor* t) { return tensor(m, owner, t); },
        [&](uint32_t name, sdk::Graph** g) { return graph(name, owner, g); });
  }

  Status link(const om::CGraph& pg, sdk::Graph* g, const std::vector<sdk::Node*>& nodes) const {
    GS_RETURN_IF_ERROR(attrs(pg.attrs(), "graph '" + g->name() + "'", &g->attrs()));
    const auto count = static_cast<int64_t>(nodes.size());
    for (int k = 0; k < pg.nodes_size(); ++k) {
      const om::CNode& pn = pg.nodes(k);
      sdk::Node* n = nodes[k];
      for (int i = 0; i + 1 < pn.inputs_size(); i += 2) {
        const int64_t from = pn.inputs(i);
        if (from == -1) continue;
        if (from < 0 || from >= count)
          return err("graph '" + g->name() + "': node '" + pn.name() + "' input " + std::to_string(i / 2) +
                     " names a producer out of range");
        Status st = g->add_edge({nodes[from], pn.inputs(i + 1)}, {n, i / 2});
        if (!st) return err("graph '" + g->name() + "': node '" + pn.name() + "': " + st.message());
      }
      for (uint32_t c : pn.control_inputs()) {
        if (c >= nodes.size())
          return err("graph '" + g->name() + "': node '" + pn.name() + "' has a control input out of range");
        GS_RETURN_IF_ERROR(g->add_control_edge(nodes[c], n));
      }
      if (pn.attrs() != 0 && pn.attrs() <= attr_sets_.size()) {
        n->attrs() = attr_sets_[pn.attrs() - 1];
      } else {
        GS_RETURN_IF_ERROR(attrs(pn.attrs(), "node '" + pn.name() + "'", &n->attrs()));
      }
    }
    return Status::ok();
  }

  const om::Compact& m_;
  std::string source_;
  std::vector<sdk::TensorDesc> descs_;
  std::vector<sdk::AttrMap> attr_sets_;
  std::vector<sdk::Graph*> graphs_;
  std::vector<std::vector<sdk::Node*>> nodes_;
  std::unordered_map<std::string, sdk::Graph*> by_name_;
};

}  // namespace

Status write_compact(const sdk::Graph& root, const PieceSink& sink) {
  if (!root.is_root())
    return Status::invalid_argument("serialize_om: '" + root.name() + "' is not a root graph");
  return Writer().write(root, sink);
}

Status read_compact(std::string_view bytes, const std::string& source, std::unique_ptr<sdk::Graph>* root) {
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<om::Compact>(&arena);
  if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::invalid_argument(
        source + ": not a graphsplit model (the file does not parse; truncated or corrupt?)");
  }
  if (model->magic() != kOmMagic)
    return Status::invalid_argument(source + ": not a graphsplit model (bad magic)");
  return Reader(*model, source).read(root);
}

}  // namespace graphsplit::om_detail
