// The runtime's internals, shared by its four files: runtime_plan.cpp (cutting graphs into engine segments
// and compiling them), runtime_interpreter.cpp (running plans and the control-flow nodes), runtime_expand.cpp
// (PartitionedCall expansion) and runtime.cpp (the facade). Not installed.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/ir/graph.h"
#include "runtime/runtime.h"

namespace graphsplit {

using sdk::Graph;
using sdk::Node;
using sdk::Status;
using sdk::Tensor;

namespace runtime_detail {
bool is_framework_op(const std::string& type);
int64_t elements(const sdk::Shape& s);
std::string describe(const Node& n);
// The model's ai.onnx opset (root attribute `_onnx_opset_import`, "domain:version"); 17 when absent.
int onnx_opset(const Graph& root);
Tensor make_scalar_i64(int64_t v);
Tensor make_scalar_bool(bool v);
bool read_bool(const Tensor& t);
int64_t read_int(const Tensor& t);
// The Const node behind a value, followed into and out of graphs whose inputs are the same on every run:
// PartitionedCall (in and out), If and Case branches (their Data read the parent node's input of their
// `_parent_node_index`). Loop and Scan bodies are not followed: their inputs change per iteration. nullptr
// when the value is not a constant.
const Node* constant_source(sdk::OutPort p);
}  // namespace runtime_detail

struct Segment {
  // The standalone subgraph the engine compiled (kept for its node pointers); null when the engine compiled
  // the graph itself (Runtime::Impl::whole_graph).
  std::unique_ptr<Graph> graph;
  std::unique_ptr<sdk::Executable> executable;
  size_t stats_index = 0;
};

struct GraphPlan;

// The control-flow nodes the interpreter runs, resolved from the op type once, at planning.
enum class ControlKind { kNoOp, kPartitionedCall, kIf, kCase, kLoop, kScan, kSequenceMap, kUnsupported };
ControlKind control_kind(std::string_view type);

struct Step {
  Segment* segment = nullptr;  // an engine segment, or
  const Node* node = nullptr;  // a control-flow node run here
  ControlKind control = ControlKind::kUnsupported;
  bool scan8 = false;  // Scan before opset 9: batched, input 0 is sequence_lens
  std::vector<const GraphPlan*> subplans;
  std::vector<int> in_slots;   // -1: omitted optional input
  std::vector<int> out_slots;  // one per output
  std::vector<int> release;
};

// Which steps wait for which (runtime_concurrent.cpp): made for plans where some steps are independent of
// each other, which then may run at once.
struct StepGraph {
  std::vector<std::vector<int>> successors;  // per step: the steps reading one of its outputs
  std::vector<int> predecessors;             // per step: how many distinct steps it reads from
  std::vector<int> readers;                  // per slot: the steps reading it (0 for results: never released)
  std::vector<std::vector<int>> reads;       // per step: the slots it reads, each once
  // RuntimeOptions::Concurrency::kAuto's trial: the first runs one after another, the next at once (the first
  // of each kind untimed: it makes primitives, arenas, workers), then the faster way for good.
  struct Trial {
    int runs = 0;
    double sequential_ms = 1e300, concurrent_ms = 1e300;  // the fastest timed run of each kind
    int choice = -1;                                      // 0 sequential, 1 concurrent
  };
  mutable Trial trial;
  // Per step: how long its last concurrent run took (ms; -1 before it ran), so that short steps do not take a
  // share of the threads a long one could use.
  mutable std::vector<double> last_ms;
  mutable uint64_t concurrent_runs = 0;
};

struct GraphPlan {
  const Graph* graph = nullptr;
  size_t num_slots = 0;
  std::vector<std::pair<int64_t, int>> data;  // (parent input index or root `index`, slot)
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<Step> steps;
  std::vector<int> results;             // NetOutput inputs
  std::unique_ptr<StepGraph> parallel;  // null when every step depends on the one before
};

// Made once per plan after its steps and results: null when the steps form one chain. `step_of` gives the
// step of each node that runs, by Node::id() (-1: none), as Slots holds it (control edges between steps order
// them as data does).
std::unique_ptr<StepGraph> make_step_graph(const GraphPlan& plan, const std::vector<int>& step_of);

class WorkerPool;

// Value slots of the plan being built: one per node output, a node's outputs consecutive. Per-node tables are
// vectors by Node::id() of the plan's graph (every value a node reads is in its own graph): maps keyed by
// node cost a tree node and a rebalance per value, which a million-node graph's load felt.
struct Slots {
  Slots(GraphPlan* p, const Graph& g)
      : plan(p), node_slots(g.id_bound(), {-1, 0}), step_of(g.id_bound(), -1) {}
  GraphPlan* plan = nullptr;
  std::vector<std::pair<int, int>> node_slots;  // first slot, how many outputs have one
  std::vector<int> step_of;
  // Scratch of plan_segment and build_segment, kept here so that a graph of many segments does not pay a
  // graph-sized table per segment: which nodes are in the segment, and their copies.
  std::vector<char> inside;
  std::vector<Node*> copy_of;
  int add(const Node* n, int output);
  int slot(const Node* n, int index) const;  // throws std::out_of_range for an output without one
  std::vector<int> inputs_of(const Node* n) const {
    std::vector<int> in;
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      in.push_back(p.valid() ? slot(p.node, p.index) : -1);
    }
    return in;
  }
};

