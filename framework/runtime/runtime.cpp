#include "runtime/runtime.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>

#include "runtime/runtime_impl.h"

namespace graphsplit {

using namespace runtime_detail;

// ---------------------------------------------------------------- Runtime
Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() {
  // Executables go before anything else (they may come from plugins whose engines the caller owns).
  if (impl_) impl_->segments.clear();
}

Status parse_concurrency(const std::string& text, RuntimeOptions::Concurrency* out) {
  using C = RuntimeOptions::Concurrency;
  static const std::pair<const char*, C> kNames[] = {
      {"auto", C::kAuto}, {"always", C::kAlways}, {"never", C::kNever}};
  for (const auto& [name, value] : kNames) {
    if (text == name) {
      *out = value;
      return Status::ok();
    }
  }
  return Status::invalid_argument("'" + text + "' is not one of 'auto', 'always', 'never'");
}

Status Runtime::create(std::unique_ptr<Graph> root, const std::string& source, const EngineLookup& engines,
                       const RuntimeOptions& options, std::unique_ptr<Runtime>* out) {
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  impl->max_loop_iterations = options.max_loop_iterations;
  impl->concurrency = options.concurrency;
  if (options.expand_partitioned_calls) {
    size_t expanded = 0;
    Status s = expand_partitioned_calls(*root, &expanded);
    if (!s.is_ok()) return {s.code(), source + ": " + s.message()};
  }
  impl->root = std::move(root);
  const Graph& g = *impl->root;
  for (const Node* n : g.nodes()) {
    if (n->type() != sdk::op::kData) continue;
    const int64_t index = n->attrs().get_int(sdk::attr::kIndex, -1);
    if (index < 0) return Status::invalid_argument(source + ": root Data '" + n->name() + "' has no index");
    if (impl->root_data.size() <= static_cast<size_t>(index)) impl->root_data.resize(index + 1, nullptr);
    if (impl->root_data[index])
      return Status::invalid_argument(source + ": two root Data nodes have index " + std::to_string(index));
    impl->root_data[index] = n;
  }
  for (size_t i = 0; i < impl->root_data.size(); ++i) {
    const Node* d = impl->root_data[i];
    if (!d) return Status::invalid_argument(source + ": no root Data has index " + std::to_string(i));
    if (d->num_outputs() != 1)
      return Status::invalid_argument(source + ": root Data '" + d->name() + "' has " +
                                      std::to_string(d->num_outputs()) + " outputs instead of 1");
    if (d->attrs().get_bool(sdk::attr::kIsMultiBatchShapeData, false)) {
      impl->shape_data = d;
      impl->shape_data_index = static_cast<int64_t>(i);
      continue;
    }
    RuntimeIo io{d->output_name(0).empty() ? d->name() : d->output_name(0), d->output_desc(0)};
    // A gear input accepts any gear: its dynamic dimensions are unknown to the caller.
    if (const sdk::AttrValue* origin = d->attrs().get(sdk::attr::kMbatchOriginInputDims);
        origin && origin->as_ints())
      io.desc.shape = sdk::Shape(*origin->as_ints());
    impl->inputs.push_back(io);
  }
  impl->outputs = graph_outputs(g);
  if (impl->shape_data) impl->find_gear_slots();
  try {
    GS_RETURN_IF_ERROR(impl->plan_graph(g, engines));
  } catch (const std::exception& e) {
    return Status::internal(source + ": loading failed: " + e.what());
  }
  out->reset(new Runtime(std::move(impl)));
  return Status::ok();
}

std::vector<RuntimeIo> graph_outputs(const sdk::Graph& g) {
  std::vector<RuntimeIo> out;
  for (const Node* n : g.nodes()) {
    if (n->type() != sdk::op::kNetOutput) continue;
    const sdk::AttrValue* names = n->attrs().get(sdk::attr::kOutputNames);
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      RuntimeIo io;
      io.name = names && names->as_strings() && i < names->as_strings()->size()
                    ? (*names->as_strings())[i]
                    : "output_" + std::to_string(i);
      if (const sdk::TensorDesc* d = n->input_desc(i)) io.desc = *d;
      out.push_back(io);
    }
  }
  return out;
}

