// Reference CPU kernels with ONNX semantics, shared by every engine plugin that runs on the host CPU.
//
// libgraphsplit_kernels.so ships with the SDK but apart from the IR library, which stays dependency-free:
// this one links a BLAS. An engine binds the subset of operators its op table declares by passing `accept` to
// compile_graph(); the runtime never calls kernels except through an engine.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/kernels/export.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::kernels {

// Compiles a standalone graph (Data nodes with `index`, Const, operators, one NetOutput) into an executable.
// Every operator must have a kernel and be accepted; the first that is not is an error naming it. When every
// value has a static shape, one memory arena is planned here for the intermediate values (Executable::
// arena_bytes reports its size); every such executable runs it in one buffer per thread, the largest arena's
// size, shared with the others. Otherwise shapes are resolved and memory allocated per run.
// The graph's `_onnx_opset_import` attribute selects opset-dependent semantics (default opset 17).
struct CompileOptions {
  // The largest tensor a kernel may allocate (bytes; 0 = no limit). A larger one fails the run with
  // resource_exhausted naming the node instead of exhausting the machine (omrun --max_tensor_bytes, fuzzing).
  int64_t max_tensor_bytes = 0;
};
GS_KERNELS_API sdk::Status compile_graph(const sdk::Graph& graph,
                                         const std::function<sdk::Status(const sdk::Node&)>& accept,
                                         const CompileOptions& options,
                                         std::unique_ptr<sdk::Executable>* out);

// Is there a kernel for this operator (`domain` empty for ai.onnx)?
GS_KERNELS_API bool has_kernel(std::string_view op_type, std::string_view domain = {});

// Every operator with a kernel, sorted ("Abs", ..., "graphsplit::MapIndex").
GS_KERNELS_API std::vector<std::string> kernel_names();

// Threads the BLAS may use (1 = single-threaded); 0 restores the library default. Process-wide, because
// OpenBLAS's thread pool is.
GS_KERNELS_API void set_blas_threads(int threads);

// The threads kernels called on this thread may use: its share (below) when it has one, else the budget set
// by set_blas_threads (0 there: every processor). At least 1.
GS_KERNELS_API int thread_budget();
// Kernels called on this thread use `threads` until the share is set back (0: no share of its own); returns
// the share it replaces. The runtime gives each of the segments it runs at once a share. Results do not
// depend on it: a value is computed the same way whatever the thread count.
GS_KERNELS_API int set_thread_share(int threads);

// Bytes of the tensors kernels allocated outside the planned arenas (dynamic segments' values, results),
// process-wide: live now and the most live at once since the last reset (omrun --timing). The arenas
// themselves are Executable::arena_bytes.
struct TensorMemory {
  int64_t live = 0, peak = 0;
};
GS_KERNELS_API TensorMemory tensor_memory();
GS_KERNELS_API void reset_tensor_memory_peak();

// One kernel call of an executable made by compile_graph(), as a profiler sees it. Valid only during the
// observer's call.
struct KernelCall {
  const sdk::Node* node = nullptr;
  std::chrono::steady_clock::time_point start, end;
  const std::vector<const sdk::Tensor*>* inputs = nullptr;  // null entries: omitted optional inputs
  const std::vector<sdk::Tensor>* outputs = nullptr;
};
using KernelObserver = std::function<void(const KernelCall&)>;

// Calls `observer` after every successful kernel call on this thread until it is set back to nullptr (omrun
// --profile). Thread-local, so that concurrent sessions do not see each other's calls; off, it costs one
// pointer test per kernel call. The observer must outlive the setting.
GS_KERNELS_API void set_kernel_observer(const KernelObserver* observer);

}  // namespace graphsplit::kernels
