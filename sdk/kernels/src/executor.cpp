// compile_graph: binds kernels to a standalone graph and plans its memory.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "fused.h"
#include "graphsplit/kernels/kernels.h"
#include "graphsplit/sdk/ir/sym.h"
#include "graphsplit/sdk/ir/topo.h"
#include "infer/infer.h"
#include "kernel.h"
#include "layout.h"

namespace graphsplit::kernels {
namespace {

constexpr int64_t kAlignment = 64;
constexpr int64_t kMaxArenaBytes = int64_t{1} << 40;
// Integer inputs up to this many elements reach the shape rules as values (what inference propagates).
constexpr int64_t kRuleValueElements = 64;

// GRAPHSPLIT_CHECK_SHAPES=1: every kernel output is checked against the shape inference wrote at compile
// time (numbers, and symbolic dimensions evaluated under the sizes seen so far in the run). The proof that
// the shape rules and the kernels agree (tests set it); off by default because it costs a lookup per value.
bool check_shapes_requested() {
  const char* v = std::getenv("GRAPHSPLIT_CHECK_SHAPES");
  return v && *v && std::string_view(v) != "0";
}

// GRAPHSPLIT_FUSE_ELEMENTWISE=0 runs every elementwise operator on its own (fused.h): the same bits.
bool fusion_enabled() {
  const char* v = std::getenv("GRAPHSPLIT_FUSE_ELEMENTWISE");
  return !v || std::string_view(v) != "0";
}

// GRAPHSPLIT_CHANNELS_LAST=0 keeps every value in ONNX's layout (layout.h): the same bits, for comparing
// speed and for tests that prove the bits are the same.
bool channels_last_enabled() {
  const char* v = std::getenv("GRAPHSPLIT_CHANNELS_LAST");
  return !v || std::string_view(v) != "0";
}

class ShapeChecker {
 public:
  Status check(const sdk::Node& node, size_t o, const Tensor& t) {
    const sdk::Shape& want = node.output_desc(o).shape;
    if (node.output_desc(o).kind != sdk::ValueKind::kTensor || want.is_unknown_rank()) return Status::ok();
    const Dims& got = t.desc().shape.dims();
    bool ok = got.size() == want.rank();
    for (size_t i = 0; ok && i < got.size(); ++i) {
      if (want.dims()[i] >= 0) {
        ok = want.dims()[i] == got[i];
      } else if (i < want.dim_names().size() && !want.dim_names()[i].empty()) {
        ok = bind(want.dim_names()[i], got[i]);
      }
    }
    if (ok) return Status::ok();
    return Status::internal("node '" + node.name() + "' (" + node.type() + "): output " + std::to_string(o) +
                            " has shape " + dims_string(got) + " but shape inference said " +
                            want.to_string());
  }

 private:
  // A plain symbol takes the first size it is seen with; an expression must evaluate to the size once
  // every symbol in it has one.
  bool bind(const std::string& text, int64_t size) {
    auto e = table_.parse(text);
    if (!e) return true;  // a name that is not an expression: nothing to check
    if (e->kind() == sdk::DimExpr::Kind::kSymbol) {
      auto [it, inserted] = values_.emplace(e->name(), size);
      return inserted || it->second == size;
    }
    try {
      auto v = table_.evaluate(*e, values_);
      return !v || *v == size;
    } catch (const sdk::SymOverflow&) {
      return false;
    }
  }
  sdk::SymbolTable table_;
  std::unordered_map<std::string, int64_t> values_;
};

struct Step {
  const sdk::Node* node = nullptr;
  KernelFn fn = nullptr;
  infer::RuleFn rule = nullptr;  // the operator's shape rule; nullptr for control flow
  int opset = 17;
  // The rule's answer when it follows from the input dims and constants known at compile time; it holds for
  // a run whose inputs have `fixed_dims` (else the rule runs again on the real inputs).
  bool fixed = false;
  std::vector<Dims> fixed_dims;
  std::vector<RuleShape> fixed_shapes;
  std::vector<int> in_slots;            // -1: omitted optional input
  std::vector<int> out_slots;           // -1: output nobody reads
  std::vector<int> release;             // slots whose last reader is this step
  mutable uint64_t calls = 0;           // KernelContext::call
  uint64_t constant_inputs = 0;         // KernelContext::constant_inputs
  mutable std::shared_ptr<void> state;  // KernelContext::state
  bool channels_last = false;           // KernelContext::channels_last
  bool conversion = false;              // a layout conversion (its node is the executable's own)
  const sdk::Node* declared = nullptr;  // a fused step: the node whose declared output it computes
  // Inputs read with other dims than their slot's: a channels-last step's broadcast operand whose bytes
  // need no move (layout::relabel_only), or a conversion's operand padded to rank 4.
  std::vector<std::pair<size_t, Dims>> relabel;
};

thread_local const KernelObserver* kernel_observer = nullptr;

std::atomic<int64_t> heap_live{0}, heap_peak{0};

// A kernel output outside the arena (64-byte aligned, as Tensor::allocate's), counted while it lives.
Tensor counted_tensor(sdk::TensorDesc desc, size_t bytes, char** writable) {
  const auto size = static_cast<int64_t>(bytes);
  constexpr std::align_val_t kAlign{kAlignment};
  std::shared_ptr<char[]> buffer(new (kAlign) char[std::max<size_t>(bytes, 1)], [size](char* p) {
    heap_live -= size;
    operator delete[](p, kAlign);
  });
  const int64_t live = heap_live += size;
  for (int64_t peak = heap_peak; live > peak && !heap_peak.compare_exchange_weak(peak, live);) {
  }
  *writable = buffer.get();
  return Tensor(std::move(desc), std::shared_ptr<const char>(buffer, buffer.get()), bytes);
}

// The memory static executables plan their values in, one buffer per thread shared by all of them: an
// executable's planned values are dead once its run returns (inputs, constants and results never live there)
// and runs on one thread never nest (control flow is the runtime's), so the engine segments of a model need
// the largest of their arenas, not the sum. Executables hold the buffer they last ran on; it is freed when no
// executable or value holds it, and a larger one replaces it for the thread when an executable needs more.
struct SharedArena {
  std::shared_ptr<char[]> buffer;
  char* base = nullptr;
  int64_t size = 0;
};

thread_local std::weak_ptr<SharedArena> thread_arena;

std::shared_ptr<SharedArena> arena_for(int64_t bytes) {
  std::shared_ptr<SharedArena> current = thread_arena.lock();
  if (current && current->size >= bytes) return current;
  auto grown = std::make_shared<SharedArena>();
  grown->size = std::max(bytes, current ? current->size : 0);
  grown->buffer = std::make_shared_for_overwrite<char[]>(static_cast<size_t>(grown->size + kAlignment));
  const auto address = reinterpret_cast<uintptr_t>(grown->buffer.get());
  grown->base = grown->buffer.get() + ((kAlignment - address % kAlignment) % kAlignment);
  thread_arena = grown;
  return grown;
}

class GraphExecutable final : public sdk::Executable, private OutputAllocator {
 public:
  std::vector<int> input_slots;  // by Data index
  std::vector<int> result_slots;
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<Step> steps;
  size_t num_slots = 0;
  // Arena plan (static-shape graphs): byte offset per slot, -1 for values that live on the heap.
  std::vector<int64_t> offset;
  std::vector<int64_t> planned_bytes;
  int64_t arena_size = -1;  // -1: shapes resolved at run time
  int64_t max_tensor_bytes = 0;
  bool check_shapes = false;
  std::shared_ptr<SharedArena> arena;        // the one of the thread of the last run
  std::unique_ptr<sdk::Graph> layout_nodes;  // the nodes of conversion and fused steps

