// Small ONNX models with data-dependent shapes, built in code, for the online-mode tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace graphsplit::testing::jit_models {

// A dimension: a number, or a symbol name.
struct Dim {
  Dim(int64_t v) : value(v) {}      // NOLINT(google-explicit-constructor): dims are written as {2, "N"}
  Dim(const char* p) : param(p) {}  // NOLINT(google-explicit-constructor)
  int64_t value = -1;
  std::string param;
};

inline void typed(onnx::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<Dim>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (d.param.empty())
      dim->set_dim_value(d.value);
    else
      dim->set_dim_param(d.param);
  }
}

inline void untyped_output(onnx::GraphProto* g, const std::string& name) {
  g->add_output()->set_name(name);
}

inline onnx::NodeProto* op(onnx::GraphProto* g, const std::string& type, const std::vector<std::string>& in,
                           const std::vector<std::string>& out) {
  auto* n = g->add_node();
  n->set_op_type(type);
  n->set_name(out.empty() ? type : out[0]);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

inline void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void graph_attr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& body) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
}

inline void int64_init(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
}

inline void float_init(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<float>& values) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
}

inline onnx::ModelProto model(int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("graphsplit-jit-tests");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("jit");
  return m;
}

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kInt64 = onnx::TensorProto::INT64;
constexpr int kBool = onnx::TensorProto::BOOL;

// x[N,4] -> Relu -> NonZero -> Transpose -> Cast(float) -> y[M,2]; also r = Relu(x).
inline onnx::ModelProto nonzero_middle() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N", 4});
  op(g, "Relu", {"x"}, {"r"});
  op(g, "NonZero", {"r"}, {"nz"});
  op(g, "Transpose", {"nz"}, {"t"});
  int_attr(op(g, "Cast", {"t"}, {"y"}), "to", kFloat);
  untyped_output(g, "y");
  untyped_output(g, "r");
  return m;
}

// Two NonZeros side by side, each followed by a Cast.
inline onnx::ModelProto parallel_nonzeros() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "a", kFloat, {"N"});
  typed(g->add_input(), "b", kFloat, {"K", 2});
  op(g, "NonZero", {"a"}, {"na"});
  op(g, "NonZero", {"b"}, {"nb"});
  int_attr(op(g, "Cast", {"na"}, {"ca"}), "to", kFloat);
  int_attr(op(g, "Cast", {"nb"}, {"cb"}), "to", kFloat);
  untyped_output(g, "ca");
  untyped_output(g, "cb");
  return m;
}

// x[N] -> k NonZeros of their own (x + i), joined by one Concat: k cuts, and a concatenated size that is a
// sum of k data-dependent counts (past 127 of them, too large an expression to keep: a new symbol stands for
// it).
inline onnx::ModelProto concat_of_nonzeros(int k) {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  std::vector<std::string> parts;
  for (int i = 0; i < k; ++i) {
    const std::string s = std::to_string(i);
    float_init(g, "c" + s, {}, {static_cast<float>(-i)});
    op(g, "Add", {"x", "c" + s}, {"a" + s});
    op(g, "NonZero", {"a" + s}, {"nz" + s});
    parts.push_back("nz" + s);
  }
  int_attr(op(g, "Concat", parts, {"y"}), "axis", 1);
  untyped_output(g, "y");
  return m;
}

// x[N] -> (NonZero -> Cast -> Flatten... ) k times: k data-dependent operators in a chain.
inline onnx::ModelProto nonzero_chain(int k) {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  std::string prev = "x";
  for (int i = 0; i < k; ++i) {
    const std::string s = std::to_string(i);
    op(g, "NonZero", {prev}, {"nz" + s});
    int_attr(op(g, "Cast", {"nz" + s}, {"c" + s}), "to", kFloat);
    op(g, "Add", {"c" + s, "one"}, {"p" + s});  // positions + 1: never zero, so the next NonZero keeps all
    int64_init(g, "axes" + s, {1}, {0});
    op(g, "Squeeze", {"p" + s, "axes" + s}, {"sq" + s});
    prev = "sq" + s;
  }
  float_init(g, "one", {}, {1.0f});
  untyped_output(g, prev);
  return m;
}

