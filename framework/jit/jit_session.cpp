#include "jit/jit_session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/json.h"
#include "graphsplit/sdk/ir/names.h"
#include "jit/binary_partition.h"
#include "model/om_io.h"

namespace graphsplit::jit {

using sdk::Graph;
using sdk::Node;
using sdk::Status;
using sdk::Tensor;

namespace {

using Key = std::vector<int64_t>;
using Clock = std::chrono::steady_clock;
constexpr size_t kMaxValueElements = 64;
constexpr size_t kMaxMissLog = 1000;

struct KeyHash {
  using is_transparent = void;
  size_t operator()(std::span<const int64_t> k) const noexcept {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};
struct KeyEq {
  using is_transparent = void;
  bool operator()(std::span<const int64_t> a, std::span<const int64_t> b) const noexcept {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A small integer or bool tensor, read as int64 values; false for anything else.
bool small_values(const Tensor& t, std::vector<int64_t>* out) {
  const sdk::TensorDesc& d = t.desc();
  const std::optional<int64_t> n = d.shape.num_elements();
  if (!n || *n < 0 || static_cast<size_t>(*n) > kMaxValueElements) return false;
  const int64_t es = sdk::element_size(d.dtype);
  if (static_cast<int64_t>(t.size_bytes()) != *n * es) return false;
  for (int64_t i = 0; i < *n; ++i) {
    if (d.dtype == sdk::DataType::kInt64) {
      int64_t v;
      std::memcpy(&v, t.data() + i * 8, 8);
      out->push_back(v);
    } else if (d.dtype == sdk::DataType::kInt32) {
      int32_t v;
      std::memcpy(&v, t.data() + i * 4, 4);
      out->push_back(v);
    } else if (d.dtype == sdk::DataType::kBool) {
      out->push_back(t.data()[i] != 0);
    } else {
      return false;
    }
  }
  return true;
}

std::string join_ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

struct ExecutionPoint;

struct Plan {
  // With the point's symbolic shapes; variants are copies with inputs bound. Null: the slice is the point's
  // whole graph (no copy kept).
  std::unique_ptr<Graph> slice;
  std::shared_ptr<ExecutionPoint> next;
  std::vector<std::pair<int32_t, int32_t>> io;
  std::vector<std::pair<std::string, std::vector<int>>> cuts;  // cut node -> the slice outputs it makes
  size_t slice_nodes = 0;

  bool cuts_at(const std::string& node) const {
    return std::any_of(cuts.begin(), cuts.end(), [&](const auto& c) { return c.first == node; });
  }
};

struct Variant {
  std::shared_ptr<const Plan> plan;
  std::unique_ptr<Runtime> runtime;
  std::vector<int> runtime_inputs;  // the point's input behind each runtime input
  int64_t bytes = 0;
  Key key;
  mutable std::mutex run_mu;
};

struct Outcome {
  Status status;
  std::shared_ptr<const Variant> variant;
};

struct Entry {
  std::shared_future<Outcome> ready;
  std::list<Key>::iterator lru;
  bool done = false;  // the rest under the point's mutex
  uint64_t last_use = 0;
  std::shared_ptr<const Variant> variant;
};

struct ExecutionPoint {
  int id = 0;
  int parent = -1;
  std::unique_ptr<Graph> graph;
  std::vector<RuntimeIo> inputs;
  std::unordered_map<std::string_view, int> input_index;  // by name; views of `inputs`
  size_t operators = 0;

  mutable std::mutex mu;
  std::vector<bool> value_keyed;
  std::vector<std::set<Key>> values_seen;
  // Per input and axis: left dynamic (no longer specialised on), and the values seen while it was not.
  std::vector<std::vector<uint8_t>> dynamic_dims;
  std::vector<std::vector<std::set<int64_t>>> dims_seen;
  std::unordered_map<Key, std::shared_ptr<Entry>, KeyHash, KeyEq> cache;
  std::list<Key> lru;  // most recent first
  std::map<std::string, std::shared_ptr<const Plan>> plans;
  // Held while a plan is made (not by hits): two compiles that slice alike make one plan and one next point.
  std::mutex plan_mu;
  Key last_key;
  bool has_last = false;
  JitSliceStats stats;
  std::vector<std::string> last_symbols;
};

size_t count_operators(const Graph& g) {
  size_t n = 0;
  for (const Node* node : g.nodes())
    if (!sdk::is_data_like(node->type()) && !sdk::is_const_like(node->type()) &&
        node->type() != sdk::op::kNetOutput)
      ++n;
  return n;
}

std::shared_ptr<ExecutionPoint> make_point(std::unique_ptr<Graph> g, int id, int parent) {
  auto p = std::make_shared<ExecutionPoint>();
  p->id = id;
  p->parent = parent;
  std::vector<const Node*> data;
  for (const Node* n : g->nodes())
    if (sdk::is_data_like(n->type())) data.push_back(n);
  std::sort(data.begin(), data.end(), [](const Node* a, const Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  for (const Node* d : data)
    p->inputs.push_back({d->output_name(0).empty() ? d->name() : d->output_name(0), d->output_desc(0)});
  p->input_index.reserve(p->inputs.size());
  for (size_t i = 0; i < p->inputs.size(); ++i)
    p->input_index.emplace(p->inputs[i].name, static_cast<int>(i));
  p->value_keyed = value_inputs(*g);
  p->value_keyed.resize(p->inputs.size(), false);
  p->values_seen.resize(p->inputs.size());
  for (const RuntimeIo& io : p->inputs) {
    const size_t rank = io.desc.shape.is_unknown_rank() ? 0 : io.desc.shape.rank();
    p->dynamic_dims.emplace_back(rank, 0);
    p->dims_seen.emplace_back(rank);
  }
  p->operators = count_operators(*g);
  p->graph = std::move(g);
  p->stats.id = id;
  p->stats.parent = parent;
  p->stats.nodes = p->operators;
  return p;
}

// The key: every dimension the point's declared inputs leave open (the rank and all dimensions of an input
// of unknown rank; the type where undeclared), then the values of the value-keyed inputs. Allocation-free
// once `key` has grown to its size.
void build_key(const ExecutionPoint& ep, const std::vector<Tensor>& in, Key* key) {
  key->clear();
  for (size_t i = 0; i < ep.inputs.size(); ++i) {
    const sdk::TensorDesc& want = ep.inputs[i].desc;
    const sdk::TensorDesc& got = in[i].desc();
    const std::vector<int64_t>& dims = got.shape.dims();
    if (want.shape.is_unknown_rank()) {
      key->push_back(static_cast<int64_t>(dims.size()));
      key->insert(key->end(), dims.begin(), dims.end());
    } else {
      const std::vector<int64_t>& w = want.shape.dims();
      for (size_t a = 0; a < w.size(); ++a) {
        if (w[a] >= 0) continue;
        if (ep.dynamic_dims[i][a])
          key->push_back(sdk::kUnknownDim);  // any value: the variant was compiled with this dimension open
        else
          key->push_back(a < dims.size() ? dims[a] : sdk::kUnknownRank);
      }
    }
    if (want.dtype == sdk::DataType::kUndefined) key->push_back(static_cast<int64_t>(got.dtype));
  }
  for (size_t i = 0; i < ep.inputs.size(); ++i) {
    if (!ep.value_keyed[i]) continue;
    const size_t at = key->size();
    key->push_back(0);
    std::vector<int64_t> values;  // only integer inputs of at most 64 elements are keyed
    if (!small_values(in[i], &values)) {
      (*key)[at] = -1;
      continue;
    }
    (*key)[at] = static_cast<int64_t>(values.size());
    key->insert(key->end(), values.begin(), values.end());
  }
}

// What each key position means, for a miss report and the JSON report.
std::vector<std::string> key_symbols(const ExecutionPoint& ep, const std::vector<Tensor>& in) {
  std::vector<std::string> names;
  for (size_t i = 0; i < ep.inputs.size(); ++i) {
    const RuntimeIo& io = ep.inputs[i];
    const std::vector<int64_t>& dims = in[i].desc().shape.dims();
    if (io.desc.shape.is_unknown_rank()) {
      names.push_back(io.name + ".rank");
      for (size_t a = 0; a < dims.size(); ++a) names.push_back(io.name + ".dim[" + std::to_string(a) + "]");
    } else {
      const std::vector<int64_t>& w = io.desc.shape.dims();
      const std::vector<std::string>& sym = io.desc.shape.dim_names();
      for (size_t a = 0; a < w.size(); ++a) {
        if (w[a] >= 0) continue;
        std::string n = io.name + ".dim[" + std::to_string(a) + "]";
        if (a < sym.size() && !sym[a].empty()) n += " (" + sym[a] + ")";
        names.push_back(n);
      }
    }
    if (io.desc.dtype == sdk::DataType::kUndefined) names.push_back(io.name + ".dtype");
  }
  for (size_t i = 0; i < ep.inputs.size(); ++i) {
    if (!ep.value_keyed[i]) continue;
    names.push_back(ep.inputs[i].name + ".count");
    std::vector<int64_t> values;
    if (!small_values(in[i], &values)) continue;
    for (size_t k = 0; k < values.size(); ++k)
      names.push_back(ep.inputs[i].name + ".value[" + std::to_string(k) + "]");
  }
  return names;
}

JitMiss describe_miss(const ExecutionPoint& ep, const Key& key, const std::vector<Tensor>& in) {
  JitMiss m;
  m.slice = ep.id;
  if (!ep.has_last) {
    m.symbol = "first run";
    return m;
  }
  const std::vector<std::string> names = key_symbols(ep, in);
  size_t i = 0;
  while (i < key.size() && i < ep.last_key.size() && key[i] == ep.last_key[i]) ++i;
  m.symbol = i < names.size() ? names[i] : "key length";
  m.before = i < ep.last_key.size() ? std::to_string(ep.last_key[i]) : "-";
  m.after = i < key.size() ? std::to_string(key[i]) : "-";
  return m;
}

int64_t variant_bytes(const Runtime& rt) {
  int64_t bytes = 0;
  for (const SegmentStats& s : rt.segment_stats()) bytes += std::max<int64_t>(s.arena_bytes, 0);
  for (const Node* n : rt.graph().nodes()) {
    if (!sdk::is_const_like(n->type())) continue;
    if (const sdk::AttrValue* v = n->attrs().get(sdk::attr::kValue); v && v->as_tensor())
      bytes += static_cast<int64_t>(v->as_tensor()->size_bytes());
  }
  return bytes + 4096;  // the executables themselves
}

}  // namespace

struct JitSession::Impl {
  JitOptions options;
  std::string model;
  std::shared_ptr<ExecutionPoint> root;
  std::vector<RuntimeIo> outputs;

  std::mutex compile_mu;  // pipelines and engine compiles
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines;

  mutable std::mutex mu;  // what follows
  std::vector<std::shared_ptr<ExecutionPoint>> points;
  std::set<std::string> collapsed;
  std::map<std::string, std::set<Key>> cut_values;
  std::vector<JitMiss> miss_log;
  std::vector<std::string> collapse_log;

  std::atomic<uint64_t> clock{0}, runs{0}, compiles{0}, hits{0}, misses{0}, evictions{0}, inferences{0};
  std::atomic<int64_t> bytes{0};

  Status get_pipeline(bool first, bool last, Pipeline** out);
  std::shared_ptr<ExecutionPoint> add_point(std::unique_ptr<Graph> g, int parent);
  Status variant_for(ExecutionPoint& ep, const std::vector<Tensor>& in, std::shared_ptr<const Variant>* out);
  Status compile(ExecutionPoint& ep, const std::vector<Tensor>& in, const Key& key,
                 std::shared_ptr<const Variant>* out);
  Status plan_for(ExecutionPoint& ep, const InferredSet& set, std::shared_ptr<const Plan>* out);
  std::vector<InputBinding> bindings(ExecutionPoint& ep, const std::vector<Tensor>& in);
  void trim(ExecutionPoint& ep, const Entry* keep);
  void enforce_byte_cap(const Entry* keep);
  void note_cuts(const Plan& plan, const std::vector<Tensor>& outs);
  bool note_key(ExecutionPoint& ep, const std::vector<Tensor>& in);
  void collapse_cut(const std::string& node);
  std::string where(const ExecutionPoint& ep) const { return model + ": slice " + std::to_string(ep.id); }
};

std::vector<std::pair<std::string, std::string>> route_options(
    const std::vector<std::pair<std::string, std::string>>& options, bool first, bool last) {
  static const std::set<std::string> first_only = {"input_shape",
                                                   "ge.inputShape",
                                                   "ge.inputHintShape",
                                                   "input_shape_range",
                                                   "ge.inputShapeRange",
                                                   "input_format",
                                                   "ge.exec.inputReuseMemIndexes",
                                                   "ge.exec.hostInputIndexes",
                                                   "input_fp16_nodes",
                                                   "ge.INPUT_NODES_SET_FP16"};
  static const std::set<std::string> last_only = {
      "output_type", "ge.outputDatatype", "ge.exec.outputReuseMemIndexes",
      "out_nodes",   "ge.outputNodeName", "ge.outputMaxSize"};
  if (first) return options;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : options) {
    if (first_only.count(kv.first)) continue;
    if (!last && last_only.count(kv.first)) continue;
    out.push_back(kv);
  }
  return out;
}

Status JitSession::Impl::get_pipeline(bool first, bool last, Pipeline** out) {
  std::vector<std::pair<std::string, std::string>> all;
  GS_RETURN_IF_ERROR(parse_ge_options(options.compile.ge_options, &all));
  const auto routed = route_options(all, first, last);
  std::string id;
  for (const auto& [k, v] : routed) id += k + "=" + v + ";";
  auto it = pipelines.find(id);
  if (it == pipelines.end()) {
    CompileRequest r = options.compile;
    r.ge_options = {id};
    if (id.empty()) r.ge_options.clear();
    std::vector<Diagnostic> diags;
    std::unique_ptr<Pipeline> p;
    GS_RETURN_IF_ERROR(build_pipeline(r, pipeline_path(r), &p, &diags));
    it = pipelines.emplace(id, std::move(p)).first;
  }
  *out = it->second.get();
  return Status::ok();
}

std::shared_ptr<ExecutionPoint> JitSession::Impl::add_point(std::unique_ptr<Graph> g, int parent) {
  std::lock_guard<std::mutex> lock(mu);
  auto p = make_point(std::move(g), static_cast<int>(points.size()), parent);
  points.push_back(p);
  return p;
}

std::vector<InputBinding> JitSession::Impl::bindings(ExecutionPoint& ep, const std::vector<Tensor>& in) {
  std::vector<InputBinding> b(in.size());
  std::lock_guard<std::mutex> lock(ep.mu);
  for (size_t i = 0; i < in.size(); ++i) {
    b[i].desc = in[i].desc();
    const sdk::Shape& declared = ep.inputs[i].desc.shape;
    for (size_t a = 0; a < ep.dynamic_dims[i].size() && a < b[i].desc.shape.rank(); ++a) {
      if (!ep.dynamic_dims[i][a]) continue;
      b[i].desc.shape.mutable_dims()[a] = sdk::kUnknownDim;
      if (a < declared.dim_names().size()) b[i].desc.shape.set_dim_name(a, declared.dim_names()[a]);
    }
    std::vector<int64_t> values;
    if (ep.value_keyed[i] && small_values(in[i], &values)) b[i].value = in[i];
  }
  return b;
}

Status JitSession::Impl::plan_for(ExecutionPoint& ep, const InferredSet& set,
                                  std::shared_ptr<const Plan>* out) {
  std::string signature;
  for (const Node* n : ep.graph->nodes())
    if (set.nodes.count(n)) signature += std::to_string(n->id()) + ",";
  std::lock_guard<std::mutex> making(ep.plan_mu);
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    if (auto it = ep.plans.find(signature); it != ep.plans.end()) {
      *out = it->second;
      return Status::ok();
    }
  }
  auto plan = std::make_shared<Plan>();
  if (set.waiting == 0) {
    plan->slice_nodes = ep.operators;
    std::lock_guard<std::mutex> lock(ep.mu);
    *out = ep.plans.emplace(signature, plan).first->second;
    return Status::ok();
  }
  BinaryPartition bp;
  GS_RETURN_IF_ERROR(binary_partition(*ep.graph, set.nodes, &bp));
  plan->io = bp.io;
  plan->slice_nodes = count_operators(*bp.sliced);
  const std::unordered_set<std::string_view> cut_names(set.cuts.begin(), set.cuts.end());
  std::unordered_map<std::string_view, size_t> cut_at;  // producer -> its entry in plan->cuts
  for (const Node* n : bp.sliced->nodes()) {
    if (n->type() != sdk::op::kNetOutput) continue;
    for (size_t o = 0; o < n->num_inputs(); ++o) {
      const std::string& producer = n->input(o).node->name();
      if (!cut_names.count(producer)) continue;
      auto [it, added] = cut_at.emplace(producer, plan->cuts.size());
      if (added) plan->cuts.push_back({producer, {}});
      plan->cuts[it->second].second.push_back(static_cast<int>(o));
    }
  }
  plan->slice = std::move(bp.sliced);
  if (bp.remaining) plan->next = add_point(std::move(bp.remaining), ep.id);
  std::lock_guard<std::mutex> lock(ep.mu);
  *out = ep.plans.emplace(signature, plan).first->second;
  return Status::ok();
}

Status JitSession::Impl::compile(ExecutionPoint& ep, const std::vector<Tensor>& in, const Key& key,
                                 std::shared_ptr<const Variant>* out) {
  const auto t0 = Clock::now();
  const std::vector<InputBinding> bound = bindings(ep, in);
  std::set<std::string> cuts_off;
  {
    std::lock_guard<std::mutex> lock(mu);
    cuts_off = collapsed;
  }
  InferredSet set;
  ++inferences;
  std::unique_ptr<Graph> g;
  Status s = compute_inferred_set(*ep.graph, bound, options.cut, cuts_off, &set, &g);
  if (!s) return {s.code(), where(ep) + ": " + s.message()};
  const double infer_ms = ms_since(t0);
  std::shared_ptr<const Plan> plan;
  s = plan_for(ep, set, &plan);
  if (!s) return {s.code(), where(ep) + ": " + s.message()};
  if (plan->slice) {
    // A part of the graph: compile a bound copy of it. (The whole graph: the copy inference ran on.)
    GS_RETURN_IF_ERROR(copy_graph(*plan->slice, &g));
    GS_RETURN_IF_ERROR(bind_inputs(*g, bound));
  }
  auto v = std::make_shared<Variant>();
  double pipeline_ms = 0, load_ms = 0;
  {
    std::lock_guard<std::mutex> lock(compile_mu);
    Pipeline* pipe = nullptr;
    GS_RETURN_IF_ERROR(get_pipeline(ep.parent < 0, !plan->next, &pipe));
    const auto t1 = Clock::now();
    s = pipe->run(*g);
    if (!s) return {s.code(), where(ep) + ": " + s.message()};
    pipeline_ms = ms_since(t1);
    const auto t2 = Clock::now();
    s = Runtime::create(
        std::move(g), where(ep), [pipe](const std::string& name) { return pipe->find_engine(name); },
        options.runtime, &v->runtime);
    if (!s) return s;
    load_ms = ms_since(t2);
  }
  for (const RuntimeIo& io : v->runtime->inputs()) {
    auto it = ep.input_index.find(io.name);
    if (it == ep.input_index.end())
      return Status::internal(where(ep) + ": the compiled slice lost input '" + io.name + "'");
    v->runtime_inputs.push_back(it->second);
  }
  v->plan = plan;
  v->key = key;
  v->bytes = variant_bytes(*v->runtime);
  ++compiles;
  std::lock_guard<std::mutex> lock(ep.mu);
  ep.stats.compiles++;
  ep.stats.compile_ms += ms_since(t0);
  ep.stats.infer_ms += infer_ms;
  ep.stats.pipeline_ms += pipeline_ms;
  ep.stats.load_ms += load_ms;
  ep.stats.cuts = set.cuts;
  ep.stats.slice_nodes = plan->slice_nodes;
  ep.last_symbols = key_symbols(ep, in);
  *out = v;
  return Status::ok();
}

// Under ep.mu, on a miss: counts the values of each open dimension and of each value-keyed input; one that
// has taken more than dynamic_after values is left dynamic, or no longer keyed, from now on (auto policy).
// True if that happened (the key changes form).
bool JitSession::Impl::note_key(ExecutionPoint& ep, const std::vector<Tensor>& in) {
  if (options.cut != CutPolicy::kAuto) return false;
  bool changed = false;
  for (size_t i = 0; i < ep.inputs.size(); ++i) {
    const std::vector<int64_t>& got = in[i].desc().shape.dims();
    const std::vector<int64_t>& want = ep.inputs[i].desc.shape.dims();
    for (size_t a = 0; a < ep.dynamic_dims[i].size() && a < got.size(); ++a) {
      if (want[a] >= 0 || ep.dynamic_dims[i][a]) continue;
      std::set<int64_t>& seen = ep.dims_seen[i][a];
      seen.insert(got[a]);
      if (seen.size() <= static_cast<size_t>(options.dynamic_after)) continue;
      ep.dynamic_dims[i][a] = 1;
      changed = true;
      std::lock_guard<std::mutex> g(mu);
      collapse_log.push_back("slice " + std::to_string(ep.id) + " input '" + ep.inputs[i].name + "' dim " +
                             std::to_string(a) + ": took " + std::to_string(seen.size()) +
                             " values; compiled with it dynamic from now on");
    }
    std::vector<int64_t> values;
    if (!ep.value_keyed[i] || !small_values(in[i], &values)) continue;
    std::set<Key>& seen = ep.values_seen[i];
    seen.insert(values);
    if (seen.size() <= static_cast<size_t>(options.dynamic_after)) continue;
    // This input's value keeps changing: specialising on it would compile on every run.
    ep.value_keyed[i] = false;
    changed = true;
    std::lock_guard<std::mutex> g(mu);
    collapse_log.push_back("slice " + std::to_string(ep.id) + " input '" + ep.inputs[i].name + "': took " +
                           std::to_string(seen.size()) + " values; its value is no longer keyed");
  }
  return changed;
}

void JitSession::Impl::trim(ExecutionPoint& ep, const Entry* keep) {
  // Under ep.mu. The oldest finished variants go; a compile in flight stays.
  auto it = ep.lru.end();
  while (ep.cache.size() > options.cache_per_slice && it != ep.lru.begin()) {
    --it;
    auto found = ep.cache.find(*it);
    if (found == ep.cache.end() || !found->second->done || found->second.get() == keep) continue;
    bytes -= found->second->variant->bytes;
    ++evictions;
    ep.stats.evictions++;
    ep.cache.erase(found);
    it = ep.lru.erase(it);
  }
}

void JitSession::Impl::enforce_byte_cap(const Entry* keep) {
  std::vector<std::shared_ptr<ExecutionPoint>> all;
  {
    std::lock_guard<std::mutex> lock(mu);
    all = points;
  }
  while (bytes.load() > options.cache_bytes) {
    ExecutionPoint* victim_ep = nullptr;
    uint64_t oldest = UINT64_MAX;
    Key victim;
    for (const auto& p : all) {
      std::lock_guard<std::mutex> lock(p->mu);
      for (const auto& [k, e] : p->cache) {
        if (!e->done || e.get() == keep || e->last_use >= oldest) continue;
        oldest = e->last_use;
        victim = k;
        victim_ep = p.get();
      }
    }
    if (!victim_ep) return;
    std::lock_guard<std::mutex> lock(victim_ep->mu);
    auto found = victim_ep->cache.find(victim);
    if (found == victim_ep->cache.end()) continue;
    bytes -= found->second->variant->bytes;
    ++evictions;
    victim_ep->stats.evictions++;
    victim_ep->lru.erase(found->second->lru);
    victim_ep->cache.erase(found);
  }
}

Status JitSession::Impl::variant_for(ExecutionPoint& ep, const std::vector<Tensor>& in,
                                     std::shared_ptr<const Variant>* out) {
  thread_local Key key;
  std::shared_ptr<Entry> entry;
  std::promise<Outcome> promise;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    build_key(ep, in, &key);
    if (auto it = ep.cache.find(std::span<const int64_t>(key)); it != ep.cache.end()) {
      entry = it->second;
    } else if (note_key(ep, in)) {
      // A dimension or value has just left the key: a variant for the new key may exist already.
      build_key(ep, in, &key);
      if (auto again = ep.cache.find(std::span<const int64_t>(key)); again != ep.cache.end())
        entry = again->second;
    }
    if (entry && entry->done) {
      ++hits;
      ep.stats.hits++;
      ep.lru.splice(ep.lru.begin(), ep.lru, entry->lru);
      entry->last_use = ++clock;
      *out = entry->variant;
      return Status::ok();
    }
    if (!entry) {
      ++misses;
      ep.stats.misses++;
      JitMiss m = describe_miss(ep, key, in);
      {
        std::lock_guard<std::mutex> g(mu);
        if (miss_log.size() < kMaxMissLog) miss_log.push_back(std::move(m));
      }
      entry = std::make_shared<Entry>();
      entry->ready = promise.get_future().share();
      ep.lru.push_front(key);
      entry->lru = ep.lru.begin();
      ep.cache.emplace(key, entry);
      ep.last_key = key;
      ep.has_last = true;
      owner = true;
    }
  }
  if (!owner) {
    // Another run compiles this key: wait for it, outside every lock.
    const Outcome& o = entry->ready.get();
    if (!o.status) return o.status;
    ++hits;
    *out = o.variant;
    return Status::ok();
  }
  const Key mine = key;
  Outcome o;
  try {
    o.status = compile(ep, in, mine, &o.variant);
  } catch (const std::exception& e) {
    o.status = Status::internal(where(ep) + ": compile failed: " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    auto it = ep.cache.find(mine);
    const bool still = it != ep.cache.end() && it->second == entry;
    if (!o.status) {
      ep.stats.failed++;
      if (still) {
        ep.lru.erase(entry->lru);
        ep.cache.erase(it);
      }
    } else if (still) {
      entry->done = true;
      entry->variant = o.variant;
      entry->last_use = ++clock;
      bytes += o.variant->bytes;
      trim(ep, entry.get());
    }
  }
  promise.set_value(o);
  if (!o.status) return o.status;
  enforce_byte_cap(entry.get());
  *out = o.variant;
  return Status::ok();
}

void JitSession::Impl::note_cuts(const Plan& plan, const std::vector<Tensor>& outs) {
  if (options.cut != CutPolicy::kAuto || plan.cuts.empty()) return;
  std::vector<std::string> doomed;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [node, indices] : plan.cuts) {
      if (collapsed.count(node)) continue;
      Key dims;
      for (int i : indices) {
        const auto& d = outs[i].desc().shape.dims();
        dims.push_back(static_cast<int64_t>(d.size()));
        dims.insert(dims.end(), d.begin(), d.end());
      }
      std::set<Key>& seen = cut_values[node];
      seen.insert(dims);
      if (seen.size() <= static_cast<size_t>(options.dynamic_after)) continue;
      collapsed.insert(node);
      collapse_log.push_back("cut after '" + node + "': its output sizes took " +
                             std::to_string(seen.size()) +
                             " values; compiled with dynamic segments from now on");
      doomed.push_back(node);
    }
  }
  for (const std::string& node : doomed) collapse_cut(node);
}

// Forgets every plan cut at `node` and the variants compiled from them (runs in flight keep theirs).
void JitSession::Impl::collapse_cut(const std::string& node) {
  std::vector<std::shared_ptr<ExecutionPoint>> all;
  {
    std::lock_guard<std::mutex> lock(mu);
    all = points;
  }
  for (const auto& p : all) {
    std::lock_guard<std::mutex> lock(p->mu);
    std::erase_if(p->plans, [&](const auto& kv) { return kv.second->cuts_at(node); });
    for (auto it = p->cache.begin(); it != p->cache.end();) {
      const Entry& e = *it->second;
      if (!e.done || !e.variant->plan->cuts_at(node)) {
        ++it;
        continue;
      }
      bytes -= e.variant->bytes;
      p->lru.erase(e.lru);
      it = p->cache.erase(it);
    }
  }
}

JitSession::JitSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JitSession::~JitSession() {
  // Variants (their executables) before the pipelines that own the engines.
  if (!impl_) return;
  impl_->points.clear();
  impl_->root.reset();
}

Status JitSession::open(const JitOptions& o, std::unique_ptr<JitSession>* out) {
  if (o.dynamic_after < 0) return Status::invalid_argument("--jit_dynamic_after must not be negative");
  if (o.cache_per_slice < 1) return Status::invalid_argument("--jit_cache must be at least 1");
  if (o.cache_bytes < 0) return Status::invalid_argument("--jit_cache_bytes must not be negative");
  auto impl = std::make_unique<Impl>();
  impl->options = o;
  impl->model = o.compile.model.empty() ? std::string("<bytes>") : o.compile.model;
  Pipeline* first = nullptr;
  GS_RETURN_IF_ERROR(impl->get_pipeline(true, true, &first));
  std::unique_ptr<Graph> root;
  if (o.om) {
    GS_RETURN_IF_ERROR(read_om_file(o.compile.model, &root));
    for (const Node* n : root->nodes())
      if (n->attrs().get_bool(sdk::attr::kIsMultiBatchShapeData, false))
        return Status::unsupported(impl->model +
                                   ": a model compiled with gears cannot run online; use its .onnx instead");
    size_t expanded = 0;
    GS_RETURN_IF_ERROR(expand_partitioned_calls(*root, &expanded));
  } else {
    GS_RETURN_IF_ERROR(load_model(o.compile, &root));
  }
  impl->outputs = graph_outputs(*root);
  impl->root = impl->add_point(std::move(root), -1);
  out->reset(new JitSession(std::move(impl)));
  return Status::ok();
}

const std::vector<RuntimeIo>& JitSession::inputs() const {
  return impl_->root->inputs;
}

const std::vector<RuntimeIo>& JitSession::outputs() const {
  return impl_->outputs;
}

Status JitSession::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  Impl& m = *impl_;
  if (inputs.size() != m.root->inputs.size())
    return Status::invalid_argument(m.model + ": the model takes " + std::to_string(m.root->inputs.size()) +
                                    " inputs, got " + std::to_string(inputs.size()));
  ++m.runs;
  std::shared_ptr<ExecutionPoint> ep = m.root;
  std::vector<Tensor> current = inputs;
  for (;;) {
    std::shared_ptr<const Variant> v;
    GS_RETURN_IF_ERROR(m.variant_for(*ep, current, &v));
    std::vector<Tensor> in, out;
    for (int i : v->runtime_inputs) in.push_back(current[i]);
    const auto t0 = Clock::now();
    Status s;
    {
      std::lock_guard<std::mutex> lock(v->run_mu);
      s = v->runtime->run(in, &out);
    }
    {
      std::lock_guard<std::mutex> lock(ep->mu);
      ep->stats.runs++;
      ep->stats.run_ms += ms_since(t0);
    }
    if (!s) return s;
    m.note_cuts(*v->plan, out);
    if (!v->plan->next) {
      *outputs = std::move(out);
      return Status::ok();
    }
    std::vector<Tensor> next(v->plan->next->inputs.size());
    for (const auto& [o, j] : v->plan->io) next[j] = out[o];
    ep = v->plan->next;
    current = std::move(next);
  }
}

bool JitSession::probe(const std::vector<Tensor>& inputs) const {
  ExecutionPoint& ep = *impl_->root;
  if (inputs.size() != ep.inputs.size()) return false;
  thread_local Key key;
  std::lock_guard<std::mutex> lock(ep.mu);
  build_key(ep, inputs, &key);
  auto it = ep.cache.find(std::span<const int64_t>(key));
  return it != ep.cache.end() && it->second->done;
}

Status JitSession::plan(const std::vector<Tensor>& inputs, JitPlan* out) const {
  Impl& m = *impl_;
  ExecutionPoint& ep = *m.root;
  if (inputs.size() != ep.inputs.size())
    return Status::invalid_argument(m.model + ": the model takes " + std::to_string(ep.inputs.size()) +
                                    " inputs, got " + std::to_string(inputs.size()));
  std::vector<InputBinding> bound(inputs.size());
  std::set<std::string> cuts_off;
  {
    std::lock_guard<std::mutex> lock(ep.mu);
    for (size_t i = 0; i < inputs.size(); ++i) {
      bound[i].desc = inputs[i].desc();
      std::vector<int64_t> values;
      if (ep.value_keyed[i] && small_values(inputs[i], &values)) bound[i].value = inputs[i];
    }
  }
  {
    std::lock_guard<std::mutex> lock(m.mu);
    cuts_off = m.collapsed;
  }
  InferredSet set;
  Status s = compute_inferred_set(*ep.graph, bound, m.options.cut, cuts_off, &set);
  if (!s) return {s.code(), m.where(ep) + ": " + s.message()};
  *out = JitPlan{};
  for (const Node* n : ep.graph->nodes()) {
    if (sdk::is_data_like(n->type()) || n->type() == sdk::op::kNetOutput) continue;
    (set.nodes.count(n) ? out->slice_nodes : out->remaining_nodes)++;
  }
  out->cuts = set.cuts;
  out->notes = set.notes;
  return Status::ok();
}

JitStats JitSession::stats() const {
  const Impl& m = *impl_;
  JitStats st;
  st.runs = m.runs;
  st.compiles = m.compiles;
  st.cache_hits = m.hits;
  st.cache_misses = m.misses;
  st.evictions = m.evictions;
  st.inferences = m.inferences;
  st.cached_bytes = m.bytes;
  std::vector<std::shared_ptr<ExecutionPoint>> all;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    st.misses = m.miss_log;
    st.collapsed = m.collapse_log;
    all = m.points;
  }
  for (const auto& p : all) {
    std::lock_guard<std::mutex> lock(p->mu);
    JitSliceStats s = p->stats;
    s.symbols = p->last_symbols;
    for (const Key& k : p->lru)
      if (auto it = p->cache.find(k); it != p->cache.end() && it->second->done) s.variants.push_back(k);
    st.slices.push_back(std::move(s));
  }
  return st;
}

