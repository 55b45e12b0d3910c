// IR -> ONNX for the partitioned model.
//
// Mapping (docs/visualisation.md has the full table):
//  - PartitionedCall          -> a call of function `graphsplit::<subgraph>`, whose body is the subgraph
//  - an engine segment        -> a call of function `graphsplit::<graph>.<engine>.<k>`: the runtime's unit (a
//                                maximal run of one engine's operators in the same topological order), so
//                                that the functions are exactly what each engine compiles
//  - If / Loop / Scan         -> the same node, its branches or body as graphs; captured values are referred
//  to
//                                by their outer names again (the importer had made them explicit inputs)
//  - Case (gears)             -> a chain of If nodes on `Equal(branch index, k)`
//  - Const                    -> initializers in the main graph, Constant nodes in functions and subgraphs
//  - `_`-prefixed attributes  -> dropped from operators; the decisions go to doc strings and the model's
//                                metadata (`graphsplit.partition`, JSON)
// Control edges have no ONNX form and are dropped (they order, never feed).
#include "report/onnx_export.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "common/json.h"
#include "graphsplit/sdk/ir/topo.h"
#include "import/onnx_import.h"
#include "report/partition_report.h"

namespace graphsplit {
namespace {

using sdk::Graph;
using sdk::Node;
using sdk::OutPort;
using sdk::Status;

// The text of a JSON string, without its quotes (the metadata is written around it).
std::string json_escape(const std::string& s) {
  const std::string quoted = json_string(s);
  return quoted.substr(1, quoted.size() - 2);
}

// Function names keep to identifier characters so that every consumer (ORT's inliner, Netron, the checker)
// takes them as they are.
std::string identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') ? c : '_';
  return out.empty() ? std::string("f") : out;
}

bool is_structural(const std::string& t) {
  return t == sdk::op::kData || t == sdk::op::kConst || t == sdk::op::kNetOutput || t == sdk::op::kNoOp;
}

// The runtime's framework operators (runtime_plan.cpp): each one cuts a run of engine operators.
bool is_control(const std::string& t) {
  return t == sdk::op::kPartitionedCall || t == sdk::op::kIf || t == sdk::op::kCase || t == sdk::op::kLoop ||
         t == sdk::op::kScan;
}

bool is_capture(const Node& data) {
  if (data.attrs().has(sdk::attr::kOuterValue)) return true;
  const Node* parent = data.owner()->parent_node();
  return parent && (parent->type() == sdk::op::kIf || parent->type() == sdk::op::kCase);
}

void set_type(const sdk::TensorDesc& d, onnx::TypeProto* t) {
  onnx::TypeProto_Tensor* tensor = nullptr;
  if (d.kind == sdk::ValueKind::kTensor)
    tensor = t->mutable_tensor_type();
  else if (d.kind == sdk::ValueKind::kSequence)
    tensor = t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type();
  else
    return;
  if (d.dtype != sdk::DataType::kUndefined) tensor->set_elem_type(static_cast<int32_t>(d.dtype));
  if (d.kind != sdk::ValueKind::kTensor || d.shape.is_unknown_rank()) return;
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < d.shape.rank(); ++i) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    const int64_t v = d.shape.dims()[i];
    const std::string name = i < d.shape.dim_names().size() ? d.shape.dim_names()[i] : std::string();
    if (v >= 0)
      dim->set_dim_value(v);
    else if (!name.empty())
      dim->set_dim_param(name);
  }
}

void value_info(const std::string& name, const sdk::TensorDesc& d, onnx::ValueInfoProto* vi) {
  vi->set_name(name);
  if (d.kind == sdk::ValueKind::kTensor || d.kind == sdk::ValueKind::kSequence)
    set_type(d, vi->mutable_type());
}

void tensor_proto(const sdk::Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.desc().dtype));
  for (int64_t d : t.desc().shape.dims()) p->add_dims(d);
  if (t.desc().dtype == sdk::DataType::kString) {
    std::vector<std::string> values;
    t.strings(&values);
    for (const std::string& v : values) p->add_string_data(v);
  } else {
    p->set_raw_data(std::string(t.bytes()));
  }
}

// Value names, unique across one ONNX scope tree (a function body or the main graph, with their nested
// graphs), since ONNX forbids a nested graph to redefine an outer name.
class Namer {
 public:
  std::string fresh(const std::string& base) {
    std::string b = base.empty() ? std::string("v") : base;
    if (used_.insert(b).second) return b;
    for (;;) {
      std::string n = b + "__" + std::to_string(++counter_);
      if (used_.insert(n).second) return n;
    }
  }
  void reserve(const std::string& name) { used_.insert(name); }

