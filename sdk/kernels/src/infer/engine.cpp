// infer_shapes: one topological walk per graph; rules describe outputs, kernels fold constants, and the
// result is merged into the descriptors the graph already has.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graphsplit/kernels/kernels.h"
#include "graphsplit/kernels/shape_inference.h"
#include "graphsplit/sdk/ir/topo.h"
#include "infer.h"

namespace graphsplit::kernels {
namespace infer {

bool SymValue::has_const_elems() const {
  if (!elems) return false;
  return std::all_of(elems->begin(), elems->end(), [](DimExpr e) { return e.is_const(); });
}

bool is_integer_type(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
      return true;
    default:
      return false;
  }
}

namespace {

// Operators whose output is not a function of their inputs, or that run subgraphs: never folded.
bool never_folded(std::string_view type) {
  static const std::unordered_set<std::string_view> kNever = {"RandomNormal",
                                                              "RandomUniform",
                                                              "RandomNormalLike",
                                                              "RandomUniformLike",
                                                              "Multinomial",
                                                              "Bernoulli",
                                                              "If",
                                                              "Loop",
                                                              "Scan",
                                                              "SequenceEmpty",
                                                              "Optional"};
  return kNever.count(type) > 0;
}

// What inference asks of an op type of the default domain, kept per type string: a node's type() is the
// process's one interned copy, never freed, so its address names the type. Finding the rule and the
// never-fold test were string searches per node (about 900 instructions a node on a chain).
struct TypeFacts {
  RuleFn rule = nullptr;
  bool never_folded = false;
};

const TypeFacts& facts_of(const std::string& interned_type) {
  thread_local std::unordered_map<const std::string*, TypeFacts> cache;
  auto [it, fresh] = cache.try_emplace(&interned_type);
  if (fresh) it->second = {find_rule(interned_type, {}), never_folded(interned_type)};
  return it->second;
}

// Whether folding may replace a node without subgraphs: `facts` are its type's, `domain` its domain
// attribute.
bool may_fold(const sdk::Node& n, const TypeFacts& facts, const sdk::AttrValue* domain) {
  if (facts.never_folded || domain) return false;
  return !n.any_control_edges();
}

}  // namespace

SymValue value_from_desc(sdk::SymbolTable& sym, const sdk::TensorDesc& d) {
  SymValue v;
  v.kind = d.kind;
  v.dtype = d.dtype;
  if (d.shape.is_unknown_rank()) return v;
  v.rank_known = true;
  const auto& names = d.shape.dim_names();
  for (size_t i = 0; i < d.shape.rank(); ++i) {
    const int64_t dim = d.shape.dims()[i];
    if (dim >= 0) {
      v.dims.push_back(sym.constant(dim));
      continue;
    }
    const std::string name = i < names.size() ? names[i] : std::string();
    if (name.empty()) {
      v.dims.push_back(sym.fresh_symbol("s"));
    } else if (auto parsed = sym.parse(name)) {
      v.dims.push_back(*parsed);
    } else {
      v.dims.push_back(sym.symbol(name));
    }
  }
  return v;
}

SymValue value_from_tensor(sdk::SymbolTable& sym, const Tensor& t, int64_t max_elems) {
  SymValue v;
  v.dtype = t.desc().dtype;
  v.rank_known = true;
  for (int64_t d : t.desc().shape.dims()) v.dims.push_back(sym.constant(d));
  v.constant = t;
  const int64_t n = num_elements(t.desc().shape.dims());
  if (is_integer_type(v.dtype) && n <= max_elems) {
    SymDims e;
    for (int64_t x : to_int64s(t)) e.push_back(sym.constant(x));
    v.elems = std::move(e);
  }
  return v;
}

namespace {

// An integer tensor from known values (a Shape's output), so that kernels can fold what consumes it.
std::optional<Tensor> materialize(const SymValue& v) {
  if (!v.rank_known || !v.has_const_elems()) return std::nullopt;
  Dims dims;
  for (DimExpr d : v.dims) {
    if (!d.is_const()) return std::nullopt;
    dims.push_back(d.value());
  }
  if (num_elements(dims) != static_cast<int64_t>(v.elems->size())) return std::nullopt;
  sdk::TensorDesc desc;
  desc.dtype = v.dtype;
  desc.shape = sdk::Shape(dims);
  if (!is_integer_type(v.dtype)) return std::nullopt;
  char* w = nullptr;
  Tensor t = Tensor::allocate(desc, static_cast<size_t>(sdk::element_size(v.dtype)) * v.elems->size(), &w);
  (void)visit_arith(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < v.elems->size(); ++i)
      reinterpret_cast<T*>(w)[i] = static_cast<T>((*v.elems)[i].value());
    return Status::ok();
  });
  return t;
}