std::string JitSession::report_json(bool with_timing) const {
  const JitStats st = stats();
  const JitOptions& o = impl_->options;
  std::string j = "{\n  \"model\": " + json_string(impl_->model) + ",\n";
  j += "  \"cut_policy\": \"" + std::string(to_string(o.cut)) +
       "\", \"dynamic_after\": " + std::to_string(o.dynamic_after) +
       ", \"cache_per_slice\": " + std::to_string(o.cache_per_slice) + ",\n";
  j += "  \"runs\": " + std::to_string(st.runs) + ", \"compiles\": " + std::to_string(st.compiles) +
       ", \"cache_hits\": " + std::to_string(st.cache_hits) +
       ", \"evictions\": " + std::to_string(st.evictions) +
       ", \"inferences\": " + std::to_string(st.inferences) + ",\n";
  j += "  \"cache_misses\": [";
  for (size_t i = 0; i < st.misses.size(); ++i) {
    const JitMiss& m = st.misses[i];
    j += std::string(i ? "," : "") + "\n    {\"slice\": " + std::to_string(m.slice) +
         ", \"symbol\": " + json_string(m.symbol) + ", \"before\": " + json_string(m.before) +
         ", \"after\": " + json_string(m.after) + "}";
  }
  j += st.misses.empty() ? "],\n" : "\n  ],\n";
  j += "  \"collapsed\": [";
  for (size_t i = 0; i < st.collapsed.size(); ++i) j += (i ? ", " : "") + json_string(st.collapsed[i]);
  j += "],\n  \"slices\": [";
  for (size_t i = 0; i < st.slices.size(); ++i) {
    const JitSliceStats& s = st.slices[i];
    j += std::string(i ? "," : "") + "\n    {\"id\": " + std::to_string(s.id) +
         ", \"parent\": " + std::to_string(s.parent) + ", \"nodes\": " + std::to_string(s.nodes) +
         ", \"slice_nodes\": " + std::to_string(s.slice_nodes) + ",\n     \"cuts\": [";
    for (size_t k = 0; k < s.cuts.size(); ++k) j += (k ? ", " : "") + json_string(s.cuts[k]);
    j += "], \"symbols\": [";
    for (size_t k = 0; k < s.symbols.size(); ++k) j += (k ? ", " : "") + json_string(s.symbols[k]);
    j += "], \"variants\": [";
    for (size_t k = 0; k < s.variants.size(); ++k) j += (k ? ", " : "") + join_ints(s.variants[k]);
    j += "],\n     \"compiles\": " + std::to_string(s.compiles) + ", \"hits\": " + std::to_string(s.hits) +
         ", \"misses\": " + std::to_string(s.misses) + ", \"runs\": " + std::to_string(s.runs) +
         ", \"evictions\": " + std::to_string(s.evictions) +
         ", \"failed_compiles\": " + std::to_string(s.failed);
    if (with_timing) {
      char buf[128];
      std::snprintf(buf, sizeof buf, ", \"compile_ms\": %.3f, \"run_ms\": %.3f", s.compile_ms, s.run_ms);
      j += buf;
      std::snprintf(buf, sizeof buf, ", \"infer_ms\": %.3f, \"pipeline_ms\": %.3f, \"load_ms\": %.3f",
                    s.infer_ms, s.pipeline_ms, s.load_ms);
      j += buf;
    }
    j += "}";
  }
  j += st.slices.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return j;
}

}  // namespace graphsplit::jit
