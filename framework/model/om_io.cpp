#include "model/om_io.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "common/atomic_file.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/strings.h"
#include "model/om.pb.h"
#include "model/om_internal.h"
#include "model/om_values.h"

namespace graphsplit {
namespace {

using sdk::AttrValue;
using sdk::Status;

// ------------------------------------------------------------------ IR -> proto

void to_proto(const sdk::TensorDesc& d, om::TensorDesc* p) {
  p->set_kind(std::string(sdk::to_string(d.kind)));
  p->set_dtype(std::string(sdk::to_string(d.dtype)));
  p->set_format(std::string(sdk::to_string(d.format)));
  auto* s = p->mutable_shape();
  for (int64_t v : d.shape.dims()) s->add_dims(v);
  for (const std::string& n : d.shape.dim_names()) s->add_dim_names(n);
}

void to_proto(const sdk::Tensor& t, om::Tensor* p) {
  to_proto(t.desc(), p->mutable_desc());
  p->set_data(std::string(t.bytes()));
}

void to_proto(const AttrValue& v, om::AttrValue* p) {
  om_detail::write_value(
      v, p, [](const std::string& text) -> const std::string& { return text; },
      [](const sdk::Tensor& t, om::Tensor* m) { to_proto(t, m); });
}

void to_proto(const sdk::AttrMap& attrs, google::protobuf::RepeatedPtrField<om::Attr>* out) {
  for (const auto& [k, v] : attrs.entries()) {
    om::Attr* a = out->Add();
    a->set_name(k);
    to_proto(v, a->mutable_value());
  }
}

void to_proto(const sdk::Graph& g, om::Graph* p) {
  p->set_name(g.name());
  if (const sdk::Node* parent = g.parent_node()) {
    p->set_parent_node(parent->name());
    p->set_parent_graph(parent->owner()->name());
  }
  to_proto(g.attrs(), p->mutable_attrs());
  for (const sdk::Node* n : g.nodes()) {
    om::Node* pn = p->add_nodes();
    pn->set_name(n->name());
    pn->set_type(n->type());
    for (const sdk::OutPort& in : n->inputs()) {
      om::Input* pi = pn->add_inputs();
      if (in.node) {
        pi->set_node(in.node->name());
        pi->set_index(in.index);
      }
    }
    for (const sdk::Node* c : n->control_inputs()) pn->add_control_inputs(c->name());
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      om::Output* po = pn->add_outputs();
      po->set_name(n->output_name(o));
      to_proto(n->output_desc(o), po->mutable_desc());
    }
    to_proto(n->attrs(), pn->mutable_attrs());
  }
}

Status build_model(const sdk::Graph& root, om::Model* model) {
  if (!root.is_root())
    return Status::invalid_argument("serialize_om: '" + root.name() + "' is not a root graph");
  model->set_magic(std::string(kOmMagic));
  model->set_format_version(kOmFormatVersion);
  model->set_producer("graphsplit " GRAPHSPLIT_VERSION);
  to_proto(root, model->mutable_root());
  for (const sdk::Graph* g : root.subgraphs()) to_proto(*g, model->add_subgraphs());
  return Status::ok();
}

// ------------------------------------------------------------------ proto -> IR

std::string unsupported_format(uint32_t version) {
  return "model format version " + std::to_string(version) +
         " is not supported (this graphsplit reads 1 and " + std::to_string(kOmFormatVersion) +
         "; a newer graphsplit is needed)";
}

class Loader {
 public:
  explicit Loader(std::string source) : source_(std::move(source)) {}

  Status load(const om::Model& m, std::unique_ptr<sdk::Graph>* out) {
    if (m.magic() != kOmMagic) return err("not a graphsplit model (bad magic)");
    if (m.format_version() != 1 && m.format_version() != kOmFormatVersion)
      return err(unsupported_format(m.format_version()));
    auto root = sdk::Graph::create(m.root().name());
    graphs_[m.root().name()] = root.get();
    GS_RETURN_IF_ERROR(create_nodes(m.root(), root.get()));
    // A subgraph can only be created once its parent node exists, and the file lists subgraphs in
    // registration order, which need not be parent-first; create them parent-first, then restore the file's
    // order.
    std::unordered_map<std::string, const om::Graph*> pending;
    for (const om::Graph& g : m.subgraphs()) {
      if (graphs_.count(g.name()) || !pending.emplace(g.name(), &g).second) {
        return err("subgraph name '" + g.name() + "' appears twice");
      }
    }
    for (const om::Graph& g : m.subgraphs()) GS_RETURN_IF_ERROR(create_graph(g, root.get(), pending, 0));
    std::vector<sdk::Graph*> order;
    for (const om::Graph& g : m.subgraphs()) order.push_back(graphs_.at(g.name()));
    GS_RETURN_IF_ERROR(root->reorder_subgraphs(order));
    GS_RETURN_IF_ERROR(link(m.root(), root.get()));
    for (const om::Graph& g : m.subgraphs()) GS_RETURN_IF_ERROR(link(g, graphs_.at(g.name())));
    // Built through Graph's functions alone, as the compact reader's graphs: the edge checks are redundant.
    GS_RETURN_IF_ERROR(sdk::verify(*root, {.edges = false}).with_context(source_ + ": "));
    *out = std::move(root);
    return Status::ok();
  }

