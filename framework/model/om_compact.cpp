// The compact .om encoding (format 2, om.proto's Compact): every recurring string, descriptor and attribute
// list stored once, producers by position. Written and read straight from and into the IR.
#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "common/ask_ahead.h"
#include "common/flat_name_map.h"
#include "common/proto_fields.h"
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
  size_t operator()(std::string_view s) const { return sdk::name_hash(s); }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// ------------------------------------------------------------------ IR -> Compact

// Varints and fields written through a cursor into a block sized for their longest encoding (a node's fields;
// append_varint's bytes): through std::string, each varint was a capacity check and often a call.
class NodeCursor {
 public:
  explicit NodeCursor(char* at) : begin_(at), p_(at) {}
  size_t size() const { return static_cast<size_t>(p_ - begin_); }
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>((v & 0x7F) | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void field_varint(uint32_t field, uint64_t v) {
    varint(field << 3);
    varint(v);
  }
  void field_bytes(uint32_t field, std::string_view bytes) {
    varint((field << 3) | 2);
    varint(bytes.size());
    if (!bytes.empty()) std::memcpy(p_, bytes.data(), bytes.size());
    p_ += bytes.size();
  }
  // A packed field whose numbers `write` puts through this cursor; left out when it writes none. The length
  // goes in front of the numbers, so they move when it takes more than the one byte kept for it.
  template <class Write>
  void packed(uint32_t field, Write write) {
    char* const tag = p_;
    varint((field << 3) | 2);
    char* const length = p_++;
    write();
    const size_t n = static_cast<size_t>(p_ - length - 1);
    if (n == 0) {
      p_ = tag;
      return;
    }
    char bytes[10];
    NodeCursor len(bytes);
    len.varint(n);
    if (len.size() > 1) std::memmove(length + len.size(), length + 1, n);
    std::memcpy(length, bytes, len.size());
    p_ = length + len.size() + n;
  }

 private:
  char* begin_;
  char* p_;
};

// Inline, with a one-byte path: field keys and most table indices are under 128, and a call to
// std::string::append per varint was a third of the write.
inline void append_varint(std::string* out, uint64_t v) {
  if (v < 0x80) {
    out->push_back(static_cast<char>(v));
    return;
  }
  char bytes[10];
  NodeCursor c(bytes);
  c.varint(v);
  out->append(bytes, c.size());
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
    for (std::string* table : {&strings_bytes_, &descs_bytes_}) {
      GS_RETURN_IF_ERROR(emit(root, *table, sink));
      std::string().swap(*table);
    }
    GS_RETURN_IF_ERROR(emit_attr_sets(root, sink));
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

  // Op types are interned by the SDK (one copy per process): found by address, not hashed per node.
  uint32_t type_index(const std::string& type) {
    auto [it, added] = types_.try_emplace(&type, 0);
    if (added) it->second = intern(type);
    return it->second;
  }

  // Neighbouring outputs mostly have equal descriptors (a chain of one shape): such a one is not keyed and
  // looked up again. Its dimension names are in the table already, so the table's order is the same.
  uint32_t desc(const sdk::TensorDesc& d) {
    if (last_desc_ && *last_desc_ == d) return last_desc_index_;
    last_desc_ = &d;
    last_desc_index_ = keyed_desc(d);
    return last_desc_index_;
  }

  uint32_t keyed_desc(const sdk::TensorDesc& d) {
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

  // Consistent with same_bytes: lists it calls equal hash equally (tensors by address, as it compares them).
  static size_t list_hash(const sdk::AttrMap& map) {
    using K = AttrValue::Kind;
    size_t h = map.size();
    auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    for (const auto& [k, v] : map.entries()) {
      mix(std::hash<const void*>()(&k.str()));
      mix(static_cast<size_t>(v.kind()));
      const auto& st = v.storage();
      switch (v.kind()) {
        case K::kInt:
          mix(static_cast<size_t>(std::get<1>(st)));
          break;
        case K::kFloat:
          mix(std::bit_cast<uint64_t>(std::get<2>(st)));
          break;
        case K::kString:
          mix(sdk::name_hash(std::get<3>(st)));
          break;
        case K::kBool:
          mix(std::get<4>(st));
          break;
        case K::kInts:
          for (int64_t x : std::get<5>(st)) mix(static_cast<size_t>(x));
          break;
        case K::kTensor:
          mix(std::hash<const void*>()(std::get<9>(st).tensor.get()));
          break;
        case K::kGraph:
          mix(std::hash<const void*>()(std::get<11>(st)));
          break;
        case K::kGraphs:
          for (const sdk::Graph* g : std::get<12>(st)) mix(std::hash<const void*>()(g));
          break;
        case K::kFloats:
          for (double x : std::get<6>(st)) mix(std::bit_cast<uint64_t>(x));
          break;
        case K::kStrings:
          for (const std::string& x : std::get<7>(st)) mix(sdk::name_hash(x));
          break;
        case K::kBools:
          for (bool x : std::get<8>(st)) mix(x);
          break;
        case K::kTensors:  // never equal to another list (same_bytes): spread them
          mix(std::hash<const void*>()(std::get<10>(st).data()));
          break;
        case K::kType:
          mix(sdk::name_hash(std::get<13>(st).text));
          break;
        case K::kNone:
          break;
      }
    }
    return h;
  }
  struct ListHash {
    size_t operator()(const sdk::AttrMap* m) const { return list_hash(*m); }
  };
  struct ListEqual {
    bool operator()(const sdk::AttrMap* a, const sdk::AttrMap* b) const { return same_bytes(*a, *b); }
  };

  // 1 + the index of an equal attribute list already written, or of a new one; 0 for none. A list equal (by
  // same_bytes) to one met before is not serialised again to find its index: on a partitioned model most
  // lists recur (an engine's placement attributes, a frame's Data nodes), and serialising each to look it up
  // was half of the write. The index still comes from the serialised bytes the first time, so lists that
  // differ only where same_bytes is strict (tensors by address) share an entry as before.
  // Neighbouring nodes mostly carry equal lists (one engine's placement attributes): the previous node's
  // list is compared first, which spares hashing this one.
  uint32_t attrs(const sdk::AttrMap& map) {
    if (map.empty()) return 0;
    if (last_attrs_ && same_bytes(*last_attrs_, map)) return last_attrs_index_;
    uint32_t index;
    if (auto it = known_attrs_.find(&map); it != known_attrs_.end()) {
      index = it->second;
    } else {
      index = serialized_attrs(map);
      known_attrs_.emplace(&map, index);
    }
    last_attrs_ = &map;
    last_attrs_index_ = index;
    return index;
  }

  // A large attribute list's encoding (the bytes serialize_attrs() gives) as parts: encoded fields in
  // `owned`, and each tensor's data as a view of the tensor's own bytes. A list of weights was copied into
  // the message, then into its serialization (zero-filled first), and that twice, once to find it and once to
  // write it: seven passes over every weight of a model.
  struct Pieces {
    struct Part {
      size_t offset, length;  // in owned, unless external
      const char* external;
    };
    std::string owned;
    std::vector<Part> parts;
    size_t size = 0;

    void add_owned(std::string_view bytes) {
      parts.push_back({owned.size(), bytes.size(), nullptr});
      owned.append(bytes);
      size += bytes.size();
    }
    void add_external(std::string_view bytes) {
      parts.push_back({0, bytes.size(), bytes.data()});
      size += bytes.size();
    }
    std::string_view view(const Part& p) const {
      return p.external ? std::string_view(p.external, p.length)
                        : std::string_view(owned).substr(p.offset, p.length);
    }
    uint64_t hash() const {
      uint64_t h = size;
      for (const Part& p : parts) h = (h ^ sdk::name_hash(view(p))) * 0x9E3779B97F4A7C15ull;
      return h;
    }
    // Compared part against part, wherever either's parts end: joined into strings first, two equal lists of
    // weights were copied whole to be compared.
    bool same_bytes(const Pieces& other) const {
      if (size != other.size) return false;
      size_t i = 0, j = 0, at_i = 0, at_j = 0;  // the part reached on each side, and how far into it
      while (i < parts.size() && j < other.parts.size()) {
        const std::string_view a = view(parts[i]).substr(at_i), b = other.view(other.parts[j]).substr(at_j);
        const size_t n = std::min(a.size(), b.size());
        if (a.substr(0, n) != b.substr(0, n)) return false;
        at_i += n;
        at_j += n;
        if (at_i == parts[i].length) {
          ++i;
          at_i = 0;
        }
        if (at_j == other.parts[j].length) {
          ++j;
          at_j = 0;
        }
      }
      return true;
    }
  };

  // CAttrSet's fields as protobuf writes them: the names packed (field 1), then one record per value (field
  // 2). A tensor value is CValue{tensor = CTensor{desc, data}}: desc and data left out when 0 and empty, as
  // proto3 leaves them; the others go through protobuf. Strings and descriptors are interned in
  // serialize_attrs()' order: each name, then its value (the tables' indices depend on it).
  // Out of line, with its own varint writer: more calls to append_varint made GCC stop inlining it on the
  // write's hot path (3 % more instructions for a partitioned model).
  [[gnu::noinline]] void encode_attrs(const sdk::AttrMap& map, Pieces* out) {
    const auto append_varint = [](std::string* to, uint64_t v) {
      char bytes[10];
      NodeCursor c(bytes);
      c.varint(v);
      to->append(bytes, c.size());
    };
    *out = Pieces();
    std::string names, record, tensor_head;
    std::vector<std::pair<std::string, const sdk::Tensor*>> values;  // encoded value, or a tensor to view
    for (const auto& [k, v] : map.entries()) {
      append_varint(&names, intern(k));
      if (v.kind() == AttrValue::Kind::kTensor) {
        const sdk::Tensor& t = *std::get<9>(v.storage()).tensor;
        std::string ct;
        if (const uint32_t d = desc(t.desc())) {
          append_varint(&ct, (om::CTensor::kDescFieldNumber << 3) | 0);
          append_varint(&ct, d);
        }
        if (t.size_bytes()) {
          append_varint(&ct, (om::CTensor::kDataFieldNumber << 3) | 2);
          append_varint(&ct, t.size_bytes());
        }
        values.emplace_back(std::move(ct), &t);
      } else {
        value_scratch_.Clear();
        value(v, &value_scratch_);
        values.emplace_back(value_scratch_.SerializeAsString(), nullptr);
      }
    }
    if (!names.empty()) {
      record.clear();
      append_varint(&record, (om::CAttrSet::kNamesFieldNumber << 3) | 2);
      append_varint(&record, names.size());
      out->add_owned(record);
      out->add_owned(names);
    }
    for (const auto& [encoded, tensor] : values) {
      const size_t data = tensor ? tensor->size_bytes() : 0;
      // A tensor's CValue: the oneof field 10, then CTensor (its head and data).
      tensor_head.clear();
      if (tensor) {
        append_varint(&tensor_head, (om::CValue::kTensorFieldNumber << 3) | 2);
        append_varint(&tensor_head, encoded.size() + data);
      }
      record.clear();
      append_varint(&record, (om::CAttrSet::kValuesFieldNumber << 3) | 2);
      append_varint(&record, tensor_head.size() + encoded.size() + data);
      out->add_owned(record);
      out->add_owned(tensor_head);
      out->add_owned(encoded);
      if (data) out->add_external(tensor->bytes());
    }
  }

  void serialize_attrs(const sdk::AttrMap& map, std::string* out) {
    scratch_.Clear();
    for (const auto& [k, v] : map.entries()) {
      scratch_.add_names(intern(k));
      value(v, scratch_.add_values());
    }
    scratch_.SerializeToString(out);
  }

  // Whether a tensor of the list alone makes it large: such a list goes to large_attrs() without being
  // serialised first (protobuf's serialisation copies every weight).
  static bool holds_weights(const sdk::AttrMap& map) {
    return std::any_of(map.entries().begin(), map.entries().end(), [](const sdk::AttrMap::Entry& e) {
      return e.second.kind() == AttrValue::Kind::kTensor &&
             std::get<9>(e.second.storage()).tensor->size_bytes() >= kLargeAttrSet;
    });
  }

  uint32_t serialized_attrs(const sdk::AttrMap& map) {
    if (holds_weights(map)) return large_attrs(map);
    serialize_attrs(map, &key_);
    if (key_.size() >= kLargeAttrSet) return large_attrs(map);
    if (auto it = attr_sets_.find(std::string_view(key_)); it != attr_sets_.end()) return it->second;
    if (attr_chunks_.empty() || attr_chunks_.back().deferred) attr_chunks_.emplace_back();
    append_entry(&attr_chunks_.back().bytes, om::Compact::kAttrSetsFieldNumber, key_);
    const auto index = static_cast<uint32_t>(++attr_set_count_);
    attr_sets_.emplace(key_, index);
    return index;
  }

  // A list holding weights: kept as the list, not as its bytes, which are made again when the table is
  // written. Kept as bytes, a model's weights were in memory three times more (the table, its growth, the
  // lookup key): atc on 200 MB of weights peaked at 785 MB. Found again by a hash of the bytes, confirmed by
  // writing the candidate again.
  uint32_t large_attrs(const sdk::AttrMap& map) {
    encode_attrs(map, &pieces_);
    const uint64_t hash = pieces_.hash();
    auto [first, last] = large_sets_.equal_range(hash);
    uint32_t index = 0;
    for (auto it = first; it != last && index == 0; ++it) {
      Pieces earlier;
      encode_attrs(*it->second.map, &earlier);
      if (earlier.same_bytes(pieces_)) index = it->second.index;
    }
    if (index == 0) {
      index = static_cast<uint32_t>(++attr_set_count_);
      attr_chunks_.push_back({{}, &map});
      large_sets_.emplace(hash, LargeSet{index, &map});
    }
    release_scratch();
    return index;
  }

  // The encoding buffers give back a large list's bytes: kept, they held the largest weights until the end.
  void release_scratch() {
    std::string().swap(key_);
    pieces_ = Pieces();
    scratch_ = om::CAttrSet();
    value_scratch_ = om::CValue();
  }

  // The attribute-set table in entry order: small lists as they were kept, large ones written again.
  Status emit_attr_sets(const sdk::Graph& root, const PieceSink& sink) {
    std::string head;
    for (AttrChunk& chunk : attr_chunks_) {
      if (!chunk.deferred) {
        GS_RETURN_IF_ERROR(emit(root, chunk.bytes, sink));
        std::string().swap(chunk.bytes);
        continue;
      }
      encode_attrs(*chunk.deferred, &pieces_);
      head.clear();
      append_varint(&head, (om::Compact::kAttrSetsFieldNumber << 3) | 2);
      append_varint(&head, pieces_.size);
      GS_RETURN_IF_ERROR(emit(root, head, sink));
      for (const Pieces::Part& part : pieces_.parts) GS_RETURN_IF_ERROR(emit(root, pieces_.view(part), sink));
      release_scratch();
    }
    return Status::ok();
  }

  // Pass 1, in write_graph's order: a graph's name and attributes, then each node's type, output
  // descriptors and attributes.
  void fill_tables(const sdk::Graph& g) {
    refs_.push_back(intern(g.name()));
    refs_.push_back(attrs(g.attrs()));
    for (const sdk::Node* n : g.nodes()) {
      refs_.push_back(type_index(n->type()));
      for (size_t o = 0; o < n->num_outputs(); ++o) refs_.push_back(desc(n->output_desc(o)));
      refs_.push_back(attrs(n->attrs()));
    }
  }

  // The tables are in the file once the head is: pass 2 reads their indices from refs_.
  void release_tables() {
    decltype(strings_)().swap(strings_);
    decltype(descs_)().swap(descs_);
    decltype(attr_sets_)().swap(attr_sets_);
    decltype(attr_chunks_)().swap(attr_chunks_);
    decltype(large_sets_)().swap(large_sets_);
    decltype(known_attrs_)().swap(known_attrs_);
    last_attrs_ = nullptr;
    last_desc_ = nullptr;
    decltype(types_)().swap(types_);
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
      write_node(*n);
    }
    prefix_.clear();
    append_varint(&prefix_, (om::Compact::kGraphsFieldNumber << 3) | 2);
    append_varint(&prefix_, body_.size());
  }

  int32_t position(const sdk::Node* n) const { return positions_.at(static_cast<size_t>(n->id())); }

  // A CNode's bytes as protobuf serialises the message (fields in number order, numbers packed, defaults left
  // out), written without the message: filling a CNode and serialising it cost more than the rest of the
  // write. The format tests compare the file with protobuf's own encoding of what it parses to.
  void write_node(const sdk::Node& n) {
    const bool implied = n.num_outputs() == 1 && n.output_name(0) == n.name();
    const size_t controls = n.any_control_edges() ? n.control_inputs().size() : 0;
    // The longest encoding: 16 bytes per tag and length or lone number, 10 per packed number.
    size_t bound = 6 * 16 + n.name().size() + 20 * n.num_inputs() + 10 * (controls + n.num_outputs());
    for (size_t o = 0; !implied && o < n.num_outputs(); ++o) bound += 16 + n.output_name(o).size();
    if (node_bytes_.size() < bound) node_bytes_.resize(std::max(bound, 2 * node_bytes_.size()));
    NodeCursor out(node_bytes_.data());
    if (!n.name().empty()) out.field_bytes(om::CNode::kNameFieldNumber, n.name());
    if (const uint32_t type = next_ref(); type != 0) out.field_varint(om::CNode::kTypeFieldNumber, type);
    out.packed(om::CNode::kInputsFieldNumber, [&] {
      for (const sdk::OutPort& in : n.inputs()) {
        out.varint(zigzag(in.node ? position(in.node) : -1));
        out.varint(zigzag(in.node ? in.index : 0));
      }
    });
    if (controls > 0) {
      out.packed(om::CNode::kControlInputsFieldNumber, [&] {
        for (const sdk::Node* c : n.control_inputs()) out.varint(static_cast<uint32_t>(position(c)));
      });
    }
    for (size_t o = 0; !implied && o < n.num_outputs(); ++o)
      out.field_bytes(om::CNode::kOutputNamesFieldNumber, n.output_name(o));
    out.packed(om::CNode::kOutputDescsFieldNumber, [&] {
      for (size_t o = 0; o < n.num_outputs(); ++o) out.varint(next_ref());
    });
    if (const uint32_t attrs = next_ref(); attrs != 0) out.field_varint(om::CNode::kAttrsFieldNumber, attrs);
    put_bytes(&body_, om::CGraph::kNodesFieldNumber, std::string_view(node_bytes_.data(), out.size()), true);
  }

  static uint32_t zigzag(int32_t v) {
    return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
  }
  static void put_varint(std::string* out, uint32_t field, uint64_t v) {
    append_varint(out, field << 3);
    append_varint(out, v);
  }
  // A length-delimited field; an empty one is left out unless it is an element of a repeated field.
  static void put_bytes(std::string* out, uint32_t field, std::string_view bytes, bool always = false) {
    if (bytes.empty() && !always) return;
    append_varint(out, (field << 3) | 2);
    append_varint(out, bytes.size());
    out->append(bytes);
  }

  // From this size up, an attribute list is kept as the list (large_attrs).
  static constexpr size_t kLargeAttrSet = size_t{64} << 10;
  struct AttrChunk {
    std::string bytes;                       // entries as they go in the file
    const sdk::AttrMap* deferred = nullptr;  // or one large list, written when the table is
  };
  struct LargeSet {
    uint32_t index;
    const sdk::AttrMap* map;
  };
  std::string strings_bytes_, descs_bytes_;  // the tables, as they go in the file
  std::vector<AttrChunk> attr_chunks_;       // the attribute-set table
  size_t attr_set_count_ = 0;
  std::unordered_multimap<uint64_t, LargeSet> large_sets_;  // by a hash of the bytes
  std::vector<uint32_t> refs_;
  size_t next_ref_ = 0;
  size_t written_ = 0;
  std::string prefix_, body_;  // the graph being written
  std::string node_bytes_;     // the node being written (its first bytes: the block only grows)
  std::unordered_map<std::string_view, uint32_t, StringHash> strings_;
  StringMap<uint32_t> descs_, attr_sets_;
  std::unordered_map<const sdk::Graph*, uint32_t> graph_index_;
  std::unordered_map<const sdk::Node*, int32_t> parent_positions_;
  std::vector<int32_t> positions_;  // the graph being written: position by node id
  std::string key_;
  om::CAttrSet scratch_;
  om::CValue value_scratch_;
  Pieces pieces_;
  std::unordered_map<const sdk::AttrMap*, uint32_t, ListHash, ListEqual> known_attrs_;
  std::unordered_map<const std::string*, uint32_t> types_;
  const sdk::TensorDesc* last_desc_ = nullptr;
  const sdk::AttrMap* last_attrs_ = nullptr;
  uint32_t last_attrs_index_ = 0;
  uint32_t last_desc_index_ = 0;
};

// ------------------------------------------------------------------ Compact -> IR
//
// The file is read field by field, not parsed into one Compact message first: at a million nodes that
// message was a few hundred bytes a node of arena, and building it cost more than building the IR. The
// tables (strings, descriptors, attribute lists) are small and go through protobuf's own parser; each node
// is decoded from its bytes straight into the graph, with protobuf's rules for what it accepts: packed or
// unpacked repeated numbers, a 64-bit varint cut to 32 bits, the last of a repeated singular field, fields
// it does not know skipped, strings that must be UTF-8.

using google::protobuf::internal::WireFormatLite;
using proto_fields::Field;
using proto_fields::FieldReader;
using proto_fields::read_varint;

// A repeated 32-bit number, packed or one per field; another wire type is an unknown field, skipped. False
// when a packed list does not parse.
template <class Out>
bool append_numbers(const Field& f, Out&& out) {
  if (f.wire == WireFormatLite::WIRETYPE_VARINT) {
    out(static_cast<uint32_t>(f.value));
    return true;
  }
  if (f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) return true;
  const auto* p = reinterpret_cast<const uint8_t*>(f.bytes.data());
  const uint8_t* end = p + f.bytes.size();
  while (p != end) {
    uint64_t v = 0;
    if (!read_varint(p, end, &v)) return false;
    out(static_cast<uint32_t>(v));
  }
  return true;
}

// Merges the fields in [begin, end) of `bytes` into `message`, as parsing those bytes alone would.
bool merge_run(std::string_view bytes, size_t begin, size_t end, google::protobuf::MessageLite* message) {
  if (begin == end) return true;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data() + begin),
                                            static_cast<int>(end - begin));
  return message->MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// Every field of `bytes` but those numbered `skip` merged into `message` (runs of neighbouring fields at
