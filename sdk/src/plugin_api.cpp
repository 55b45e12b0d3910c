// Out-of-line key functions of the SDK's polymorphic classes: their vtables and typeinfo live once, here, so
// that casts and exceptions on SDK types work across RTLD_LOCAL libraries (design guide, section 3.1).
#include <algorithm>
#include <charconv>
#include <optional>

#include "graphsplit/sdk/context.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/pass.h"

namespace graphsplit::sdk {

PluginContext::~PluginContext() = default;
PassContext::~PassContext() = default;
Status PassContext::infer_value_shapes(const InputDims&, ValueDescs*) const {
  return Status::unsupported("this host cannot re-run shape inference (it has no model source)");
}
void PassContext::record(const Decision&) {}
bool PassContext::keeps_decisions() const {
  return false;
}
Pass::~Pass() = default;
Partitioner::~Partitioner() = default;

namespace {

struct ReasonEntry {
  ReasonCode code;
  std::string_view name, meaning;
};
#define GS_REASON_ROW(e, v, name, meaning) {ReasonCode::e, name, meaning},
constexpr ReasonEntry kReasons[] = {GS_REASON_CODES(GS_REASON_ROW)};
#undef GS_REASON_ROW

const ReasonEntry* find_reason(ReasonCode code) {
  for (const ReasonEntry& r : kReasons) {
    if (r.code == code) return &r;
  }
  return nullptr;
}

}  // namespace

std::string_view to_string(ReasonCode code) {
  const ReasonEntry* r = find_reason(code);
  return r ? r->name : "UNKNOWN";
}

std::string_view reason_meaning(ReasonCode code) {
  const ReasonEntry* r = find_reason(code);
  return r ? r->meaning : "";
}

std::optional<ReasonCode> parse_reason_code(std::string_view text) {
  for (const ReasonEntry& r : kReasons) {
    if (r.name == text) return r.code;
  }
  return std::nullopt;
}

std::string_view to_string(DynamicShapeSupport d) {
  switch (d) {
    case DynamicShapeSupport::kNone:
      return "none";
    case DynamicShapeSupport::kBounded:
      return "bounded";
    case DynamicShapeSupport::kFull:
      return "full";
  }
  return "invalid";
}

bool OpSupportTable::add(OpSupportRow row) {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), row.type,
                             [](const OpSupportRow& r, const std::string& t) { return r.type < t; });
  if (it != rows_.end() && it->type == row.type) return false;
  rows_.insert(it, std::move(row));
  return true;
}

// Placement asks once or twice per node, and neighbouring nodes mostly share a type, so each thread's last
// answer is tried first. It is used only for the same table holding the same row block, and only once its
// type compares equal: a reused address can cost a search, never give a wrong row.
const OpSupportRow* OpSupportTable::find(std::string_view type) const {
  struct Last {
    const OpSupportTable* table = nullptr;
    const OpSupportRow* rows = nullptr;
    size_t size = 0;
    const OpSupportRow* row = nullptr;
  };
  static thread_local Last last;
  if (last.table == this && last.rows == rows_.data() && last.size == rows_.size() && last.row->type == type)
    return last.row;
  auto it = std::lower_bound(rows_.begin(), rows_.end(), type,
                             [](const OpSupportRow& r, std::string_view t) { return r.type < t; });
  if (it == rows_.end() || it->type != type) return nullptr;
  last = {this, rows_.data(), rows_.size(), &*it};
  return &*it;
}

// ------------------------------------------------------------------ Engine

Engine::Engine(const PluginContext& context)
    : table_(std::make_unique<const OpSupportTable>(context.op_table() ? *context.op_table()
                                                                       : OpSupportTable())) {}

Engine::~Engine() = default;

const OpSupportTable& Engine::table() const {
  return *table_;
}