class HeapAllocator final : public OutputAllocator {
 public:
  Tensor allocate(size_t, sdk::TensorDesc desc, size_t bytes, char** writable) override {
    return Tensor::allocate(std::move(desc), bytes, writable);
  }
};

struct GraphState {
  const ShapeInferenceOptions* options = nullptr;
  ShapeInferenceStats* stats = nullptr;
  sdk::SymbolTable* sym = nullptr;
  int opset = 17;
  std::vector<std::vector<SymValue>> values;  // by node id, per output
  std::vector<sdk::Node*> to_fold;
  // The last type's facts: neighbouring nodes mostly share a type, and facts_of() is a thread-local map.
  const std::string* last_type = nullptr;
  const TypeFacts* last_facts = nullptr;
  // A node's input list, kept from node to node so that a visit allocates only what it keeps.
  std::vector<const SymValue*> inputs;
  // The text of each symbolic dimension written into a descriptor, by its expression: a symbolic size reaches
  // most values of a model (B, B*S), and printing it again for each was a sixth of inferring such a model.
  // Expressions never change once made, so the text never goes stale.
  std::unordered_map<const sdk::DimExpr::Node*, std::string> dim_text;

  const std::string& text(const sdk::DimExpr& e) {
    auto [it, fresh] = dim_text.try_emplace(e.node());
    if (fresh) it->second = e.to_string();
    return it->second;
  }

  const TypeFacts& facts(const std::string& interned_type) {
    if (&interned_type != last_type) {
      last_facts = &facts_of(interned_type);
      last_type = &interned_type;
    }
    return *last_facts;
  }
};

// Runs the node's kernel on constant inputs; false (and no change) when it cannot or should not. `foldable`
// is may_fold(), which the caller needs too.
bool fold(InferContext& ctx, const GraphState& st, bool has_rule, bool foldable) {
  const sdk::Node& n = *ctx.node;
  if (!foldable || n.num_inputs() == 0) return false;
  std::vector<const Tensor*> inputs;
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    if (!n.input(i).valid()) {
      inputs.push_back(nullptr);
      continue;
    }
    if (!ctx.has(i) || !ctx.in(i)->constant) return false;
    inputs.push_back(&*ctx.in(i)->constant);
  }
  KernelFn fn = find_kernel(n.type(), {});
  if (!fn) return false;
  HeapAllocator heap;
  std::vector<Tensor> produced;
  KernelContext kc;
  kc.node = &n;
  kc.opset = ctx.opset;
  kc.inputs = inputs;
  kc.outputs = &produced;
  kc.allocator = &heap;
  kc.max_tensor_bytes = st.options->fold_max_bytes;
  const std::vector<RuleShape> shapes = has_rule ? rule_shapes(ctx) : std::vector<RuleShape>{};
  if (has_rule) kc.rule = &shapes;
  try {
    if (!fn(kc).is_ok()) return false;  // the run-time error stays for run time (or the rule reports it)
  } catch (const std::exception&) {
    return false;
  }
  if (produced.size() < n.num_outputs()) return false;
  for (size_t o = 0; o < n.num_outputs(); ++o) {
    if (!produced[o].data() && produced[o].desc().dtype == DataType::kUndefined) return false;
    if (produced[o].is_container()) return false;  // constants are tensors (Const, the .om)
    if (static_cast<int64_t>(produced[o].size_bytes()) > st.options->fold_max_bytes) return false;
  }
  for (size_t o = 0; o < n.num_outputs(); ++o)
    ctx.outputs[o] = value_from_tensor(*st.sym, produced[o], st.options->max_value_elements);
  return true;
}