// once); `visit` sees each skipped field. False when the bytes do not parse.
template <class Visit>
bool split_fields(std::string_view bytes, uint32_t skip, google::protobuf::MessageLite* message,
                  Visit visit) {
  FieldReader reader(bytes);
  Field f;
  size_t run = 0;
  while (reader.next(&f)) {
    if (f.number != skip || f.wire != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) continue;
    if (!merge_run(bytes, run, f.begin, message)) return false;
    visit(f);
    run = f.end;
  }
  return reader.ok() && merge_run(bytes, run, bytes.size(), message);
}

// One CNode, decoded into reused storage; strings view the file.
struct NodeFields {
  std::string_view name;
  uint32_t type = 0, attrs = 0;
  std::vector<int32_t> inputs;
  std::vector<uint32_t> control_inputs;
  std::vector<std::string_view> output_names;
  std::vector<uint32_t> output_descs;

  // The writer's own encoding (one-byte tags, lengths and singular numbers, packed lists) is read in line;
  // any other field goes through take() as protobuf's rules say. A node is a dozen bytes, and the generic
  // reader's calls per field were a quarter of the load.
  bool decode(std::string_view bytes) {
    name = {};
    type = attrs = 0;
    inputs.clear();
    control_inputs.clear();
    output_names.clear();
    output_descs.clear();
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint8_t* const end = p + bytes.size();
    while (p != end) {
      const uint8_t* const field = p;
      if (!common_field(p, end) && !other_field(bytes, field, &p)) return false;
    }
    return true;
  }

