// Builds the small graphs engine tests ask about: one op node fed by Data nodes, with an opset import.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/op_table_loader.h"
#include "graphsplit/sdk/ir/graph.h"

namespace graphsplit::testing {

inline sdk::TensorDesc tensor(sdk::DataType dtype, std::vector<int64_t> dims) {
  sdk::TensorDesc d;
  d.dtype = dtype;
  d.shape = sdk::Shape(std::move(dims));
  return d;
}

struct OneNode {
  std::unique_ptr<sdk::Graph> root;
  sdk::Node* node = nullptr;
};

inline OneNode one_node(const std::string& type, const std::vector<sdk::TensorDesc>& inputs,
                        const std::vector<sdk::TensorDesc>& outputs, int opset = 17) {
  OneNode g;
  g.root = sdk::Graph::create("g");
  g.root->attrs().set(sdk::attr::kOnnxOpsetImport,
                      sdk::AttrValue::Strings({"ai.onnx:" + std::to_string(opset), "ai.onnx.ml:3"}));
  g.node = g.root->add_node("op", type, inputs.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    sdk::Node* d = g.root->add_node("in" + std::to_string(i), sdk::op::kData, 0, 0);
    d->add_output(inputs[i], "in" + std::to_string(i));
    (void)g.root->add_edge({d, 0}, {g.node, static_cast<int32_t>(i)});
  }
  for (size_t o = 0; o < outputs.size(); ++o) g.node->add_output(outputs[o], "out" + std::to_string(o));
  return g;
}

inline sdk::OpSupportTable load_table(const std::string& path) {
  sdk::OpSupportTable t;
  sdk::Status s = load_op_table(path, &t);
  if (!s.is_ok()) throw std::runtime_error(s.message());
  return t;
}

}  // namespace graphsplit::testing
