// The online mode (seed 2.4 / 5.7; docs/jit.md): a model is compiled slice by slice as the shapes of its
// values become known, and each compiled slice is kept in a cache keyed by the values it specialises on.
//
// An execution point is a graph still to run: the model, or the remaining graph of a cut. On a run it takes
// its inputs' unknown dimensions (and the values of small integer inputs some shape depends on) as the key of
// its cache. A miss infers shapes with those inputs bound, cuts after the data-dependent nodes (the inferred
// set), compiles the slice through the pipeline and the runtime exactly as atc and omrun would for those
// shapes, and runs it; the remaining graph is the next execution point, fed by the slice's outputs. Different
// input shapes may slice differently: the points form a tree.
//
// Threads: run() may be called concurrently. Compiled variants are immutable and reference-counted; a miss is
// compiled once per key (other callers wait for it; a failure reaches every waiter and the next run tries
// again); nothing is compiled under a cache lock, so a hit never waits for another key's compile. Runs of one
// variant are serialised (the runtime's executables are not reentrant).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "graphsplit/sdk/ir/tensor.h"
#include "jit/inferred_set.h"
#include "runtime/runtime.h"

namespace graphsplit::jit {

struct JitOptions {
  // The model (an .onnx, or a gear-free .om when `om` is set), pipeline, plugin paths, GE options and input
  // shapes, as atc takes them.
  CompileRequest compile;
  bool om = false;
  RuntimeOptions runtime;
  CutPolicy cut = CutPolicy::kAuto;
  // A cut whose output sizes took more than this many values is merged away (auto policy), and so is the
  // value key of an input that took more than this many values.
  int dynamic_after = 2;
  size_t cache_per_slice = 16;             // compiled variants kept per execution point (LRU)
  int64_t cache_bytes = int64_t{1} << 32;  // all variants together (least recently used go first)
};

struct JitMiss {
  int slice = 0;
  std::string symbol;  // what differed from the slice's latest variant ("first run" for its first)
  std::string before, after;
};

struct JitSliceStats {
  int id = 0;
  int parent = -1;                   // -1: the model itself
  size_t nodes = 0;                  // operators (not Data, Const or NetOutput) of the graph it runs
  std::vector<std::string> symbols;  // what its key holds, in key order
  std::vector<std::vector<int64_t>> variants;  // the key of every variant now cached, most recent first
  std::vector<std::string> cuts;  // of the latest plan: nodes whose values the next point waits for
  size_t slice_nodes = 0;         // of the latest plan
  uint64_t compiles = 0, hits = 0, misses = 0, runs = 0, evictions = 0, failed = 0;
  double compile_ms = 0, run_ms = 0;
  double infer_ms = 0, pipeline_ms = 0,
         load_ms = 0;  // the parts of compile_ms: inferred set, pipeline, runtime
};

struct JitStats {
  uint64_t runs = 0, compiles = 0, cache_hits = 0, cache_misses = 0, evictions = 0, inferences = 0;
  int64_t cached_bytes = 0;
  std::vector<JitMiss> misses;         // the first 1000
  std::vector<std::string> collapsed;  // cuts and value keys the adaptive rule merged away
  std::vector<JitSliceStats> slices;   // by id
};

// What the first execution point would do with inputs of these shapes (a dry run: nothing is compiled).
struct JitPlan {
  size_t slice_nodes = 0, remaining_nodes = 0;
  std::vector<std::string> cuts;
  std::vector<SliceNote> notes;
};

class JitSession {
 public:
  static sdk::Status open(const JitOptions& options, std::unique_ptr<JitSession>* out);
  ~JitSession();

  const std::vector<RuntimeIo>& inputs() const;
  const std::vector<RuntimeIo>& outputs() const;
  // Thread-safe. An error names the slice (and, from the runtime, the node).
  sdk::Status run(const std::vector<sdk::Tensor>& inputs, std::vector<sdk::Tensor>* outputs);
  sdk::Status plan(const std::vector<sdk::Tensor>& inputs, JitPlan* out) const;
  JitStats stats() const;
  // The report as JSON (omrun --jit_report). Without timing it depends only on the model, the options and
  // the sequence of input shapes.
  std::string report_json(bool with_timing) const;

  // The key a run with these inputs probes at the first execution point, and whether it is cached: the guard
  // check alone (the benchmark's subject).
  bool probe(const std::vector<sdk::Tensor>& inputs) const;

  struct Impl;

 private:
  explicit JitSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// GE's option routing between execution points (reference 8.3): the first point takes every option, a middle
// one none of the first-point or last-point options, the last one none of the first-point options.
std::vector<std::pair<std::string, std::string>> route_options(
    const std::vector<std::pair<std::string, std::string>>& options, bool first, bool last);

}  // namespace graphsplit::jit