 private:
  std::set<std::string> used_;
  size_t counter_ = 0;
};

OutPort port(const Node& n, size_t output) {
  return {const_cast<Node*>(&n), static_cast<int>(output)};
}

// Names of a graph's values; captured values resolve through the enclosing graphs.
struct Scope {
  const Scope* parent = nullptr;
  Namer* namer = nullptr;
  std::map<std::pair<const Node*, int>, std::string> names;

  std::string name_of(const OutPort& p) const {
    if (!p.valid()) return {};
    for (const Scope* s = this; s; s = s->parent) {
      auto it = s->names.find({p.node, p.index});
      if (it != s->names.end()) return it->second;
    }
    return {};
  }
};

// Where emitted nodes and constants go.
struct Body {
  google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes = nullptr;
  onnx::GraphProto* graph = nullptr;  // the main graph (initializers, value_info) or null in functions
};

class Exporter {
 public:
  Exporter(const Graph& root, const std::vector<sdk::Decision>& decisions) : root_(root) {
    for (const sdk::Decision& d : decisions) {
      // The partitioners' decisions, as the partition report lists them; placement has its own report.
      if (!d.final || d.stage.rfind("placement.", 0) == 0) continue;
      for (const std::string& n : d.nodes) decisions_by_node_[n].push_back(&d);
    }
  }

  Status run(std::string* bytes) {
    GS_RETURN_IF_ERROR(set_header());
    onnx::GraphProto* g = model_.mutable_graph();
    g->set_name(root_.name());
    Namer namer;
    Scope scope{nullptr, &namer, {}};
    std::vector<const Node*> inputs;
    const Node* net_output = nullptr;
    GS_RETURN_IF_ERROR(emit_graph(root_, &scope, Body{g->mutable_node(), g}, &inputs, &net_output));
    for (const Node* d : inputs) value_info(scope.name_of(port(*d, 0)), d->output_desc(0), g->add_input());
    GS_RETURN_IF_ERROR(
        emit_outputs(net_output, &scope, Body{g->mutable_node(), g}, g->mutable_output(), true));
    for (onnx::FunctionProto& f : functions_) *model_.add_functions() = std::move(f);
    auto* meta = model_.add_metadata_props();
    meta->set_key("graphsplit.partition");
    meta->set_value(metadata_json());
    if (!model_.SerializeToString(bytes))
      return Status::internal("ONNX export: the model could not be serialized");
    return Status::ok();
  }

 private:
  Status set_header() {
    const int64_t ir = root_.attrs().get_int(sdk::attr::kOnnxIrVersion, 8);
    model_.set_ir_version(std::max<int64_t>(ir, 8));  // model-local functions need IR 8
    model_.set_producer_name("graphsplit");
    model_.set_producer_version(GRAPHSPLIT_VERSION);
    model_.set_domain("graphsplit.partitioned");
    bool has_default = false;
    if (const sdk::AttrValue* v = root_.attrs().get(sdk::attr::kOnnxOpsetImport); v && v->as_strings()) {
      for (const std::string& e : *v->as_strings()) {
        const auto colon = e.rfind(':');
        if (colon == std::string::npos) continue;
        std::string domain = e.substr(0, colon);
        if (domain == "ai.onnx") domain.clear();
        if (domain == kExportDomain) continue;
        has_default = has_default || domain.empty();
        opsets_.emplace_back(domain, std::stoll(e.substr(colon + 1)));
      }
    }
    if (!has_default) opsets_.emplace_back("", 17);
    opsets_.emplace_back(std::string(kExportDomain), 1);
    for (const auto& [domain, version] : opsets_) {
      auto* o = model_.add_opset_import();
      o->set_domain(domain);
      o->set_version(version);
    }
    return Status::ok();
  }