  int64_t arena_bytes() const override { return arena_size; }

  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
    if (inputs.size() != input_slots.size()) {
      return Status::invalid_argument("the compiled subgraph takes " + std::to_string(input_slots.size()) +
                                      " inputs, got " + std::to_string(inputs.size()));
    }
    if (arena_size > 0) {
      try {
        arena = arena_for(arena_size);
      } catch (const std::bad_alloc&) {
        return Status::resource_exhausted("out of memory for the planned " + std::to_string(arena_size) +
                                          " bytes of intermediate values");
      }
    }
    std::vector<Tensor> values(num_slots);
    for (size_t i = 0; i < inputs.size(); ++i) values[input_slots[i]] = inputs[i];
    for (const auto& [slot, t] : constants) values[slot] = t;
    KernelContext ctx;
    std::vector<Tensor> produced;
    ctx.outputs = &produced;
    ctx.allocator = this;
    ctx.max_tensor_bytes = max_tensor_bytes;
    std::optional<ShapeChecker> checker;
    if (check_shapes) checker.emplace();
    RuleScratch scratch;
    std::vector<Tensor> relabelled;
    for (const Step& step : steps) {
      ctx.node = step.node;
      ctx.opset = step.opset;
      ctx.call = step.calls++;
      ctx.constant_inputs = step.constant_inputs;
      ctx.state = &step.state;
      ctx.channels_last = step.channels_last;
      ctx.inputs.assign(step.in_slots.size(), nullptr);
      for (size_t i = 0; i < step.in_slots.size(); ++i) {
        if (step.in_slots[i] >= 0) ctx.inputs[i] = &values[step.in_slots[i]];
      }
      if (!step.relabel.empty()) relabel_inputs(step, ctx, &relabelled);
      produced.clear();
      current_ = &step;
      const KernelObserver* observer = kernel_observer;
      const auto start =
          observer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      Status s;
      try {
        s = shapes_by_rule(step, ctx, scratch);
        if (s.is_ok()) s = step.fn(ctx);
      } catch (const RuleMismatch& e) {
        s = Status::internal(e.message);
      } catch (const MissingInput& e) {
        s = Status::invalid_argument("input " + std::to_string(e.index) + " is required but missing");
      } catch (const std::bad_alloc&) {
        s = Status::resource_exhausted("out of memory");
      } catch (const std::length_error& e) {
        s = Status::resource_exhausted(e.what());
      } catch (const std::exception& e) {
        s = Status::internal(std::string("kernel threw: ") + e.what());
      }
      if (!s.is_ok()) {
        if (s.message().rfind("node '", 0) == 0) return s;
        return {s.code(), "node '" + step.node->name() + "' (" + step.node->type() + "): " + s.message()};
      }
      for (size_t o = 0; o < step.out_slots.size(); ++o) {
        if (step.out_slots[o] < 0) continue;
        if (o >= produced.size() ||
            (!produced[o].data() && produced[o].desc().dtype == DataType::kUndefined)) {
          return Status::internal("node '" + step.node->name() + "' (" + step.node->type() + "): output " +
                                  std::to_string(o) + " was not produced");
        }
        if (checker && !step.conversion) GS_RETURN_IF_ERROR(check_shape(*checker, step, o, produced[o]));
      }
      if (observer) (*observer)({step.node, start, std::chrono::steady_clock::now(), &ctx.inputs, &produced});
      for (size_t o = 0; o < step.out_slots.size(); ++o)
        if (step.out_slots[o] >= 0) values[step.out_slots[o]] = std::move(produced[o]);
      for (int r : step.release) values[r] = Tensor();
    }
    outputs->clear();
    for (int r : result_slots) outputs->push_back(values[r]);
    return Status::ok();
  }

