// The inferred set of the online mode (seed 2.4 / 5.7, reference 8.1): which nodes of a graph can be compiled
// now, given the shapes of its inputs and the values of those inputs a shape depends on.
//
// The graph is copied, its inputs bound, and the project's shape inference run on the copy (values flow;
// nothing is folded). Then, in topological order, a node is
//   - known:   its inputs are known and so are its output shapes;
//   - a cut:   its inputs are known but an output shape is not, because it depends on data (NonZero's count,
//              a Reshape target computed from data, an If on a data condition whose branches disagree, a Loop
//              with a data trip count). The node is in the slice; its consumers wait for its values;
//   - pulled:  it stays in the slice with a dynamic output (no shape rule, a non-tensor value, cut policy
//              "never", or a cut collapsed by the adaptive rule) and its consumers may follow it;
//   - waiting: it needs a value from a cut, directly or through another waiting node.
// The slice is every node that is not waiting: closed upstream by construction. A Const whose consumers all
// wait goes with them.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/ir/tensor.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::jit {

enum class CutPolicy { kAuto, kData, kNever };
const char* to_string(CutPolicy p);

// One graph input as a run supplies it: the tensor's descriptor and, for an input whose value a shape depends
// on (see value_inputs), the tensor itself.
struct InputBinding {
  sdk::TensorDesc desc;
  std::optional<sdk::Tensor> value;
};

struct SliceNote {
  std::string node;
  std::string reason;
};

struct InferredSet {
  std::unordered_set<const sdk::Node*> nodes;  // nodes of the graph given to compute_inferred_set
  std::vector<std::string> cuts;               // nodes whose outputs the remaining graph waits for
  std::vector<SliceNote> notes;                // cuts, pulled nodes and the first waiting nodes, with why
  size_t waiting = 0;
};

// Sets the graph's Data to the bound descriptors; a bound value turns its Data into a Const of the same name.
sdk::Status bind_inputs(sdk::Graph& g, const std::vector<InputBinding>& inputs);

// The Data (by `index`) whose values some shape in `g` depends on: inputs reaching, through shape arithmetic,
// an input such as Reshape's shape, Expand's, Tile's, Range's, Slice's starts, TopK's k, a Loop trip count or
// an If condition. Only integer and bool inputs qualify.
std::vector<bool> value_inputs(const sdk::Graph& g);

// `bound`, when given, receives the copy the decision was made on (inputs bound, shapes inferred, nothing
// folded): a caller compiling the whole graph can start from it.
sdk::Status compute_inferred_set(const sdk::Graph& g, const std::vector<InputBinding>& inputs,
                                 CutPolicy policy, const std::set<std::string>& collapsed, InferredSet* out,
                                 std::unique_ptr<sdk::Graph>* bound = nullptr);

}  // namespace graphsplit::jit