// The If both If models share: cond = sum(x) > 0 (a data condition), the branches given, output "chosen".
inline void data_if_node(onnx::GraphProto* g, const onnx::GraphProto& then_b,
                         const onnx::GraphProto& else_b) {
  op(g, "ReduceSum", {"x"}, {"sum"});
  float_init(g, "zero", {}, {0.0f});
  op(g, "Greater", {"sum", "zero"}, {"cond_raw"});
  int64_init(g, "scalar", {0}, {});
  op(g, "Reshape", {"cond_raw", "scalar"}, {"cond"});
  auto* n = op(g, "If", {"cond"}, {"chosen"});
  graph_attr(n, "then_branch", then_b);
  graph_attr(n, "else_branch", else_b);
}

// If on a data condition; `agree`: both branches give [N,4]; else the else-branch flattens to [N*4].
inline onnx::ModelProto data_if(bool agree) {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N", 4});
  onnx::GraphProto then_b, else_b;
  then_b.set_name("then");
  op(&then_b, "Relu", {"x"}, {"t_out"});
  untyped_output(&then_b, "t_out");
  else_b.set_name("else");
  if (agree) {
    op(&else_b, "Neg", {"x"}, {"e_out"});
  } else {
    op(&else_b, "Neg", {"x"}, {"e_neg"});
    int_attr(op(&else_b, "Flatten", {"e_neg"}, {"e_flat"}), "axis", 0);
    int64_init(&else_b, "e_axes", {1}, {0});
    op(&else_b, "Squeeze", {"e_flat", "e_axes"}, {"e_out"});
  }
  untyped_output(&else_b, "e_out");
  data_if_node(g, then_b, else_b);
  op(g, "Sigmoid", {"chosen"}, {"y"});
  untyped_output(g, "y");
  return m;
}

// NonZero's count feeding the shape operators: Reshape, Expand, Tile, Range, ConstantOfShape.
inline onnx::ModelProto nonzero_feeds_shapes() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  op(g, "NonZero", {"x"}, {"nz"});    // [1, M]
  op(g, "Shape", {"nz"}, {"shape"});  // [1, M]
  int64_init(g, "one_idx", {}, {1});
  op(g, "Gather", {"shape", "one_idx"}, {"m"});  // M (scalar)
  int64_init(g, "zero", {}, {0});
  int64_init(g, "step", {}, {1});
  op(g, "Range", {"zero", "m", "step"}, {"range"});  // [M]
  int64_init(g, "ax0", {1}, {0});
  op(g, "Unsqueeze", {"m", "ax0"}, {"m1"});     // [1]: {M}
  op(g, "ConstantOfShape", {"m1"}, {"zeros"});  // [M] of 0.0
  int_attr(op(g, "Cast", {"nz"}, {"nzf"}), "to", kFloat);
  int64_init(g, "two", {1}, {2});
  int_attr(op(g, "Concat", {"m1", "two"}, {"target"}), "axis", 0);  // {M, 2}
  op(g, "Expand", {"nzf", "target_t"}, {"expanded"});               // [1,M] -> [2,M]
  int64_init(g, "target_t", {2}, {2, 1});                           // broadcast to [2, M]
  op(g, "Tile", {"range", "two"}, {"tiled"});                       // [2M]
  int64_init(g, "minus1", {2}, {-1, 1});
  op(g, "Reshape", {"tiled", "minus1"}, {"reshaped"});  // [2M, 1]
  untyped_output(g, "range");
  untyped_output(g, "zeros");
  untyped_output(g, "expanded");
  untyped_output(g, "reshaped");
  untyped_output(g, "target");
  return m;
}

