// The synthetic graph shapes the compile benchmarks share (partition_bench, atc_bench): chain, layered,
// random with 10% dynamic outputs, transformer-like. One description builds the IR graph and the ONNX model.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace graphsplit::bench {

enum Shape { kChain = 0, kLayered = 1, kRandom = 2, kTransformer = 3 };
inline const char* const kShapeNames[] = {"chain", "layered", "random10pct", "transformer"};

// Node k's inputs, and whether its output is dynamic. The same description builds the IR graph and the ONNX
// model.
struct Dag {
  std::vector<std::vector<int>> inputs;
  std::vector<char> dynamic;
  std::vector<const char*> type;
};

inline Dag make_dag(Shape shape, int n) {
  Dag d;
  d.inputs.resize(n);
  d.dynamic.assign(n, 0);
  d.type.assign(n, "Relu");
  std::mt19937 rng(11);
  for (int k = 1; k < n; ++k) {
    switch (shape) {
      case kChain:
        d.inputs[k] = {k - 1};
        break;
      case kLayered: {
        const int width = 32, layer = k / width;
        if (layer == 0) {
          d.inputs[k] = {0};
        } else {
          const int base = (layer - 1) * width;
          d.inputs[k] = {base + static_cast<int>(rng() % width), base + static_cast<int>(rng() % width)};
          d.type[k] = "Add";
        }
        break;
      }
      case kRandom: {
        // Like a DNN: most edges are short (geometric lengths), one in fifty is a long skip connection.
        auto pick = [&] {
          int back = 1;
          while (rng() % 4 != 0 && back < 64) back *= 2;
          back = 1 + static_cast<int>(rng() % back);
          if (rng() % 50 == 0) back = 1 + static_cast<int>(rng() % 1000);
          return std::max(0, k - back);
        };
        d.inputs[k] = {pick()};
        if (rng() % 2) {
          d.inputs[k].push_back(pick());
          d.type[k] = "Add";
        }
        d.dynamic[k] = rng() % 10 == 0;
        break;
      }
      case kTransformer: {
        // Blocks of 24: attention (q, k, v MatMuls, scores, softmax, context), residual, layer norm, MLP,
        // residual; every 8th block has a dynamic sequence length (a Shape-driven Reshape).
        const int block = (k - 1) / 24, i = (k - 1) % 24, start = 1 + block * 24, in = start - 1;
        if (i < 3)
          d.inputs[k] = {in};
        else if (i == 3)
          d.inputs[k] = {start, start + 1};
        else if (i == 5)
          d.inputs[k] = {k - 1, start + 2};
        else if (i == 8)
          d.inputs[k] = {k - 1, in};
        else if (i == 16)
          d.inputs[k] = {k - 1, start + 8};
        else
          d.inputs[k] = {k - 1};
        d.type[k] = i <= 3 || i == 5 ? "MatMul" : i == 4 ? "Softmax" : i == 8 || i == 16 ? "Add" : "Relu";
        d.dynamic[k] = block % 8 == 0 && i == 6;
        break;
      }
    }
  }
  return d;
}

// The same graph as an ONNX model atc can compile: every value float[64,64] (MatMul(x, x) is well formed, and
// nothing needs a weight), no value_info (shape inference finds the shapes). A dynamic node k is made of two
// Reshapes: the first by the model input `dims` (values unknown at compile time: a dynamic shape), the second
// back to [64,64], so that k's consumers are static again, as in the IR graph.
inline std::string build_atc_onnx(const Dag& d) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.set_producer_name("graphsplit bench");
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("bench");
  auto add_input = [&](const char* name, int type, std::vector<int> dims) {
    auto* vi = g->add_input();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    for (int v : dims) t->mutable_shape()->add_dim()->set_dim_value(v);
  };
  add_input("n0", onnx::TensorProto::FLOAT, {64, 64});
  add_input("dims", onnx::TensorProto::INT64, {2});
  auto* square = g->add_initializer();
  square->set_name("square");
  square->set_data_type(onnx::TensorProto::INT64);
  square->add_dims(2);
  square->add_int64_data(64);
  square->add_int64_data(64);
  auto name = [](size_t k) { return "n" + std::to_string(k); };
  for (size_t k = 1; k < d.inputs.size(); ++k) {
    onnx::NodeProto* n = g->add_node();
    if (d.dynamic[k]) {
      n->set_name(name(k) + "_dynamic");
      n->set_op_type("Reshape");
      n->add_input(name(d.inputs[k][0]));
      n->add_input("dims");
      n->add_output(name(k) + "_dynamic");
      n = g->add_node();
      n->set_name(name(k));
      n->set_op_type("Reshape");
      n->add_input(name(k) + "_dynamic");
      n->add_input("square");
      n->add_output(name(k));
      continue;
    }
    n->set_name(name(k));
    n->set_op_type(d.type[k]);
    for (int i : d.inputs[k]) n->add_input(name(i));
    if (n->op_type() == std::string("MatMul") && n->input_size() == 1) n->add_input(name(d.inputs[k][0]));
    n->add_output(name(k));
  }
  auto* out = g->add_output();
  out->set_name(name(d.inputs.size() - 1));
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

}  // namespace graphsplit::bench
