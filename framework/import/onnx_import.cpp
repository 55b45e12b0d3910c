// ONNX -> IR.
//
// Mapping (docs/onnx-import.md has the full table):
//  - graph inputs that are not initializers -> Data (attr `index`; in subgraphs also `_parent_node_index`)
//  - initializers and Constant nodes       -> Const (attr `value`)
//  - graph outputs                         -> one NetOutput per graph (attr `output_names`)
//  - graph-valued attributes               -> subgraphs registered on the root, referenced by kGraph
//  attributes
//  - values a subgraph captures from an enclosing graph become explicit inputs of the control-flow node
//  (shared
//    by all its branches) and a Data node in the subgraph with `_parent_node_index` and `_outer_value`; a
//    capture two levels down is threaded through every level in between.
//
// Over 600 lines on purpose: graph building, the model-level checks and the shape inferencer share the
// importer's scope walk and domain/opset helpers; types and tensors live in onnx_tensors.{h,cpp}.
#include "import/onnx_import.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <climits>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/ask_ahead.h"
#include "common/atomic_file.h"
#include "common/flat_name_map.h"
#include "common/proto_fields.h"
#include "graphsplit/kernels/shape_inference.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/strings.h"
#include "import/onnx_functions.h"
#include "import/onnx_opsets.h"
#include "import/onnx_tensors.h"

namespace graphsplit {
namespace {

using onnx_detail::append_le;
using onnx_detail::desc_of;
using onnx_detail::TensorReader;
using onnx_detail::type_to_desc;
using onnx_detail::unsupported_type_name;

using sdk::Status;
namespace fs = std::filesystem;

constexpr std::string_view kDefaultDomain = "ai.onnx";
bool is_default_domain(const std::string& d) {
  return d.empty() || d == kDefaultDomain;
}

// ------------------------------------------------------------------ graph building

// The attribute's type; IR version 1-2 files leave it out, and it follows from the field used.
onnx::AttributeProto::AttributeType attribute_type(const onnx::AttributeProto& a) {
  using A = onnx::AttributeProto;
  if (a.type() != A::UNDEFINED) return a.type();
  if (a.has_f()) return A::FLOAT;
  if (a.has_i()) return A::INT;
  if (a.has_s()) return A::STRING;
  if (a.has_t()) return A::TENSOR;
  if (a.has_g()) return A::GRAPH;
  if (a.floats_size()) return A::FLOATS;
  if (a.ints_size()) return A::INTS;
  if (a.strings_size()) return A::STRINGS;
  if (a.tensors_size()) return A::TENSORS;
  if (a.graphs_size()) return A::GRAPHS;
  return A::UNDEFINED;
}

const char kParseFailed[] =
    ": not a valid ONNX model (protobuf parse failed: truncated, not an .onnx file, or nested deeper than "
    "protobuf's limit of 100 message levels)";

// How far ahead of the build a waiting build lets the checks get before it resumes.
constexpr int64_t kCheckLead = 1024;
// Each side publishes its progress in batches of this many nodes: each publication may wake the other.
constexpr int kPublishBatch = 64;

// How far the checks of the main graph's nodes have got, for a build running beside them on another thread
// (import_bytes): node k may be built once `passed` exceeds k, that is, once it and every node before it
// passed their checks, subgraphs included. A node that fails is never published, so the build never reads a
// node the checks refused (an unchecked node may nest past the depth limit or break the build's assumptions).
class CheckGate {
 public:
  void publish(int64_t passed) {
    passed_.store(passed);
    if (passed >= wanted_.load()) wake();
  }
  void finish() {
    finished_.store(true);
    wake();
  }
  // Waits until node k may be built; false when the checks ended without passing it. A build that catches
  // up waits for a lead of kLead nodes, so that the two threads do not wake each other at every batch.
  bool wait_for(int64_t k) {
    if (passed_.load() > k) return true;
    const int64_t want = k + kLead;
    wanted_.store(want);  // seq_cst with publish's store and load: one of the two sees the other
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return passed_.load() >= want || finished_.load(); });
    wanted_.store(INT64_MAX);
    return passed_.load() > k;
  }

 private:
  static constexpr int64_t kLead = kCheckLead;
  void wake() {
    { std::lock_guard<std::mutex> lock(mu_); }  // a waiter is either asleep or yet to test its predicate
    cv_.notify_all();
  }
  std::atomic<int64_t> passed_{0};
  std::atomic<int64_t> wanted_{INT64_MAX};
  std::atomic<bool> finished_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// The checks' parsed nodes, handed to the build running beside them, which then skips its own parse of each
// node (a quarter of its work per node; the checks parse every node anyway). A ring of messages: the checks
// parse node k into slot k % size once the build has consumed node k - size, and the build reads node k there
// once the checks have passed it. With more slots than twice CheckGate's lead (and both sides' batches), each
// side can always run far enough for the other to go on. The checks stop handing over once an operator fails
// (they stop publishing, so the build would never consume again) or the build has ended.
struct NodeHandoff {
  static constexpr size_t kSlots = 2 * kCheckLead + 8 * kPublishBatch;  // small enough to stay in cache
  explicit NodeHandoff(size_t nodes) : slots(std::min(nodes, kSlots)) {}
  std::vector<onnx::NodeProto> slots;
  CheckGate consumed;  // the build's progress through its first pass
};

// Returned by a build whose checks stopped first; the checks' own error is what the user sees.
const char kBuildStopped[] = "the build stopped: the checks refused a node";

// The nodes of one graph, in order: the GraphProto's own, or, for the main graph of a model read from bytes,
// spans of those bytes parsed one at a time into one reused message. The messages of a million-node model
// were 350-450 MB, most of an import's peak, for a graph built from them in one pass.
class NodeSource {
 public:
  explicit NodeSource(const onnx::GraphProto* graph) : graph_(graph) {}
  NodeSource(std::vector<std::string_view> spans, const TensorReader* reader, std::string source)
      : own_spans_(std::move(spans)), reader_(reader), source_(std::move(source)) {}
  NodeSource(const NodeSource&) = delete;
  NodeSource& operator=(const NodeSource&) = delete;

  // The same spans with a message of its own, for another thread; `this` must outlive it.
  std::unique_ptr<NodeSource> sibling(const TensorReader* reader) const {
    auto other = std::make_unique<NodeSource>(std::vector<std::string_view>{}, reader, source_);
    other->graph_ = graph_;
    other->spans_ = spans_;
    return other;
  }
  // for_each waits for each node to pass the checks running beside it.
  void gate_by(CheckGate* gate) { gate_ = gate; }
  // The checks' source hands its parsed nodes over (`giver`); the build's reads them, in its first pass.
  void hand_over(NodeHandoff* handoff, bool giver) {
    handoff_ = handoff;
    giver_ = giver;
  }
  // An operator failed: the build will not consume again, so the checks parse for themselves from here.
  void stop_handing_over() const {
    if (giver_) handoff_ = nullptr;
  }

  int size() const { return graph_ ? graph_->node_size() : static_cast<int>(spans_->size()); }

  // fn(name, is_output) for node k's name and its outputs' names, without parsing the node: read from its
  // bytes (where the serialiser writes inputs, outputs and name first, the walk stops at the first later
  // field). A hint for prefetching only; malformed bytes just end it.
  template <class F>
  void peek_names(int k, F&& fn) const {
    if (graph_) {
      const onnx::NodeProto& n = graph_->node(k);
      fn(std::string_view(n.name()), false);
      for (const std::string& o : n.output()) fn(std::string_view(o), true);
      return;
    }
    proto_fields::FieldReader reader((*spans_)[static_cast<size_t>(k)]);
    for (proto_fields::Field f; reader.next(&f);) {
      if (f.wire != proto_fields::WireFormatLite::WIRETYPE_LENGTH_DELIMITED ||
          f.number > onnx::NodeProto::kNameFieldNumber)
        return;
      if (f.number != onnx::NodeProto::kInputFieldNumber)
        fn(f.bytes, f.number == onnx::NodeProto::kOutputFieldNumber);
    }
  }