const std::vector<RuntimeIo>& Runtime::inputs() const {
  return impl_->inputs;
}
const std::vector<RuntimeIo>& Runtime::outputs() const {
  return impl_->outputs;
}
const std::vector<SegmentStats>& Runtime::segment_stats() const {
  return impl_->stats;
}
namespace {

// The value of the Const behind a value (partitioning may put a constant and its reader in different
// subgraphs).
const sdk::Tensor* constant_behind(sdk::OutPort p) {
  const Node* n = runtime_detail::constant_source(p);
  const sdk::AttrValue* v = n ? n->attrs().get(sdk::attr::kValue) : nullptr;
  return v ? v->as_tensor() : nullptr;
}

// The gear table: MapIndex's constant second input (rows of gear values), wherever partitioning put it.
const sdk::Tensor* gear_table(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->type() == sdk::op::kMapIndex && n->num_inputs() > 1)
      if (const sdk::Tensor* t = constant_behind(n->input(1))) return t;
  }
  for (const Graph* sub : g.subgraphs())
    if (const sdk::Tensor* t = gear_table(*sub)) return t;
  return nullptr;
}

bool read_ints(const sdk::Tensor& t, std::vector<int64_t>* out) {
  const auto dtype = t.desc().dtype;
  if (dtype != sdk::DataType::kInt64 && dtype != sdk::DataType::kInt32) return false;
  const size_t es = dtype == sdk::DataType::kInt64 ? 8 : 4;
  for (size_t i = 0; i + es <= t.size_bytes(); i += es) {
    if (es == 8) {
      int64_t v;
      std::memcpy(&v, t.data() + i, 8);
      out->push_back(v);
    } else {
      int32_t v;
      std::memcpy(&v, t.data() + i, 4);
      out->push_back(v);
    }
  }
  return true;
}

}  // namespace

Status Runtime::gear_input_dims(std::vector<std::vector<std::vector<int64_t>>>* gears) const {
  const Impl& m = *impl_;
  gears->clear();
  if (!m.shape_data) return Status::ok();
  const sdk::Tensor* table = gear_table(*m.root);
  std::vector<int64_t> values;
  const auto& td = table ? table->desc().shape.dims() : std::vector<int64_t>{};
  if (!table || td.size() != 2 || !read_ints(*table, &values) ||
      static_cast<int64_t>(values.size()) != td[0] * td[1])
    return Status::invalid_argument(m.source +
                                    ": the model has a gear input but no readable gear table (MapIndex)");
  std::vector<int64_t> user(m.root_data.size(), -1);  // root Data index -> position in inputs()
  for (size_t i = 0, k = 0; i < m.root_data.size(); ++i)
    if (static_cast<int64_t>(i) != m.shape_data_index) user[i] = static_cast<int64_t>(k++);
  for (int64_t r = 0; r < td[0]; ++r) {
    std::vector<std::vector<int64_t>> dims;
    for (const RuntimeIo& io : m.inputs) dims.push_back(io.desc.shape.dims());
    for (const Impl::GearSlot& slot : m.gear_slots) {
      if (user[slot.data_index] < 0 || static_cast<int64_t>(slot.position) >= td[1]) continue;
      auto& d = dims[static_cast<size_t>(user[slot.data_index])];
      if (slot.axis >= 0 && static_cast<size_t>(slot.axis) < d.size())
        d[static_cast<size_t>(slot.axis)] = values[static_cast<size_t>(r * td[1]) + slot.position];
    }
    for (auto& d : dims)
      for (int64_t& v : d)
        if (v < 0) v = 1;
    gears->push_back(std::move(dims));
  }
  return Status::ok();
}

void Runtime::set_trace(TraceSink* sink) {
  impl_->trace = sink;
}
const sdk::Graph& Runtime::graph() const {
  return *impl_->root;
}