 private:
  const Step* current_ = nullptr;

  static void relabel_inputs(const Step& step, KernelContext& ctx, std::vector<Tensor>* relabelled) {
    relabelled->assign(step.relabel.size(), Tensor());
    for (size_t k = 0; k < step.relabel.size(); ++k) {
      const auto& [i, dims] = step.relabel[k];
      (*relabelled)[k] = *ctx.inputs[i];
      (*relabelled)[k].mutable_desc().shape = sdk::Shape(dims);
      ctx.inputs[i] = &(*relabelled)[k];
    }
  }

  // A channels-last output is checked in the layout the node declares.
  static Status check_shape(ShapeChecker& checker, const Step& step, size_t o, const Tensor& t) {
    const sdk::Node& node = step.declared ? *step.declared : *step.node;
    if (!step.channels_last || o != 0) return checker.check(node, o, t);
    Tensor logical = t;
    logical.mutable_desc().shape = sdk::Shape(layout::to_first(dims_of(t)));
    return checker.check(node, o, logical);
  }

  // One symbol table per run, made when a rule first needs it, so runs never accumulate expressions.
  struct RuleScratch {
    std::unique_ptr<sdk::SymbolTable> sym;
    std::vector<infer::SymValue> values;
    std::vector<const infer::SymValue*> inputs;
    std::vector<RuleShape> shapes;
  };

  static bool inputs_have(const Step& step, const KernelContext& ctx, const std::vector<Dims>& dims) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      const bool present = ctx.inputs[i] != nullptr;
      if (present != (step.in_slots[i] >= 0) || (present && dims_of(*ctx.inputs[i]) != dims[i])) return false;
    }
    return true;
  }

  // Hands the kernel what its shape rule says of its outputs for these inputs.
  static Status shapes_by_rule(const Step& step, KernelContext& ctx, RuleScratch& scratch) {
    ctx.rule = nullptr;
    if (!step.rule) return Status::ok();
    if (step.fixed && inputs_have(step, ctx, step.fixed_dims)) {
      ctx.rule = &step.fixed_shapes;
      return Status::ok();
    }
    // A channels-last step's rule answer is the permuted one made at compile time for its declared dims.
    if (step.channels_last)
      return Status::invalid_argument("the inputs do not have the shapes the segment was compiled for");
    if (!scratch.sym) scratch.sym = std::make_unique<sdk::SymbolTable>();
    scratch.values.clear();
    scratch.values.reserve(ctx.inputs.size());
    scratch.inputs.assign(ctx.inputs.size(), nullptr);
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      if (!ctx.inputs[i]) continue;
      if (ctx.inputs[i]->desc().kind != sdk::ValueKind::kTensor) return Status::ok();
      scratch.values.push_back(infer::value_from_tensor(*scratch.sym, *ctx.inputs[i], kRuleValueElements));
      scratch.inputs[i] = &scratch.values.back();
    }
    GS_RETURN_IF_ERROR(infer::evaluate_rule(step.rule, *step.node, step.opset, *scratch.sym, scratch.inputs,
                                            &scratch.shapes));
    ctx.rule = &scratch.shapes;
    return Status::ok();
  }

  Tensor allocate(size_t output, sdk::TensorDesc desc, size_t bytes, char** writable) override {
    if (arena_size > 0 && output < current_->out_slots.size()) {
      const int slot = current_->out_slots[output];
      if (slot >= 0 && offset[slot] >= 0 && static_cast<int64_t>(bytes) <= planned_bytes[slot]) {
        *writable = arena->base + offset[slot];
        return Tensor(std::move(desc), std::shared_ptr<const char>(arena->buffer, *writable), bytes);
      }
    }
    return counted_tensor(std::move(desc), bytes, writable);
  }
};