std::string shape_text(const SymValue& v) {
  if (!v.rank_known) return std::string(sdk::to_string(v.dtype)) + "[?]";
  std::string s = std::string(sdk::to_string(v.dtype)) + "[";
  for (size_t i = 0; i < v.dims.size(); ++i) s += (i ? "," : "") + v.dims[i].to_string();
  return s + "]";
}

// The all-numbers case of merge_output, written into the descriptor's own list: most values, and a temporary
// list and Shape per value were a third of the visit of an elementwise node.
Status store_numbers(const SymValue& v, std::vector<int64_t>& have, GraphState& st) {
  const bool unknown_rank = have.size() == 1 && have[0] == sdk::kUnknownRank;
  bool same = !unknown_rank && have.size() == v.dims.size();
  for (size_t i = 0; same && i < v.dims.size(); ++i) same = have[i] == v.dims[i].value();
  if (same) return Status::ok();  // unchanged: most values of a re-inferred graph
  ++st.stats->changed_values;
  if (unknown_rank || have.size() != v.dims.size()) have.assign(v.dims.size(), sdk::kUnknownDim);
  for (size_t i = 0; i < v.dims.size(); ++i) {
    if (have[i] < 0) ++st.stats->refined_dims;
    have[i] = v.dims[i].value();
  }
  return Status::ok();
}

// Merges what inference found into the descriptor; a contradiction between two numbers is an error.
Status merge_output(sdk::Node* node, size_t o, SymValue& v, GraphState& st) {
  sdk::TensorDesc& d = node->mutable_output_desc(o);
  if (v.kind != sdk::ValueKind::kTensor) {
    if (d.kind == sdk::ValueKind::kTensor && d.dtype == DataType::kUndefined && d.shape.is_unknown_rank()) {
      d.kind = v.kind;
      d.dtype = v.dtype;
      ++st.stats->changed_values;
    }
    return Status::ok();
  }
  if (d.kind != sdk::ValueKind::kTensor) return Status::ok();
  if (d.dtype == DataType::kUndefined && v.dtype != DataType::kUndefined) {
    d.dtype = v.dtype;
    ++st.stats->changed_values;
  }
  if (!v.rank_known) return Status::ok();
  const auto mismatch = [&] {
    return Status::invalid_argument("node '" + node->name() + "' (" + node->type() + "): output " +
                                    std::to_string(o) + " is inferred as " + shape_text(v) +
                                    " but the model declares " + d.to_string());
  };
  if (!d.shape.is_unknown_rank()) {
    if (d.shape.rank() != v.dims.size()) return mismatch();
    for (size_t i = 0; i < v.dims.size(); ++i) {
      const int64_t have = d.shape.dims()[i];
      if (have < 0) continue;
      if (v.dims[i].is_const() && v.dims[i].value() != have) return mismatch();
      if (!st.sym->unify(v.dims[i], st.sym->constant(have))) return mismatch();
      v.dims[i] = st.sym->constant(have);
    }
  }
  const bool named = std::any_of(v.dims.begin(), v.dims.end(), [](const auto& x) { return !x.is_const(); });
  if (!named && d.shape.dim_names().empty()) return store_numbers(v, d.shape.mutable_dims(), st);
  std::vector<int64_t> dims(v.dims.size());
  std::vector<std::string> names;  // only for a symbolic dimension: a string per dimension costs
  if (named) names.resize(v.dims.size());
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const bool was_unknown = d.shape.is_unknown_rank() || d.shape.dims()[i] < 0;
    if (v.dims[i].is_const()) {
      dims[i] = v.dims[i].value();
      if (was_unknown) ++st.stats->refined_dims;
    } else {
      dims[i] = sdk::kUnknownDim;
      names[i] = st.text(v.dims[i]);
    }
  }
  // Unchanged descriptors are left alone: most values of a re-inferred graph are.
  if (d.shape.dims() == dims && d.shape.dim_names() == names) return Status::ok();
  ++st.stats->changed_values;
  d.shape = sdk::Shape(std::move(dims));
  if (named) d.shape.set_dim_names(std::move(names));
  return Status::ok();
}

