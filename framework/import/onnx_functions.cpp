// Model-local functions are inlined and sparse initializers densified before the import proper, so that the
// rest of the importer (and every pass) only ever sees plain nodes and dense constants.
#include "import/onnx_functions.h"

#include <google/protobuf/unknown_field_set.h>

#include <map>
#include <set>
#include <unordered_map>

#include "import/onnx_tensors.h"

namespace graphsplit::onnx_detail {
namespace {

constexpr int kMaxFunctionDepth = 32;

std::string key_of(const std::string& domain, const std::string& name) {
  return (domain == "ai.onnx" ? std::string() : domain) + "::" + name;
}

class Inliner {
 public:
  Inliner(onnx::ModelProto* m, std::string source) : model_(m), source_(std::move(source)) {
    for (const auto& f : m->functions()) functions_[key_of(f.domain(), f.name())] = &f;
    for (const auto& o : m->opset_import()) opsets_[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  }

  Status run() {
    for (const auto& [key, f] : functions_) GS_RETURN_IF_ERROR(check_opsets(*f));
    GS_RETURN_IF_ERROR(inline_graph(model_->mutable_graph()));
    model_->clear_functions();
    return Status::ok();
  }

 private:
  Status err(const std::string& m) const { return Status::invalid_argument(source_ + ": " + m); }

  // One ai.onnx version per model: a function importing another one cannot be inlined faithfully.
  Status check_opsets(const onnx::FunctionProto& f) {
    for (const auto& o : f.opset_import()) {
      const std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
      auto it = opsets_.find(domain);
      if (it == opsets_.end()) {
        auto* added = model_->add_opset_import();
        added->set_domain(o.domain());
        added->set_version(o.version());
        opsets_[domain] = o.version();
      } else if (it->second != o.version()) {
        return err("function '" + f.name() + "' imports " + (domain.empty() ? "ai.onnx" : domain) +
                   " version " + std::to_string(o.version()) + " but the model imports version " +
                   std::to_string(it->second) + "; one version per domain is supported");
      }
    }
    return Status::ok();
  }

  Status inline_graph(onnx::GraphProto* g) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (onnx::NodeProto& n : *g->mutable_node()) GS_RETURN_IF_ERROR(emit(std::move(n), 0, &out));
    g->mutable_node()->Swap(&out);
    return Status::ok();
  }

  // Appends `n` (its subgraphs inlined too), or the body of the function it calls.
  Status emit(onnx::NodeProto n, int depth, google::protobuf::RepeatedPtrField<onnx::NodeProto>* out) {
    auto fn = functions_.find(key_of(n.domain(), n.op_type()));
    if (fn == functions_.end()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) GS_RETURN_IF_ERROR(inline_graph(a.mutable_g()));
        for (auto& sub : *a.mutable_graphs()) GS_RETURN_IF_ERROR(inline_graph(&sub));
      }
      *out->Add() = std::move(n);
      return Status::ok();
    }
    const onnx::FunctionProto& f = *fn->second;
    if (active_.count(&f) || depth >= kMaxFunctionDepth) {
      return err("function '" + f.name() + "' calls itself (through node '" + n.name() +
                 "'); recursive functions cannot be inlined");
    }
    active_.insert(&f);
    Status s = expand(n, f, depth, out);
    active_.erase(&f);
    return s;
  }