// First-fit over a free list, in program order: a value is placed when produced and freed after its last
// read.
void plan_arena(GraphExecutable& exe, const std::vector<int64_t>& bytes_of_slot,
                const std::vector<bool>& heap) {
  exe.offset.assign(exe.num_slots, -1);
  exe.planned_bytes = bytes_of_slot;
  std::map<int64_t, int64_t> free_blocks;  // offset -> size
  int64_t top = 0;
  auto take = [&](int64_t size) {
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
      if (it->second < size) continue;
      const int64_t at = it->first, rest = it->second - size;
      free_blocks.erase(it);
      if (rest > 0) free_blocks[at + size] = rest;
      return at;
    }
    const int64_t at = top;
    top += size;
    return at;
  };
  auto give_back = [&](int64_t at, int64_t size) {
    auto [it, inserted] = free_blocks.emplace(at, size);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_blocks.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_blocks.erase(next);
    }
    if (it != free_blocks.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_blocks.erase(it);
      }
    }
  };
  auto rounded = [](int64_t b) {
    return (std::max<int64_t>(b, 1) + kAlignment - 1) / kAlignment * kAlignment;
  };
  for (const Step& step : exe.steps) {
    for (int slot : step.out_slots) {
      if (slot < 0 || heap[slot]) continue;
      exe.offset[slot] = take(rounded(bytes_of_slot[slot]));
    }
    // Outputs nobody reads die at once; released inputs after.
    for (int slot : step.out_slots) {
      if (slot >= 0 && !heap[slot] &&
          std::find(step.release.begin(), step.release.end(), slot) != step.release.end())
        give_back(exe.offset[slot], rounded(bytes_of_slot[slot]));
    }
    for (int slot : step.release) {
      if (exe.offset[slot] < 0 ||
          std::find(step.out_slots.begin(), step.out_slots.end(), slot) != step.out_slots.end())
        continue;
      give_back(exe.offset[slot], rounded(bytes_of_slot[slot]));
    }
  }
  if (top > kMaxArenaBytes) {  // planned values may each fit yet add up past any machine: no arena then
    exe.offset.assign(exe.num_slots, -1);
    return;
  }
  exe.arena_size = top;
}

// compile_graph's steps: bind a kernel per operator, order the inputs, collect the results, plan lifetimes
// and, when every computed value has a static shape, the arena.
class Compiler {
 public:
  Compiler(const sdk::Graph& graph, GraphExecutable* exe)
      : graph_(graph), exe_(*exe), node_slots_(graph.id_bound(), {-1, 0}) {}

  Status bind(const std::vector<sdk::Node*>& order, const std::function<Status(const sdk::Node&)>& accept) {
    const int opset = onnx_opset_of(graph_.is_root() ? graph_ : *graph_.root());
    // Steps are a few hundred bytes each: grown by doubling, a 100k-node graph's list was copied into new
    // blocks again and again, and the old ones stayed in the heap (omrun's peak on the 100k bench chain: 241
    // MB that way, 210 MB reserved).
    exe_.steps.reserve(order.size());
    slot_desc_.reserve(order.size());
    for (const sdk::Node* n : order) {
      if (n->type() == sdk::op::kData) {
        data_.push_back(n);
        new_slot(n, 0);
      } else if (n->type() == sdk::op::kConst) {
        const sdk::AttrValue* v = n->attrs().get(sdk::attr::kValue);
        if (!v || !v->as_tensor()) return Status::invalid_argument("Const '" + n->name() + "' has no value");
        const int slot = new_slot(n, 0);
        constant_index_[slot] = exe_.constants.size();
        exe_.constants.emplace_back(slot, *v->as_tensor());
      } else if (n->type() == sdk::op::kNetOutput) {
        if (net_output_)
          return Status::invalid_argument("graph '" + graph_.name() + "' has two NetOutput nodes");
        net_output_ = n;
      } else {
        GS_RETURN_IF_ERROR(bind_operator(n, opset, accept));
      }
    }
    return Status::ok();
  }

  // Inputs in Data `index` order, which must be 0..k-1.
  Status order_inputs() {
    std::sort(data_.begin(), data_.end(), [](const sdk::Node* a, const sdk::Node* b) {
      return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
    });
    for (size_t i = 0; i < data_.size(); ++i) {
      if (data_[i]->attrs().get_int(sdk::attr::kIndex, -1) != static_cast<int64_t>(i))
        return Status::invalid_argument("graph '" + graph_.name() + "': Data indices are not 0.." +
                                        std::to_string(data_.size() - 1));
      exe_.input_slots.push_back(slot_of(data_[i], 0));
    }
    return Status::ok();
  }

  // Results outlive the run, so they live on the heap.
  Status collect_results(std::vector<bool>* heap) {
    if (!net_output_) return Status::invalid_argument("graph '" + graph_.name() + "' has no NetOutput");
    heap->assign(exe_.num_slots, false);
    for (const sdk::OutPort& p : net_output_->inputs()) {
      if (!p.valid())
        return Status::invalid_argument("graph '" + graph_.name() + "': NetOutput has an open input");
      const int s = slot_of(p.node, p.index);
      exe_.result_slots.push_back(s);
      (*heap)[s] = true;
    }
    return Status::ok();
  }

  // Each value is released after its last reader (a value never read, after the step computing it).
  void plan_lifetimes(const std::vector<bool>& heap) {
    std::vector<int> last_reader(exe_.num_slots, -1);
    std::vector<bool> read(exe_.num_slots, false);
    for (size_t k = 0; k < exe_.steps.size(); ++k) {
      for (int s : exe_.steps[k].in_slots) {
        if (s >= 0) {
          last_reader[s] = static_cast<int>(k);
          read[s] = true;
        }
      }
    }
    for (size_t k = 0; k < exe_.steps.size(); ++k) {
      for (int& s : exe_.steps[k].out_slots) {
        if (!read[s] && !heap[s]) last_reader[s] = static_cast<int>(k);
      }
    }
    for (size_t s = 0; s < exe_.num_slots; ++s) {
      if (last_reader[s] >= 0 && !heap[s]) exe_.steps[last_reader[s]].release.push_back(static_cast<int>(s));
    }
  }