  // fn(node, k) for each node from `from` on; the node is valid only during the call. Stops at the first
  // error.
  template <class F>
  Status for_each(F&& fn, int from = 0) const {
    if (graph_) {
      for (int k = from; k < graph_->node_size(); ++k) GS_RETURN_IF_ERROR(fn(graph_->node(k), k));
      return Status::ok();
    }
    NodeHandoff* const taking =
        giver_ || !gate_ ? nullptr : handoff_;  // a slot is read once the checks passed it
    handoff_ = giver_ ? handoff_ : nullptr;     // the build reads the ring in its first pass only
    for (size_t k = static_cast<size_t>(from); k < spans_->size(); ++k) {
      if (gate_ && !gate_->wait_for(static_cast<int>(k))) return Status::internal(kBuildStopped);
      const onnx::NodeProto* node = taking ? &taking->slots[k % taking->slots.size()] : nullptr;
      if (!node) {
        onnx::NodeProto* into = giving_slot(k);
        GS_RETURN_IF_ERROR(parse((*spans_)[k], into));
        node = into;
      }
      GS_RETURN_IF_ERROR(fn(*node, static_cast<int>(k)));
      if (taking && ((k + 1) % kPublishBatch == 0 || k + 1 == spans_->size()))
        taking->consumed.publish(static_cast<int64_t>(k + 1));
    }
    return Status::ok();
  }

 private:
  // With the normalisation normalize_model gives every node. (Protobuf's nesting limit of 100 messages
  // counts from the node here, two levels below the model; the importer's own limit on subgraph nesting,
  // --max_nesting_depth, is far below either.)
  Status parse(std::string_view span, onnx::NodeProto* node) const {
    if (!node->ParseFromArray(span.data(), static_cast<int>(span.size())))
      return Status::invalid_argument(source_ + kParseFailed);
    return onnx_detail::densify_node(node, *reader_, source_);
  }

  // Where the checks parse node k: its ring slot once the build is done with the slot's last node, else
  // (no ring, or the build has ended) their own message.
  onnx::NodeProto* giving_slot(size_t k) const {
    if (!giver_ || !handoff_) return &node_;
    const size_t n = handoff_->slots.size();
    if (k >= n && !handoff_->consumed.wait_for(static_cast<int64_t>(k - n))) {
      handoff_ = nullptr;
      return &node_;
    }
    return &handoff_->slots[k % n];
  }

  const onnx::GraphProto* graph_ = nullptr;
  std::vector<std::string_view> own_spans_;
  const std::vector<std::string_view>* spans_ = &own_spans_;
  CheckGate* gate_ = nullptr;
  mutable NodeHandoff* handoff_ = nullptr;
  bool giver_ = false;
  const TensorReader* reader_ = nullptr;
  std::string source_;
  mutable onnx::NodeProto node_;
};

struct Scope {
  sdk::Graph* graph = nullptr;
  Scope* parent = nullptr;
  sdk::Node* owner = nullptr;  // the control-flow node (in the parent graph) that owns this subgraph
  int64_t next_data_index = 0;
  // Keyed by views of the names the IR holds (a node's message may not outlive its visit), types by views
  // of the graph's value infos: no key is copied.
  FlatNameMap<sdk::OutPort> values;
  FlatNameMap<const onnx::TypeProto*> types;
};

class Importer {
 public:
  // `main_nodes`, when given, are the main graph's nodes (model.graph() then has none).
  Importer(std::string source, std::string base_dir, const onnx::ModelProto& model,
           const NodeSource* main_nodes = nullptr, const onnx_detail::EmbeddedWeights* embedded = nullptr)
      : source_(std::move(source)),
        tensors_(source_, std::move(base_dir), embedded),
        model_(model),
        own_main_nodes_(&model.graph()),
        main_nodes_(main_nodes ? main_nodes : &own_main_nodes_) {
    for (const auto& o : model.opset_import())
      opsets_[is_default_domain(o.domain()) ? "" : o.domain()] = o.version();
  }

  // Every check that needs no shapes, over every graph, before shape inference runs (so that a broken model
  // is refused with one message, not after inference warnings about it).
  // With a gate, the main graph's nodes are published to it as they pass, and its value infos are not checked
  // again: head_passes has passed them, before --input_shape changed the inputs.
  Status check_all(const OnnxImportOptions& limits, CheckGate* gate = nullptr) const {
    int64_t nodes = 0;
    GS_RETURN_IF_ERROR(check_tree(model_.graph(), *main_nodes_, 0, limits, &nodes, gate));
    return Status::ok();
  }

  // Whether what the checks of the main graph read before its nodes and apart from them (its size, name and
  // values) passes. Then the build can run beside the node checks: nothing it reads first is unchecked. When
  // not, the serial path gives the error.
  bool head_passes(const OnnxImportOptions& limits) const {
    const onnx::GraphProto& g = model_.graph();
    const int64_t nodes = main_nodes_->size() + g.input_size() + g.initializer_size();
    return nodes <= limits.max_nodes && sdk::is_valid_utf8(g.name()) && check_value_infos(g).is_ok();
  }

  Status run(std::unique_ptr<sdk::Graph>* out) {
    const onnx::GraphProto& g = model_.graph();
    auto root = sdk::Graph::create(g.name().empty() ? "main" : g.name());
    root_ = root.get();
    std::vector<std::string> opset_texts;
    for (const auto& o : model_.opset_import()) {
      opset_texts.push_back((is_default_domain(o.domain()) ? std::string(kDefaultDomain) : o.domain()) + ":" +
                            std::to_string(o.version()));
    }
    root->attrs().set(sdk::attr::kOnnxIrVersion, sdk::AttrValue::Int(model_.ir_version()));
    root->attrs().set(sdk::attr::kOnnxOpsetImport, sdk::AttrValue::Strings(std::move(opset_texts)));
    if (!model_.producer_name().empty()) {
      root->attrs().set(sdk::attr::kOnnxProducer,
                        sdk::AttrValue::String(model_.producer_name() + " " + model_.producer_version()));
    }
    Scope scope;
    scope.graph = root.get();
    GS_RETURN_IF_ERROR(build_graph(g, *main_nodes_, &scope, 0));
    *out = std::move(root);
    return Status::ok();
  }

 private:
  Status err(const std::string& m) const { return Status::invalid_argument(source_ + ": " + m); }

  static std::string node_label(const onnx::NodeProto& n, const sdk::Node* ir) {
    return "node '" + (ir ? ir->name() : n.name()) + "' (" + n.op_type() + ")";
  }