  // Emits the nodes of `g` into `body`; `inputs` gets the formal inputs (Data that are not captures) in their
  // order, `net_output` the NetOutput.
  Status emit_graph(const Graph& g, Scope* scope, Body body, std::vector<const Node*>* inputs,
                    const Node** net_output) {
    std::vector<Node*> order;
    GS_RETURN_IF_ERROR(sdk::topological_order(g, sdk::TopoSortMode::kStableRDFS, &order));
    GS_RETURN_IF_ERROR(emit_sources(g, order, scope, body, inputs));
    // As the runtime plans (runtime_plan.cpp): Data, Const and NoOp never cut a run; NetOutput does.
    std::erase_if(order, [](const Node* n) {
      return n->type() == sdk::op::kData || n->type() == sdk::op::kConst || n->type() == sdk::op::kNoOp;
    });
    size_t segment = 0;
    for (size_t k = 0; k < order.size();) {
      Node* n = order[k];
      const std::string engine = n->attrs().get_string(sdk::attr::kOpEngineName);
      if (n->type() == sdk::op::kNetOutput) {
        *net_output = n;
        ++k;
      } else if (is_structural(n->type())) {
        ++k;
      } else if (is_control(n->type())) {
        GS_RETURN_IF_ERROR(emit_control(*n, scope, body));
        ++k;
      } else if (engine.empty()) {
        GS_RETURN_IF_ERROR(emit_operator(*n, scope, body.nodes));
        ++k;
      } else {
        std::vector<const Node*> members;
        while (k < order.size() && !is_structural(order[k]->type()) && !is_control(order[k]->type()) &&
               order[k]->attrs().get_string(sdk::attr::kOpEngineName) == engine)
          members.push_back(order[k++]);
        GS_RETURN_IF_ERROR(emit_segment(g, members, engine, segment++, scope, body));
      }
    }
    if (!*net_output)
      return Status::invalid_argument("ONNX export: graph '" + g.name() + "' has no NetOutput");
    return Status::ok();
  }

  Status emit_sources(const Graph& g, const std::vector<Node*>& order, Scope* scope, Body body,
                      std::vector<const Node*>* inputs) {
    std::vector<std::pair<int64_t, const Node*>> formal;
    for (const Node* n : order) {
      if (n->type() == sdk::op::kData) {
        if (is_capture(*n)) {
          const Node* parent = g.parent_node();
          const int64_t i = n->attrs().get_int(sdk::attr::kParentNodeIndex, -1);
          if (!parent || i < 0 || static_cast<size_t>(i) >= parent->num_inputs())
            return Status::invalid_argument("ONNX export: Data '" + n->name() + "' in graph '" + g.name() +
                                            "' has no parent input");
          scope->names[{n, 0}] = scope->parent ? scope->parent->name_of(parent->input(i)) : std::string();
          continue;
        }
        const bool by_parent = g.parent_node() && g.parent_node()->type() == sdk::op::kPartitionedCall;
        const int64_t i = n->attrs().get_int(by_parent ? sdk::attr::kParentNodeIndex : sdk::attr::kIndex, -1);
        formal.emplace_back(i, n);
        scope->names[{n, 0}] = scope->namer->fresh(n->output_name(0).empty() ? n->name() : n->output_name(0));
      } else if (n->type() == sdk::op::kConst) {
        const sdk::AttrValue* v = n->attrs().get(sdk::attr::kValue);
        if (!v || !v->as_tensor())
          return Status::invalid_argument("ONNX export: Const '" + n->name() + "' has no value");
        const std::string name =
            scope->namer->fresh(n->output_name(0).empty() ? n->name() : n->output_name(0));
        scope->names[{n, 0}] = name;
        if (body.graph) {
          tensor_proto(*v->as_tensor(), name, body.graph->add_initializer());
        } else {
          onnx::NodeProto* c = body.nodes->Add();
          c->set_name(n->name());
          c->set_op_type("Constant");
          c->add_output(name);
          onnx::AttributeProto* a = c->add_attribute();
          a->set_name("value");
          a->set_type(onnx::AttributeProto::TENSOR);
          tensor_proto(*v->as_tensor(), "", a->mutable_t());
        }
      }
    }
    std::stable_sort(formal.begin(), formal.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [i, n] : formal) inputs->push_back(n);
    return Status::ok();
  }

  void name_outputs(const Node& n, Scope* scope) {
    for (size_t o = 0; o < n.num_outputs(); ++o) {
      const std::string& v = n.output_name(o);
      scope->names[{&n, static_cast<int>(o)}] =
          scope->namer->fresh(v.empty() ? n.name() + "_" + std::to_string(o) : v);
    }
  }

