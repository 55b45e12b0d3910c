#include "template_engine.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::examples {
namespace {

// One instruction per node: op, destination slot, source slots. Slots 0..k-1 are the subgraph's inputs in
// Data `index` order; `results` lists the output slots.
struct Instruction {
  std::string op;
  size_t dst = 0;
  std::vector<size_t> src;
};

class Program final : public sdk::Executable {
 public:
  size_t num_inputs = 0;
  std::vector<Instruction> code;
  std::vector<size_t> results;

  sdk::Status run(const std::vector<sdk::Tensor>& inputs, std::vector<sdk::Tensor>* outputs) override {
    if (inputs.size() != num_inputs) {
      return sdk::Status::invalid_argument("the program expects " + std::to_string(num_inputs) +
                                           " inputs, got " + std::to_string(inputs.size()));
    }
    std::vector<sdk::Tensor> slots(inputs);
    auto value = [](const sdk::Tensor& t, size_t i) {
      float f;
      std::memcpy(&f, t.data() + i * sizeof(float), sizeof f);
      return f;
    };
    for (const Instruction& ins : code) {
      const sdk::Tensor& x = slots.at(ins.src.at(0));
      char* out = nullptr;
      sdk::Tensor result = sdk::Tensor::allocate(x.desc(), x.size_bytes(), &out);
      for (size_t i = 0; i < x.size_bytes() / sizeof(float); ++i) {
        float r = value(x, i);
        if (ins.op == "Relu")
          r = r > 0 ? r : 0;
        else if (ins.op == "Add")
          r += value(slots.at(ins.src.at(1)), i);
        else
          r *= value(slots.at(ins.src.at(1)), i);
        std::memcpy(out + i * sizeof(float), &r, sizeof r);
      }
      if (slots.size() <= ins.dst) slots.resize(ins.dst + 1);
      slots[ins.dst] = std::move(result);
    }
    outputs->clear();
    for (size_t r : results) outputs->push_back(slots.at(r));
    return sdk::Status::ok();
  }
};

}  // namespace

// [snippet:check-support]
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
// [/snippet:check-support]

sdk::Status TemplateEngine::compile(const sdk::Graph& subgraph, std::unique_ptr<sdk::Executable>* out) {
  std::vector<sdk::Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(subgraph, sdk::TopoSortMode::kStableRDFS, &order));
  auto program = std::make_unique<Program>();
  std::map<const sdk::Node*, size_t> slot;
  std::vector<const sdk::Node*> data;
  for (const sdk::Node* n : order) {
    if (n->type() == sdk::op::kData) data.push_back(n);
  }
  std::sort(data.begin(), data.end(), [](const sdk::Node* a, const sdk::Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  for (const sdk::Node* d : data) slot[d] = program->num_inputs++;
  size_t next = program->num_inputs;
  for (const sdk::Node* n : order) {
    if (n->type() == sdk::op::kData) continue;
    if (n->type() == sdk::op::kNetOutput) {
      for (const sdk::OutPort& p : n->inputs()) program->results.push_back(slot.at(p.node));
      continue;
    }
    sdk::SupportVerdict v = check_support(*n);
    if (!v.supported)
      return sdk::Status::unsupported("node '" + n->name() + "' (" + n->type() + "): " + v.detail);
    Instruction ins{n->type(), next++, {}};
    for (const sdk::OutPort& p : n->inputs()) ins.src.push_back(slot.at(p.node));
    slot[n] = ins.dst;
    program->code.push_back(std::move(ins));
  }
  *out = std::move(program);
  return sdk::Status::ok();
}

}  // namespace graphsplit::examples