  Status expand(const onnx::NodeProto& call, const onnx::FunctionProto& f, int depth,
                google::protobuf::RepeatedPtrField<onnx::NodeProto>* out) {
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size()) {
      return err("node '" + call.name() + "' calls function '" + f.name() + "' with " +
                 std::to_string(call.input_size()) + " inputs and " + std::to_string(call.output_size()) +
                 " outputs; it has " + std::to_string(f.input_size()) + " and " +
                 std::to_string(f.output_size()));
    }
    const std::string prefix =
        (call.name().empty() ? f.name() : call.name()) + "/" + std::to_string(counter_++) + "/";
    std::unordered_map<std::string, std::string> names;
    for (int i = 0; i < f.input_size(); ++i) names[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i)
      names[f.output(i)] = i < call.output_size() ? call.output(i) : "";
    auto rename = [&](const std::string& v) {
      if (v.empty()) return v;
      auto it = names.find(v);
      return it != names.end() ? it->second : prefix + v;
    };
    // graphsplit's own export (atc --export_onnx) wraps the original nodes in functions; they keep their
    // names, so that a reloaded partition can be compared node for node with the one exported.
    const bool keep_node_names = f.domain() == "graphsplit";
    for (const onnx::NodeProto& body : f.node()) {
      onnx::NodeProto n = body;
      if (!(keep_node_names && !body.name().empty()))
        n.set_name(prefix + (body.name().empty() ? body.op_type() : body.name()));
      for (auto& v : *n.mutable_input()) v = rename(v);
      for (auto& v : *n.mutable_output()) v = rename(v);
      GS_RETURN_IF_ERROR(bind_attributes(call, f, &n));
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) rename_outer(a.mutable_g(), names, prefix);
        for (auto& sub : *a.mutable_graphs()) rename_outer(&sub, names, prefix);
      }
      GS_RETURN_IF_ERROR(emit(std::move(n), depth + 1, out));
    }
    return Status::ok();
  }

  // Attributes that refer to the call's (ref_attr_name) take its value, or the function's default; absent
  // both, the attribute is left out, as ONNX says.
  Status bind_attributes(const onnx::NodeProto& call, const onnx::FunctionProto& f, onnx::NodeProto* n) {
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> bound;
    for (onnx::AttributeProto& a : *n->mutable_attribute()) {
      if (a.ref_attr_name().empty()) {
        *bound.Add() = std::move(a);
        continue;
      }
      const onnx::AttributeProto* value = nullptr;
      for (const auto& c : call.attribute()) {
        if (c.name() == a.ref_attr_name()) value = &c;
      }
      for (const auto& d : defaults(f)) {
        if (!value && d.name() == a.ref_attr_name()) value = &d;
      }
      if (!value) continue;
      onnx::AttributeProto* b = bound.Add();
      *b = *value;
      b->set_name(a.name());
    }
    n->mutable_attribute()->Swap(&bound);
    return Status::ok();
  }

  // A subgraph inside a function body reads the body's values from its outer scope: same renaming, except
  // for the names the subgraph defines itself.
  // Nested subgraphs too: their names and those of the graphs between them and the body shadow the body's.
  static void rename_outer(onnx::GraphProto* g, const std::unordered_map<std::string, std::string>& names,
                           const std::string& prefix, std::set<std::string> local = {}) {
    for (const auto& vi : g->input()) local.insert(vi.name());
    for (const auto& t : g->initializer()) local.insert(t.name());
    for (const auto& n : g->node()) local.insert(n.output().begin(), n.output().end());
    auto rename = [&](std::string* v) {
      if (v->empty() || local.count(*v)) return;
      auto it = names.find(*v);
      *v = it != names.end() ? it->second : prefix + *v;
    };
    for (auto& n : *g->mutable_node()) {
      for (auto& v : *n.mutable_input()) rename(&v);
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) rename_outer(a.mutable_g(), names, prefix, local);
        for (auto& sub : *a.mutable_graphs()) rename_outer(&sub, names, prefix, local);
      }
    }
    for (auto& o : *g->mutable_output()) rename(o.mutable_name());
  }

  // FunctionProto.attribute_proto (IR 9: attributes with default values) is newer than libonnx 1.12's
  // proto, so protobuf keeps it as unknown field 11; read it from there.
  const std::vector<onnx::AttributeProto>& defaults(const onnx::FunctionProto& f) {
    auto [it, fresh] = defaults_.try_emplace(&f);
    if (!fresh) return it->second;
    const auto& unknown = f.GetReflection()->GetUnknownFields(f);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const auto& field = unknown.field(i);
      if (field.number() != 11 || field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
        continue;
      onnx::AttributeProto a;
      if (a.ParseFromString(field.length_delimited())) it->second.push_back(std::move(a));
    }
    return it->second;
  }

  std::map<const onnx::FunctionProto*, std::vector<onnx::AttributeProto>> defaults_;
  onnx::ModelProto* model_;
  std::string source_;
  std::map<std::string, const onnx::FunctionProto*> functions_;
  std::map<std::string, int64_t> opsets_;
  std::set<const onnx::FunctionProto*> active_;
  int64_t counter_ = 0;
};

