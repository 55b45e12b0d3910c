// The runtime: executes a compiled .om on the engine plugins.
//
// At load, every graph is cut into engine segments (maximal runs of consecutive operators of one engine in
// topological order, control-flow nodes excluded) and each segment is compiled once by its engine. A run
// walks the root graph: segments run on their engines; PartitionedCall, If, Case, Loop and Scan are
// interpreted here, recursing into their subgraphs. Static-shape segments own a memory arena planned at
// compile time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

struct RuntimeOptions {
  // GE's ExpandPartitionedCallToParentGraph, generalised (reference R18): every PartitionedCall is replaced
  // by its subgraph's nodes with `<call>_pre_noop` / `<call>_post_noop`, data outputs and control edges
  // transferred.
  bool expand_partitioned_calls = false;
  // Iterations one Loop node may run before the run fails (a data-dependent trip count can be absurd).
  int64_t max_loop_iterations = 100'000'000;
  // The largest tensor a kernel may allocate (bytes; 0 = no limit). Reaches the engines as the session option
  // sdk::option::kMaxTensorBytes when they are loaded (open_model_session).
  int64_t max_tensor_bytes = 0;
  // Independent steps of a graph (engine segments, control-flow nodes reading nothing from each other) may
  // run at once on the kernels' thread budget, GE's multi-stream idea; the results are the same either way.
  // kAuto times both ways on a graph's first runs and keeps the faster (segments that scale with threads gain
  // nothing from sharing them; single-threaded work such as recurrences does).
  enum class Concurrency { kAuto, kAlways, kNever };
  Concurrency concurrency = Concurrency::kAuto;
};

// "auto", "always" or "never" (omrun --concurrent, Session(concurrent=)); anything else is an error naming
// the option and the value.
sdk::Status parse_concurrency(const std::string& text, RuntimeOptions::Concurrency* out);

struct RuntimeIo {
  std::string name;
  sdk::TensorDesc desc;
};

// One compiled engine segment and what it cost.
struct SegmentStats {
  std::string graph;
  std::string engine;
  std::string first_node;
  size_t nodes = 0;
  bool static_shape = false;  // an arena was planned
  bool whole_graph = false;   // the engine compiled the graph itself, not a copy of the segment
  int64_t arena_bytes = 0;
  uint64_t calls = 0;
  double milliseconds = 0;
};

// A graph whose steps are not one chain, and how its independent steps ran (RuntimeOptions::concurrency).
struct ConcurrencyStats {
  std::string graph;
  size_t steps = 0;
  uint64_t concurrent_runs = 0;  // runs with its independent steps at once
  // kAuto's trial: the fastest run each way (ms; 0 before it was timed) and the choice (-1: still trying).
  double sequential_ms = 0, concurrent_ms = 0;
  int choice = -1;
};

// One timed span of a run, for omrun --profile (Chrome trace events, docs/visualisation.md). Compact, so that
// tracing costs little: names and shapes are formatted only when the trace is written (Runtime::trace_json).
struct TraceEvent {
  enum class Kind : uint8_t { kRun, kSegment, kControl, kKernel };
  Kind kind = Kind::kRun;
  int depth =
      0;  // 0: a step of the root graph; deeper: inside a PartitionedCall, branch or body, or a segment
  double start_us = 0;  // since TraceSink::origin
  double duration_us = 0;
  const sdk::Node* node = nullptr;  // control step or kernel
  int64_t index = 0;                // run number, or the segment (kernel: the segment it ran in)
  size_t inputs = 0, outputs = 0;   // offsets of their shapes in TraceSink::shapes
};

struct TraceSink {
  std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  std::vector<TraceEvent> events;
  // Per recorded tensor list: count, then per tensor dtype (-1: absent), rank (-2: unknown), dims.
  std::vector<int64_t> shapes;
  double since_origin_us(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double, std::micro>(t - origin).count();
  }
  void add_run(int64_t number, std::chrono::steady_clock::time_point start,
               std::chrono::steady_clock::time_point end) {
    TraceEvent e;
    e.depth = -1;
    e.start_us = since_origin_us(start);
    e.duration_us = std::chrono::duration<double, std::micro>(end - start).count();
    e.index = number;
    events.push_back(e);
  }
};

class Runtime {
 public:
  // Engine objects by GE engine name (`_op_engine_name`); nullptr if there is none.
  using EngineLookup = std::function<sdk::Engine*(const std::string& name)>;

  // Takes the model; compiles every segment. `source` names the model in messages.
  static sdk::Status create(std::unique_ptr<sdk::Graph> root, const std::string& source,
                            const EngineLookup& engines, const RuntimeOptions& options,
                            std::unique_ptr<Runtime>* out);
  ~Runtime();

  // The inputs the caller supplies (root Data in `index` order; the gear shape input is filled in by the
  // runtime) and the model outputs.
  const std::vector<RuntimeIo>& inputs() const;
  const std::vector<RuntimeIo>& outputs() const;

  // Checks count, data type, rank and static dimensions of the inputs, then runs. Not reentrant.
  sdk::Status run(const std::vector<sdk::Tensor>& inputs, std::vector<sdk::Tensor>* outputs);

  // For a model compiled with gears: per gear, the dims of each input of inputs() (the gear's values in its
  // dynamic dimensions, 1 in any other unknown one). Empty for a model without gears.
  sdk::Status gear_input_dims(std::vector<std::vector<std::vector<int64_t>>>* gears) const;

  const std::vector<SegmentStats>& segment_stats() const;
  // The graphs with independent steps, by name.
  std::vector<ConcurrencyStats> concurrency_stats() const;
  // Records every segment, control-flow step and kernel call of later runs into `sink` (nullptr: stop).
  void set_trace(TraceSink* sink);
  // The sink as Chrome trace-event JSON; `model` names the process.
  std::string trace_json(const TraceSink& sink, const std::string& model) const;
  // Per segment and per engine: calls, total and mean milliseconds, arena bytes.
  std::string timing_summary() const;
  // A line per graph with independent steps: how they ran and why (part of timing_summary).
  std::string concurrency_summary() const;
  // The planned arena bytes, the tensor peak and the process's peak resident size (one line).
  std::string memory_summary() const;
  // Forgets the calls and times counted so far (omrun --warmup: the summary covers the timed runs only).
  void reset_timing();
  const sdk::Graph& graph() const;

 private:
  struct Impl;
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The outputs of a root graph: its NetOutput's inputs, named by the NetOutput's output_names.
std::vector<RuntimeIo> graph_outputs(const sdk::Graph& g);

// Flattens every PartitionedCall of the model into its parent graph
// (RuntimeOptions::expand_partitioned_calls).
sdk::Status expand_partitioned_calls(sdk::Graph& root, size_t* expanded);

}  // namespace graphsplit