  // Names must be UTF-8 (the .om stores them as protobuf strings); declared shapes must be countable.
  Status bad_text(const onnx::GraphProto& g, const std::string& what, const std::string& name) const {
    std::string shown;
    for (unsigned char c : name)
      shown += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c)) : "?";
    return err("graph '" + shown_graph(g) + "': " + what + " '" + shown + "' is not valid UTF-8");
  }

  Status check_node_text(const onnx::GraphProto& g, const onnx::NodeProto& n) const {
    if (!sdk::is_valid_utf8(n.name())) return bad_text(g, "node name", n.name());
    if (!sdk::is_valid_utf8(n.op_type())) return bad_text(g, "operator type", n.op_type());
    for (const auto& v : n.input()) {
      if (!sdk::is_valid_utf8(v)) return bad_text(g, "value name", v);
    }
    for (const auto& v : n.output()) {
      if (!sdk::is_valid_utf8(v)) return bad_text(g, "value name", v);
    }
    for (const auto& a : n.attribute()) {
      if (!sdk::is_valid_utf8(a.name())) return bad_text(g, "attribute name", a.name());
    }
    return Status::ok();
  }

  // Value names must be UTF-8 too; declared shapes must be countable.
  Status check_value_infos(const onnx::GraphProto& g) const {
    auto bad_name = [&](const std::string& what, const std::string& name) { return bad_text(g, what, name); };
    for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
      for (const auto& vi : *list) {
        if (!sdk::is_valid_utf8(vi.name())) return bad_name("value name", vi.name());
        if (vi.type().has_tensor_type() && vi.type().tensor_type().elem_type() > sdk::kMaxDataType) {
          return err("graph '" + shown_graph(g) + "': value '" + vi.name() + "' has element type " +
                     unsupported_type_name(vi.type().tensor_type().elem_type()) +
                     ", which graphsplit cannot represent");
        }
        if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
        const auto& shape = vi.type().tensor_type().shape();
        int64_t elements = 1;
        bool known = true;
        for (const auto& d : shape.dim()) {
          if (!d.has_dim_value()) {
            known = false;
            continue;
          }
          if (d.dim_value() < 0) {
            return err("graph '" + shown_graph(g) + "': value '" + vi.name() + "' has negative dimension " +
                       std::to_string(d.dim_value()));
          }
          if (known && d.dim_value() > 0 &&
              elements > std::numeric_limits<int64_t>::max() / 16 / d.dim_value()) {
            return err("graph '" + shown_graph(g) + "': value '" + vi.name() +
                       "' declares a shape too large to address (more than 2^59 elements)");
          }
          if (known) elements *= d.dim_value();
        }
      }
    }
    return Status::ok();
  }

  // The operator against its schema, and its subgraphs.
  Status check_node(const onnx::NodeProto& n, int depth, const OnnxImportOptions& limits,
                    int64_t* nodes) const {
    GS_RETURN_IF_ERROR(check_operator(n));
    for (const auto& a : n.attribute()) {
      if (a.has_g()) GS_RETURN_IF_ERROR(check_tree(a.g(), NodeSource(&a.g()), depth + 1, limits, nodes));
      for (const auto& sub : a.graphs())
        GS_RETURN_IF_ERROR(check_tree(sub, NodeSource(&sub), depth + 1, limits, nodes));
    }
    return Status::ok();
  }

  Status check_tree(const onnx::GraphProto& g, const NodeSource& graph_nodes, int depth,
                    const OnnxImportOptions& limits, int64_t* nodes, CheckGate* gate = nullptr) const {
    if (depth > limits.max_nesting_depth) {
      return err("graph '" + shown_graph(g) + "' is nested " + std::to_string(depth) +
                 " levels deep; the limit is " + std::to_string(limits.max_nesting_depth) +
                 " (--max_nesting_depth)");
    }
    *nodes += graph_nodes.size() + g.input_size() + g.initializer_size();
    if (*nodes > limits.max_nodes) {
      return err(
          "the model has more than " + std::to_string(limits.max_nodes) +
          " nodes, inputs and initializers; the limit is --max_nodes=" + std::to_string(limits.max_nodes));
    }
    if (!sdk::is_valid_utf8(g.name())) return bad_text(g, "graph name", g.name());
    // One visit per node (a streamed node is parsed at each visit). A model's text is checked before its
    // operators: the first operator error waits until every node's and value's text has passed.
    Status operators = Status::ok();
    GS_RETURN_IF_ERROR(graph_nodes.for_each([&](const onnx::NodeProto& n, int k) {
      GS_RETURN_IF_ERROR(check_node_text(g, n));
      if (operators.is_ok()) operators = check_node(n, depth, limits, nodes);
      if (!operators.is_ok()) graph_nodes.stop_handing_over();
      if (gate && operators.is_ok() && (k + 1) % kPublishBatch == 0) gate->publish(k + 1);
      return Status::ok();
    }));
    if (gate) {
      if (operators.is_ok()) gate->publish(graph_nodes.size());
    } else {
      GS_RETURN_IF_ERROR(check_value_infos(g));
    }
    return operators;
  }

  static std::string shown_graph(const onnx::GraphProto& g) {
    return sdk::is_valid_utf8(g.name()) ? g.name() : "?";
  }

  // check_all has checked every graph's text and operators already (import_onnx_bytes runs it first).
  Status build_graph(const onnx::GraphProto& g, const NodeSource& nodes, Scope* s,
                     int64_t formal_parent_offset) {
    s->values.reserve(g.input_size() + g.initializer_size() + nodes.size());
    s->graph->reserve_nodes(g.input_size() + g.initializer_size() + nodes.size() + 1);
    s->types.reserve(g.input_size() + g.value_info_size() + g.output_size());
    for (const auto& vi : g.input()) s->types.emplace(vi.name(), &vi.type());
    for (const auto& vi : g.value_info()) s->types.emplace(vi.name(), &vi.type());
    for (const auto& vi : g.output()) s->types.emplace(vi.name(), &vi.type());
    // Data nodes first, in input order (GE's `index`), then constants, then the operators, then NetOutput.
    GS_RETURN_IF_ERROR(add_inputs(g, s, formal_parent_offset));
    GS_RETURN_IF_ERROR(add_initializers(g, s));
    std::vector<sdk::Node*> created;
    GS_RETURN_IF_ERROR(add_and_wire_nodes(nodes, s, &created));
    return add_net_output(g, s);
  }

  Status add_inputs(const onnx::GraphProto& g, Scope* s, int64_t formal_parent_offset) {
    std::unordered_set<std::string> initializer_names;
    for (const auto& t : g.initializer()) initializer_names.insert(t.name());
    for (const auto& vi : g.input()) {
      if (initializer_names.count(vi.name()))
        continue;  // an initializer that is also an input: the initializer wins
      if (vi.name().empty()) return err("graph '" + s->graph->name() + "' has an input without a name");
      if (s->values.contains(vi.name()))
        return err("graph '" + s->graph->name() + "' lists input '" + vi.name() + "' twice");
      sdk::Node* d =
          s->graph->add_node(s->graph->unique_node_name(vi.name()), std::string(sdk::op::kData), 0, 0);
      d->add_output(desc_of(&vi.type()), vi.name());
      const int64_t index = s->next_data_index++;
      d->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(index));
      if (s->owner) {
        d->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(index + formal_parent_offset));
      }
      s->values.assign(d->output_name(0), {d, 0});
    }
    return Status::ok();
  }

  Status add_initializers(const onnx::GraphProto& g, Scope* s) {
    for (const auto& t : g.initializer()) {
      if (t.name().empty()) return err("graph '" + s->graph->name() + "' has an initializer without a name");
      if (s->values.contains(t.name())) return err("initializer '" + t.name() + "' is defined twice");
      sdk::Tensor value;
      GS_RETURN_IF_ERROR(tensors_.read(t, "initializer '" + t.name() + "'", &value));
      sdk::Node* c = add_named(s->graph, t.name(), sdk::op::kConst, 0);
      c->add_output(value.desc(), t.name());
      c->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(std::move(value)));
      s->values.assign(c->output_name(0), {c, 0});
    }

    return Status::ok();
  }

  // A node named `base`, or `base_1`, `base_2`, ... when that is taken. Names are almost always free: trying
  // the name first costs one index probe per node instead of two (unique_node_name's, then add_node's).
  static sdk::Node* add_named(sdk::Graph* g, const std::string& base, std::string_view type, size_t inputs) {
    if (sdk::Node* n = g->add_node(base, type, inputs, 0)) return n;
    return g->add_node(g->unique_node_name(base), type, inputs, 0);
  }

  // Every node and the values it produces, then each node's inputs, attributes and subgraphs, as if in two
  // passes: a graph that is not sorted still imports (a cycle is reported by the verifier with its path), and
  // errors come in the same order. A node whose inputs are all this graph's values made so far, and which has
  // no subgraph (a subgraph may read a value of this graph made later), is completed while it is visited:
  // in the usual sorted graph every node is, and the second visit (a second parse of every node) is skipped.
  // The first node that cannot be completed, or whose completion fails, ends that; the rest are completed in
  // the second pass, in order, after every node exists.
  Status add_and_wire_nodes(const NodeSource& nodes, Scope* s, std::vector<sdk::Node*>* created_out) {
    std::vector<sdk::Node*>& created = *created_out;
    created.reserve(nodes.size());
    int deferred_from = nodes.size();
    Status completion = Status::ok();
    // A node's name and each output's name are each a cache miss in a million-entry table (the graph's name
    // index, the value and type tables): they are asked for ahead, so that the misses overlap.
    AskAhead ahead(static_cast<size_t>(nodes.size()), [&](size_t k) {
      nodes.peek_names(static_cast<int>(k), [&](std::string_view name, bool output) {
        if (!output) return s->graph->prefetch_name(name);
        s->values.prefetch(name);
        s->types.prefetch(name);
      });
    });
    GS_RETURN_IF_ERROR(nodes.for_each([&](const onnx::NodeProto& n, int k) {
      ahead.at(static_cast<size_t>(k));
      GS_RETURN_IF_ERROR(add_node_of(n, s, &created));
      if (k < deferred_from && !complete_now(n, s, created, k, &completion)) deferred_from = k;
      return Status::ok();
    }));
    GS_RETURN_IF_ERROR(completion);  // what the second pass would have met first
    if (deferred_from == nodes.size()) return Status::ok();
    return nodes.for_each([&](const onnx::NodeProto& n, int k) { return wire_node(n, s, created, k); },
                          deferred_from);
  }

  // Completes node k now if it can; false (nothing changed, or `*failure` set) when it is left to the second
  // pass. The producers found here are the ones wire_node uses, so each input is looked up once.
  bool complete_now(const onnx::NodeProto& n, Scope* s, const std::vector<sdk::Node*>& created, int k,
                    Status* failure) {
    for (const auto& a : n.attribute()) {
      const auto type = attribute_type(a);
      if (type == onnx::AttributeProto::GRAPH || type == onnx::AttributeProto::GRAPHS) return false;
    }
    local_producers_.assign(static_cast<size_t>(n.input_size()), sdk::OutPort{});
    // Each name is read from the message once: protobuf's RepeatedPtrField::Get is a call into the library.
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& name = n.input(i);
      if (name.empty()) continue;
      sdk::OutPort& src = local_producers_[static_cast<size_t>(i)];
      src = recent_producer(created, k, name);
      if (src.valid()) continue;
      const sdk::OutPort* found = s->values.find(name);
      if (!found) return false;
      src = *found;
    }
    *failure = wire_node(n, s, created, k, local_producers_.data());
    return failure->is_ok();
  }

  Status add_node_of(const onnx::NodeProto& n, Scope* s, std::vector<sdk::Node*>* created_out) {
    std::vector<sdk::Node*>& created = *created_out;
    const bool is_constant = n.op_type() == sdk::op::kConstant && is_default_domain(n.domain());
    std::string generated;  // only for a node without a name: the name is not copied twice
    const std::string& base =
        !n.name().empty() ? n.name() : (generated = n.op_type() + "_" + std::to_string(created.size()));
    sdk::Node* ir = add_named(s->graph, base, is_constant ? sdk::op::kConst : std::string_view(n.op_type()),
                              static_cast<size_t>(n.input_size()));
    if (!is_default_domain(n.domain()))
      ir->attrs().set(sdk::attr::kDomain, sdk::AttrValue::String(n.domain()));
    for (const std::string& value : n.output()) {
      const onnx::TypeProto* const* type = s->types.find(value);
      ir->add_output(desc_of(type ? *type : nullptr), value);
    }
    // Registered once every output is added: the table views the IR's names, which then stay put.
    for (int o = 0; o < n.output_size(); ++o) {
      const std::string& v = ir->output_name(o);
      if (v.empty()) continue;
      auto [first, fresh] = s->values.emplace(v, sdk::OutPort{ir, o});
      if (!fresh) {
        return err("value '" + v + "' is produced twice in graph '" + s->graph->name() + "': by '" +
                   first->node->name() + "' (" + first->node->type() + ") and by " + node_label(n, ir));
      }
    }
    created.push_back(ir);
    return Status::ok();
  }

  // Node k's inputs, attributes and subgraphs. `known`, when given, holds the producer of every named input.
  Status wire_node(const onnx::NodeProto& n, Scope* s, const std::vector<sdk::Node*>& created, int k,
                   const sdk::OutPort* known = nullptr) {
    sdk::Node* ir = created[k];
    for (int i = 0; i < n.input_size(); ++i) {
      const std::string& name = n.input(i);
      if (name.empty()) continue;  // an omitted optional input
      sdk::OutPort src = known ? known[i] : recent_producer(created, k, name);
      if (!src.valid()) GS_RETURN_IF_ERROR(resolve(s, name, &src));
      if (!src.valid()) {
        return err(node_label(n, ir) + " input " + std::to_string(i) + " is '" + name +
                   "', which no node, graph input or initializer produces");
      }
      GS_RETURN_IF_ERROR(s->graph->add_edge(src, {ir, i}));
    }
    if (ir->type() == sdk::op::kConst && ir->num_inputs() == 0 && n.op_type() == sdk::op::kConstant)
      return convert_constant(n, ir);
    for (const auto& a : n.attribute()) GS_RETURN_IF_ERROR(convert_attribute(n, a, s, ir));
    return Status::ok();
  }

  // Exporters write nodes in order, so an input is most often an output of one of the few nodes just before:
  // found there without a hash lookup (a table lookup on a million-value graph is a cache miss or two). Names
  // are unique in a graph, so a match there is the producer.
  static sdk::OutPort recent_producer(const std::vector<sdk::Node*>& created, int k,
                                      const std::string& name) {
    constexpr int kLookBack = 4;
    if (name.empty()) return {};
    for (int j = k - 1; j >= 0 && j >= k - kLookBack; --j) {
      const sdk::Node* p = created[j];
      for (size_t o = 0; o < p->num_outputs(); ++o) {
        // Generated names share their length and differ at the end ("n1041", "n1042"): the last character
        // settles most misses without a call to memcmp.
        const std::string& candidate = p->output_name(o);
        if (candidate.size() == name.size() && candidate.back() == name.back() && candidate == name)
          return {created[j], static_cast<int32_t>(o)};
      }
    }
    return {};
  }

  Status add_net_output(const onnx::GraphProto& g, Scope* s) {
    sdk::Node* out = s->graph->add_node(s->graph->unique_node_name("NetOutput"),
                                        std::string(sdk::op::kNetOutput), g.output_size(), 0);
    std::vector<std::string> names;
    for (int i = 0; i < g.output_size(); ++i) {
      const std::string& v = g.output(i).name();
      if (v.empty())
        return err("graph '" + s->graph->name() + "' output " + std::to_string(i) + " has no name");
      sdk::OutPort src;
      GS_RETURN_IF_ERROR(resolve(s, v, &src));
      if (!src.valid()) {
        return err("graph '" + s->graph->name() + "' output '" + v +
                   "' is not produced by any node, input or initializer");
      }
      GS_RETURN_IF_ERROR(s->graph->add_edge(src, {out, i}));
      names.push_back(v);
    }
    out->attrs().set(sdk::attr::kOutputNames, sdk::AttrValue::Strings(std::move(names)));
    return Status::ok();
  }

  Status check_operator(const onnx::NodeProto& n) const {
    for (const auto& a : n.attribute()) {
      // Cast, CastLike's saturate-era targets, QuantizeLinear's output_dtype, ConstantOfShape and EyeLike's
      // dtype.
      const bool type_attr = a.name() == "to" || a.name() == "output_dtype" || a.name() == "dtype";
      if (type_attr && a.type() == onnx::AttributeProto::INT && a.i() > sdk::kMaxDataType) {
        return err("node '" + n.name() + "' (" + n.op_type() + "): attribute '" + a.name() +
                   "' is element type " + unsupported_type_name(static_cast<int32_t>(a.i())) +
                   ", which graphsplit cannot represent");
      }
    }
    const DomainInfo& info = domain_info(n.domain());
    const std::string& domain = info.name;
    if (!info.imported) {
      return err("node '" + n.name() + "' (" + n.op_type() + ") uses domain '" + info.shown +
                 "', which the model does not import in opset_import");
    }
    if (!info.known_to_onnx) {
      return err("node '" + n.name() + "' (" + n.op_type() + ") uses operator domain '" + info.shown +
                 "', which is not supported; supported: ai.onnx, ai.onnx.ml, ai.onnx.preview.training");
    }
    const onnx::OpSchema* schema = find_schema(n.op_type(), static_cast<int>(info.opset), domain);
    const std::string& shown = info.shown;
    // A version newer than libonnx's (opsets 18-23): graphsplit's table decides.
    if (domain.empty() && info.opset > info.onnx_max_opset) {
      const int ours = onnx_detail::table_since_version(n.op_type(), static_cast<int>(info.opset));
      if (ours > 0 && (!schema || ours > schema->SinceVersion())) {
        Status s = onnx_detail::verify_against_table(n, static_cast<int>(info.opset));
        if (!s.is_ok()) return err("node '" + n.name() + "' (" + n.op_type() + "): " + s.message());
        return Status::ok();
      }
    }
    if (!schema) {
      return err("node '" + n.name() + "': operator '" + n.op_type() + "' is not defined in domain '" +
                 shown + "' at opset " + std::to_string(info.opset));
    }
    // The schema's own check: input and output counts, attribute names, types and required attributes.
    try {
      schema->Verify(n);
    } catch (const std::exception& e) {
      std::string why = e.what();
      if (const size_t cut = why.find("\n\n==>"); cut != std::string::npos) why.resize(cut);
      return err("node '" + n.name() + "' (" + n.op_type() + "): " + why);
    }
    return Status::ok();
  }

  // What a domain, as a node writes it, means for this model. Looked up once per distinct spelling: libonnx's
  // registries are maps keyed by strings, and a model has few domains and a million nodes.
  struct DomainInfo {
    std::string name;       // "" for the default domain, whichever way it was written
    std::string shown;      // as messages print it
    bool imported = false;  // in the model's opset_import
    int64_t opset = 0;      // the version it imports
    bool known_to_onnx = false;
    int onnx_max_opset = 0;  // libonnx's newest opset of the default domain
  };
  const DomainInfo& domain_info(const std::string& written) const {
    if (auto it = domains_.find(written); it != domains_.end()) return it->second;
    DomainInfo d;
    d.name = is_default_domain(written) ? "" : written;
    d.shown = d.name.empty() ? std::string(kDefaultDomain) : d.name;
    if (auto opset = opsets_.find(d.name); opset != opsets_.end()) {
      d.imported = true;
      d.opset = opset->second;
    }
    d.known_to_onnx = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().count(d.name) > 0;
    d.onnx_max_opset = max_supported_onnx_opset();
    return domains_.emplace(written, std::move(d)).first->second;
  }

  // libonnx's registry lookup costs a thousand instructions or more (maps keyed by strings, three deep); a
  // model has few distinct operators and a million nodes. The opset follows from the domain (opsets_).
  const onnx::OpSchema* find_schema(const std::string& type, int opset, const std::string& domain) const {
    schema_key_.assign(domain).append(1, '\0').append(type);
    if (auto it = schemas_.find(schema_key_); it != schemas_.end()) return it->second;
    const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(type, opset, domain);
    schemas_.emplace(schema_key_, schema);
    return schema;
  }

  // Finds the producer of `name`, capturing it from an enclosing graph if needed. An invalid port means the
  // name is defined nowhere.
  Status resolve(Scope* s, const std::string& name, sdk::OutPort* out) {
    if (const sdk::OutPort* found = s->values.find(name)) {
      *out = *found;
      return Status::ok();
    }
    *out = {};
    if (!s->parent) return Status::ok();
    sdk::OutPort outer;
    GS_RETURN_IF_ERROR(resolve(s->parent, name, &outer));
    if (!outer.valid()) return Status::ok();
    auto& inputs = capture_inputs_[s->owner];
    int32_t input_index;
    if (auto it = inputs.find(name); it != inputs.end()) {
      input_index = it->second;
    } else {
      input_index = s->owner->add_input();
      GS_RETURN_IF_ERROR(s->parent->graph->add_edge(outer, {s->owner, input_index}));
      inputs.emplace(name, input_index);
    }
    sdk::Node* d = s->graph->add_node(s->graph->unique_node_name(name), std::string(sdk::op::kData), 0, 0);
    d->add_output(outer.node->output_desc(outer.index), name);
    d->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(s->next_data_index++));
    d->attrs().set(sdk::attr::kParentNodeIndex, sdk::AttrValue::Int(input_index));
    d->attrs().set(sdk::attr::kOuterValue, sdk::AttrValue::String(name));
    s->values.assign(d->output_name(0), {d, 0});
    *out = {d, 0};
    return Status::ok();
  }

  // The parent input that a subgraph's first formal input binds to. Loop and Scan bind positionally; Scan-8
  // has the sequence_lens input in front; If/Case branches have no formal inputs.
  int64_t formal_offset(const onnx::NodeProto& n) const {
    if (n.op_type() == sdk::op::kScan && is_default_domain(n.domain())) {
      auto it = opsets_.find("");
      if (it != opsets_.end() && it->second < 9) return 1;
    }
    return 0;
  }

  Status build_subgraph(const onnx::NodeProto& n, const std::string& key, const onnx::GraphProto& body,
                        Scope* s, sdk::Node* ir, sdk::Graph** out) {
    if (depth_ >= kMaxNesting) {
      return err(node_label(n, ir) + ": subgraphs nest deeper than " + std::to_string(kMaxNesting) +
                 " levels");
    }
    sdk::Graph* sub = root_->add_subgraph(root_->unique_subgraph_name(ir->name() + "_" + key), ir);
    Scope child;
    child.graph = sub;
    child.parent = s;
    child.owner = ir;
    ++depth_;
    Status st = build_graph(body, NodeSource(&body), &child, formal_offset(n));
    --depth_;
    GS_RETURN_IF_ERROR(st);
    *out = sub;
    return Status::ok();
  }

  Status convert_constant(const onnx::NodeProto& n, sdk::Node* ir) {
    if (n.attribute_size() != 1 || n.output_size() != 1) {
      return err(node_label(n, ir) + " must have exactly one value attribute and one output");
    }
    const onnx::AttributeProto& a = n.attribute(0);
    sdk::Tensor t;
    sdk::TensorDesc desc;
    desc.shape = sdk::Shape();
    auto scalar_or_list = [&](sdk::DataType dt, std::vector<int64_t> dims, std::string bytes) {
      desc.dtype = dt;
      desc.shape = sdk::Shape(std::move(dims));
      t = sdk::Tensor(desc, std::move(bytes));
    };
    std::string bytes;
    if (a.name() == "value" && a.has_t()) {
      GS_RETURN_IF_ERROR(tensors_.read(a.t(), node_label(n, ir) + " value", &t));
    } else if (a.name() == "value_float") {
      append_le(&bytes, a.f());
      scalar_or_list(sdk::DataType::kFloat, {}, bytes);
    } else if (a.name() == "value_int") {
      append_le(&bytes, a.i());
      scalar_or_list(sdk::DataType::kInt64, {}, bytes);
    } else if (a.name() == "value_floats") {
      for (float v : a.floats()) append_le(&bytes, v);
      scalar_or_list(sdk::DataType::kFloat, {a.floats_size()}, bytes);
    } else if (a.name() == "value_ints") {
      for (int64_t v : a.ints()) append_le(&bytes, v);
      scalar_or_list(sdk::DataType::kInt64, {a.ints_size()}, bytes);
    } else if (a.name() == "value_string") {
      desc.shape = sdk::Shape();
      t = sdk::Tensor::from_strings(desc, {a.s()});
    } else if (a.name() == "value_strings") {
      desc.shape = sdk::Shape({a.strings_size()});
      t = sdk::Tensor::from_strings(desc, {a.strings().begin(), a.strings().end()});
    } else {
      return err(node_label(n, ir) + ": Constant attribute '" + a.name() +
                 "' is not supported (sparse constants are not)");
    }
    // The inferred type can only agree with the constant; the constant's own descriptor is exact.
    ir->mutable_output_desc(0) = t.desc();
    ir->attrs().set(sdk::attr::kValue, sdk::AttrValue::OfTensor(std::move(t)));
    return Status::ok();
  }

  Status convert_attribute(const onnx::NodeProto& n, const onnx::AttributeProto& a, Scope* s, sdk::Node* ir) {
    using A = onnx::AttributeProto;
    // The label for messages, built only when one is needed (per attribute it was a string built for
    // nothing).
    auto what = [&] { return node_label(n, ir) + " attribute '" + a.name() + "'"; };
    if (a.name().empty()) return err(node_label(n, ir) + " has an attribute without a name");
    if (!a.ref_attr_name().empty()) return err(what() + " refers to a function attribute outside a function");
    if (ir->attrs().has(a.name())) return err(what() + " appears twice");
    const A::AttributeType type = attribute_type(a);
    sdk::AttrValue v;
    switch (type) {
      case A::FLOAT:
        v = sdk::AttrValue::Float(a.f());
        break;
      case A::INT:
        v = sdk::AttrValue::Int(a.i());
        break;
      case A::STRING:
        v = sdk::AttrValue::String(a.s());
        break;
      case A::FLOATS:
        v = sdk::AttrValue::Floats({a.floats().begin(), a.floats().end()});
        break;
      case A::INTS:
        v = sdk::AttrValue::Ints({a.ints().begin(), a.ints().end()});
        break;
      case A::STRINGS:
        v = sdk::AttrValue::Strings({a.strings().begin(), a.strings().end()});
        break;
      case A::TENSOR: {
        sdk::Tensor t;
        GS_RETURN_IF_ERROR(tensors_.read(a.t(), what(), &t));
        v = sdk::AttrValue::OfTensor(std::move(t));
        break;
      }
      case A::TENSORS: {
        std::vector<sdk::Tensor> ts(a.tensors_size());
        for (int i = 0; i < a.tensors_size(); ++i)
          GS_RETURN_IF_ERROR(tensors_.read(a.tensors(i), what(), &ts[i]));
        v = sdk::AttrValue::Tensors(std::move(ts));
        break;
      }
      case A::GRAPH: {
        sdk::Graph* sub = nullptr;
        GS_RETURN_IF_ERROR(build_subgraph(n, a.name(), a.g(), s, ir, &sub));
        v = sdk::AttrValue::OfGraph(sub);
        break;
      }
      case A::GRAPHS: {
        std::vector<sdk::Graph*> subs;
        for (int i = 0; i < a.graphs_size(); ++i) {
          sdk::Graph* sub = nullptr;
          GS_RETURN_IF_ERROR(build_subgraph(n, a.name() + "_" + std::to_string(i), a.graphs(i), s, ir, &sub));
          subs.push_back(sub);
        }
        v = sdk::AttrValue::Graphs(std::move(subs));
        break;
      }
      case A::TYPE_PROTO:
        v = sdk::AttrValue::Type(*onnx::Utils::DataTypeUtils::ToType(a.tp()));
        break;
      default:
        return err(what() + " has type " + A::AttributeType_Name(type) + ", which is not supported");
    }
    ir->attrs().set(a.name(), std::move(v));
    return Status::ok();
  }

  static constexpr int kMaxNesting = 64;
  std::string source_;
  TensorReader tensors_;
  const onnx::ModelProto& model_;
  const NodeSource own_main_nodes_;
  const NodeSource* main_nodes_;
  sdk::Graph* root_ = nullptr;
  int depth_ = 0;
  std::unordered_map<std::string, int64_t> opsets_;
  // complete_now's, kept to reuse its storage (a node it completes has no subgraph, so no nested graph's
  // import uses it meanwhile).
  std::vector<sdk::OutPort> local_producers_;
  mutable std::string schema_key_;
  mutable std::unordered_map<std::string, const onnx::OpSchema*> schemas_;
  mutable std::unordered_map<std::string, DomainInfo> domains_;
  std::unordered_map<const sdk::Node*, std::unordered_map<std::string, int32_t>> capture_inputs_;
};