 private:
  static constexpr uint8_t tag(uint32_t number, WireFormatLite::WireType wire) {
    return static_cast<uint8_t>(number << 3 | wire);
  }

  // One field in the writer's encoding, read and consumed; false, with nothing consumed, for anything else
  // (which take() then reads, or refuses).
  [[gnu::always_inline]] bool common_field(const uint8_t*& p, const uint8_t* end) {
    if (end - p < 2 || p[1] >= 0x80) return false;  // a one-byte tag, then a one-byte number or length
    const uint8_t v = p[1];
    const uint8_t* const body = p + 2;
    switch (p[0]) {
      case tag(om::CNode::kTypeFieldNumber, WireFormatLite::WIRETYPE_VARINT):
        type = v;
        break;
      case tag(om::CNode::kAttrsFieldNumber, WireFormatLite::WIRETYPE_VARINT):
        attrs = v;
        break;
      case tag(om::CNode::kNameFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED): {
        const std::string_view text(reinterpret_cast<const char*>(body), v);
        if (end - body < v || !sdk::is_valid_utf8(text)) return false;
        name = text;
        p = body + v;
        return true;
      }
      case tag(om::CNode::kInputsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        return packed(p, end, [&](uint32_t x) { inputs.push_back(WireFormatLite::ZigZagDecode32(x)); });
      case tag(om::CNode::kOutputDescsFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):
        return packed(p, end, [&](uint32_t x) { output_descs.push_back(x); });
      default:
        return false;
    }
    p = body;
    return true;
  }
  // A packed list at p (its tag and one-byte length), its numbers cut to 32 bits as protobuf does; false,
  // with nothing consumed, when it runs past `end` or does not parse.
  template <class Out>
  [[gnu::always_inline]] static bool packed(const uint8_t*& p, const uint8_t* end, Out&& out) {
    const uint8_t* q = p + 2;
    if (end - q < p[1]) return false;
    const uint8_t* const stop = q + p[1];
    while (q != stop) {
      uint64_t x = *q;
      if (x < 0x80) {
        ++q;
      } else if (!read_varint(q, stop, &x)) {
        return false;
      }
      out(static_cast<uint32_t>(x));
    }
    p = stop;
    return true;
  }

  // The field at `field` through the generic reader and take(); false when it does not parse.
  bool other_field(std::string_view bytes, const uint8_t* field, const uint8_t** p) {
    const auto offset = static_cast<size_t>(field - reinterpret_cast<const uint8_t*>(bytes.data()));
    FieldReader reader(bytes.substr(offset));
    Field f;
    if (!reader.next(&f) || !take(f)) return false;
    *p = field + f.end;
    return true;
  }

  bool take(const Field& f) {
    const bool text = f.wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    const bool number = f.wire == WireFormatLite::WIRETYPE_VARINT;
    switch (f.number) {
      case om::CNode::kNameFieldNumber:
        if (text) name = f.bytes;
        return !text || sdk::is_valid_utf8(f.bytes);
      case om::CNode::kTypeFieldNumber:
        if (number) type = static_cast<uint32_t>(f.value);
        return true;
      case om::CNode::kInputsFieldNumber:
        return append_numbers(f, [&](uint32_t v) { inputs.push_back(WireFormatLite::ZigZagDecode32(v)); });
      case om::CNode::kControlInputsFieldNumber:
        return append_numbers(f, [&](uint32_t v) { control_inputs.push_back(v); });
      case om::CNode::kOutputNamesFieldNumber:
        if (text) output_names.push_back(f.bytes);
        return !text || sdk::is_valid_utf8(f.bytes);
      case om::CNode::kOutputDescsFieldNumber:
        return append_numbers(f, [&](uint32_t v) { output_descs.push_back(v); });
      case om::CNode::kAttrsFieldNumber:
        if (number) attrs = static_cast<uint32_t>(f.value);
        return true;
      default:
        return true;
    }
  }
};

// A node's name without decoding the rest: the writer puts it first. Empty when it is not there; only a hint.
std::string_view peek_name(std::string_view bytes) {
  FieldReader reader(bytes);
  Field f;
  if (reader.next(&f) && f.number == om::CNode::kNameFieldNumber &&
      f.wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED)
    return f.bytes;
  return {};
}

// A graph of the file: its bytes, its fields other than the nodes, and each node's bytes.
struct GraphBytes {
  std::string_view bytes;
  om::CGraph* head;  // on the reader's arena
  std::vector<std::string_view> nodes;
};

// A graph being built: its nodes by position and, per node, the attribute list to give it once every
// subgraph exists (a graph attribute names one).
struct GraphState {
  sdk::Graph* graph = nullptr;
  std::vector<sdk::Node*> nodes;
  std::vector<uint32_t> attrs;
};

// The graph being made, until it is wired: each node's input pairs (producer position, output index) and
// control inputs, node after node, with where each node's start. Reused from graph to graph.
struct Wiring {
  std::vector<int32_t> inputs;
  std::vector<uint32_t> controls, input_begin, control_begin;

