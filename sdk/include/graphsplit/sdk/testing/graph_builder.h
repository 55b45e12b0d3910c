// The one graph builder for tests (the SDK's, the framework's and every plugin's): small graphs by hand, with
// nodes named after their single output and inputs given by producer name. Standard library only, so that an
// out-of-tree plugin's tests can use it without GoogleTest in the SDK.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"

namespace graphsplit::sdk::testing {

inline TensorDesc tensor_desc(DataType dtype, std::vector<int64_t> dims) {
  TensorDesc d;
  d.dtype = dtype;
  d.shape = Shape(std::move(dims));
  return d;
}

// A root graph importing ai.onnx at `opset` (and ai.onnx.ml 3 when asked), as an imported model would.
inline std::unique_ptr<Graph> opset_root(const std::string& name = "g", int opset = 17,
                                         bool with_ml = false) {
  auto g = Graph::create(name);
  std::vector<std::string> imports = {"ai.onnx:" + std::to_string(opset)};
  if (with_ml) imports.push_back("ai.onnx.ml:3");
  g->attrs().set(attr::kOnnxOpsetImport, AttrValue::Strings(std::move(imports)));
  return g;
}

// Connects output 0 of each named producer to `n`'s inputs in order. A missing producer or a refused edge is
// a test bug: it throws, naming the input, and GoogleTest reports the exception as a failure.
inline void connect_inputs(Graph& g, Node* n, const std::vector<std::string>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node* src = g.find_node(inputs[i]);
    if (!src || !g.add_edge({src, 0}, {n, static_cast<int32_t>(i)}).is_ok())
      throw std::runtime_error("graph_builder: cannot connect '" + inputs[i] + "' to '" + n->name() + "'");
  }
}

// A node with one output `out` (the value named like the node), fed by output 0 of each named input.
inline Node* add_op(Graph& g, const std::string& name, std::string_view type,
                    const std::vector<std::string>& inputs, TensorDesc out) {
  Node* n = g.add_node(name, type, inputs.size(), 0);
  if (!n) throw std::runtime_error("graph_builder: a node named '" + name + "' exists already");
  n->add_output(std::move(out), name);
  connect_inputs(g, n, inputs);
  return n;
}

// A node with `outputs` outputs of no particular type (graph-structure tests).
inline Node* add_plain(Graph& g, const std::string& name, std::string_view type,
                       const std::vector<std::string>& inputs = {}, size_t outputs = 1) {
  Node* n = g.add_node(name, type, inputs.size(), outputs);
  if (!n) throw std::runtime_error("graph_builder: a node named '" + name + "' exists already");
  connect_inputs(g, n, inputs);
  return n;
}

// The graph's NetOutput ("out") fed by output 0 of each named input.
inline Node* add_net_output(Graph& g, const std::vector<std::string>& inputs) {
  Node* n = g.add_node("out", op::kNetOutput, inputs.size(), 0);
  connect_inputs(g, n, inputs);
  return n;
}

// One operator fed by Data nodes in0..inK-1, as engine tests ask about it.
struct OneNode {
  std::unique_ptr<Graph> root;
  Node* node = nullptr;
};

inline OneNode one_node(const std::string& type, const std::vector<TensorDesc>& inputs,
                        const std::vector<TensorDesc>& outputs, int opset = 17) {
  OneNode g;
  g.root = opset_root("g", opset, /*with_ml=*/true);
  g.node = g.root->add_node("op", type, inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Node* d = g.root->add_node("in" + std::to_string(i), op::kData, 0, 0);
    d->add_output(inputs[i], "in" + std::to_string(i));
    (void)g.root->add_edge({d, 0}, {g.node, static_cast<int32_t>(i)});
  }
  for (size_t o = 0; o < outputs.size(); ++o) g.node->add_output(outputs[o], "out" + std::to_string(o));
  return g;
}

}  // namespace graphsplit::sdk::testing