// ------------------------------------------------------------------ model-level checks

Status check_model_header(const onnx::ModelProto& m, const std::string& source) {
  auto err = [&](const std::string& what) { return Status::invalid_argument(source + ": " + what); };
  if (m.ir_version() <= 0 || !m.has_graph()) {
    return err("not an ONNX model (no ir_version or no graph; is this really an .onnx file?)");
  }
  if (m.ir_version() > onnx_detail::kMaxIrVersion) {
    return err("ONNX IR version " + std::to_string(m.ir_version()) + " is newer than the supported " +
               std::to_string(onnx_detail::kMaxIrVersion));
  }
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  std::unordered_set<std::string> seen;
  for (const auto& o : m.opset_import()) {
    const std::string domain = is_default_domain(o.domain()) ? "" : o.domain();
    const std::string shown = domain.empty() ? std::string(kDefaultDomain) : domain;
    if (!seen.insert(domain).second) return err("opset_import lists domain '" + shown + "' twice");
    auto range = ranges.find(domain);
    // Exporters often import domains that no node uses; only a node in an unknown domain is an error.
    if (range == ranges.end()) continue;
    // ai.onnx beyond libonnx's opsets is read with graphsplit's own table of operator versions.
    const int64_t newest = domain.empty() ? onnx_detail::kMaxOnnxOpset : range->second.second;
    if (o.version() < range->second.first || o.version() > newest) {
      return err("opset " + std::to_string(o.version()) + " of domain '" + shown +
                 "' is not supported (supported: " + std::to_string(range->second.first) + " to " +
                 std::to_string(newest) + ")");
    }
  }
  return Status::ok();
}