namespace {

std::string kind_name(const Tensor& t) {
  return t.is_container() ? std::string(sdk::to_string(t.desc().kind)) : "tensor";
}

// A user input against the model's declaration: kind, data type, rank, static dimensions, byte count.
Status check_input(const std::string& who, const sdk::TensorDesc& want, const Tensor& input) {
  const sdk::TensorDesc& got = input.desc();
  const bool want_container = want.kind == sdk::ValueKind::kSequence ||
                              want.kind == sdk::ValueKind::kOptional || want.kind == sdk::ValueKind::kMap;
  if (want_container != input.is_container() || (want_container && want.kind != got.kind))
    return Status::invalid_argument(who + " must be a " +
                                    (want_container ? std::string(sdk::to_string(want.kind)) : "tensor") +
                                    ", got a " + kind_name(input));
  // An empty sequence or optional read from a file has no element to take its type from.
  const bool empty = want_container && input.elements().empty();
  if (want.dtype != sdk::DataType::kUndefined && got.dtype != want.dtype && !empty)
    return Status::invalid_argument(who + " must be " + std::string(sdk::to_string(want.dtype)) + ", got " +
                                    std::string(sdk::to_string(got.dtype)));
  if (want_container) return Status::ok();
  if (!want.shape.is_unknown_rank()) {
    if (got.shape.rank() != want.shape.rank())
      return Status::invalid_argument(who + " must have shape " + want.shape.to_string() + ", got rank " +
                                      std::to_string(got.shape.rank()) + " " + got.shape.to_string());
    for (size_t a = 0; a < want.shape.rank(); ++a) {
      if (want.shape.dims()[a] >= 0 && want.shape.dims()[a] != got.shape.dims()[a])
        return Status::invalid_argument(who + " must have shape " + want.shape.to_string() + ", got " +
                                        got.shape.to_string());
    }
  }
  const int64_t es = sdk::element_size(got.dtype);
  if (got.dtype == sdk::DataType::kString) {
    std::vector<std::string> values;
    if (!input.strings(&values) || static_cast<int64_t>(values.size()) != elements(got.shape))
      return Status::invalid_argument(who + " holds strings that do not match " + got.to_string());
  } else if (es == 0 || static_cast<int64_t>(input.size_bytes()) != elements(got.shape) * es) {
    return Status::invalid_argument(who + " holds " + std::to_string(input.size_bytes()) +
                                    " bytes, which does not match " + got.to_string());
  }
  return Status::ok();
}

}  // namespace

Status Runtime::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.inputs.size())
    return Status::invalid_argument(m.source + ": the model takes " + std::to_string(m.inputs.size()) +
                                    " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i)
    GS_RETURN_IF_ERROR(check_input(m.source + ": input " + std::to_string(i) + " '" + m.inputs[i].name + "'",
                                   m.inputs[i].desc, inputs[i]));
  std::vector<Tensor> all;
  std::vector<const Tensor*> ptrs(m.root_data.size(), nullptr);
  Tensor shape;
  size_t k = 0;
  for (size_t i = 0; i < m.root_data.size(); ++i) {
    if (static_cast<int64_t>(i) == m.shape_data_index) continue;
    ptrs[i] = &inputs[k++];
  }
  if (m.shape_data) {
    std::vector<Tensor> by_index(m.root_data.size());
    for (size_t i = 0; i < m.root_data.size(); ++i)
      if (ptrs[i]) by_index[i] = *ptrs[i];
    GS_RETURN_IF_ERROR(m.fill_shape_data(by_index, &shape));
    ptrs[m.shape_data_index] = &shape;
  }
  try {
    return m.run_plan(*m.plans.at(m.root.get()), ptrs, outputs);
  } catch (const std::exception& e) {  // a bug or a corrupt model: an error, never a crash
    return Status::internal(m.source + ": the run failed: " + e.what());
  }
}

void Runtime::reset_timing() {
  for (SegmentStats& s : impl_->stats) {
    s.calls = 0;
    s.milliseconds = 0;
  }
  for (const auto& [graph, plan] : impl_->plans)
    if (plan->parallel) plan->parallel->concurrent_runs = 0;
  kernels::reset_tensor_memory_peak();
}