Status infer_graph(sdk::Graph& g, GraphState& st);

}  // namespace

// The type of output `o` when a rule could not say more (its inputs' shapes unknown): ONNX's type
// constraints, which for most operators tie the output to input 0.
DataType default_type(const InferContext& ctx, size_t o) {
  const std::string& t = ctx.node->type();
  auto in = [&](size_t i) { return ctx.in(i) ? ctx.in(i)->dtype : DataType::kUndefined; };
  static const std::unordered_set<std::string_view> kInt64 = {
      "Shape", "Size", "NonZero", "ArgMax", "ArgMin", "NonMaxSuppression", "SequenceLength"};
  static const std::unordered_set<std::string_view> kBool = {
      "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf", "OptionalHasElement"};
  if (kInt64.count(t)) return DataType::kInt64;
  if (kBool.count(t)) return DataType::kBool;
  if ((t == "TopK" || t == "MaxPool" || t == "Unique") && o >= 1) return DataType::kInt64;
  if (t == "Dropout" && o == 1) return DataType::kBool;
  if (t == "Cast") return static_cast<DataType>(ctx.attrs.attr_int("to", 0));
  if (t == "CastLike") return in(1);
  if (t == "OneHot") return in(2);
  if (t == "Where") return in(1);
  if (t == "MatMulInteger" || t == "ConvInteger") return DataType::kInt32;
  if (t == "QLinearMatMul" || t == "QLinearConv") return in(7);
  if (t == "DequantizeLinear") return in(1);
  if (t == "QuantizeLinear") return ctx.has(2) ? in(2) : DataType::kUint8;
  if (t == "LayerNormalization" && o >= 1) return static_cast<DataType>(ctx.attrs.attr_int("stash_type", 1));
  if (t == "ConstantOfShape") {
    const Tensor* v = ctx.attrs.attr_tensor("value");
    return v ? v->desc().dtype : DataType::kFloat;
  }
  if (t == "EyeLike" || t == "RandomNormalLike" || t == "RandomUniformLike" || t == "Bernoulli") {
    const int64_t dt = ctx.attrs.attr_int("dtype", 0);
    return dt ? static_cast<DataType>(dt) : in(0);
  }
  return in(0);
}

