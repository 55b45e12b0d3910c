// Shape inference, value propagation and constant folding over the SDK IR, with the kernels' own semantics.
//
// One pass over the root graph in topological order (a node's subgraphs when it is reached): every operator
// with a rule gets output types and shapes (numbers where they are known, symbolic expressions where not: see
// sdk/ir/sym.h), small integer tensors (shape tensors) get their element values, and a node whose outputs are
// fully known constants becomes Const nodes (folded with the project's CPU kernels). What the graph already
// says is kept unless inference knows more; a static dimension that contradicts the inferred one is an error
// naming the node and both shapes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graphsplit/kernels/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::kernels {

struct ShapeInferenceOptions {
  // Replace nodes whose outputs are known constants by Const nodes. Off, the graph keeps its nodes; constant
  // values still flow through inference (a Resize size computed in float is still known).
  bool fold_constants = true;
  // The largest tensor evaluation may create (bytes): weights are never duplicated wholesale.
  int64_t fold_max_bytes = int64_t{1} << 20;
  // Integer tensors up to this many elements carry their values (shape tensors).
  int64_t max_value_elements = 64;
};

struct ShapeInferenceStats {
  int64_t nodes = 0;           // operators visited
  int64_t folded = 0;          // operators replaced by Const nodes
  int64_t refined_dims = 0;    // dimensions that were unknown before and are numbers now
  int64_t symbolic_dims = 0;   // unknown dimensions described by an expression, after the pass
  int64_t changed_values = 0;  // values whose descriptor the pass changed
  std::map<std::string, int64_t>
      no_rule;                           // operators without a rule, by type (their outputs keep their types)
  std::vector<std::string> assumptions;  // conditions the model relies on that inference could not prove
  // If/Case branches that cannot run with these shapes (so are never taken), with the reason.
  std::vector<std::string> dead_branches;
};

GS_KERNELS_API sdk::Status infer_shapes(sdk::Graph& root, const ShapeInferenceOptions& options,
                                        ShapeInferenceStats* stats);

// Is there a shape rule for this operator (`domain` empty for ai.onnx)?
GS_KERNELS_API bool has_shape_rule(std::string_view op_type, std::string_view domain = {});

}  // namespace graphsplit::kernels