 private:
  Status err(const std::string& what) const { return Status::invalid_argument(source_ + ": " + what); }

  Status create_graph(const om::Graph& g, sdk::Graph* root,
                      const std::unordered_map<std::string, const om::Graph*>& pending, size_t depth) {
    if (graphs_.count(g.name())) return Status::ok();
    if (depth > pending.size()) return err("subgraph '" + g.name() + "' is its own ancestor");
    auto parent_graph = graphs_.find(g.parent_graph());
    if (parent_graph == graphs_.end()) {
      auto p = pending.find(g.parent_graph());
      if (p == pending.end()) {
        return err("subgraph '" + g.name() + "' names unknown parent graph '" + g.parent_graph() + "'");
      }
      GS_RETURN_IF_ERROR(create_graph(*p->second, root, pending, depth + 1));
      parent_graph = graphs_.find(g.parent_graph());
    }
    sdk::Node* parent = parent_graph->second->find_node(g.parent_node());
    if (!parent) {
      return err("subgraph '" + g.name() + "' names unknown parent node '" + g.parent_node() +
                 "' in graph '" + g.parent_graph() + "'");
    }
    sdk::Graph* sub = root->add_subgraph(g.name(), parent);
    if (!sub) return err("subgraph '" + g.name() + "' cannot be registered (duplicate name)");
    graphs_[g.name()] = sub;
    return create_nodes(g, sub);
  }

  Status create_nodes(const om::Graph& pg, sdk::Graph* g) {
    for (const om::Node& pn : pg.nodes()) {
      sdk::Node* n = g->add_node(pn.name(), pn.type(), pn.inputs_size(), 0);
      if (!n) return err("graph '" + g->name() + "': duplicate node name '" + pn.name() + "'");
      for (const om::Output& po : pn.outputs()) {
        sdk::TensorDesc d;
        GS_RETURN_IF_ERROR(from_proto(po.desc(), &d, pn.name()));
        n->add_output(std::move(d), po.name());
      }
    }
    return Status::ok();
  }

  Status link(const om::Graph& pg, sdk::Graph* g) {
    GS_RETURN_IF_ERROR(from_proto(pg.attrs(), &g->attrs(), "graph '" + g->name() + "'"));
    for (const om::Node& pn : pg.nodes()) {
      sdk::Node* n = g->find_node(pn.name());
      for (int i = 0; i < pn.inputs_size(); ++i) {
        const om::Input& in = pn.inputs(i);
        if (in.node().empty()) continue;
        sdk::Node* src = g->find_node(in.node());
        if (!src) {
          return err("graph '" + g->name() + "': node '" + pn.name() + "' input " + std::to_string(i) +
                     " names unknown node '" + in.node() + "'");
        }
        Status s = g->add_edge({src, in.index()}, {n, i});
        if (!s) return err("graph '" + g->name() + "': node '" + pn.name() + "': " + s.message());
      }
      for (const std::string& c : pn.control_inputs()) {
        sdk::Node* src = g->find_node(c);
        if (!src) {
          return err("graph '" + g->name() + "': node '" + pn.name() +
                     "' has a control input from unknown node '" + c + "'");
        }
        GS_RETURN_IF_ERROR(g->add_control_edge(src, n));
      }
      GS_RETURN_IF_ERROR(from_proto(pn.attrs(), &n->attrs(), "node '" + pn.name() + "'"));
    }
    return Status::ok();
  }