namespace {

// Two values that may each be the result (If's branches, a Loop's first and later iterations): what they
// share.
SymValue join(GraphState& st, const SymValue& a, const SymValue& b) {
  SymValue r;
  r.dtype = a.dtype != DataType::kUndefined ? a.dtype : b.dtype;
  if (!a.rank_known || !b.rank_known || a.dims.size() != b.dims.size()) return r;
  r.rank_known = true;
  for (size_t i = 0; i < a.dims.size(); ++i)
    r.dims.push_back(a.dims[i] == b.dims[i] ? a.dims[i] : st.sym->fresh_symbol("u"));
  return r;
}

const sdk::Node* net_output_of(const sdk::Graph& g) {
  for (const sdk::Node* n : g.nodes()) {
    if (n->type() == sdk::op::kNetOutput) return n;
  }
  return nullptr;
}

SymValue result_of(GraphState& st, const sdk::Graph& g, size_t i) {
  const sdk::Node* out = net_output_of(g);
  if (!out || i >= out->num_inputs() || !out->input_desc(i)) return {};
  return value_from_desc(*st.sym, *out->input_desc(i));
}

// An If whose condition is known before running (a rank or size test on static shapes): the branch it takes.
const sdk::Graph* chosen_branch(const sdk::Node& node, const GraphState& st) {
  if (node.type() != sdk::op::kIf || node.num_inputs() == 0 || !node.input(0).valid()) return nullptr;
  const sdk::OutPort p = node.input(0);
  const auto& produced = st.values[p.node->id()];
  if (static_cast<size_t>(p.index) >= produced.size() || !produced[p.index].constant) return nullptr;
  const Tensor& cond = *produced[p.index].constant;
  if (cond.size_bytes() == 0) return nullptr;
  const sdk::AttrValue* then_branch = node.attrs().get("then_branch");
  const sdk::AttrValue* else_branch = node.attrs().get("else_branch");
  if (!then_branch || !else_branch || !then_branch->as_graph() || !else_branch->as_graph()) return nullptr;
  return scalar_as_double(cond) != 0 ? then_branch->as_graph() : else_branch->as_graph();
}

// Subgraphs first: captured values (and a PartitionedCall's inputs) take the parent's descriptors, each
// subgraph is inferred, and the parent's outputs come from the subgraphs' results.
Status visit_control_flow(sdk::Node* node, GraphState& st, std::vector<SymValue>* outs) {
  const bool call = node->type() == sdk::op::kPartitionedCall;
  std::vector<const sdk::Graph*> failed;
  for (sdk::Graph* sub : node->subgraphs()) {
    for (sdk::Node* d : sub->nodes()) {
      if (d->type() != sdk::op::kData || d->num_outputs() != 1) continue;
      const sdk::AttrValue* k = d->attrs().get(sdk::attr::kParentNodeIndex);
      if (!k || !k->as_int()) continue;
      const int64_t index = *k->as_int();
      if (index < 0 || static_cast<size_t>(index) >= node->num_inputs() || !node->input_desc(index)) continue;
      sdk::TensorDesc& desc = d->mutable_output_desc(0);
      const sdk::TensorDesc& outer = *node->input_desc(index);
      if (call || d->attrs().get(sdk::attr::kOuterValue)) {
        desc = outer;  // the same value
      } else if (desc.dtype == DataType::kUndefined) {
        // A formal input the model left untyped: a Loop's iteration count and condition are its inputs'
        // values; carried and scanned values keep their type but may change shape.
        desc.dtype = outer.dtype;
        if (node->type() == sdk::op::kLoop && index < 2 && desc.shape.is_unknown_rank())
          desc.shape = outer.shape;
      }
    }
    GraphState child;
    child.options = st.options;
    child.stats = st.stats;
    child.sym = st.sym;
    child.opset = st.opset;
    Status s = infer_graph(*sub, child);
    // A branch of a conditional may be impossible for these shapes (a model that handles two input
    // layouts): it is then never taken, and the other branches decide the results.
    const bool conditional = node->type() == sdk::op::kIf || node->type() == sdk::op::kCase;
    if (!s.is_ok() && conditional) {
      failed.push_back(sub);
      st.stats->dead_branches.push_back(sub->name() + ": " + s.message());
      continue;
    }
    GS_RETURN_IF_ERROR(s);
  }
  const auto subs = node->subgraphs();
  if (!failed.empty() && failed.size() == subs.size())
    return Status::invalid_argument("node '" + node->name() + "' (" + node->type() +
                                    "): no branch is possible for these shapes; " +
                                    st.stats->dead_branches.back());
  outs->assign(node->num_outputs(), SymValue{});
  const sdk::Graph* chosen = chosen_branch(*node, st);
  auto alive = [&](const sdk::Graph* g) {
    return (!chosen || g == chosen) && std::find(failed.begin(), failed.end(), g) == failed.end();
  };
  if (chosen && !alive(chosen))
    return Status::invalid_argument("node '" + node->name() + "' (If): its condition is known and selects '" +
                                    chosen->name() + "', which cannot run with these shapes");
  if ((node->type() == sdk::op::kIf || node->type() == sdk::op::kCase) && !subs.empty()) {
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      bool first = true;
      for (const sdk::Graph* g : subs) {
        if (!alive(g)) continue;
        (*outs)[o] = first ? result_of(st, *g, o) : join(st, (*outs)[o], result_of(st, *g, o));
        first = false;
      }
    }
  } else if (node->type() == sdk::op::kLoop && subs.size() == 1) {
    // Loop inputs: M, cond, carried...; body results: cond, carried..., scan outputs...
    const size_t carried = node->num_inputs() >= 2 ? node->num_inputs() - 2 : 0;
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      SymValue body = result_of(st, *subs[0], 1 + o);
      if (o < carried) {
        const sdk::TensorDesc* init = node->input_desc(2 + o);
        (*outs)[o] = init ? join(st, value_from_desc(*st.sym, *init), body) : SymValue{};
      } else if (body.rank_known) {
        body.dims.insert(body.dims.begin(), st.sym->fresh_symbol("u"));  // the trip count
        (*outs)[o] = body;
      }
    }
  } else if ((call || subs.size() == 1) && node->type() != sdk::op::kScan) {
    for (size_t o = 0; o < node->num_outputs(); ++o) (*outs)[o] = result_of(st, *subs[0], o);
  } else {
    for (size_t o = 0; o < node->num_outputs(); ++o)
      (*outs)[o] = value_from_desc(*st.sym, node->output_desc(o));
  }
  for (size_t o = 0; o < node->num_outputs(); ++o) GS_RETURN_IF_ERROR(merge_output(node, o, (*outs)[o], st));
  return Status::ok();
}