  // The bytes of every computed value when all have a static shape; false otherwise. Inputs and constants are
  // never in the arena. A declared shape too large to plan (a corrupt model, found by fuzzing) leaves the
  // segment dynamic: the kernels then allocate what the real shapes need, and the size limit applies.
  bool static_bytes(std::vector<int64_t>* bytes) const {
    bytes->assign(exe_.num_slots, 0);
    for (const Step& step : exe_.steps) {
      for (int s : step.out_slots) {
        const sdk::TensorDesc& d = *slot_desc_[s];
        const int64_t size = sdk::element_size(d.dtype);
        if (!d.is_static() || size == 0) return false;
        const std::optional<int64_t> count = d.shape.num_elements();
        if (!count || *count > kMaxArenaBytes / size) return false;
        (*bytes)[s] = *count * size;
      }
    }
    return true;
  }

  // Runs the channels-last regions (layout.h) of a static graph: each step that can runs in that layout when
  // it is a convolution or one of its inputs already is; conversion steps go where a value changes layout.
  void channels_last(std::vector<bool>* heap) {
    for (const Step& step : exe_.steps)
      if (!step.node->subgraphs().empty()) return;  // a body may read an outer value in its ONNX layout
    // Only a convolution starts a region: without one, nothing would change but a copy of every step.
    if (std::none_of(exe_.steps.begin(), exe_.steps.end(), [](const Step& step) {
          return layout::role_of(*step.node, step.opset) == layout::Role::kConv;
        }))
      return;
    std::vector<Step> steps = std::move(exe_.steps);
    exe_.steps.clear();
    exe_.steps.reserve(steps.size());  // conversions may add a few
    last_.assign(exe_.num_slots, false);
    for (Step& step : steps) {
      if (runs_channels_last(step)) {
        make_channels_last(step);
      } else {
        for (int& s : step.in_slots)
          if (s >= 0 && last_[s]) s = converted(s, false, step.node->name());
      }
      exe_.steps.push_back(std::move(step));
    }
    for (size_t r = 0; r < exe_.result_slots.size(); ++r) {
      const int s = exe_.result_slots[r];
      if (s < 0 || !last_[s]) continue;
      const int plain = converted(s, false, "result" + std::to_string(r));
      exe_.result_slots[r] = plain;
      heap->resize(exe_.num_slots, false);
      (*heap)[plain] = true;
      (*heap)[s] = std::count(exe_.result_slots.begin(), exe_.result_slots.end(), s) > 0;
    }
    heap->resize(exe_.num_slots, false);
  }