Status apply_input_shapes(onnx::ModelProto* m, const std::vector<InputShapeOverride>& overrides,
                          const std::string& source) {
  if (overrides.empty()) return Status::ok();
  onnx::GraphProto* g = m->mutable_graph();
  std::unordered_set<std::string> initializers;
  for (const auto& t : g->initializer()) initializers.insert(t.name());
  std::string known;
  for (const auto& vi : g->input()) {
    if (initializers.count(vi.name())) continue;
    known += (known.empty() ? "" : ", ") + vi.name();
  }
  for (const InputShapeOverride& o : overrides) {
    onnx::ValueInfoProto* target = nullptr;
    for (auto& vi : *g->mutable_input()) {
      if (vi.name() == o.name && !initializers.count(vi.name())) target = &vi;
    }
    if (!target) {
      return Status::invalid_argument(source + ": --input_shape names '" + o.name +
                                      "', which is not an input of the model (inputs: " + known + ")");
    }
    if (!target->type().has_tensor_type()) {
      return Status::invalid_argument(source + ": --input_shape names '" + o.name +
                                      "', which is not a tensor input");
    }
    auto* shape = target->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : o.dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
    }
  }
  // Shapes the exporter recorded for the old input shapes would now conflict with inference; drop them.
  g->clear_value_info();
  for (auto& vi : *g->mutable_output()) {
    if (vi.type().has_tensor_type()) vi.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return Status::ok();
}