// A subgraph input that is a constant of the parent graph (a captured or routed Const): its value, so that
// shape computations inside branches resolve. Not for a Loop's or Scan's formal inputs, which change per
// iteration.
const Tensor* parent_constant(const sdk::Node& data) {
  const sdk::Node* parent = data.owner()->parent_node();
  const sdk::AttrValue* k = data.attrs().get(sdk::attr::kParentNodeIndex);
  if (!parent || !k || !k->as_int() || data.num_outputs() != 1) return nullptr;
  const std::string& pt = parent->type();
  const bool same_value = data.attrs().has(sdk::attr::kOuterValue) || pt == sdk::op::kIf ||
                          pt == sdk::op::kCase || pt == sdk::op::kPartitionedCall;
  const int64_t index = *k->as_int();
  if (!same_value || index < 0 || static_cast<size_t>(index) >= parent->num_inputs()) return nullptr;
  const sdk::OutPort p = parent->input(index);
  if (!p.valid() || !sdk::is_const_like(p.node->type())) return nullptr;
  const sdk::AttrValue* v = p.node->attrs().get(sdk::attr::kValue);
  return v && v->as_tensor() ? v->as_tensor() : nullptr;
}

Status visit_node(sdk::Node* node, GraphState& st) {
  std::vector<SymValue>& out = st.values[node->id()];
  const std::string& type = node->type();
  if (sdk::is_data_like(type) || sdk::is_variable_like(type)) {
    if (const Tensor* c = parent_constant(*node)) {
      out.push_back(value_from_tensor(*st.sym, *c, st.options->max_value_elements));
      return Status::ok();
    }
    for (size_t o = 0; o < node->num_outputs(); ++o)
      out.push_back(value_from_desc(*st.sym, node->output_desc(o)));
    return Status::ok();
  }
  if (sdk::is_const_like(type)) {
    const sdk::AttrValue* v = node->attrs().get(sdk::attr::kValue);
    if (v && v->as_tensor() && node->num_outputs() == 1) {
      out.push_back(value_from_tensor(*st.sym, *v->as_tensor(), st.options->max_value_elements));
    } else {
      for (size_t o = 0; o < node->num_outputs(); ++o)
        out.push_back(value_from_desc(*st.sym, node->output_desc(o)));
    }
    return Status::ok();
  }
  if (type == sdk::op::kNetOutput) return Status::ok();
  ++st.stats->nodes;
  if (!node->subgraphs().empty()) return visit_control_flow(node, st, &out);
  InferContext ctx;
  ctx.node = node;
  ctx.opset = st.opset;
  ctx.sym = st.sym;
  ctx.attrs.node = node;
  ctx.attrs.opset = st.opset;
  ctx.max_value_elements = st.options->max_value_elements;
  // The state's list lends its block to this visit and gets it back on every way out.
  struct LentInputs {
    std::vector<const SymValue*>& mine;
    std::vector<const SymValue*>& lent;
    ~LentInputs() { mine.swap(lent); }
  } lend{st.inputs, ctx.inputs};
  ctx.inputs.swap(st.inputs);
  ctx.inputs.clear();
  for (size_t i = 0; i < node->num_inputs(); ++i) {
    const sdk::OutPort p = node->input(i);
    ctx.inputs.push_back(p.valid() ? &st.values[p.node->id()][p.index] : nullptr);
  }
  ctx.outputs.resize(node->num_outputs());
  const sdk::AttrValue* domain_attr = node->attrs().get(sdk::attr::kDomain);
  const std::string_view domain = domain_attr && domain_attr->as_string()
                                      ? std::string_view(*domain_attr->as_string())
                                      : std::string_view();
  const TypeFacts& facts = st.facts(type);
  RuleFn rule = domain.empty() ? facts.rule : find_rule(type, domain);
  bool folded = false;
  const bool foldable = may_fold(*node, facts, domain_attr);
  try {
    if (rule) {
      GS_RETURN_IF_ERROR(rule(ctx));
      for (size_t o = 0; o < ctx.outputs.size(); ++o) {
        if (ctx.outputs[o].dtype == DataType::kUndefined) ctx.outputs[o].dtype = default_type(ctx, o);
      }
    } else {
      ++st.stats->no_rule[type];
    }
    folded = fold(ctx, st, rule != nullptr, foldable);
  } catch (const sdk::SymOverflow& e) {
    return Status::invalid_argument("node '" + node->name() + "' (" + type + "): " + e.what());
  } catch (const MissingInput& e) {
    return Status::invalid_argument("node '" + node->name() + "' (" + type + "): input " +
                                    std::to_string(e.index) + " is required but missing");
  }
  bool all_const = node->num_outputs() > 0 && foldable;
  for (size_t o = 0; o < node->num_outputs(); ++o) {
    SymValue& v = ctx.outputs[o];
    if (!rule && !folded) v = value_from_desc(*st.sym, node->output_desc(o));
    if (!v.constant) v.constant = materialize(v);
    if (!v.constant) all_const = false;
    GS_RETURN_IF_ERROR(merge_output(node, o, v, st));
  }
  if (all_const && st.options->fold_constants) st.to_fold.push_back(node);
  out = std::move(ctx.outputs);
  return Status::ok();
}