  // Runs each chain of float elementwise steps, each the only reader of the one before, as one fused step
  // (fused.h) where the last of them ran.
  void fuse_elementwise(const std::vector<bool>& heap) {
    std::vector<int> readers(exe_.num_slots, 0), reader_step(exe_.num_slots, -1);
    for (size_t k = 0; k < exe_.steps.size(); ++k)
      for (int s : exe_.steps[k].in_slots)
        if (s >= 0) {
          ++readers[s];
          reader_step[s] = static_cast<int>(k);
        }
    std::vector<Step> steps = std::move(exe_.steps);
    exe_.steps.clear();
    std::vector<int> chain_of(steps.size(), -1);  // the chain a step ends
    std::vector<bool> absorbed(steps.size(), false);
    std::vector<std::vector<size_t>> chains;
    size_t absorbed_steps = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
      if (absorbed[k] || !fusable(steps[k])) continue;
      std::vector<size_t> chain = {k};
      while (chain.size() < kMaxChain) {
        const int v = steps[chain.back()].out_slots[0];
        if (readers[v] != 1 || heap[v]) break;
        const size_t r = static_cast<size_t>(reader_step[v]);
        if (absorbed[r] || !fusable(steps[r]) ||
            steps[r].fixed_shapes[0].dims != steps[k].fixed_shapes[0].dims ||
            steps[r].channels_last != steps[k].channels_last)
          break;
        chain.push_back(r);
      }
      if (chain.size() < 2) continue;
      for (size_t m : chain) absorbed[m] = true;
      chain_of[chain.back()] = static_cast<int>(chains.size());
      absorbed_steps += chain.size();
      chains.push_back(std::move(chain));
    }
    // Exactly what is kept: both lists live at once, and a Step is 224 bytes (a chain of 1M Relus fuses into
    // 1M / 16 steps; reserving the old count kept 220 MB of room for nothing).
    exe_.steps.reserve(steps.size() - absorbed_steps + chains.size());
    for (size_t k = 0; k < steps.size(); ++k) {
      if (chain_of[k] >= 0) {
        exe_.steps.push_back(fused_step(steps, chains[chain_of[k]]));
      } else if (!absorbed[k]) {
        exe_.steps.push_back(std::move(steps[k]));
      }
    }
  }

 private:
  static constexpr size_t kMaxChain = 16;

  // Every operand a float of the step's output size or a single value; the output's dims known.
  bool fusable(const Step& step) const {
    const fused::Op op = fused::op_of(*step.node, step.opset);
    if (op == fused::Op::kNone || !step.fixed || !step.relabel.empty() || step.out_slots.size() != 1 ||
        step.out_slots[0] < 0 || step.fixed_shapes.size() != 1 ||
        step.in_slots.size() < fused::operands_of(op))
      return false;
    if (!float_tensor(step.out_slots[0], 64)) return false;
    const Dims& dims = step.fixed_shapes[0].dims;
    for (size_t i = 0; i < step.in_slots.size(); ++i) {
      const int s = step.in_slots[i];
      if (i >= fused::operands_of(op)) {  // Clip's bounds: its kernel ignores any but float scalars
        if (s >= 0 && (!float_tensor(s, 64) || num_elements(static_dims(s)) != 1)) return false;
        continue;
      }
      if (s < 0 || !float_tensor(s, 64)) return false;
      const Dims& d = static_dims(s);
      if (d != dims && num_elements(d) != 1) return false;
    }
    return true;
  }

  fused::Instruction instruction(const Step& member) const {
    fused::Instruction in;
    in.op = fused::op_of(*member.node, member.opset);
    in.node = member.node;
    in.opset = member.opset;
    KernelContext attrs;
    attrs.node = member.node;
    if (in.op == fused::Op::kHardSigmoid) {
      std::tie(in.alpha, in.beta) = hard_sigmoid_params(attrs);
    } else if (in.op == fused::Op::kLeakyRelu) {
      in.alpha = leaky_relu_alpha(attrs);
    }
    return in;
  }

  Step fused_step(std::vector<Step>& steps, const std::vector<size_t>& chain) {
    auto program = std::make_shared<fused::Program>();
    program->code.reserve(chain.size());
    Step step;
    auto input_index = [&](int slot) {
      auto it = std::find(step.in_slots.begin(), step.in_slots.end(), slot);
      if (it != step.in_slots.end()) return static_cast<int>(it - step.in_slots.begin());
      step.in_slots.push_back(slot);
      return static_cast<int>(step.in_slots.size() - 1);
    };
    for (size_t m = 0; m < chain.size(); ++m) {
      const Step& member = steps[chain[m]];
      fused::Instruction in = instruction(member);
      const int previous = m ? steps[chain[m - 1]].out_slots[0] : -1;
      for (size_t i = 0; i < member.in_slots.size(); ++i) {
        const int s = member.in_slots[i];
        if (i >= fused::operands_of(in.op)) {
          in.params.push_back(s >= 0 ? input_index(s) : -1);
        } else if (s == previous) {
          in.operands.push_back({false, static_cast<int>(m - 1)});
        } else {
          in.operands.push_back({true, input_index(s)});
        }
      }
      program->code.push_back(std::move(in));
    }
    const Step& last = steps[chain.back()];
    program->dims = last.fixed_shapes[0].dims;
    step.node = own_node(steps[chain.front()].node->name() + "+" + std::to_string(chain.size() - 1),
                         "FusedElementwise", 0);
    step.fn = fused::run;
    step.opset = last.opset;
    step.out_slots = last.out_slots;
    step.channels_last = last.channels_last;
    step.declared = last.node;
    step.state = std::move(program);
    return step;
  }

  // A node of the executable's own (a conversion or a fused chain), named uniquely after `name`.
  const sdk::Node* own_node(const std::string& name, std::string_view type, size_t inputs) {
    if (!exe_.layout_nodes) exe_.layout_nodes = sdk::Graph::create("layout");
    return exe_.layout_nodes->add_node(exe_.layout_nodes->unique_node_name(name), type, inputs, 1);
  }

  const Dims& static_dims(int slot) const { return slot_desc_[slot]->shape.dims(); }

  bool float_tensor(int slot, size_t max_rank) const {
    const sdk::TensorDesc& d = *slot_desc_[slot];
    return d.kind == sdk::ValueKind::kTensor && d.dtype == DataType::kFloat && d.is_static() &&
           d.shape.rank() <= max_rank;
  }

  bool runs_channels_last(const Step& step) const {
    const layout::Role role = layout::role_of(*step.node, step.opset);
    if (role == layout::Role::kNone || !step.fixed || step.out_slots.size() != 1 || step.out_slots[0] < 0 ||
        step.in_slots.empty() || step.in_slots[0] < 0)
      return false;
    const int y = step.out_slots[0];
    if (!float_tensor(y, 4) || static_dims(y).size() != 4) return false;
    const int x = step.in_slots[0];
    if (role == layout::Role::kConv) {
      if (step.in_slots.size() < 2 || step.in_slots[1] < 0 || !float_tensor(x, 4) ||
          !float_tensor(step.in_slots[1], 4))
        return false;
      const bool bias = step.in_slots.size() > 2 && step.in_slots[2] >= 0;
      const Dims xd = last_[x] ? layout::to_first(static_dims(x)) : static_dims(x);
      return conv_channels_last(*step.node, step.opset, xd, static_dims(step.in_slots[1]), static_dims(y),
                                bias);
    }
    if (role == layout::Role::kGlobalPool)
      return last_[x] && float_tensor(x, 4) && static_dims(x).size() == 4;
    if (role == layout::Role::kMaxPool)
      return last_[x] && float_tensor(x, 4) && static_dims(x).size() == 4 &&
             max_pool_channels_last(*step.node, step.opset, layout::to_first(static_dims(x)), static_dims(y));
    bool any_last = false;
    for (int s : step.in_slots) {
      if (s < 0 || !float_tensor(s, 4)) return false;
      any_last = any_last || last_[s];
    }
    return any_last;
  }

  // Which inputs hold a channels-last value when the step runs channels-last.
  static bool layout_input(const Step& step, size_t i) {
    return i == 0 || layout::role_of(*step.node, step.opset) == layout::Role::kElementwise;
  }

  void make_channels_last(Step& step) {
    for (size_t i = 0; i < step.in_slots.size(); ++i) {
      int& s = step.in_slots[i];
      if (s < 0) continue;
      if (!layout_input(step, i) || last_[s] || static_dims(s).empty()) continue;
      const Dims p = layout::padded4(static_dims(s));
      if (const Tensor* c = constant_of(s)) {
        s = converted_constant(s, *c);
      } else if (layout::relabel_only(p)) {
        step.relabel.emplace_back(i, layout::to_last(p));
      } else {
        s = converted(s, true, step.node->name());
      }
    }
    for (size_t i = 0; i < step.in_slots.size(); ++i)
      if (step.in_slots[i] >= 0) step.fixed_dims[i] = in_dims(step, i);
    step.channels_last = true;
    step.fixed_shapes[0].dims = layout::to_last(step.fixed_shapes[0].dims);
    const int y = step.out_slots[0];
    sdk::TensorDesc d = *slot_desc_[y];
    d.shape = sdk::Shape(layout::to_last(static_dims(y)));
    slot_desc_[y] = &own_descs_.emplace_back(std::move(d));
    last_[y] = true;
  }

  Dims in_dims(const Step& step, size_t i) const {
    for (const auto& [k, dims] : step.relabel)
      if (k == i) return dims;
    return static_dims(step.in_slots[i]);
  }

  int converted_constant(int slot, const Tensor& c) {
    auto it = constant_last_.find(slot);
    if (it != constant_last_.end()) return it->second;
    Tensor t = layout::permute_constant(c, true);
    const int s = static_cast<int>(exe_.num_slots++);
    slot_desc_.push_back(&own_descs_.emplace_back(t.desc()));
    last_.push_back(true);
    constant_index_[s] = exe_.constants.size();
    exe_.constants.emplace_back(s, std::move(t));
    constant_last_[slot] = s;
    return s;
  }

  // The slot holding `slot`'s value in the other layout, made by a conversion step the first time it is
  // needed.
  int converted(int slot, bool to_last, const std::string& reader) {
    auto& memo = to_last ? to_last_ : to_first_;
    auto it = memo.find(slot);
    if (it != memo.end()) return it->second;
    const std::string type = to_last ? "ToChannelsLast" : "ToChannelsFirst";
    Step step;
    step.node = own_node(reader + "/" + type, type, 1);
    step.fn = to_last ? layout::to_channels_last : layout::to_channels_first;
    step.conversion = true;
    step.in_slots = {slot};
    const Dims& dims = static_dims(slot);
    if (to_last && dims.size() < 4) step.relabel.emplace_back(0, layout::padded4(dims));
    sdk::TensorDesc d = *slot_desc_[slot];
    d.shape = sdk::Shape(to_last ? layout::to_last(layout::padded4(dims)) : layout::to_first(dims));
    const int s = static_cast<int>(exe_.num_slots++);
    slot_desc_.push_back(&own_descs_.emplace_back(std::move(d)));
    last_.push_back(to_last);
    step.out_slots = {s};
    exe_.steps.push_back(std::move(step));
    memo[slot] = s;
    return s;
  }

  int new_slot(const sdk::Node* n, int o) {
    const int s = static_cast<int>(exe_.num_slots++);
    auto& [first, count] = node_slots_[n->id()];
    if (count == 0) first = s;
    if (count != o || first + o != s) throw std::logic_error("kernel compiler: output slots out of order");
    ++count;
    slot_desc_.push_back(&n->output_desc(o));
    return s;
  }

  // A value's slot; an output that was given none (a Data's second output, in a corrupt graph) is refused.
  int slot_of(const sdk::Node* node, int index) const {
    const bool here = node->owner() == &graph_;
    const auto [first, count] = here ? node_slots_[node->id()] : std::pair<int, int>{-1, 0};
    if (index < 0 || index >= count)
      throw std::out_of_range("node '" + node->name() + "' output " + std::to_string(index) +
                              " has no value slot");
    return first + index;
  }

  Status bind_operator(const sdk::Node* n, int opset, const std::function<Status(const sdk::Node&)>& accept) {
    Step step;
    step.node = n;
    step.opset = opset;
    const std::string domain = n->attrs().get_string(sdk::attr::kDomain);
    step.fn = find_kernel(n->type(), domain);
    if (!step.fn) {
      return Status::unsupported("node '" + n->name() + "': no CPU kernel for operator " +
                                 (domain.empty() ? "" : domain + "::") + n->type());
    }
    GS_RETURN_IF_ERROR(accept(*n));
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      step.in_slots.push_back(p.valid() ? slot_of(p.node, p.index) : -1);
      if (i < 64 && step.in_slots.back() >= 0 && constant_of(step.in_slots.back()))
        step.constant_inputs |= uint64_t{1} << i;
    }
    for (size_t o = 0; o < n->num_outputs(); ++o) step.out_slots.push_back(new_slot(n, static_cast<int>(o)));
    if (n->subgraphs().empty()) step.rule = infer::find_rule(n->type(), domain);
    fix_rule(step);
    exe_.steps.push_back(std::move(step));
    return Status::ok();
  }

  // Evaluates the step's rule once here when the declared input dims and the constants decide every output
  // dim; a rule that needs a value only known at run time leaves the step to evaluate it per run.
  void fix_rule(Step& step) {
    if (!step.rule) return;
    sdk::SymbolTable& sym = sym_;
    std::vector<infer::SymValue> values(step.in_slots.size());
    std::vector<const infer::SymValue*> inputs(step.in_slots.size(), nullptr);
    for (size_t i = 0; i < step.in_slots.size(); ++i) {
      const int s = step.in_slots[i];
      if (s < 0) {
        step.fixed_dims.emplace_back();
        continue;
      }
      const sdk::TensorDesc& d = *slot_desc_[s];
      if (d.kind != sdk::ValueKind::kTensor || !d.is_static()) return;
      const Tensor* c = constant_of(s);
      values[i] = c ? infer::value_from_tensor(sym, *c, kRuleValueElements) : infer::value_from_desc(sym, d);
      inputs[i] = &values[i];
      step.fixed_dims.push_back(c ? dims_of(*c) : d.shape.dims());
    }
    try {
      if (!infer::evaluate_rule(step.rule, *step.node, step.opset, sym, inputs, &step.fixed_shapes).is_ok())
        return;
    } catch (const std::exception&) {
      return;  // the run reports it, naming the node
    }
    step.fixed = std::all_of(step.fixed_shapes.begin(), step.fixed_shapes.end(),
                             [](const RuleShape& r) { return r.known; });
  }

  const Tensor* constant_of(int slot) const {
    auto it = constant_index_.find(slot);
    return it == constant_index_.end() ? nullptr : &exe_.constants[it->second].second;
  }

  const sdk::Graph& graph_;
  GraphExecutable& exe_;
  // By Node::id(): the node's first output slot and how many it has (a node's outputs get consecutive slots).
  std::vector<std::pair<int, int>> node_slots_;
  std::vector<const sdk::Node*> data_;
  const sdk::Node* net_output_ = nullptr;
  // A slot's descriptor: its node's output descriptor, or one of own_descs_ (layout changes, conversions).
  // The nodes outlive the compile; copies would cost an allocation per value.
  std::vector<const sdk::TensorDesc*> slot_desc_;
  std::deque<sdk::TensorDesc> own_descs_;
  // Every step's fixed rule is evaluated in one table: static dims intern only constants, and a table per
  // step cost an allocation or more per operator.
  sdk::SymbolTable sym_;
  std::unordered_map<int, size_t> constant_index_;
  // The channels-last pass: which slots hold that layout, and the conversions made so far.
  std::vector<bool> last_;
  std::unordered_map<int, int> to_last_, to_first_, constant_last_;
};

}  // namespace