// Loop with a trip count computed from data: the number of positive elements of x. Each iteration emits its
// iteration number (a scan output), so the output has one element per positive element.
inline onnx::ModelProto data_loop() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  float_init(g, "zero", {}, {0.0f});
  op(g, "Greater", {"x", "zero"}, {"pos"});
  int_attr(op(g, "Cast", {"pos"}, {"pos_i"}), "to", kInt64);
  op(g, "ReduceSum", {"pos_i"}, {"count_1"});
  int64_init(g, "scalar", {0}, {});
  op(g, "Reshape", {"count_1", "scalar"}, {"trip"});
  onnx::GraphProto body;
  body.set_name("body");
  typed(body.add_input(), "i", kInt64, {});
  typed(body.add_input(), "cond_in", kBool, {});
  op(&body, "Identity", {"cond_in"}, {"cond_out"});
  int_attr(op(&body, "Cast", {"i"}, {"i_f"}), "to", kFloat);
  untyped_output(&body, "cond_out");
  untyped_output(&body, "i_f");
  auto* n = op(g, "Loop", {"trip", ""}, {"iters"});
  graph_attr(n, "body", body);
  op(g, "Relu", {"iters"}, {"y"});
  untyped_output(g, "y");
  return m;
}

// x[A,B] reshaped to the shape given as an input, then Relu.
inline onnx::ModelProto reshape_by_input() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"A", "B"});
  typed(g->add_input(), "shape", kInt64, {2});
  op(g, "Reshape", {"x", "shape"}, {"r"});
  op(g, "Relu", {"r"}, {"y"});
  untyped_output(g, "y");
  return m;
}

// x[N,4] -> Relu -> Sigmoid: no data dependence.
inline onnx::ModelProto plain() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N", 4});
  op(g, "Relu", {"x"}, {"r"});
  op(g, "Sigmoid", {"r"}, {"y"});
  untyped_output(g, "y");
  return m;
}

// NonZero, then a Gather whose indices come from the NonZero: out of range when N > 3.
inline onnx::ModelProto gather_after_nonzero() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  op(g, "NonZero", {"x"}, {"nz"});
  int64_init(g, "ax", {1}, {0});
  op(g, "Squeeze", {"nz", "ax"}, {"idx"});
  float_init(g, "table", {3}, {10, 20, 30});
  op(g, "Gather", {"table", "idx"}, {"y"});
  untyped_output(g, "y");
  return m;
}

// Compress by a data mask, Unique of the result, and TopK whose k is computed from data (the number of
// positive elements): three data-dependent sizes, each feeding the next.
inline onnx::ModelProto compress_unique_topk() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  float_init(g, "zero", {}, {0.0f});
  op(g, "Greater", {"x", "zero"}, {"mask"});
  int_attr(op(g, "Compress", {"x", "mask"}, {"kept"}), "axis", 0);  // [P]
  op(g, "Unique", {"kept"}, {"uniq"});                              // [U], sorted
  int_attr(op(g, "Cast", {"mask"}, {"mask_i"}), "to", kInt64);
  op(g, "ReduceSum", {"mask_i"}, {"count"});  // [1]: P
  int64_init(g, "one", {1}, {1});
  op(g, "Min", {"count", "one"}, {"k"});  // k = min(P, 1): 0 when nothing is kept, never more than uniq holds
  op(g, "TopK", {"uniq", "k"}, {"top", "top_i"});
  op(g, "Relu", {"top"}, {"y"});
  untyped_output(g, "y");
  untyped_output(g, "uniq");
  return m;
}

// An If on a data condition whose then-branch holds a NonZero: the If's output size depends on data, so the
// cut is after the If (the data dependence is nested in its branch).
inline onnx::ModelProto nonzero_in_a_branch() {
  auto m = model();
  auto* g = m.mutable_graph();
  typed(g->add_input(), "x", kFloat, {"N"});
  onnx::GraphProto then_b, else_b;
  then_b.set_name("then");
  op(&then_b, "NonZero", {"x"}, {"t_nz"});
  int_attr(op(&then_b, "Cast", {"t_nz"}, {"t_f"}), "to", kFloat);
  int_attr(op(&then_b, "Flatten", {"t_f"}, {"t_flat"}), "axis", 0);
  int64_init(&then_b, "t_axes", {1}, {0});
  op(&then_b, "Squeeze", {"t_flat", "t_axes"}, {"t_out"});
  untyped_output(&then_b, "t_out");
  else_b.set_name("else");
  op(&else_b, "Neg", {"x"}, {"e_out"});
  untyped_output(&else_b, "e_out");
  data_if_node(g, then_b, else_b);
  op(g, "Sigmoid", {"chosen"}, {"y"});
  untyped_output(g, "y");
  return m;
}

}  // namespace graphsplit::testing::jit_models