void infer_shapes(onnx::ModelProto* m, const std::string& source) {
  // check_type on first: it is the stricter reading. A few valid models (three in ONNX's own test data) trip
  // it, so a failure falls back to inference without type checks; shapes inference cannot settle stay
  // unknown.
  try {
    onnx::shape_inference::InferShapes(*m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 0, true));
    return;
  } catch (const std::exception& e) {
    spdlog::debug("{}: shape inference with type checks failed ({}); retrying without", source, e.what());
  }
  try {
    onnx::shape_inference::InferShapes(*m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, true));
  } catch (const std::exception& e) {
    spdlog::warn("{}: shape inference failed, shapes stay as the model gives them: {}", source, e.what());
  }
}

}  // namespace

namespace onnx_detail {
Status check_header(const onnx::ModelProto& m, const std::string& source) {
  return check_model_header(m, source);
}
}  // namespace onnx_detail

std::jthread warm_up_onnx_schemas() {
  // The registry fills itself on first use behind a function-local static, so a lookup here and the import's
  // own lookups are safe together: whichever comes second waits for the first.
  // A process that may start no thread (a limit on processes) builds them in its import as before.
  try {
    return std::jthread([] { (void)onnx::OpSchemaRegistry::Schema("Relu", 14, ""); });
  } catch (const std::system_error&) {
    return std::jthread();
  }
}

int max_supported_onnx_opset() {
  const auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find("");
  return it == ranges.end() ? 0 : it->second.second;
}

namespace {

// One field, as it appears in the bytes, merged into `m` (a repeated field's element is appended).
bool merge_field(std::string_view field, int recursion_limit, google::protobuf::MessageLite* m) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(field.data()),
                                            static_cast<int>(field.size()));
  in.SetRecursionLimit(recursion_limit);
  return m->MergePartialFromCodedStream(&in) && in.ConsumedEntireMessage();
}

// From this size up, an initializer's raw bytes are left in the model file (EmbeddedWeights).
constexpr size_t kEmbeddedWeightBytes = size_t{64} << 10;

// Reads a serialised ModelProto into `model` except for its main graph's nodes, which are left in the bytes:
// `nodes` gets each node's span, in order. Every other field is parsed as ParseFromArray would, at the same
// depth. With `embedded`, the main graph's large initializers are parsed without their raw_data, whose place
// in `bytes` goes to `embedded->spans`. False when the bytes are not well formed (the caller then parses them
// whole, which reports them).
bool parse_without_main_nodes(std::string_view bytes, onnx::ModelProto* model,
                              std::vector<std::string_view>* nodes, onnx_detail::EmbeddedWeights* embedded) {
  using google::protobuf::internal::WireFormatLite;
  constexpr int kLimit = 100;  // protobuf's default recursion limit
  // Calls field(number, wire type, the field's bytes, its payload when length-delimited) for every field.
  auto walk = [&](std::string_view b, auto&& field) {
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(b.data()),
                                              static_cast<int>(b.size()));
    while (true) {
      const int start = in.CurrentPosition();
      const uint32_t tag = in.ReadTag();
      if (tag == 0) return in.ConsumedEntireMessage();
      std::string_view payload;
      if (WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        uint32_t size = 0;
        if (!in.ReadVarint32(&size) || size > b.size() - static_cast<size_t>(in.CurrentPosition()))
          return false;
        payload = b.substr(static_cast<size_t>(in.CurrentPosition()), size);
        if (!in.Skip(static_cast<int>(size))) return false;
      } else if (!WireFormatLite::SkipField(&in, tag)) {
        return false;
      }
      const std::string_view whole = b.substr(static_cast<size_t>(start), in.CurrentPosition() - start);
      if (!field(WireFormatLite::GetTagFieldNumber(tag), WireFormatLite::GetTagWireType(tag), whole, payload))
        return false;
    }
  };
  constexpr int kGraphField = onnx::ModelProto::kGraphFieldNumber;
  constexpr int kNodeField = onnx::GraphProto::kNodeFieldNumber;
  constexpr int kInitializerField = onnx::GraphProto::kInitializerFieldNumber;
  constexpr auto kLengthDelimited = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
  // An initializer parsed without its raw_data, whose place in the file is kept instead; false (nothing
  // added) when it has no large raw_data or says where its data is already.
  auto without_raw_data = [&](std::string_view message, onnx::GraphProto* graph, bool* added) {
    *added = false;
    std::string rest;
    std::string_view raw;
    bool other_location = false;
    const bool ok =
        walk(message, [&](int number, int wire, std::string_view whole, std::string_view payload) {
          if (number == onnx::TensorProto::kRawDataFieldNumber && wire == kLengthDelimited) {
            raw = payload;  // the last one wins, as protobuf reads it
          } else {
            other_location |= number == onnx::TensorProto::kDataLocationFieldNumber ||
                              number == onnx::TensorProto::kExternalDataFieldNumber;
            rest.append(whole);
          }
          return true;
        });
    if (!ok || other_location || raw.size() < kEmbeddedWeightBytes) return true;
    onnx::TensorProto* t = graph->add_initializer();
    if (!t->ParseFromArray(rest.data(), static_cast<int>(rest.size()))) return false;
    embedded->spans[t] = {static_cast<int64_t>(raw.data() - bytes.data()), static_cast<int64_t>(raw.size())};
    *added = true;
    return true;
  };
  return walk(bytes, [&](int number, int wire, std::string_view whole, std::string_view payload) {
    if (number != kGraphField || wire != kLengthDelimited) return merge_field(whole, kLimit, model);
    onnx::GraphProto* graph = model->mutable_graph();
    return walk(payload, [&](int inner, int inner_wire, std::string_view field, std::string_view node) {
      if (inner == kNodeField && inner_wire == kLengthDelimited) {
        nodes->push_back(node);
        return true;
      }
      if (embedded && inner == kInitializerField && inner_wire == kLengthDelimited &&
          node.size() >= kEmbeddedWeightBytes) {
        bool added = false;
        if (!without_raw_data(node, graph, &added)) return false;
        if (added) return true;
      }
      return merge_field(field, kLimit - 1, graph);
    });
  });
}