Status compile_graph(const sdk::Graph& graph, const std::function<Status(const sdk::Node&)>& accept,
                     const CompileOptions& options, std::unique_ptr<sdk::Executable>* out) {
  quiet_blas();
  std::vector<sdk::Node*> order;
  GS_RETURN_IF_ERROR(sdk::topological_order(graph, sdk::TopoSortMode::kStableRDFS, &order));
  auto exe = std::make_unique<GraphExecutable>();
  exe->max_tensor_bytes = options.max_tensor_bytes;
  exe->check_shapes = check_shapes_requested();
  Compiler c(graph, exe.get());
  GS_RETURN_IF_ERROR(c.bind(order, accept));
  GS_RETURN_IF_ERROR(c.order_inputs());
  std::vector<bool> heap;
  GS_RETURN_IF_ERROR(c.collect_results(&heap));
  std::vector<int64_t> bytes;
  const bool planned = c.static_bytes(&bytes);
  if (planned && channels_last_enabled()) {
    c.channels_last(&heap);
    c.static_bytes(&bytes);
  }
  if (planned && fusion_enabled()) c.fuse_elementwise(heap);
  c.plan_lifetimes(heap);
  if (planned) plan_arena(*exe, bytes, heap);
  *out = std::move(exe);
  return Status::ok();
}

}  // namespace graphsplit::kernels

#include "graphsplit/kernels/kernel_engine.h"

namespace graphsplit::kernels {

KernelEngine::KernelEngine(const sdk::PluginContext& context, std::string engine_name)
    : sdk::Engine(context), engine_name_(std::move(engine_name)) {
  options_.max_tensor_bytes =
      std::max<int64_t>(context.ge_options().get_int(sdk::option::kMaxTensorBytes, 0), 0);
}

Status KernelEngine::compile(const sdk::Graph& subgraph, std::unique_ptr<sdk::Executable>* out) {
  return compile_graph(
      subgraph,
      [&](const sdk::Node& n) {
        if (table().find(n.type())) return Status::ok();
        return Status::unsupported("node '" + n.name() + "': engine " + engine_name_ +
                                   " does not declare operator " + n.type() + " in its op table");
      },
      options_, out);
}

TensorMemory tensor_memory() {
  return {heap_live.load(), heap_peak.load()};
}

void reset_tensor_memory_peak() {
  heap_peak = heap_live.load();
}

void set_kernel_observer(const KernelObserver* observer) {
  kernel_observer = observer;
}

}  // namespace graphsplit::kernels