  void clear() {
    inputs.clear();
    controls.clear();
    input_begin.clear();
    control_begin.clear();
  }
  void add(const NodeFields& node) {
    input_begin.push_back(static_cast<uint32_t>(inputs.size()));
    inputs.insert(inputs.end(), node.inputs.begin(), node.inputs.end());
    control_begin.push_back(static_cast<uint32_t>(controls.size()));
    controls.insert(controls.end(), node.control_inputs.begin(), node.control_inputs.end());
  }
  void close() {
    input_begin.push_back(static_cast<uint32_t>(inputs.size()));
    control_begin.push_back(static_cast<uint32_t>(controls.size()));
  }
};

class Reader {
 public:
  Reader(std::string_view bytes, std::string source)
      : bytes_(bytes),
        source_(std::move(source)),
        tables_(*google::protobuf::Arena::CreateMessage<om::Compact>(&arena_)) {}

  Status read(std::unique_ptr<sdk::Graph>* out) {
    GS_RETURN_IF_ERROR(split());
    if (tables_.magic() != kOmMagic) return err("not a graphsplit model (bad magic)");
    if (graphs_.empty()) return err("no root graph");
    GS_RETURN_IF_ERROR(read_descs());
    const om::CGraph& pr = *graphs_[0].head;
    if (pr.parent_node() != -1) return err("the first graph is not a root");
    GS_RETURN_IF_ERROR(str(pr.name(), "the root's name"));
    auto root = sdk::Graph::create(s(pr.name()));
    state_.resize(graphs_.size());
    state_[0].graph = root.get();
    GS_RETURN_IF_ERROR(create_nodes(0));
    for (size_t i = 1; i < graphs_.size(); ++i) GS_RETURN_IF_ERROR(create_graph(i, root.get(), 0));
    std::vector<sdk::Graph*> order;
    for (size_t i = 1; i < state_.size(); ++i) order.push_back(state_[i].graph);
    GS_RETURN_IF_ERROR(root->reorder_subgraphs(order));
    GS_RETURN_IF_ERROR(read_attr_sets());
    for (size_t i = 0; i < graphs_.size(); ++i) GS_RETURN_IF_ERROR(give_attrs(i));
    // Built through Graph's functions alone, which keep both directions of every edge and the name index:
    // what the file could still get wrong (a cycle, a call and its subgraph disagreeing) is checked.
    GS_RETURN_IF_ERROR(sdk::verify(*root, {.edges = false}).with_context(source_ + ": "));
    *out = std::move(root);
    return Status::ok();
  }