size_t total_size(const std::vector<std::string_view>& spans) {
  size_t total = 0;
  for (std::string_view s : spans) total += s.size();
  return total;
}

// Copies the spans into `store` and points them there: the rest of a file read only to be imported (its
// weights, parsed already) need not stay in memory beside its graph.
void keep_only(std::vector<std::string_view>* spans, std::string* store) {
  store->reserve(total_size(*spans));
  for (std::string_view s : *spans) store->append(s);
  size_t at = 0;
  for (std::string_view& s : *spans) {
    s = std::string_view(*store).substr(at, s.size());
    at += s.size();
  }
}

// The main graph's node checks on a second thread while this one builds the graph (a third of an import's
// time on a million-node model went to the checks, each node parsed for them and again for the build). The
// build takes a node only once the checks have passed it, and the outcome is the serial one: the checks'
// error if any, then --input_shape's, then the build's. Nothing the build makes is kept unless all pass.
Status check_and_build_together(onnx::ModelProto& model, const std::string& source,
                                const std::string& base_dir, const OnnxImportOptions& options,
                                NodeSource* main_nodes, std::unique_ptr<sdk::Graph>* root,
                                const onnx_detail::EmbeddedWeights* weights) {
  // Before the checks start: the build reads the inputs' shapes from the first node on.
  const Status applied = apply_input_shapes(&model, options.input_shapes, source);
  const TensorReader check_reader(source, base_dir);
  const std::unique_ptr<NodeSource> check_nodes = main_nodes->sibling(&check_reader);
  CheckGate gate;
  NodeHandoff handoff(static_cast<size_t>(main_nodes->size()));
  check_nodes->hand_over(&handoff, true);
  main_nodes->hand_over(&handoff, false);
  Status checked = Status::ok();
  // Joined on every path out, a throwing build included.
  std::jthread checker([&] {
    try {
      checked = Importer(source, base_dir, model, check_nodes.get()).check_all(options, &gate);
    } catch (const std::exception& e) {
      checked = Status::internal(source + ": the import's checks failed: " + e.what());
    }
    gate.finish();
  });
  // Whatever way the build ends, the checks then parse for themselves (destroyed before `checker` joins).
  struct BuildEnded {
    NodeHandoff& handoff;
    ~BuildEnded() { handoff.consumed.finish(); }
  } build_ended{handoff};
  main_nodes->gate_by(&gate);
  Status built = Status::ok();
  if (applied.is_ok()) built = Importer(source, base_dir, model, main_nodes, weights).run(root);
  main_nodes->gate_by(nullptr);
  main_nodes->hand_over(nullptr, false);
  handoff.consumed.finish();
  checker.join();
  Status outcome = !checked.is_ok() ? checked : !applied.is_ok() ? applied : built;
  if (!outcome.is_ok()) root->reset();
  return outcome;
}

// `owned`, when given, holds `bytes` and is emptied once they are parsed: a file read only to be imported
// need not stay in memory beside its graph.
// `file`, when given, is the model file `bytes` were read from: large initializers are then read from it
// again when their tensors are made, instead of being parsed into the message (EmbeddedWeights).
Status import_bytes(std::string_view bytes, std::string* owned, const std::string& source,
                    const std::string& base_dir, const OnnxImportOptions& options,
                    std::unique_ptr<sdk::Graph>* root, const std::string* file = nullptr) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return Status::resource_exhausted(source + ": models over 2 GiB need external data files");
  }
  // Each phase's time goes to the debug log (atc --log=debug), for finding where a large model's import goes.
  using Clock = std::chrono::steady_clock;
  Clock::time_point mark = Clock::now();
  std::string phases;
  auto phase = [&](const char* name) {
    const Clock::time_point now = Clock::now();
    phases += (phases.empty() ? "" : ", ") + std::string(name) + " " +
              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - mark).count()) +
              " ms";
    mark = now;
  };
  // The model's messages live only until the graph is built: verification and inference run without them.
  const Status built = [&]() -> Status {
    // In an arena of large blocks: a million-node model is millions of small messages and strings, which,
    // freed one by one, left 400 MB of holes in the heap that the graph built meanwhile could not use (the
    // peak of an atc run); the blocks are mapped and given back whole, and parsing skips a malloc per
    // message.
    google::protobuf::ArenaOptions arena_options;
    arena_options.start_block_size = size_t{1} << 16;
    arena_options.max_block_size = size_t{1} << 22;
    google::protobuf::Arena arena(arena_options);
    onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
    // The main graph's nodes are parsed one at a time while the graph is built, from their bytes, which stay
    // until then (the rest of a file's bytes go once parsed). Not for model-local functions (inlining
    // rewrites the node list) or libonnx's inference (it reads the whole model).
    std::vector<std::string_view> spans;
    onnx_detail::EmbeddedWeights embedded;
    if (file) embedded.file = *file;
    const bool streamed = !options.onnx_reference_inference &&
                          parse_without_main_nodes(bytes, &model, &spans, file ? &embedded : nullptr) &&
                          model.functions_size() == 0;
    const onnx_detail::EmbeddedWeights* weights = embedded.spans.empty() ? nullptr : &embedded;
    std::string node_bytes;
    if (!streamed) {
      spans.clear();
      weights = nullptr;  // parsed again, whole
      if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        return Status::invalid_argument(source + kParseFailed);
      if (owned) std::string().swap(*owned);
    } else if (owned && total_size(spans) < owned->size() / 2) {
      keep_only(&spans, &node_bytes);  // a file mostly of weights: they go now
      std::string().swap(*owned);
    }
    phase("parse");
    phases += " (" + std::to_string(arena.SpaceAllocated() >> 20) + " MB of messages)";
    GS_RETURN_IF_ERROR(check_model_header(model, source));
    GS_RETURN_IF_ERROR(onnx_detail::normalize_model(&model, source, base_dir));
    phase("normalise");
    const TensorReader reader(source, base_dir);
    std::optional<NodeSource> main_nodes;
    if (streamed) main_nodes.emplace(std::move(spans), &reader, source);
    const NodeSource* nodes = main_nodes ? &*main_nodes : nullptr;
    if (main_nodes && Importer(source, base_dir, model, nodes).head_passes(options)) {
      GS_RETURN_IF_ERROR(
          check_and_build_together(model, source, base_dir, options, &*main_nodes, root, weights));
      if (owned) std::string().swap(*owned);
      return Status::ok();
    }
    GS_RETURN_IF_ERROR(Importer(source, base_dir, model, nodes).check_all(options));
    GS_RETURN_IF_ERROR(apply_input_shapes(&model, options.input_shapes, source));
    phase("check");
    if (options.infer_shapes && options.onnx_reference_inference) infer_shapes(&model, source);
    GS_RETURN_IF_ERROR(Importer(source, base_dir, model, nodes, weights).run(root));
    if (owned) std::string().swap(*owned);
    return Status::ok();
  }();
  GS_RETURN_IF_ERROR(built);
  phase("build");
  // The graph was built through Graph's functions alone, which keep every edge's two directions and the name
  // index by construction: what is left to check is what the model itself could get wrong.
  if (Status v = sdk::verify(**root, {.edges = false}); !v) {
    root->reset();
    return v.with_context(source + ": ");
  }
  phase("verify");
  if (options.infer_shapes && !options.onnx_reference_inference) {
    kernels::ShapeInferenceOptions inference;
    inference.fold_constants =
        false;  // folding is the pipeline's (shape.infer), so that dumps show both graphs
    Status s = kernels::infer_shapes(**root, inference, nullptr);
    if (!s.is_ok()) {
      root->reset();
      return {s.code(), source + ": " + s.message()};
    }
    phase("shape inference");
  }
  spdlog::debug("{}: import: {}", source, phases);
  return Status::ok();
}

}  // namespace