// Each folded node becomes one Const per output, under the node's own name when it has one output; Consts
// that only fed folded nodes go too.
Status replace_folded(sdk::Graph& g, GraphState& st) {
  if (st.to_fold.empty()) return Status::ok();
  std::vector<sdk::Node*> sources;
  for (sdk::Node* node : st.to_fold) {
    struct Out {
      sdk::Tensor value;
      std::string value_name;
      std::vector<sdk::InPort> consumers;
    };
    std::vector<Out> outs;
    for (size_t o = 0; o < node->num_outputs(); ++o) {
      sdk::Tensor t = *st.values[node->id()][o].constant;
      t.mutable_desc() = node->output_desc(o);
      outs.push_back({t, node->output_name(o), node->consumers(o)});
    }
    for (size_t i = 0; i < node->num_inputs(); ++i) {
      if (node->input(i).valid()) sources.push_back(node->input(i).node);
    }
    const std::string name = node->name();
    g.remove_node(node);
    for (size_t o = 0; o < outs.size(); ++o) {
      const std::string cname = g.unique_node_name(outs.size() == 1 ? name : name + "_" + std::to_string(o));
      sdk::Node* c = g.add_node(cname, sdk::op::kConst, 0, 0);
      c->add_output(outs[o].value.desc(), outs[o].value_name);
      c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(outs[o].value));
      for (const sdk::InPort& in : outs[o].consumers) GS_RETURN_IF_ERROR(g.add_edge({c, 0}, in));
    }
    ++st.stats->folded;
  }
  // A folded node can be the source of a later one: only look at sources still alive and unused.
  std::unordered_set<sdk::Node*> alive;
  for (sdk::Node* n : g.nodes()) alive.insert(n);
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  for (sdk::Node* s : sources) {
    if (alive.count(s) && sdk::is_const_like(s->type()) && !s->has_consumers() &&
        s->control_outputs().empty() && s->control_inputs().empty()) {
      alive.erase(s);
      g.remove_node(s);
    }
  }
  return Status::ok();
}