 private:
  Status err(const std::string& what) const { return Status::invalid_argument(source_ + ": " + what); }
  Status unparsable() const {
    return err("not a graphsplit model (the file does not parse; truncated or corrupt?)");
  }

  // The tables into one message, the graphs as bytes: every length in the file, down to each node's, is
  // checked before any of the graph is built, so a truncated file is refused as such.
  Status split() {
    const bool ok = split_fields(bytes_, om::Compact::kGraphsFieldNumber, &tables_, [&](const Field& f) {
      graphs_.push_back({f.bytes, google::protobuf::Arena::CreateMessage<om::CGraph>(&arena_), {}});
    });
    if (!ok) return unparsable();
    for (GraphBytes& g : graphs_) {
      if (!split_fields(g.bytes, om::CGraph::kNodesFieldNumber, g.head,
                        [&](const Field& f) { g.nodes.push_back(f.bytes); }))
        return unparsable();
    }
    return Status::ok();
  }

  bool has_string(uint32_t index) const { return index < static_cast<uint32_t>(tables_.strings_size()); }
  Status str(uint32_t index, const std::string& what) const {
    if (!has_string(index)) return err(what + ": string index " + std::to_string(index) + " out of range");
    return Status::ok();
  }
  const std::string& s(uint32_t index) const { return tables_.strings(static_cast<int>(index)); }

