// Builds small ONNX models in code with libonnx's protobuf classes, for tests that need a specific (often
// broken) model. Shared by the framework and atc tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <fstream>
#include <string>
#include <vector>

namespace graphsplit::testing {

inline void set_tensor_type(onnx::ValueInfoProto* vi, const std::string& name, int elem,
                            const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0)
      dim->set_dim_value(d);
    else
      dim->set_dim_param("N");
  }
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 const std::vector<std::string>& in, const std::vector<std::string>& out,
                                 const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(g->node_size()) : name);
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

// x[N,4] -> Relu -> r -> Sigmoid -> y[N,4], opset 13.
inline onnx::ModelProto tiny_model(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("graphsplit-tests");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("tiny");
  set_tensor_type(g->add_input(), "x", onnx::TensorProto::FLOAT, {-1, 4});
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  add_node(g, "Sigmoid", {"r"}, {"y"}, "sigmoid");
  set_tensor_type(g->add_output(), "y", onnx::TensorProto::FLOAT, {-1, 4});
  return m;
}

inline std::string to_bytes(const onnx::ModelProto& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace graphsplit::testing
