// Out-of-line key functions of the SDK's polymorphic classes: their vtables and typeinfo live once, here, so
// that casts and exceptions on SDK types work across RTLD_LOCAL libraries (design guide, section 3.1).
#include <algorithm>

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

const OpSupportRow* OpSupportTable::find(std::string_view type) const {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), type,
                             [](const OpSupportRow& r, std::string_view t) { return r.type < t; });
  return (it != rows_.end() && it->type == type) ? &*it : nullptr;
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

// The opset of the node's domain, from the root graph's `_onnx_opset_import` ("domain:version" entries).
int64_t node_opset(const Node& node) {
  const AttrValue* domain_attr = node.attrs().get(attr::kDomain);
  const std::string domain = domain_attr && domain_attr->as_string() ? *domain_attr->as_string() : "ai.onnx";
  const Graph* root = node.owner() ? node.owner()->root() : nullptr;
  const AttrValue* imports = root ? root->attrs().get(sdk::attr::kOnnxOpsetImport) : nullptr;
  if (!imports || !imports->as_strings()) return -1;
  for (const std::string& entry : *imports->as_strings()) {
    const size_t colon = entry.rfind(':');
    if (colon != std::string::npos && entry.compare(0, colon, domain) == 0 && colon == domain.size()) {
      return std::stoll(entry.substr(colon + 1));
    }
  }
  return -1;
}

std::string list_dtypes(const std::vector<DataType>& v) {
  std::string s;
  for (DataType d : v) s += (s.empty() ? "" : ", ") + std::string(to_string(d));
  return s;
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
  struct Checked {
    std::string what;
    const TensorDesc* desc;
    const std::vector<DataType>* allowed;
  };
  const std::vector<DataType>& in_types = row->input_dtypes.empty() ? row->dtypes : row->input_dtypes;
  const std::vector<DataType>& out_types = row->output_dtypes.empty() ? row->dtypes : row->output_dtypes;
  std::vector<Checked> tensors;
  if (node.num_inputs() > 0 && node.input_desc(0))
    tensors.push_back({"input 0", node.input_desc(0), &in_types});
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    tensors.push_back({"output " + std::to_string(o), &node.output_desc(o), &out_types});
  }
  for (const Checked& t : tensors) {
    const TensorDesc* desc = t.desc;
    if (desc->kind != ValueKind::kTensor || desc->dtype == DataType::kUndefined) continue;
    if (!t.allowed->empty() &&
        std::find(t.allowed->begin(), t.allowed->end(), desc->dtype) == t.allowed->end()) {
      return {
          false, ReasonCode::kEngineUnsupportedDtype,
          t.what + " is " + std::string(to_string(desc->dtype)) + "; supported: " + list_dtypes(*t.allowed)};
    }
    if (!row->formats.empty() &&
        std::find(row->formats.begin(), row->formats.end(), desc->format) == row->formats.end()) {
      return {
          false, ReasonCode::kEngineUnsupportedFormat,
          t.what + " has format " + std::string(to_string(desc->format)) + ", which the table does not list"};
    }
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