Status import_onnx_bytes(std::string_view bytes, const std::string& source, const std::string& base_dir,
                         const OnnxImportOptions& options, std::unique_ptr<sdk::Graph>* root) {
  return import_bytes(bytes, nullptr, source, base_dir, options, root);
}

Status import_onnx_file(const std::string& path, const OnnxImportOptions& options,
                        std::unique_ptr<sdk::Graph>* root) {
  std::string bytes;
  GS_RETURN_IF_ERROR(read_file(path, &bytes, uint64_t{1} << 31));
  const fs::path p(path);
  // Only a regular file can be read again (a pipe, /dev/stdin, cannot).
  std::error_code ec;
  const bool rereadable = fs::is_regular_file(p, ec);
  return import_bytes(bytes, &bytes, path, p.has_parent_path() ? p.parent_path().string() : ".", options,
                      root, rereadable ? &path : nullptr);
}

// ------------------------------------------------------------------ shape inference for other input shapes

namespace {

// Tensors up to this size keep their data: shape computation (Reshape targets, Resize scales, Slice bounds)
// reads small constants; weights are never needed to infer a shape.
constexpr size_t kKeptTensorBytes = 4096;

void collect_descs(const sdk::Graph& g, sdk::ValueDescs* out) {
  for (const sdk::Node* n : g.nodes()) {
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      if (!n->output_name(o).empty()) (*out)[n->output_name(o)] = n->output_desc(o);
    }
  }
}

}  // namespace

struct ShapeInferencer::Impl {
  std::string source;
  std::unique_ptr<sdk::Graph> graph;
  // Every operator output as the model declares it (before inference), to start each run from.
  std::vector<std::pair<sdk::Node*, std::vector<sdk::TensorDesc>>> declared;
  std::vector<sdk::Node*> inputs;  // the root's Data nodes
  std::mutex mu;                   // one inference at a time over the one graph
};

ShapeInferencer::ShapeInferencer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShapeInferencer::~ShapeInferencer() = default;

// Weights become graph inputs of their type and shape: inference needs their descriptors, never their bytes,
// and a 100k-node model then parses in milliseconds instead of copying every weight.
std::string without_weights(onnx::ModelProto model, std::unordered_set<std::string>* weights) {
  onnx::GraphProto* g = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> moved;
  for (onnx::TensorProto& t : *g->mutable_initializer()) {
    const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    if (!external && static_cast<size_t>(t.ByteSizeLong()) <= kKeptTensorBytes) {
      *kept.Add() = std::move(t);
      continue;
    }
    weights->insert(t.name());
    onnx::ValueInfoProto* vi = moved.Add();
    vi->set_name(t.name());
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(t.data_type());
    auto* shape = tt->mutable_shape();
    for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
  }
  g->mutable_initializer()->Swap(&kept);
  // A weight also listed as an input (IR < 4 style) is listed once, as the moved one.
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (onnx::ValueInfoProto& vi : *g->mutable_input()) {
    if (!weights->count(vi.name())) *inputs.Add() = std::move(vi);
  }
  for (onnx::ValueInfoProto& vi : moved) *inputs.Add() = std::move(vi);
  g->mutable_input()->Swap(&inputs);
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

Status ShapeInferencer::open(const std::string& path, std::unique_ptr<ShapeInferencer>* out) {
  std::string bytes;
  GS_RETURN_IF_ERROR(read_file(path, &bytes, uint64_t{1} << 31));
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Status::invalid_argument(path + ": not a valid ONNX model (protobuf parse failed)");
  GS_RETURN_IF_ERROR(check_model_header(model, path));
  auto impl = std::make_unique<Impl>();
  impl->source = path;
  std::unordered_set<std::string> weights;
  bytes = without_weights(std::move(model), &weights);
  OnnxImportOptions options;
  options.infer_shapes = false;
  const fs::path p(path);
  GS_RETURN_IF_ERROR(import_onnx_bytes(bytes, path, p.has_parent_path() ? p.parent_path().string() : ".",
                                       options, &impl->graph));
  std::vector<sdk::Graph*> graphs{impl->graph.get()};
  graphs.insert(graphs.end(), impl->graph->subgraphs().begin(), impl->graph->subgraphs().end());
  for (sdk::Graph* g : graphs) {
    for (sdk::Node* n : g->nodes()) {
      if (sdk::is_const_like(n->type())) continue;
      if (g == impl->graph.get() && n->type() == sdk::op::kData && !weights.count(n->output_name(0)))
        impl->inputs.push_back(n);
      if (n->type() == sdk::op::kData || n->type() == sdk::op::kNetOutput) continue;
      std::vector<sdk::TensorDesc> descs;
      for (size_t o = 0; o < n->num_outputs(); ++o) {
        sdk::TensorDesc d = n->output_desc(o);
        d.shape = sdk::Shape::unknown_rank();  // shapes the exporter recorded are for other input shapes
        descs.push_back(d);
      }
      impl->declared.emplace_back(n, std::move(descs));
    }
  }
  *out = std::unique_ptr<ShapeInferencer>(new ShapeInferencer(std::move(impl)));
  return Status::ok();
}

Status ShapeInferencer::infer(const std::vector<InputShapeOverride>& input_shapes,
                              sdk::ValueDescs* out) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (const InputShapeOverride& o : input_shapes) {
    sdk::Node* target = nullptr;
    std::string known;
    for (sdk::Node* d : impl_->inputs) {
      known += (known.empty() ? "" : ", ") + d->output_name(0);
      if (d->output_name(0) == o.name) target = d;
    }
    if (!target) {
      return Status::invalid_argument(impl_->source + ": --input_shape names '" + o.name +
                                      "', which is not an input of the model (inputs: " + known + ")");
    }
    target->mutable_output_desc(0).shape = sdk::Shape(o.dims);
  }
  for (auto& [node, descs] : impl_->declared) {
    for (size_t o = 0; o < descs.size(); ++o) node->mutable_output_desc(o) = descs[o];
  }
  kernels::ShapeInferenceOptions options;
  options.fold_constants = false;
  Status s = kernels::infer_shapes(*impl_->graph, options, nullptr);
  if (!s.is_ok()) return {s.code(), impl_->source + ": " + s.message()};
  out->clear();
  collect_descs(*impl_->graph, out);
  for (const sdk::Graph* g : impl_->graph->subgraphs()) collect_descs(*g, out);
  return Status::ok();
}

Status parse_tensor_proto(std::string_view bytes, const std::string& source, sdk::Tensor* out,
                          std::string* name) {
  onnx::TensorProto t;
  if (bytes.size() > static_cast<size_t>(INT_MAX) ||
      !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return Status::invalid_argument(source + ": not an ONNX TensorProto (protobuf parse failed)");
  if (t.data_type() == 0)
    return Status::invalid_argument(source +
                                    ": not an ONNX TensorProto (no data type; a sequence or map .pb?)");
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return Status::invalid_argument(source + ": external tensor data is not supported in input files");
  // Field 3 is a segment here but a SequenceProto's elements and an OptionalProto's value.
  if (t.has_segment())
    return Status::invalid_argument(
        source + ": not a tensor (a sequence or optional .pb where a tensor is expected?)");
  TensorReader reader(source, {});
  GS_RETURN_IF_ERROR(reader.read(t, "tensor '" + t.name() + "'", out));
  if (name) *name = t.name();
  return Status::ok();
}

Status read_tensor_proto_file(const std::string& path, sdk::Tensor* out, std::string* name) {
  std::string bytes;
  GS_RETURN_IF_ERROR(read_file(path, &bytes, uint64_t{1} << 31));
  return parse_tensor_proto(bytes, path, out, name);
}

Status serialize_tensor_proto(const sdk::Tensor& tensor, const std::string& name, std::string* bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(static_cast<int32_t>(tensor.desc().dtype));
  for (int64_t d : tensor.desc().shape.dims()) t.add_dims(d);
  if (tensor.desc().dtype == sdk::DataType::kString) {
    std::vector<std::string> values;
    if (!tensor.strings(&values))
      return Status::invalid_argument("tensor '" + name + "' has corrupt strings");
    for (const std::string& v : values) t.add_string_data(v);
  } else {
    t.set_raw_data(std::string(tensor.bytes()));
  }
  if (!t.SerializeToString(bytes)) return Status::internal("tensor '" + name + "' could not be serialized");
  return Status::ok();
}

}  // namespace graphsplit