  // The IR also holds GE's and the passes' attributes; ONNX Runtime refuses any an operator does not define.
  // Where libonnx knows the model's opset, its schema decides; past it, the vocabulary's internal names.
  bool is_onnx_attribute(const Node& n, const std::string& key, const std::string& domain) const {
    if (key.empty() || key[0] == '_' || key == sdk::attr::kMbatchInsertedNode ||
        key == sdk::attr::kOwnerGraphIsUnknown)
      return false;
    auto opset =
        std::find_if(opsets_.begin(), opsets_.end(), [&](const auto& o) { return o.first == domain; });
    if (opset == opsets_.end() || (domain.empty() && opset->second > max_supported_onnx_opset())) return true;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.type(), static_cast<int>(opset->second), domain);
    return !schema || schema->attributes().count(key) > 0;
  }

  Status emit_operator(const Node& n, Scope* scope,
                       google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes) {
    name_outputs(n, scope);
    return emit_node(n, scope, nodes);
  }

  // One operator whose outputs are named in `scope`.
  Status emit_node(const Node& n, Scope* scope, google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes) {
    onnx::NodeProto* p = nodes->Add();
    p->set_name(n.name());
    p->set_op_type(n.type());
    std::string domain = n.attrs().get_string(sdk::attr::kDomain);
    if (domain.empty() && n.type() == sdk::op::kMapIndex) domain = kExportDomain;
    p->set_domain(domain);
    for (const OutPort& in : n.inputs()) p->add_input(scope->name_of(in));
    for (size_t o = 0; o < n.num_outputs(); ++o) p->add_output(scope->name_of(port(n, o)));
    for (const auto& [key, value] : n.attrs().entries()) {
      if (!is_onnx_attribute(n, key, domain)) continue;
      GS_RETURN_IF_ERROR(emit_attribute(n, key, value, scope, p));
    }
    return Status::ok();
  }

  Status emit_attribute(const Node& n, const std::string& key, const sdk::AttrValue& v, Scope* scope,
                        onnx::NodeProto* p) {
    using A = onnx::AttributeProto;
    A a;
    a.set_name(key);
    const auto& s = v.storage();
    switch (v.kind()) {
      case sdk::AttrValue::Kind::kInt:
        a.set_type(A::INT), a.set_i(std::get<1>(s));
        break;
      case sdk::AttrValue::Kind::kBool:
        a.set_type(A::INT), a.set_i(std::get<4>(s) ? 1 : 0);
        break;
      case sdk::AttrValue::Kind::kFloat:
        a.set_type(A::FLOAT), a.set_f(static_cast<float>(std::get<2>(s)));
        break;
      case sdk::AttrValue::Kind::kString:
        a.set_type(A::STRING), a.set_s(std::get<3>(s));
        break;
      case sdk::AttrValue::Kind::kInts:
        a.set_type(A::INTS);
        for (int64_t x : std::get<5>(s)) a.add_ints(x);
        break;
      case sdk::AttrValue::Kind::kBools:
        a.set_type(A::INTS);
        for (bool x : std::get<8>(s)) a.add_ints(x ? 1 : 0);
        break;
      case sdk::AttrValue::Kind::kFloats:
        a.set_type(A::FLOATS);
        for (double x : std::get<6>(s)) a.add_floats(static_cast<float>(x));
        break;
      case sdk::AttrValue::Kind::kStrings:
        a.set_type(A::STRINGS);
        for (const std::string& x : std::get<7>(s)) a.add_strings(x);
        break;
      case sdk::AttrValue::Kind::kTensor:
        a.set_type(A::TENSOR);
        tensor_proto(*std::get<9>(s).tensor, "", a.mutable_t());
        break;
      case sdk::AttrValue::Kind::kTensors:
        a.set_type(A::TENSORS);
        for (const sdk::Tensor& t : std::get<10>(s)) tensor_proto(t, "", a.add_tensors());
        break;
      case sdk::AttrValue::Kind::kGraph:
        a.set_type(A::GRAPH);
        GS_RETURN_IF_ERROR(emit_subgraph(*std::get<11>(s), scope, a.mutable_g()));
        break;
      case sdk::AttrValue::Kind::kGraphs:
        a.set_type(A::GRAPHS);
        for (const Graph* g : std::get<12>(s)) GS_RETURN_IF_ERROR(emit_subgraph(*g, scope, a.add_graphs()));
        break;
      default:
        return Status::unsupported("ONNX export: node '" + n.name() + "' attribute '" + key + "' of kind " +
                                   std::string(sdk::to_string(v.kind())) + " has no ONNX form");
    }
    *p->add_attribute() = std::move(a);
    return Status::ok();
  }

  // A nested graph (branch, body): its own scope under the enclosing one, sharing its namer.
  Status emit_subgraph(const Graph& g, Scope* outer, onnx::GraphProto* out) {
    out->set_name(g.name());
    Scope scope{outer, outer->namer, {}};
    std::vector<const Node*> inputs;
    const Node* net_output = nullptr;
    GS_RETURN_IF_ERROR(emit_graph(g, &scope, Body{out->mutable_node(), nullptr}, &inputs, &net_output));
    for (const Node* d : inputs) value_info(scope.name_of(port(*d, 0)), d->output_desc(0), out->add_input());
    return emit_outputs(net_output, &scope, Body{out->mutable_node(), nullptr}, out->mutable_output(), false);
  }

  // Graph outputs must be values this graph computes, once each: an input, a capture or a repeated value
  // passes through an Identity. The main graph keeps the model's output names.
  Status emit_outputs(const Node* net_output, Scope* scope, Body body,
                      google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* outputs, bool main_graph) {
    const sdk::AttrValue* names = net_output->attrs().get(sdk::attr::kOutputNames);
    std::set<std::string> emitted;
    for (size_t i = 0; i < net_output->num_inputs(); ++i) {
      const OutPort p = net_output->input(i);
      std::string name = scope->name_of(p);
      std::string wanted = name;
      if (main_graph && names && names->as_strings() && i < names->as_strings()->size())
        wanted = (*names->as_strings())[i];
      const bool computed_here =
          p.valid() && p.node->owner() == net_output->owner() && p.node->type() != sdk::op::kData;
      if (!computed_here || wanted != name || emitted.count(name)) {
        const std::string out =
            wanted != name && !emitted.count(wanted) ? wanted : scope->namer->fresh(name + "_out");
        onnx::NodeProto* id = body.nodes->Add();
        id->set_op_type("Identity");
        id->set_name(out + "_identity");
        id->add_input(name);
        id->add_output(out);
        name = out;
      }
      emitted.insert(name);
      value_info(name, p.valid() ? p.node->output_desc(p.index) : sdk::TensorDesc{}, outputs->Add());
    }
    return Status::ok();
  }

  onnx::FunctionProto* new_function(const std::string& base) {
    onnx::FunctionProto f;
    std::string name = identifier(base);
    for (size_t k = 1; !function_names_.insert(name).second; ++k)
      name = identifier(base) + "_" + std::to_string(k);
    f.set_name(name);
    f.set_domain(std::string(kExportDomain));
    for (const auto& [domain, version] : opsets_) {
      auto* o = f.add_opset_import();
      o->set_domain(domain);
      o->set_version(version);
    }
    pending_.push_back(std::move(f));
    return &pending_.back();
  }

  // Functions go to the model in completion order (callees before callers).
  void finish_function() {
    functions_.push_back(std::move(pending_.back()));
    pending_.pop_back();
  }

  onnx::NodeProto* call(const std::string& function, const std::string& node_name, Body body) {
    onnx::NodeProto* c = body.nodes->Add();
    c->set_name(node_name);
    c->set_op_type(function);
    c->set_domain(std::string(kExportDomain));
    return c;
  }

  // One engine segment: the same value names inside as outside (a function is a scope of its own).
  Status emit_segment(const Graph& g, const std::vector<const Node*>& members, const std::string& engine,
                      size_t index, Scope* scope, Body body) {
    std::set<const Node*> inside(members.begin(), members.end());
    std::vector<std::string> in_names, out_names;
    std::set<std::string> seen;
    for (const Node* m : members) {
      for (const OutPort& p : m->inputs()) {
        if (!p.valid() || inside.count(p.node)) continue;
        const std::string name = scope->name_of(p);
        if (seen.insert(name).second) in_names.push_back(name);
      }
    }
    bool all_static = true;
    for (const Node* m : members) {
      name_outputs(*m, scope);
      for (size_t o = 0; o < m->num_outputs(); ++o) {
        all_static = all_static && m->output_desc(o).is_static();
        const auto& consumers = m->consumers(o);
        if (std::any_of(consumers.begin(), consumers.end(),
                        [&](const sdk::InPort& c) { return !inside.count(c.node); }))
          out_names.push_back(scope->name_of(port(*m, o)));
      }
    }
    const std::string base = g.name() + "." + engine + "." + std::to_string(index);
    onnx::FunctionProto* f = new_function(base);
    const std::string fname = f->name();
    Namer namer;
    Scope inner{nullptr, &namer, {}};
    for (const std::string& n : in_names) namer.reserve(n), f->add_input(n);
    for (const Node* m : members) {
      for (const OutPort& p : m->inputs())
        if (p.valid()) inner.names[{p.node, p.index}] = scope->name_of(p);
      for (size_t o = 0; o < m->num_outputs(); ++o) {
        const std::string n = scope->name_of(port(*m, o));
        inner.names[{m, static_cast<int>(o)}] = n;
        namer.reserve(n);
      }
    }
    for (const Node* m : members) GS_RETURN_IF_ERROR(emit_node(*m, &inner, f->mutable_node()));
    for (const std::string& n : out_names) f->add_output(n);
    const std::string doc = "graphsplit engine segment: engine=" + engine + " graph=" + g.name() +
                            " nodes=" + std::to_string(members.size()) +
                            (all_static ? " static" : " dynamic");
    f->set_doc_string(doc);
    finish_function();
    onnx::NodeProto* c = call(fname, fname, body);
    for (const std::string& n : in_names) c->add_input(n);
    for (const std::string& n : out_names) c->add_output(n);
    c->set_doc_string(doc);
    entries_.push_back("{\"function\":\"" + json_escape(fname) +
                       "\",\"kind\":\"engine_segment\",\"graph\":\"" + json_escape(g.name()) +
                       "\",\"engine\":\"" + json_escape(engine) +
                       "\",\"static\":" + (all_static ? "true" : "false") +
                       ",\"nodes\":" + std::to_string(members.size()) + "}");
    return Status::ok();
  }

  Status emit_control(const Node& n, Scope* scope, Body body) {
    if (n.type() == sdk::op::kPartitionedCall) return emit_partitioned_call(n, scope, body);
    if (n.type() == sdk::op::kCase) return emit_case(n, scope, body);
    // If, Loop, Scan: the formal inputs only; captures are outer names inside the bodies again.
    std::set<int64_t> captured;
    for (const Graph* sub : n.subgraphs()) {
      for (const Node* d : sub->nodes())
        if (d->type() == sdk::op::kData && d->attrs().has(sdk::attr::kOuterValue))
          captured.insert(d->attrs().get_int(sdk::attr::kParentNodeIndex, -1));
    }
    name_outputs(n, scope);
    onnx::NodeProto* p = body.nodes->Add();
    p->set_name(n.name());
    p->set_op_type(n.type());
    const size_t formal = n.type() == sdk::op::kIf ? 1 : n.num_inputs();
    for (size_t i = 0; i < formal && i < n.num_inputs(); ++i)
      if (!captured.count(static_cast<int64_t>(i))) p->add_input(scope->name_of(n.input(i)));
    for (size_t o = 0; o < n.num_outputs(); ++o) p->add_output(scope->name_of(port(n, o)));
    for (const auto& [key, value] : n.attrs().entries()) {
      if (!is_onnx_attribute(n, key, "")) continue;
      GS_RETURN_IF_ERROR(emit_attribute(n, key, value, scope, p));
    }
    p->set_doc_string(node_doc(n));
    return Status::ok();
  }

  std::string node_doc(const Node& n) const {
    const std::string engine = n.attrs().get_string(sdk::attr::kOpEngineName);
    return engine.empty() ? std::string() : "graphsplit: engine=" + engine;
  }

  Status emit_partitioned_call(const Node& n, Scope* scope, Body body) {
    const sdk::AttrValue* fa = n.attrs().get("f");
    const Graph* sub = fa ? fa->as_graph() : nullptr;
    if (!sub)
      return Status::invalid_argument("ONNX export: PartitionedCall '" + n.name() + "' has no subgraph");
    onnx::FunctionProto* f = new_function(sub->name());
    const std::string fname = f->name();
    const size_t slot = pending_.size() - 1;
    Namer namer;
    Scope inner{nullptr, &namer, {}};
    std::vector<const Node*> inputs;
    const Node* net_output = nullptr;
    // The body is built apart: emitting it may add (and so move) other pending functions.
    onnx::GraphProto body_graph;
    GS_RETURN_IF_ERROR(
        emit_graph(*sub, &inner, Body{body_graph.mutable_node(), nullptr}, &inputs, &net_output));
    if (inputs.size() != n.num_inputs())
      return Status::invalid_argument("ONNX export: PartitionedCall '" + n.name() + "' has " +
                                      std::to_string(n.num_inputs()) + " inputs but its subgraph '" +
                                      sub->name() + "' " + std::to_string(inputs.size()) + " Data");
    google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> outs;
    GS_RETURN_IF_ERROR(
        emit_outputs(net_output, &inner, Body{body_graph.mutable_node(), nullptr}, &outs, false));
    onnx::FunctionProto& fn = pending_[slot];
    for (const Node* d : inputs) fn.add_input(inner.name_of(port(*d, 0)));
    for (const auto& vi : outs) fn.add_output(vi.name());
    *fn.mutable_node() = std::move(*body_graph.mutable_node());
    const std::string doc = call_doc(n, *sub);
    fn.set_doc_string(doc);
    functions_.push_back(std::move(fn));
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(slot));
    name_outputs(n, scope);
    onnx::NodeProto* c = call(fname, n.name(), body);
    for (const OutPort& in : n.inputs()) c->add_input(scope->name_of(in));
    for (size_t o = 0; o < n.num_outputs(); ++o) c->add_output(scope->name_of(port(n, o)));
    c->set_doc_string(doc);
    if (body.graph) {
      for (size_t o = 0; o < n.num_outputs(); ++o)
        value_info(scope->name_of(port(n, o)), n.output_desc(o), body.graph->add_value_info());
    }
    entries_.push_back(call_json(n, *sub, fname));
    return Status::ok();
  }

  // The reason codes recorded for the subgraph's nodes, each once, in log order.
  std::vector<std::string> reasons(const Graph& sub) const {
    std::vector<std::string> codes;
    std::set<const sdk::Decision*> seen;
    for (const Node* m : sub.nodes()) {
      auto it = decisions_by_node_.find(m->name());
      if (it == decisions_by_node_.end()) continue;
      for (const sdk::Decision* d : it->second) {
        if (!seen.insert(d).second) continue;
        const std::string code(sdk::to_string(d->code));
        if (std::find(codes.begin(), codes.end(), code) == codes.end()) codes.push_back(code);
      }
    }
    return codes;
  }

  std::string call_doc(const Node& n, const Graph& sub) const {
    std::string doc = "graphsplit " + graph_kind(sub) + ": " +
                      (sub.attrs().get_bool(sdk::attr::kIsUnknownShape, false) ? "dynamic" : "static");
    const std::string engine = n.attrs().get_string(sdk::attr::kOpEngineName);
    if (!engine.empty()) doc += " engine=" + engine;
    if (const sdk::AttrValue* s = n.attrs().get(sdk::attr::kStageLevel); s && s->as_int())
      doc += " stage=" + std::to_string(*s->as_int());
    const std::vector<std::string> codes = reasons(sub);
    for (size_t i = 0; i < codes.size(); ++i) doc += (i ? "," : " reasons=") + codes[i];
    return doc;
  }

  std::string call_json(const Node& n, const Graph& sub, const std::string& fname) const {
    std::string j = "{\"function\":\"" + json_escape(fname) + "\",\"kind\":\"" + graph_kind(sub) +
                    "\",\"graph\":\"" + json_escape(sub.name()) + "\",\"call\":\"" + json_escape(n.name()) +
                    "\",\"unknown_shape\":" +
                    (sub.attrs().get_bool(sdk::attr::kIsUnknownShape, false) ? "true" : "false");
    const std::string engine = n.attrs().get_string(sdk::attr::kOpEngineName);
    if (!engine.empty()) j += ",\"engine\":\"" + json_escape(engine) + "\"";
    if (const sdk::AttrValue* s = n.attrs().get(sdk::attr::kStageLevel); s && s->as_int())
      j += ",\"stage\":" + std::to_string(*s->as_int());
    j += ",\"reasons\":[";
    const std::vector<std::string> codes = reasons(sub);
    for (size_t i = 0; i < codes.size(); ++i) j += (i ? ",\"" : "\"") + codes[i] + "\"";
    return j + "],\"nodes\":" + std::to_string(sub.num_nodes()) + "}";
  }

  // Case: If(idx == 0, branch 0, If(idx == 1, branch 1, ... branch n-1)); the gear index is MapIndex's.
  Status emit_case(const Node& n, Scope* scope, Body body) {
    const sdk::AttrValue* b = n.attrs().get("branches");
    if (!b || !b->as_graphs() || b->as_graphs()->empty() || n.num_inputs() == 0)
      return Status::invalid_argument("ONNX export: Case '" + n.name() + "' has no branches");
    name_outputs(n, scope);
    std::vector<std::string> outs;
    for (size_t o = 0; o < n.num_outputs(); ++o) outs.push_back(scope->name_of(port(n, o)));
    return emit_case_level(n, *b->as_graphs(), 0, scope->name_of(n.input(0)), outs, scope, body.nodes);
  }

  Status emit_case_level(const Node& n, const std::vector<Graph*>& branches, size_t k,
                         const std::string& index, const std::vector<std::string>& outs, Scope* scope,
                         google::protobuf::RepeatedPtrField<onnx::NodeProto>* nodes) {
    const sdk::TensorDesc* idx = n.input_desc(0);
    sdk::TensorDesc kd;
    kd.dtype = idx ? idx->dtype : sdk::DataType::kInt32;
    kd.shape = sdk::Shape(std::vector<int64_t>{});
    std::string bytes(static_cast<size_t>(sdk::element_size(kd.dtype)), '\0');
    const int64_t kv = static_cast<int64_t>(k);
    std::memcpy(bytes.data(), &kv, std::min<size_t>(bytes.size(), sizeof kv));  // little-endian
    const std::string kname = scope->namer->fresh(n.name() + "_gear" + std::to_string(k));
    onnx::NodeProto* c = nodes->Add();
    c->set_name(kname);
    c->set_op_type("Constant");
    c->add_output(kname);
    onnx::AttributeProto* a = c->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    tensor_proto(sdk::Tensor(kd, bytes), "", a->mutable_t());
    const std::string cond = scope->namer->fresh(n.name() + "_is_gear" + std::to_string(k));
    onnx::NodeProto* eq = nodes->Add();
    eq->set_name(cond);
    eq->set_op_type("Equal");
    eq->add_input(index);
    eq->add_input(kname);
    eq->add_output(cond);
    onnx::NodeProto* iff = nodes->Add();
    iff->set_name(k == 0 ? n.name() : n.name() + "_gear" + std::to_string(k) + "_if");
    iff->set_op_type("If");
    iff->add_input(cond);
    for (const std::string& o : outs) iff->add_output(o);
    iff->set_doc_string("graphsplit: Case '" + n.name() + "' gear " + std::to_string(k));
    gear_entry(n, *branches[k], k);
    if (k + 2 == branches.size()) gear_entry(n, *branches[k + 1], k + 1);
    onnx::AttributeProto* then_a = iff->add_attribute();
    then_a->set_name("then_branch");
    then_a->set_type(onnx::AttributeProto::GRAPH);
    GS_RETURN_IF_ERROR(emit_subgraph(*branches[k], scope, then_a->mutable_g()));
    onnx::AttributeProto* else_a = iff->add_attribute();
    else_a->set_name("else_branch");
    else_a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* eg = else_a->mutable_g();
    if (k + 2 >= branches.size())
      return emit_subgraph(*branches[std::min(k + 1, branches.size() - 1)], scope, eg);
    eg->set_name(n.name() + "_gears_from_" + std::to_string(k + 1));
    std::vector<std::string> inner_outs;
    for (size_t o = 0; o < outs.size(); ++o)
      inner_outs.push_back(scope->namer->fresh(outs[o] + "_g" + std::to_string(k + 1)));
    Scope inner{scope, scope->namer, {}};
    GS_RETURN_IF_ERROR(emit_case_level(n, branches, k + 1, index, inner_outs, &inner, eg->mutable_node()));
    for (size_t o = 0; o < outs.size(); ++o) value_info(inner_outs[o], n.output_desc(o), eg->add_output());
    return Status::ok();
  }

  // A Case branch in the metadata: which gear, which graph, static or dynamic.
  void gear_entry(const Node& n, const Graph& branch, size_t k) {
    gears_.push_back("{\"kind\":\"gear\",\"case\":\"" + json_escape(n.name()) +
                     "\",\"gear\":" + std::to_string(k) + ",\"graph\":\"" + json_escape(branch.name()) +
                     "\",\"unknown_shape\":" +
                     (branch.attrs().get_bool(sdk::attr::kIsUnknownShape, false) ? "true" : "false") +
                     ",\"nodes\":" + std::to_string(branch.num_nodes()) + "}");
  }

  std::string metadata_json() const {
    std::string j = "{\"functions\":[";
    for (size_t i = 0; i < entries_.size(); ++i) j += (i ? ",\n" : "\n") + entries_[i];
    j += "\n],\n\"gears\":[";
    for (size_t i = 0; i < gears_.size(); ++i) j += (i ? ",\n" : "\n") + gears_[i];
    return j + "\n]}";
  }

  const Graph& root_;
  onnx::ModelProto model_;
  std::vector<std::pair<std::string, int64_t>> opsets_;
  std::map<std::string, std::vector<const sdk::Decision*>> decisions_by_node_;
  std::set<std::string> function_names_;
  std::deque<onnx::FunctionProto> pending_;
  std::vector<onnx::FunctionProto> functions_;
  std::vector<std::string> entries_;
  std::vector<std::string> gears_;
};

}  // namespace

Status export_onnx(const Graph& root, const std::vector<sdk::Decision>& decisions, std::string* bytes) {
  return Exporter(root, decisions).run(bytes);
}

}  // namespace graphsplit