namespace {

std::string list_dtypes(const std::vector<DataType>& v) {
  std::string s;
  for (DataType d : v) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
  return s;
}

// The opset of the node's domain, from the root graph's `_onnx_opset_import` ("domain:version" entries).
// Placement asks for every node: no string is built, and the keys are found by address.
int64_t node_opset(const Node& node) {
  static const AttrKey kDomainKey(attr::kDomain), kImportsKey(attr::kOnnxOpsetImport);
  const AttrValue* domain_attr = node.attrs().get(kDomainKey);
  const std::string_view domain =
      domain_attr && domain_attr->as_string() ? std::string_view(*domain_attr->as_string()) : "ai.onnx";
  const Graph* root = node.owner() ? node.owner()->root() : nullptr;
  const AttrValue* imports = root ? root->attrs().get(kImportsKey) : nullptr;
  if (!imports || !imports->as_strings()) return -1;
  for (const std::string& entry : *imports->as_strings()) {
    const size_t colon = entry.rfind(':');
    if (colon == domain.size() && std::string_view(entry).substr(0, colon) == domain) {
      int64_t version = -1;
      const char* end = entry.data() + entry.size();
      const auto [at, ec] = std::from_chars(entry.data() + colon + 1, end, version);
      return ec == std::errc() && at == end ? version : -1;
    }
  }
  return -1;
}

// The verdict on one of the main tensors, none when it passes; `what` names the tensor, built only for a
// refusal.
template <class What>
std::optional<SupportVerdict> check_tensor(const TensorDesc& desc, const std::vector<DataType>& allowed,
                                           const OpSupportRow& row, What what) {
  if (desc.kind != ValueKind::kTensor || desc.dtype == DataType::kUndefined) return std::nullopt;
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), desc.dtype) == allowed.end()) {
    return SupportVerdict{
        false, ReasonCode::kEngineUnsupportedDtype,
        what() + " is " + std::string(to_string(desc.dtype)) + "; supported: " + list_dtypes(allowed)};
  }
  if (!row.formats.empty() &&
      std::find(row.formats.begin(), row.formats.end(), desc.format) == row.formats.end()) {
    return SupportVerdict{
        false, ReasonCode::kEngineUnsupportedFormat,
        what() + " has format " + std::string(to_string(desc.format)) + ", which the table does not list"};
  }
  return std::nullopt;
}

}  // namespace

SupportVerdict Engine::check_table(const Node& node) const {
  const OpSupportRow* row = table_->find(node.type());
  if (!row)
    return {false, ReasonCode::kEngineUnsupportedOp, "op type " + node.type() + " is not in the op table"};
  const int64_t opset = node_opset(node);
  if (opset >= 0 && (opset < row->opset_min || opset > row->opset_max)) {
    return {false, ReasonCode::kEngineUnsupportedOp,
            node.type() + " at opset " + std::to_string(opset) + " is outside the supported range " +
                std::to_string(row->opset_min) + "-" + std::to_string(row->opset_max)};
  }
  // Data types and formats constrain the main tensors: input 0 (when connected) and every output.
  const std::vector<DataType>& in_types = row->input_dtypes.empty() ? row->dtypes : row->input_dtypes;
  const std::vector<DataType>& out_types = row->output_dtypes.empty() ? row->dtypes : row->output_dtypes;
  if (node.num_inputs() > 0 && node.input_desc(0)) {
    if (auto v = check_tensor(*node.input_desc(0), in_types, *row, [] { return std::string("input 0"); }))
      return *v;
  }
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    if (auto v =
            check_tensor(node.output_desc(o), out_types, *row, [o] { return "output " + std::to_string(o); }))
      return *v;
  }
  if (row->dynamic_shape == DynamicShapeSupport::kNone) {
    for (size_t i = 0; i < node.num_inputs(); ++i) {
      const TensorDesc* d = node.input_desc(i);
      if (d && d->kind == ValueKind::kTensor && !d->shape.is_static()) {
        return {false, ReasonCode::kEngineNoDynamicShape,
                "input " + std::to_string(i) + " has dynamic shape " + d->shape.to_string() +
                    " and the table says dynamic_shape = none"};
      }
    }
    for (size_t o = 0; o < node.num_outputs(); ++o) {
      const TensorDesc& d = node.output_desc(o);
      if (d.kind == ValueKind::kTensor && !d.shape.is_static()) {
        return {false, ReasonCode::kEngineNoDynamicShape,
                "output " + std::to_string(o) + " has dynamic shape " + d.shape.to_string() +
                    " and the table says dynamic_shape = none"};
      }
    }
  }
  return {true, ReasonCode::kOk, {}};
}

SupportVerdict Engine::check_support(const Node& node) const {
  return check_table(node);
}

Status Engine::optimize(Graph&, PassContext&, bool* changed) {
  *changed = false;
  return Status::ok();
}

Status Engine::compile(const Graph& subgraph, std::unique_ptr<Executable>*) {
  return {StatusCode::kNotImplemented,
          "this engine does not compile subgraphs (subgraph '" + subgraph.name() + "')"};
}

Executable::~Executable() = default;

}  // namespace graphsplit::sdk
