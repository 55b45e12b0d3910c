// What shape rules see: a node, what is known about its inputs, and the outputs to describe. Internal to
// libgraphsplit_kernels.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../kernel.h"
#include "graphsplit/sdk/ir/sym.h"

namespace graphsplit::kernels::infer {

using sdk::DimExpr;
using SymDims = std::vector<DimExpr>;

// What inference knows about one value.
struct SymValue {
  // Sequences and optionals: dtype and dims describe the element tensor (as sdk::TensorDesc does).
  sdk::ValueKind kind = sdk::ValueKind::kTensor;
  DataType dtype = DataType::kUndefined;
  bool rank_known = false;
  SymDims dims;
  // Element values of a small integer tensor, row-major (shape arithmetic); may hold symbolic entries.
  std::optional<SymDims> elems;
  // The whole tensor, when it is a known constant.
  std::optional<Tensor> constant;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool has_const_elems() const;
};

struct InferContext {
  const sdk::Node* node = nullptr;
  int opset = 17;
  sdk::SymbolTable* sym = nullptr;
  std::vector<const SymValue*> inputs;  // nullptr: omitted or unknown
  std::vector<SymValue> outputs;
  KernelContext attrs;  // attribute readers (only `node` is set)
  int64_t max_value_elements = 64;

  bool has(size_t i) const { return i < inputs.size() && inputs[i] != nullptr; }
  const SymValue* in(size_t i) const { return has(i) ? inputs[i] : nullptr; }
  // Input i with a known rank, else nullptr.
  const SymValue* ranked(size_t i) const {
    const SymValue* v = in(i);
    return v && v->rank_known && v->kind == sdk::ValueKind::kTensor ? v : nullptr;
  }
  SymValue& out(size_t i) { return outputs[i]; }
  DimExpr c(int64_t v) const { return sym->constant(v); }
  // A fresh size for what inference cannot express (its range is [0, +inf)).
  DimExpr unknown_dim();
  // An unbacked size: the count of a data-dependent output, in [0, upper].
  DimExpr unbacked_dim(DimExpr upper);
  Status error(const std::string& message) const { return attrs.error(message); }
  // Integer element values of input i (from its constant or propagated values); nullopt if unknown.
  std::optional<SymDims> elems(size_t i) const;
  // As elems(), only when every value is a number.
  std::optional<std::vector<int64_t>> const_ints(size_t i) const;
  // Output i's shape and type; `dtype` kUndefined keeps input 0's type.
  void set(size_t i, DataType dtype, SymDims dims);
  // Output `out` has input `in`'s dims when they are known, and type `dtype` (kUndefined: input `in`'s)
  // either way.
  void set_like(size_t out, size_t in, DataType dtype);
  // Output i is a 0-D or 1-D integer tensor with these values.
  void set_values(size_t i, DataType dtype, SymDims dims, SymDims values);
};

using RuleFn = Status (*)(InferContext&);
struct RuleEntry {
  const char* op_type;
  RuleFn fn;
};
void register_elementwise_rules(std::vector<RuleEntry>* table);
void register_shape_rules(std::vector<RuleEntry>* table);
void register_nn_rules(std::vector<RuleEntry>* table);
void register_misc_rules(std::vector<RuleEntry>* table);
RuleFn find_rule(std::string_view op_type, std::string_view domain);
// Applies `rule` (found by type) to a subset of the node's inputs: QLinearConv and DeformConv are Conv on two
// of theirs.
Status apply_rule_to(InferContext& ctx, std::string_view rule, std::vector<size_t> inputs);

bool is_integer_type(DataType t);
// What inference knows of a value from its descriptor (symbols for unknown dims) or from a tensor (its
// dims, and its elements when it is a small integer tensor).
SymValue value_from_desc(sdk::SymbolTable& sym, const sdk::TensorDesc& d);
SymValue value_from_tensor(sdk::SymbolTable& sym, const Tensor& t, int64_t max_elems);
// ONNX's type constraint for output `o` when the rule did not set one.
DataType default_type(const InferContext& ctx, size_t o);

// Runs `rule` on these input values (nullptr: omitted) and reports, per output, the type and the dims when
// every one is a number. What the executor hands each kernel (see KernelContext::rule).
// The rule's outputs in ctx as the kernels see them.
std::vector<RuleShape> rule_shapes(const InferContext& ctx);
Status evaluate_rule(RuleFn rule, const sdk::Node& node, int opset, sdk::SymbolTable& sym,
                     const std::vector<const SymValue*>& inputs, std::vector<RuleShape>* out);

// ---- helpers shared by the rules
DimExpr product(sdk::SymbolTable& sym, const SymDims& dims, size_t begin, size_t end);
// Numpy broadcast of two ranked shapes; unknown pairs become max(a, b) with a recorded assumption.
Status broadcast(InferContext& ctx, const SymDims& a, const SymDims& b, SymDims* out);

}  // namespace graphsplit::kernels::infer