  Status read_descs() {
    descs_.resize(tables_.descs_size());
    for (int i = 0; i < tables_.descs_size(); ++i) {
      const om::CDesc& p = tables_.descs(i);
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

  // Parent-first, whatever the file's order; `depth` stops a cycle of parents.
  Status create_graph(size_t i, sdk::Graph* root, size_t depth) {
    if (state_[i].graph) return Status::ok();
    const om::CGraph& p = *graphs_[i].head;
    GS_RETURN_IF_ERROR(str(p.name(), "graph " + std::to_string(i)));
    const std::string& name = s(p.name());
    if (depth > graphs_.size()) return err("subgraph '" + name + "' is its own ancestor");
    if (p.parent_graph() >= graphs_.size() || p.parent_graph() == i)
      return err("subgraph '" + name + "' names a bad parent graph");
    GS_RETURN_IF_ERROR(create_graph(p.parent_graph(), root, depth + 1));
    const std::vector<sdk::Node*>& siblings = state_[p.parent_graph()].nodes;
    if (p.parent_node() < 0 || static_cast<size_t>(p.parent_node()) >= siblings.size())
      return err("subgraph '" + name + "' names a parent node out of range");
    sdk::Graph* sub = root->add_subgraph(name, siblings[p.parent_node()]);
    if (!sub) return err("subgraph '" + name + "' cannot be registered (duplicate name)");
    state_[i].graph = sub;
    by_name_.assign(sub->name(), sub);
    return create_nodes(i);
  }

  // Every node of the graph is made first and wired after, from the producer positions kept on the way.
  // Wiring each node as it was made interleaved the consumer lists' allocations with the nodes' and left
  // the nodes' own data spread out: every later pass over the graph paid for it (loading, then writing the
  // 1M chain again took 1.5 s and 0.19 s that way, 0.8-1.3 s and 0.12 s this way).
  Status create_nodes(size_t i) {
    GraphState& st = state_[i];
    const std::vector<std::string_view>& nodes = graphs_[i].nodes;
    st.graph->reserve_nodes(nodes.size());
    st.nodes.reserve(nodes.size());
    st.attrs.reserve(nodes.size());
    wiring_.clear();
    // Each name's place in the graph's name index is a cache miss in a large graph: it is asked for ahead, so
    // that the misses overlap.
    AskAhead ahead(nodes.size(), [&](size_t k) { st.graph->prefetch_name(peek_name(nodes[k])); });
    for (size_t k = 0; k < nodes.size(); ++k) {
      ahead.at(k);
      if (!node_.decode(nodes[k])) return unparsable();
      GS_RETURN_IF_ERROR(create_node(st));
      wiring_.add(node_);
    }
    wiring_.close();
    for (size_t k = 0; k < nodes.size(); ++k) GS_RETURN_IF_ERROR(wire(st, k));
    return Status::ok();
  }

  Status create_node(GraphState& st) {
    const NodeFields& f = node_;
    // Labels for messages are built only when there is a message: per node they were strings made for
    // nothing.
    if (!has_string(f.type)) GS_RETURN_IF_ERROR(str(f.type, "node '" + std::string(f.name) + "'"));
    if (f.inputs.size() % 2 != 0) return err("node '" + std::string(f.name) + "': odd input list");
    sdk::Node* n = st.graph->add_node(std::string(f.name), s(f.type), f.inputs.size() / 2, 0);
    if (!n) return err("graph '" + st.graph->name() + "': duplicate node name '" + std::string(f.name) + "'");
    if (!f.output_names.empty() && f.output_names.size() != f.output_descs.size())
      return err("node '" + std::string(f.name) + "': output names and descriptors differ in number");
    for (size_t o = 0; o < f.output_descs.size(); ++o) {
      if (f.output_descs[o] >= descs_.size()) {
        return err("node '" + std::string(f.name) + "': descriptor index " +
                   std::to_string(f.output_descs[o]) + " out of range");
      }
      n->add_output(descs_[f.output_descs[o]],
                    std::string(f.output_names.empty() ? f.name : f.output_names[o]));
    }
    st.nodes.push_back(n);
    st.attrs.push_back(f.attrs);
    return Status::ok();
  }

  // The node at `position`: its data inputs, then its control inputs.
  Status wire(const GraphState& st, size_t position) const {
    sdk::Graph* g = st.graph;
    sdk::Node* n = st.nodes[position];
    const size_t count = st.nodes.size();  // every node of the graph is made
    const int32_t* in = wiring_.inputs.data() + wiring_.input_begin[position];
    const size_t in_size = wiring_.input_begin[position + 1] - wiring_.input_begin[position];
    for (size_t i = 0; i + 1 < in_size; i += 2) {
      const int64_t from = in[i];
      if (from == -1) continue;
      if (from < 0 || static_cast<size_t>(from) >= count)
        return err("graph '" + g->name() + "': node '" + n->name() + "' input " + std::to_string(i / 2) +
                   " names a producer out of range");
      Status added = g->add_edge({st.nodes[from], in[i + 1]}, {n, static_cast<int32_t>(i / 2)});
      if (!added) return err("graph '" + g->name() + "': node '" + n->name() + "': " + added.message());
    }
    for (uint32_t j = wiring_.control_begin[position]; j < wiring_.control_begin[position + 1]; ++j) {
      const uint32_t c = wiring_.controls[j];
      if (c >= count)
        return err("graph '" + g->name() + "': node '" + n->name() + "' has a control input out of range");
      GS_RETURN_IF_ERROR(g->add_control_edge(st.nodes[c], n));
    }
    return Status::ok();
  }

  Status read_attr_sets() {
    attr_sets_.resize(tables_.attr_sets_size());
    for (int i = 0; i < tables_.attr_sets_size(); ++i) {
      const om::CAttrSet& p = tables_.attr_sets(i);
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

  // `owner()` names the list's owner for a message, and is called only for one: per node, a label built
  // every time was a string made for nothing.
  template <class Owner>
  Status attrs(uint32_t ref, Owner owner, sdk::AttrMap* out) const {
    if (ref == 0) return Status::ok();
    if (ref > attr_sets_.size())
      return err(owner() + ": attribute list " + std::to_string(ref) + " out of range");
    *out = attr_sets_[ref - 1];
    return Status::ok();
  }

  Status give_attrs(size_t i) const {
    const GraphState& st = state_[i];
    GS_RETURN_IF_ERROR(attrs(
        graphs_[i].head->attrs(), [&] { return "graph '" + st.graph->name() + "'"; }, &st.graph->attrs()));
    for (size_t k = 0; k < st.nodes.size(); ++k) {
      sdk::Node* n = st.nodes[k];
      GS_RETURN_IF_ERROR(attrs(
          st.attrs[k], [n] { return "node '" + n->name() + "'"; }, &n->attrs()));
    }
    return Status::ok();
  }

  Status tensor(const om::CTensor& p, const std::string& owner, sdk::Tensor* t) const {
    if (p.desc() >= descs_.size())
      return err(owner + ": descriptor index " + std::to_string(p.desc()) + " out of range");
    // Each list is read once, and the tables are this reader's own message: the weights move from it into
    // the tensor instead of being copied (a model's weights were in memory three times while it loaded).
    std::string data = std::move(*const_cast<om::CTensor&>(p).mutable_data());
    return make_tensor(descs_[p.desc()], std::move(data), source_ + ": '" + owner + "'", t);
  }

  Status graph(uint32_t name, const std::string& owner, sdk::Graph** out) const {
    GS_RETURN_IF_ERROR(str(name, owner));
    sdk::Graph* const* found = by_name_.find(s(name));
    if (!found) return err(owner + " references unknown subgraph '" + s(name) + "'");
    *out = *found;
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

  std::string_view bytes_;
  std::string source_;
  google::protobuf::Arena arena_;  // the tables' and graph heads' messages: freed at once
  om::Compact& tables_;            // every field but the graphs
  std::vector<GraphBytes> graphs_;
  std::vector<GraphState> state_;
  NodeFields node_;
  Wiring wiring_;
  std::vector<sdk::TensorDesc> descs_;
  std::vector<sdk::AttrMap> attr_sets_;
  FlatNameMap<sdk::Graph*> by_name_;  // views of the graphs' own names
};

}  // namespace

Status write_compact(const sdk::Graph& root, const PieceSink& sink) {
  if (!root.is_root())
    return Status::invalid_argument("serialize_om: '" + root.name() + "' is not a root graph");
  return Writer().write(root, sink);
}

Status read_compact(std::string_view bytes, const std::string& source, std::unique_ptr<sdk::Graph>* root) {
  return Reader(bytes, source).read(root);
}

}  // namespace graphsplit::om_detail