// Equalities found later rewrite the expressions written before them.
void apply_substitutions(const std::vector<sdk::Node*>& order, GraphState& st) {
  for (sdk::Node* n : order) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      sdk::TensorDesc& d = n->mutable_output_desc(o);
      if (d.shape.dim_names().empty()) continue;
      std::vector<int64_t> dims = d.shape.dims();
      std::vector<std::string> names = d.shape.dim_names();
      for (size_t i = 0; i < dims.size() && i < names.size(); ++i) {
        if (names[i].empty() || dims[i] >= 0 || o >= st.values[n->id()].size()) continue;
        const SymValue& v = st.values[n->id()][o];
        if (!v.rank_known || i >= v.dims.size()) continue;
        const DimExpr r = st.sym->resolve(v.dims[i]);
        if (r.is_const()) {
          dims[i] = r.value();
          names[i].clear();
        } else {
          names[i] = r.to_string();
        }
      }
      const bool any =
          std::any_of(names.begin(), names.end(), [](const std::string& s) { return !s.empty(); });
      d.shape = sdk::Shape(std::move(dims));
      if (any) d.shape.set_dim_names(std::move(names));
    }
  }
}

// Whether a node's values may go once its last consumer has read them: nothing after the walk reads values
// whose dimensions are all numbers (apply_substitutions reads only symbolic ones), unless the node is to be
// folded.
bool releasable(const std::vector<SymValue>& values) {
  for (const SymValue& v : values) {
    if (v.constant) return false;  // a folded node's, or read by a consumer that folds
    for (const DimExpr& d : v.dims) {
      if (!d.is_const()) return false;
    }
  }
  return true;
}

// Each node's values are dropped when its last consumer has been visited, when nothing later reads them: a
// million-node chain held every value to the end, about 120 MB of memory touched once.
Status infer_graph(sdk::Graph& g, GraphState& st) {
  std::vector<sdk::Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(g, sdk::TopoSortMode::kStableRDFS, &order));
  st.values.assign(g.id_bound(), {});
  st.to_fold.clear();
  std::vector<uint32_t> readers(g.id_bound(), 0);
  for (sdk::Node* n : order) {
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      if (n->input(i).valid()) ++readers[n->input(i).node->id()];
    }
  }
  for (sdk::Node* n : order) {
    GS_RETURN_IF_ERROR(visit_node(n, st));
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (!p.valid() || --readers[p.node->id()] != 0) continue;
      std::vector<SymValue>& values = st.values[p.node->id()];
      if (releasable(values)) std::vector<SymValue>().swap(values);
    }
  }
  if (st.sym->has_substitutions()) apply_substitutions(order, st);
  return replace_folded(g, st);
}

}  // namespace
}  // namespace infer

sdk::Status infer_shapes(sdk::Graph& root, const ShapeInferenceOptions& options, ShapeInferenceStats* stats) {
  ShapeInferenceStats local;
  if (!stats) stats = &local;
  *stats = {};
  sdk::SymbolTable sym;
  infer::GraphState st;
  st.options = &options;
  st.stats = stats;
  st.sym = &sym;
  st.opset = onnx_opset_of(root);
  GS_RETURN_IF_ERROR(infer::infer_graph(root, st));
  for (sdk::Node* n : root.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      for (const std::string& name : n->output_desc(o).shape.dim_names())
        stats->symbolic_dims += !name.empty();
    }
  }
  stats->assumptions = sym.assumptions();
  return sdk::Status::ok();
}

bool has_shape_rule(std::string_view op_type, std::string_view domain) {
  return infer::find_rule(op_type, domain) != nullptr;
}

}  // namespace graphsplit::kernels
