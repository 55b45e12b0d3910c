// Comparing tensors the way the ONNX backend tests do: floating point within |got - want| <= atol + rtol *
// |want| (NaN equals NaN), everything else exactly; shapes and data types must match.
#pragma once

#include <string>

#include "graphsplit/sdk/ir/tensor.h"

namespace graphsplit {

struct CompareResult {
  bool equal = true;
  std::string detail;  // the first difference in type or shape, or the worst element: index, got, expected
  double max_abs_error = 0;
};

CompareResult compare_tensors(const sdk::Tensor& got, const sdk::Tensor& want, double rtol, double atol);

// Deterministic pseudo-random contents for `desc` (static shape): floats in [-1, 1), integers in [0, 10),
// bools.
sdk::Tensor random_tensor(const sdk::TensorDesc& desc, uint64_t seed);

}  // namespace graphsplit