  Status from_proto(const om::TensorDesc& p, sdk::TensorDesc* d, const std::string& owner) const {
    bool kind_ok = false;
    for (int k = 0; k <= static_cast<int>(sdk::ValueKind::kUnknown); ++k) {
      if (sdk::to_string(static_cast<sdk::ValueKind>(k)) == p.kind()) {
        d->kind = static_cast<sdk::ValueKind>(k);
        kind_ok = true;
      }
    }
    auto dtype = sdk::parse_data_type(p.dtype());
    auto format = sdk::parse_format(p.format());
    if (!kind_ok || !dtype || !format) {
      return err("'" + owner + "': bad tensor descriptor (kind '" + p.kind() + "', dtype '" + p.dtype() +
                 "', format '" + p.format() + "')");
    }
    d->dtype = *dtype;
    d->format = *format;
    std::vector<int64_t> dims(p.shape().dims().begin(), p.shape().dims().end());
    d->shape = sdk::Shape(std::move(dims));
    if (p.shape().dim_names_size() > 0) {
      if (p.shape().dim_names_size() != p.shape().dims_size()) {
        return err("'" + owner + "': dim_names and dims differ in length");
      }
      d->shape.set_dim_names({p.shape().dim_names().begin(), p.shape().dim_names().end()});
    }
    return Status::ok();
  }

  Status from_proto(const om::Tensor& p, sdk::Tensor* t, const std::string& owner) const {
    sdk::TensorDesc d;
    GS_RETURN_IF_ERROR(from_proto(p.desc(), &d, owner));
    return om_detail::make_tensor(std::move(d), p.data(), source_ + ": '" + owner + "'", t);
  }

  Status from_proto(const om::AttrValue& p, AttrValue* v, const std::string& owner) const {
    return om_detail::read_value(
        p, v,
        [](const std::string& text, std::string* out) {
          *out = text;
          return Status::ok();
        },
        [&](const om::Tensor& m, sdk::Tensor* t) { return from_proto(m, t, owner); },
        [&](const std::string& name, sdk::Graph** g) {
          *g = find_graph(name);
          return *g ? Status::ok() : err(owner + " references unknown subgraph '" + name + "'");
        });
  }

  Status from_proto(const google::protobuf::RepeatedPtrField<om::Attr>& attrs, sdk::AttrMap* out,
                    const std::string& owner) const {
    for (const om::Attr& a : attrs) {
      if (out->has(a.name())) return err(owner + " has attribute '" + a.name() + "' twice");
      AttrValue v;
      GS_RETURN_IF_ERROR(from_proto(a.value(), &v, owner + " attribute '" + a.name() + "'"));
      out->set(a.name(), std::move(v));
    }
    return Status::ok();
  }

  sdk::Graph* find_graph(const std::string& name) const {
    auto it = graphs_.find(name);
    // The root cannot be somebody's subgraph.
    return (it == graphs_.end() || it->second->is_root()) ? nullptr : it->second;
  }

  std::string source_;
  std::unordered_map<std::string, sdk::Graph*> graphs_;
};

}  // namespace

namespace om_detail {

// The bytes must be what the descriptor says: kernels trust the shape (found by fuzzing the runtime).
Status make_tensor(sdk::TensorDesc d, std::string data, const std::string& what, sdk::Tensor* t) {
  const int64_t es = sdk::element_size(d.dtype);
  if (es > 0) {
    const std::optional<int64_t> n = d.shape.num_elements();
    if (!d.shape.is_static() || !n || *n > std::numeric_limits<int64_t>::max() / es ||
        static_cast<int64_t>(data.size()) != *n * es)
      return Status::invalid_argument(what + ": a tensor of " + d.to_string() + " holds " +
                                      std::to_string(data.size()) + " bytes");
  } else if (d.dtype == sdk::DataType::kString) {
    sdk::Tensor probe(d, data);
    std::vector<std::string> values;
    const std::optional<int64_t> n = d.shape.num_elements();
    if (!probe.strings(&values) || !n || static_cast<int64_t>(values.size()) != *n)
      return Status::invalid_argument(what + ": a string tensor of " + d.to_string() +
                                      " holds corrupt or too few strings");
  }
  *t = sdk::Tensor(std::move(d), std::move(data));
  return Status::ok();
}

}  // namespace om_detail

Status serialize_om(const sdk::Graph& root, std::string* bytes) {
  // Pieces of about a megabyte, joined once their total is known: one allocation of the file's size, not a
  // string that doubles as it grows.
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<std::string> chunks;
  size_t size = 0;
  GS_RETURN_IF_ERROR(om_detail::write_compact(root, [&](std::string_view piece) {
    if (chunks.empty() || chunks.back().size() >= kChunk) chunks.emplace_back();
    chunks.back().append(piece);
    size += piece.size();
    return Status::ok();
  }));
  bytes->clear();
  bytes->reserve(size);
  for (const std::string& c : chunks) bytes->append(c);
  return Status::ok();
}