// Planned: the static segments' arenas, which share one buffer per thread running segments (the kernels'
// executables do), so the largest counts. Peak: that plus the most bytes of kernel outputs outside the arenas
// alive at once (dynamic segments, results). Resident: the process's high-water mark.
std::string Runtime::memory_summary() const {
  int64_t planned = 0;
  size_t arenas = 0;
  for (const SegmentStats& s : impl_->stats) {
    if (s.arena_bytes <= 0) continue;
    planned = std::max(planned, s.arena_bytes);
    ++arenas;
  }
  const kernels::TensorMemory heap = kernels::tensor_memory();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  char line[256];
  std::snprintf(line, sizeof line,
                "memory: planned %lld bytes (the largest of %zu arenas sharing a buffer); tensor peak %lld "
                "bytes (planned + %lld outside the arenas); peak resident %.1f MB\n",
                static_cast<long long>(planned), arenas, static_cast<long long>(planned + heap.peak),
                static_cast<long long>(heap.peak), static_cast<double>(usage.ru_maxrss) / 1024.0);
  return line;
}

std::string Runtime::timing_summary() const {
  std::ostringstream os;
  char line[512];
  // "compiled": the graph itself ("whole") or a copy of the segment (runtime_plan.cpp, whole_graph).
  std::snprintf(line, sizeof line, "%-28s %-18s %6s %8s %10s %10s %12s %8s\n", "segment (graph/first node)",
                "engine", "nodes", "calls", "total ms", "mean ms", "arena bytes", "compiled");
  os << line;
  std::map<std::string, std::pair<uint64_t, double>> per_engine;
  for (const SegmentStats& s : impl_->stats) {
    std::string label = (s.graph == impl_->root->name() ? "" : s.graph + "/") + s.first_node;
    if (label.size() > 28) label = label.substr(0, 25) + "...";
    std::snprintf(line, sizeof line, "%-28s %-18s %6zu %8llu %10.3f %10.3f %12s %8s\n", label.c_str(),
                  s.engine.c_str(), s.nodes, static_cast<unsigned long long>(s.calls), s.milliseconds,
                  s.calls ? s.milliseconds / static_cast<double>(s.calls) : 0.0,
                  s.static_shape ? std::to_string(s.arena_bytes).c_str() : "dynamic",
                  s.whole_graph ? "whole" : "copy");
    os << line;
    auto& e = per_engine[s.engine];
    e.first += s.calls;
    e.second += s.milliseconds;
  }
  // Per graph (the root and each subgraph: PartitionedCall, branches, bodies), in first-seen order.
  struct GraphTotal {
    std::string name;
    size_t segments = 0;
    bool all_static = true;
    int64_t arena = 0;
    uint64_t calls = 0;
    double ms = 0;
  };
  std::vector<GraphTotal> per_graph;
  for (const SegmentStats& s : impl_->stats) {
    auto it = std::find_if(per_graph.begin(), per_graph.end(),
                           [&](const GraphTotal& g) { return g.name == s.graph; });
    if (it == per_graph.end()) it = per_graph.insert(per_graph.end(), GraphTotal{s.graph});
    ++it->segments;
    it->all_static = it->all_static && s.static_shape;
    it->arena += std::max<int64_t>(s.arena_bytes, 0);
    it->ms += s.milliseconds;
    it->calls += s.calls;
  }
  os << "per graph:\n";
  for (const GraphTotal& g : per_graph) {
    std::string label = g.name.size() > 40 ? g.name.substr(0, 37) + "..." : g.name;
    std::snprintf(line, sizeof line, "  %-40s %4zu segments %-8s %8llu calls %10.3f ms  arena %lld bytes\n",
                  label.c_str(), g.segments, g.all_static ? "static" : "dynamic",
                  static_cast<unsigned long long>(g.calls), g.ms, static_cast<long long>(g.arena));
    os << line;
  }
  os << "per engine:\n";
  for (const auto& [engine, e] : per_engine) {
    std::snprintf(line, sizeof line, "  %-18s %8llu calls %10.3f ms\n", engine.c_str(),
                  static_cast<unsigned long long>(e.first), e.second);
    os << line;
  }
  os << concurrency_summary();
  os << memory_summary();
  return os.str();
}

}  // namespace graphsplit
