// The operator versions of ai.onnx opsets 18 to 23 whose inputs, outputs or attributes changed, or that are
// new (ONNX's docs/Changelog.md). Attributes are "name:type" with types f i s t g fs is ss, and a trailing
// '!' for a required one.
#include "import/onnx_opsets.h"

#include <climits>
#include <sstream>
#include <string_view>
#include <vector>

namespace graphsplit::onnx_detail {
namespace {

struct OpVersion {
  const char* op;
  int since;
  int min_inputs, max_inputs, min_outputs, max_outputs;
  const char* attrs;
};

constexpr int kMany = INT_MAX;
constexpr const char* kReduceAttrs = "keepdims:i noop_with_empty_axes:i";
constexpr const char* kResizeAttrs =
    "antialias:i axes:is coordinate_transformation_mode:s cubic_coeff_a:f exclude_outside:i "
    "extrapolation_value:f keep_aspect_ratio_policy:s mode:s nearest_mode:s";

constexpr OpVersion kTable[] = {
    // 18
    {"BitwiseAnd", 18, 2, 2, 1, 1, ""},
    {"BitwiseOr", 18, 2, 2, 1, 1, ""},
    {"BitwiseXor", 18, 2, 2, 1, 1, ""},
    {"BitwiseNot", 18, 1, 1, 1, 1, ""},
    {"CenterCropPad", 18, 2, 2, 1, 1, "axes:is"},
    {"Col2Im", 18, 3, 3, 1, 1, "dilations:is pads:is strides:is"},
    {"GroupNormalization", 18, 3, 3, 1, 1, "epsilon:f num_groups:i!"},
    {"LpPool", 18, 1, 1, 1, 1, "auto_pad:s ceil_mode:i dilations:is kernel_shape:is! p:i pads:is strides:is"},
    {"Mish", 18, 1, 1, 1, 1, ""},
    {"OptionalGetElement", 18, 1, 1, 1, 1, ""},
    {"OptionalHasElement", 18, 0, 1, 1, 1, ""},
    {"Pad", 18, 2, 4, 1, 1, "mode:s"},
    {"ReduceL1", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceL2", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceLogSum", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceLogSumExp", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceMax", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceMean", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceMin", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceProd", 18, 1, 2, 1, 1, kReduceAttrs},
    {"ReduceSumSquare", 18, 1, 2, 1, 1, kReduceAttrs},
    {"Resize", 18, 1, 4, 1, 1, kResizeAttrs},
    {"ScatterElements", 18, 3, 3, 1, 1, "axis:i reduction:s"},
    {"ScatterND", 18, 3, 3, 1, 1, "reduction:s"},
    {"Split", 18, 1, 2, 1, kMany, "axis:i num_outputs:i"},
    // 19
    {"AveragePool", 19, 1, 1, 1, 1,
     "auto_pad:s ceil_mode:i count_include_pad:i dilations:is kernel_shape:is! pads:is strides:is"},
    {"Cast", 19, 1, 1, 1, 1, "saturate:i to:i!"},
    {"CastLike", 19, 2, 2, 1, 1, "saturate:i"},
    {"DeformConv", 19, 3, 5, 1, 1, "dilations:is group:i kernel_shape:is offset_group:i pads:is strides:is"},
    {"DequantizeLinear", 19, 2, 3, 1, 1, "axis:i"},
    {"QuantizeLinear", 19, 2, 3, 1, 1, "axis:i saturate:i"},
    // 20
    {"AffineGrid", 20, 2, 2, 1, 1, "align_corners:i"},
    {"DFT", 20, 1, 3, 1, 1, "inverse:i onesided:i"},
    {"Gelu", 20, 1, 1, 1, 1, "approximate:s"},
    {"GridSample", 20, 2, 2, 1, 1, "align_corners:i mode:s padding_mode:s"},
    {"ImageDecoder", 20, 1, 1, 1, 1, "pixel_format:s"},
    {"RegexFullMatch", 20, 1, 1, 1, 1, "pattern:s"},
    {"StringConcat", 20, 2, 2, 1, 1, ""},
    {"StringSplit", 20, 1, 1, 2, 2, "delimiter:s maxsplit:i"},
    // 21
    {"DequantizeLinear", 21, 2, 3, 1, 1, "axis:i block_size:i"},
    {"GroupNormalization", 21, 3, 3, 1, 1, "epsilon:f num_groups:i! stash_type:i"},
    {"QuantizeLinear", 21, 2, 3, 1, 1, "axis:i block_size:i output_dtype:i saturate:i"},
    // 23
    {"Attention", 23, 3, 6, 1, 4,
     "is_causal:i kv_num_heads:i q_num_heads:i qk_matmul_output_mode:i scale:f softcap:f "
     "softmax_precision:i"},
    {"DequantizeLinear", 23, 2, 3, 1, 1, "axis:i block_size:i output_dtype:i"},
    {"QuantizeLinear", 23, 2, 3, 1, 1, "axis:i block_size:i output_dtype:i precision:i saturate:i"},
    {"RMSNormalization", 23, 2, 2, 1, 1, "axis:i epsilon:f stash_type:i"},
    {"RotaryEmbedding", 23, 3, 4, 1, 1, "interleaved:i num_heads:i rotary_embedding_dim:i"},
};

const OpVersion* find(const std::string& op, int opset) {
  const OpVersion* best = nullptr;
  for (const OpVersion& v : kTable) {
    if (op == v.op && v.since <= opset && (!best || v.since > best->since)) best = &v;
  }
  return best;
}

int attribute_type(std::string_view code) {
  using A = onnx::AttributeProto;
  if (code == "f") return A::FLOAT;
  if (code == "i") return A::INT;
  if (code == "s") return A::STRING;
  if (code == "t") return A::TENSOR;
  if (code == "g") return A::GRAPH;
  if (code == "fs") return A::FLOATS;
  if (code == "is") return A::INTS;
  return A::STRINGS;
}

struct AttrSpec {
  std::string name;
  int type;
  bool required;
};

std::vector<AttrSpec> attrs_of(const OpVersion& v) {
  std::vector<AttrSpec> out;
  std::istringstream in(v.attrs);
  for (std::string item; in >> item;) {
    const bool required = item.back() == '!';
    if (required) item.pop_back();
    const size_t colon = item.find(':');
    out.push_back({item.substr(0, colon), attribute_type(item.substr(colon + 1)), required});
  }
  return out;
}

// The type an attribute carries: its declared type, or (older writers) the one field that is set.
int type_of(const onnx::AttributeProto& a) {
  if (a.type() != onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return onnx::AttributeProto::FLOAT;
  if (a.has_i()) return onnx::AttributeProto::INT;
  if (a.has_s()) return onnx::AttributeProto::STRING;
  if (a.ints_size()) return onnx::AttributeProto::INTS;
  if (a.floats_size()) return onnx::AttributeProto::FLOATS;
  if (a.strings_size()) return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

std::string range_text(int lo, int hi) {
  if (lo == hi) return std::to_string(lo);
  return std::to_string(lo) + " to " + (hi == kMany ? std::string("any number") : std::to_string(hi));
}

}  // namespace

int table_since_version(const std::string& op_type, int opset) {
  const OpVersion* v = find(op_type, opset);
  return v ? v->since : 0;
}

sdk::Status verify_against_table(const onnx::NodeProto& node, int opset) {
  const OpVersion* v = find(node.op_type(), opset);
  if (!v) return sdk::Status::internal("no table entry for " + node.op_type());
  const std::string version = node.op_type() + "-" + std::to_string(v->since);
  // Trailing empty names are omitted optional inputs/outputs, as ONNX allows.
  int inputs = node.input_size(), outputs = node.output_size();
  while (inputs > 0 && node.input(inputs - 1).empty()) --inputs;
  while (outputs > 0 && node.output(outputs - 1).empty()) --outputs;
  if (inputs < v->min_inputs || inputs > v->max_inputs)
    return sdk::Status::invalid_argument(version + " takes " + range_text(v->min_inputs, v->max_inputs) +
                                         " inputs, the node has " + std::to_string(inputs));
  if (outputs < v->min_outputs || outputs > v->max_outputs)
    return sdk::Status::invalid_argument(version + " has " + range_text(v->min_outputs, v->max_outputs) +
                                         " outputs, the node has " + std::to_string(outputs));
  const std::vector<AttrSpec> specs = attrs_of(*v);
  for (const auto& a : node.attribute()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : specs) {
      if (s.name == a.name()) spec = &s;
    }
    if (!spec) return sdk::Status::invalid_argument(version + " has no attribute '" + a.name() + "'");
    if (type_of(a) != spec->type)
      return sdk::Status::invalid_argument(version + " attribute '" + a.name() + "' has type " +
                                           onnx::AttributeProto::AttributeType_Name(
                                               static_cast<onnx::AttributeProto::AttributeType>(type_of(a))) +
                                           ", expected " +
                                           onnx::AttributeProto::AttributeType_Name(
                                               static_cast<onnx::AttributeProto::AttributeType>(spec->type)));
  }
  for (const AttrSpec& s : specs) {
    if (!s.required) continue;
    bool present = false;
    for (const auto& a : node.attribute()) present = present || a.name() == s.name;
    if (!present) return sdk::Status::invalid_argument(version + " requires attribute '" + s.name + "'");
  }
  return sdk::Status::ok();
}

}  // namespace graphsplit::onnx_detail