// A sparse initializer as a dense one: values scattered at their (linear or per-dimension) indices.
Status densify(const onnx::SparseTensorProto& sp, const TensorReader& reader, const std::string& source,
               onnx::TensorProto* out) {
  const std::string name = sp.values().name();
  auto bad = [&](const std::string& why) {
    return Status::invalid_argument(source + ": sparse initializer '" + name + "' " + why);
  };
  sdk::Tensor values, indices;
  GS_RETURN_IF_ERROR(reader.read(sp.values(), "sparse initializer '" + name + "' values", &values));
  GS_RETURN_IF_ERROR(reader.read(sp.indices(), "sparse initializer '" + name + "' indices", &indices));
  if (values.desc().dtype == sdk::DataType::kString) return bad("holds strings, which are not supported");
  if (indices.desc().dtype != sdk::DataType::kInt64) return bad("has indices that are not int64");
  const std::vector<int64_t> dims(sp.dims().begin(), sp.dims().end());
  auto count = sdk::Shape(dims).num_elements();
  const int64_t es = sdk::element_size(values.desc().dtype);
  if (!count || *count > (int64_t{1} << 31) / std::max<int64_t>(es, 1)) return bad("is too large to densify");
  const int64_t nnz = values.desc().shape.num_elements().value_or(-1);
  const auto& id = indices.desc().shape.dims();
  const bool linear = id.size() == 1, coords = id.size() == 2 && id[1] == static_cast<int64_t>(dims.size());
  if (nnz < 0 || (!linear && !coords) || id[0] != nnz) return bad("has indices that do not match its values");
  std::string dense(static_cast<size_t>(*count * es), '\0');
  const auto* idx = reinterpret_cast<const int64_t*>(indices.data());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (linear) {
      at = idx[k];
    } else {
      for (size_t d = 0; d < dims.size(); ++d) {
        const int64_t i = idx[k * static_cast<int64_t>(dims.size()) + static_cast<int64_t>(d)];
        if (i < 0 || i >= dims[d]) return bad("has an index out of its shape");
        at = at * dims[d] + i;
      }
    }
    if (at < 0 || at >= *count) return bad("has an index out of its shape");
    std::memcpy(dense.data() + at * es, values.data() + k * es, static_cast<size_t>(es));
  }
  out->set_name(name);
  out->set_data_type(sp.values().data_type());
  for (int64_t d : dims) out->add_dims(d);
  out->set_raw_data(std::move(dense));
  return Status::ok();
}

Status densify_graph(onnx::GraphProto* g, const TensorReader& reader, const std::string& source) {
  for (const auto& sp : g->sparse_initializer())
    GS_RETURN_IF_ERROR(densify(sp, reader, source, g->add_initializer()));
  g->clear_sparse_initializer();
  for (auto& n : *g->mutable_node()) GS_RETURN_IF_ERROR(densify_node(&n, reader, source));
  return Status::ok();
}

}  // namespace

Status densify_node(onnx::NodeProto* n, const TensorReader& reader, const std::string& source) {
  for (auto& a : *n->mutable_attribute()) {
    if (a.has_g()) GS_RETURN_IF_ERROR(densify_graph(a.mutable_g(), reader, source));
    for (auto& sub : *a.mutable_graphs()) GS_RETURN_IF_ERROR(densify_graph(&sub, reader, source));
  }
  return Status::ok();
}

Status normalize_model(onnx::ModelProto* m, const std::string& source, const std::string& base_dir) {
  if (m->functions_size() > 0) GS_RETURN_IF_ERROR(Inliner(m, source).run());
  TensorReader reader(source, base_dir);
  return densify_graph(m->mutable_graph(), reader, source);
}

}  // namespace graphsplit::onnx_detail
