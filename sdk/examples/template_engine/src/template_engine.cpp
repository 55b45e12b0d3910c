#include "template_engine.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::examples {

sdk::SupportVerdict TemplateEngine::check_support(const sdk::Node& node) const {
  sdk::SupportVerdict v = check_table(node);
  if (!v.supported || node.type() == "Relu") return v;
  const sdk::TensorDesc* a = node.input_desc(0);
  const sdk::TensorDesc* b = node.num_inputs() > 1 ? node.input_desc(1) : nullptr;
  if (!a || !b || a->shape != b->shape || !a->shape.is_static()) {
    return {false, sdk::ReasonCode::kEngineCheckFailed,
            node.type() + " needs two inputs of one static shape (no broadcasting)"};
  }
  return v;
}

// Program text, one line per instruction: "<op> <dst> <src0> [<src1>]". Slots 0..k-1 are the subgraph's
// inputs in Data `index` order; the last line "ret <slot>..." lists the outputs.
sdk::Status TemplateEngine::compile(const sdk::Graph& subgraph, std::string* artifact) {
  std::vector<sdk::Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(subgraph, sdk::TopoSortMode::kStableRDFS, &order));
  std::map<const sdk::Node*, int> slot;
  int next = 0;
  std::ostringstream program;
  std::vector<const sdk::Node*> data;
  for (const sdk::Node* n : order) {
    if (n->type() == sdk::op::kData) data.push_back(n);
  }
  std::sort(data.begin(), data.end(), [](const sdk::Node* a, const sdk::Node* b) {
    return a->attrs().get_int("index", 0) < b->attrs().get_int("index", 0);
  });
  for (const sdk::Node* d : data) slot[d] = next++;
  program << "inputs " << data.size() << "\n";
  for (const sdk::Node* n : order) {
    if (n->type() == sdk::op::kData) continue;
    if (n->type() == sdk::op::kNetOutput) {
      program << "ret";
      for (const sdk::OutPort& p : n->inputs()) program << " " << slot.at(p.node);
      program << "\n";
      continue;
    }
    sdk::SupportVerdict v = check_support(*n);
    if (!v.supported)
      return sdk::Status::unsupported("node '" + n->name() + "' (" + n->type() + "): " + v.detail);
    slot[n] = next++;
    program << n->type() << " " << slot[n];
    for (const sdk::OutPort& p : n->inputs()) program << " " << slot.at(p.node);
    program << "\n";
  }
  *artifact = program.str();
  return sdk::Status::ok();
}

sdk::Status TemplateEngine::execute(const std::string& artifact, const std::vector<sdk::Tensor>& inputs,
                                    std::vector<sdk::Tensor>* outputs) {
  std::istringstream program(artifact);
  std::string word;
  size_t n_inputs = 0;
  program >> word >> n_inputs;
  if (word != "inputs" || n_inputs != inputs.size()) {
    return sdk::Status::invalid_argument("the program expects " + std::to_string(n_inputs) + " inputs, got " +
                                         std::to_string(inputs.size()));
  }
  std::vector<sdk::Tensor> slots(inputs);
  std::string line;
  std::getline(program, line);
  while (std::getline(program, line)) {
    std::istringstream in(line);
    std::string op;
    in >> op;
    std::vector<size_t> args;
    for (size_t a; in >> a;) args.push_back(a);
    if (op == "ret") {
      outputs->clear();
      for (size_t a : args) outputs->push_back(slots.at(a));
      return sdk::Status::ok();
    }
    const sdk::Tensor& x = slots.at(args.at(1));
    std::string out(x.bytes());
    const size_t count = out.size() / sizeof(float);
    auto value = [](std::string_view bytes, size_t i) {
      float f;
      std::memcpy(&f, bytes.data() + i * sizeof(float), sizeof f);
      return f;
    };
    for (size_t i = 0; i < count; ++i) {
      float r = value(x.bytes(), i);
      if (op == "Relu")
        r = r > 0 ? r : 0;
      else if (op == "Add")
        r += value(slots.at(args.at(2)).bytes(), i);
      else if (op == "Mul")
        r *= value(slots.at(args.at(2)).bytes(), i);
      else
        return sdk::Status::invalid_argument("unknown instruction '" + op + "'");
      std::memcpy(out.data() + i * sizeof(float), &r, sizeof r);
    }
    if (slots.size() <= args.at(0)) slots.resize(args.at(0) + 1);
    slots[args.at(0)] = sdk::Tensor(x.desc(), std::move(out));
  }
  return sdk::Status::invalid_argument("the program has no 'ret' line");
}

}  // namespace graphsplit::examples