Status write_om_file(const sdk::Graph& root, const std::string& path, size_t* size) {
  // Graphs are handed over one at a time and go to the file in batches of about a megabyte: the file's bytes
  // are never all in memory beside the graph (at a million nodes they were the peak of an atc run).
  constexpr size_t kBatch = size_t{1} << 20;
  AtomicFile file;
  GS_RETURN_IF_ERROR(file.open(path));
  std::string batch;
  size_t total = 0;
  GS_RETURN_IF_ERROR(om_detail::write_compact(root, [&](std::string_view piece) {
    total += piece.size();
    if (batch.size() + piece.size() > kBatch) {
      GS_RETURN_IF_ERROR(file.append(batch));
      batch.clear();
      if (piece.size() > kBatch) return file.append(piece);
    }
    batch.append(piece);
    return Status::ok();
  }));
  GS_RETURN_IF_ERROR(file.append(batch));
  GS_RETURN_IF_ERROR(file.commit());
  if (size) *size = total;
  return Status::ok();
}

// The format version from the first fields (both formats start with magic = 1 and format_version = 2),
// without parsing the rest; 0 when they are not there. `ours` tells whether the magic is GSOM.
static uint32_t sniff_format(std::string_view bytes, bool* ours) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(std::min<size_t>(bytes.size(), 1 << 20)));
  std::string magic;
  uint32_t tag = in.ReadTag();
  if (WireFormatLite::GetTagFieldNumber(tag) != 1 ||
      WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
      !WireFormatLite::ReadString(&in, &magic))
    return 0;
  *ours = magic == kOmMagic;
  tag = in.ReadTag();
  uint32_t version = 0;
  if (WireFormatLite::GetTagFieldNumber(tag) != 2 ||
      WireFormatLite::GetTagWireType(tag) != WireFormatLite::WIRETYPE_VARINT || !in.ReadVarint32(&version))
    return 0;
  return version;
}

Status parse_om(std::string_view bytes, const std::string& source, std::unique_ptr<sdk::Graph>* root) {
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Status::invalid_argument(source + ": larger than 2 GiB, the protobuf limit");
  bool ours = false;
  const uint32_t version = sniff_format(bytes, &ours);
  if (version == kOmFormatVersion) return om_detail::read_compact(bytes, source, root);
  if (ours && version > kOmFormatVersion)
    return Status::invalid_argument(source + ": " + unsupported_format(version));
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<om::Model>(&arena);
  if (!model->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::invalid_argument(
        source + ": not a graphsplit model (the file does not parse; truncated or corrupt?)");
  }
  return Loader(source).load(*model, root);
}

Status read_om_file(const std::string& path, std::unique_ptr<sdk::Graph>* root) {
  std::string bytes;
  GS_RETURN_IF_ERROR(read_file(path, &bytes, uint64_t{1} << 31));
  return parse_om(bytes, path, root);
}

static Status model_to_json(const om::Model& model, std::string* json) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  auto st = google::protobuf::util::MessageToJsonString(model, json, options);
  if (!st.ok()) return Status::internal("JSON conversion failed: " + std::string(st.message()));
  return Status::ok();
}

Status om_to_json(std::string_view om_bytes, const std::string& source, std::string* json) {
  // Load into the IR first so that a corrupt file is refused exactly as atc would refuse it.
  std::unique_ptr<sdk::Graph> root;
  GS_RETURN_IF_ERROR(parse_om(om_bytes, source, &root));
  return graph_to_json(*root, json);
}

Status graph_to_json(const sdk::Graph& root, std::string* json) {
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<om::Model>(&arena);
  GS_RETURN_IF_ERROR(build_model(root, model));
  return model_to_json(*model, json);
}

Status json_to_om(std::string_view json, const std::string& source, std::string* om_bytes) {
  google::protobuf::Arena arena;
  auto* model = google::protobuf::Arena::CreateMessage<om::Model>(&arena);
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), model);
  if (!st.ok())
    return Status::invalid_argument(source + ": not a graphsplit JSON model: " + std::string(st.message()));
  std::unique_ptr<sdk::Graph> root;
  GS_RETURN_IF_ERROR(Loader(source).load(*model, &root));
  return serialize_om(*root, om_bytes);
}

}  // namespace graphsplit