struct Runtime::Impl {
  Impl();  // both in runtime_concurrent.cpp, where the pool is complete
  ~Impl();
  std::unique_ptr<Graph> root;
  std::string source;
  int64_t max_loop_iterations = 100'000'000;
  RuntimeOptions::Concurrency concurrency = RuntimeOptions::Concurrency::kAuto;
  std::unique_ptr<WorkerPool> pool;  // made at the first run with independent steps and threads to spare
  std::atomic<int> schedules_running{0};
  std::vector<std::unique_ptr<Segment>> segments;
  std::map<const Graph*, std::unique_ptr<GraphPlan>> plans;
  std::vector<SegmentStats> stats;
  std::vector<RuntimeIo> inputs, outputs;
  std::vector<const Node*> root_data;  // by index
  const Node* shape_data = nullptr;    // the multi-batch gear shape input, filled in here
  int64_t shape_data_index = -1;
  TraceSink* trace = nullptr;
  int trace_depth = 0;
  int64_t traced_segment = -1;  // the segment whose kernels the observer sees
  const kernels::KernelObserver kernel_observer = [this](const kernels::KernelCall& c) { trace_kernel(c); };

  Status plan_graph(const Graph& g, const EngineLookup& engines);
  Status check_value_kinds(const std::vector<Node*>& order) const;
  Status plan_inputs(const Graph& g, std::vector<Node*>* order, Slots* slots);
  Status plan_control(Node* n, const EngineLookup& engines, Slots* slots);
  Status plan_segment(const Graph& g, const std::vector<Node*>& order, size_t* k, const EngineLookup& engines,
                      Slots* slots);
  Status plan_results(const Graph& g, const Node* net_output, Slots* slots);
  // A graph compiled as it is: its Data in `index` order (the executable's inputs) and its NetOutput (whose
  // inputs are the executable's outputs).
  struct WholeGraph {
    std::vector<const Node*> inputs;
    const Node* net_output = nullptr;
  };
  bool whole_graph(const Graph& g, size_t members, WholeGraph* out) const;
  Status copy_segment(const Graph& g, const std::vector<Node*>& members, Slots* slots,
                      std::unique_ptr<Graph>* out);
  Status build_segment(const Graph& g, const std::vector<Node*>& members, const std::string& engine_name,
                       sdk::Engine* engine, Slots* slots, bool whole, Segment** out);
  Status run_plan(const GraphPlan& plan, const std::vector<const Tensor*>& parent_inputs,
                  std::vector<Tensor>* results);
  Status run_step(const Step& step, std::vector<Tensor>& values);
  Status run_concurrently(const GraphPlan& plan, std::vector<Tensor>& values);
  Status run_steps(const GraphPlan& plan, std::vector<Tensor>& values);
  Status run_control(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_if(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_case(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_loop(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_scan(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_scan8(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  Status run_sequence_map(const Step& step, const std::vector<const Tensor*>& in, std::vector<Tensor>* out);
  // "<source>: node 'x' (Loop) in graph 'g': <what>", the one prefix of every run-time error about a node.
  Status node_error(sdk::StatusCode code, const Node& n, const std::string& what) const;
  Status need_input(const Node& n, const std::vector<const Tensor*>& in, size_t i) const;
  Status scan_length(const Node& n, const std::vector<const Tensor*>& in, size_t n_state, int64_t m,
                     std::vector<int64_t>* axis, int64_t* length) const;
  Status stack_scan_outputs(const Node& n, std::vector<std::vector<Tensor>>& scans,
                            std::vector<Tensor>* out) const;
  void trace_kernel(const kernels::KernelCall& call);
  void trace_step(const Step& step, std::chrono::steady_clock::time_point t0, const std::vector<Tensor>& in,
                  const std::vector<const Tensor*>& in_ptrs, const std::vector<Tensor>& out);
  Status fill_shape_data(const std::vector<Tensor>& user_inputs, Tensor* shape);
  // Where each unknown dimension of a gear input sits in a gear: an input with as many unknown dimensions as
  // a gear has values takes the whole gear (--dynamic_batch_size: every input's batch is the one value),
  // others take consecutive values (--dynamic_dims), as sdk::distribute_gears gave them at compile time.
  struct GearSlot {
    size_t data_index;  // root Data index
    int64_t axis;
    size_t position;  // in the gear
  };
  std::vector<GearSlot> gear_slots;  // found once, at load (shape_data's attributes do not change)
  size_t gear_length = 0;
  void find_gear_slots();
};

}  // namespace graphsplit
