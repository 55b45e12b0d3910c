// Reference CPU kernels with ONNX semantics, shared by every engine plugin that runs on the host CPU.
//
// libgraphsplit_kernels.so ships with the SDK but apart from the IR library, which stays dependency-free:
// this one links a BLAS. An engine binds the subset of operators its op table declares by passing `accept` to
// compile_graph(); the runtime never calls kernels except through an engine.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::kernels {

// Compiles a standalone graph (Data nodes with `index`, Const, operators, one NetOutput) into an executable.
// Every operator must have a kernel and be accepted; the first that is not is an error naming it. When every
// value has a static shape, one memory arena is planned here for the intermediate values and reused by every
// run (Executable::arena_bytes reports its size); otherwise shapes are resolved and memory allocated per run.
// The graph's `_onnx_opset_import` attribute selects opset-dependent semantics (default opset 17).
sdk::Status compile_graph(const sdk::Graph& graph, const std::function<sdk::Status(const sdk::Node&)>& accept,
                          std::unique_ptr<sdk::Executable>* out);

// Is there a kernel for this operator (`domain` empty for ai.onnx)?
bool has_kernel(std::string_view op_type, std::string_view domain = {});

// Every operator with a kernel, sorted ("Abs", ..., "graphsplit::MapIndex").
std::vector<std::string> kernel_names();

// Threads the BLAS may use (1 = single-threaded); 0 restores the library default.
void set_blas_threads(int threads);

// The largest tensor a kernel may allocate (bytes; 0 = no limit, the default). A larger one fails the run
// with resource_exhausted naming the node instead of exhausting the machine (omrun --max_tensor_bytes,
// fuzzing).
void set_max_tensor_bytes(int64_t bytes);

}  // namespace graphsplit::kernels
