// The interpreter: a plan's steps in order, engine segments on their executables, and PartitionedCall, If,
// Case, Loop and Scan run here.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "graphsplit/kernels/kernels.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {

using namespace runtime_detail;

Status Runtime::Impl::run_plan(const GraphPlan& plan, const std::vector<const Tensor*>& parent_inputs,
                               std::vector<Tensor>* results) {
  std::vector<Tensor> values(plan.num_slots);
  for (const auto& [index, slot] : plan.data) {
    if (index < 0 || static_cast<size_t>(index) >= parent_inputs.size() || !parent_inputs[index])
      return Status::invalid_argument(source + ": graph '" + plan.graph->name() + "' reads input " +
                                      std::to_string(index) + ", which its caller does not provide");
    values[slot] = *parent_inputs[index];
  }
  for (const auto& [slot, t] : plan.constants) values[slot] = t;
  GS_RETURN_IF_ERROR(run_steps(plan, values));
  results->clear();
  for (int r : plan.results) results->push_back(values[r]);
  return Status::ok();
}

// Runs one step on the values it reads and stores what it produces. Touches only its own slots and its
// segment's statistics, so independent steps may run on different threads.
Status Runtime::Impl::run_step(const Step& step, std::vector<Tensor>& values) {
  std::vector<Tensor> in, out;
  std::vector<const Tensor*> in_ptrs;
  if (step.segment) {
    for (int s : step.in_slots) in.push_back(values[s]);
    SegmentStats& st = stats[step.segment->stats_index];
    const auto t0 = std::chrono::steady_clock::now();
    Status s;
    if (trace) {
      traced_segment = static_cast<int64_t>(step.segment->stats_index);
      kernels::set_kernel_observer(&kernel_observer);
    }
    try {
      s = step.segment->executable->run(in, &out);
    } catch (const std::exception& e) {
      s = Status::internal(std::string("threw: ") + e.what());
    }
    if (trace) kernels::set_kernel_observer(nullptr);
    st.milliseconds +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++st.calls;
    if (trace && s.is_ok()) trace_step(step, t0, in, in_ptrs, out);
    if (!s.is_ok())
      return {s.code(), source + ": engine " + st.engine + ", graph '" + st.graph + "': " + s.message()};
    if (out.size() != step.out_slots.size())
      return Status::internal(source + ": engine " + st.engine + " returned " + std::to_string(out.size()) +
                              " outputs for a segment with " + std::to_string(step.out_slots.size()));
  } else {
    for (int s : step.in_slots) in_ptrs.push_back(s >= 0 ? &values[s] : nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    if (trace) ++trace_depth;
    Status s = run_control(step, in_ptrs, &out);
    if (trace) --trace_depth;
    GS_RETURN_IF_ERROR(s);
    if (trace) trace_step(step, t0, in, in_ptrs, out);
    if (out.size() < step.out_slots.size())
      return Status::internal(source + ": " + describe(*step.node) + " produced too few outputs");
  }
  for (size_t o = 0; o < step.out_slots.size(); ++o) values[step.out_slots[o]] = std::move(out[o]);
  return Status::ok();
}

namespace {

void add_shape(const Tensor* t, std::vector<int64_t>* pool) {
  if (!t) {
    pool->push_back(-1);
    return;
  }
  const sdk::TensorDesc& d = t->desc();
  pool->push_back(static_cast<int64_t>(d.dtype));
  if (d.shape.is_unknown_rank()) {
    pool->push_back(-2);
    return;
  }
  pool->push_back(static_cast<int64_t>(d.shape.rank()));
  pool->insert(pool->end(), d.shape.dims().begin(), d.shape.dims().end());
}

size_t add_shapes(const std::vector<Tensor>& ts, std::vector<int64_t>* pool) {
  const size_t at = pool->size();
  pool->push_back(static_cast<int64_t>(ts.size()));
  for (const Tensor& t : ts) add_shape(&t, pool);
  return at;
}

size_t add_shapes(const std::vector<const Tensor*>& ts, std::vector<int64_t>* pool) {
  const size_t at = pool->size();
  pool->push_back(static_cast<int64_t>(ts.size()));
  for (const Tensor* t : ts) add_shape(t, pool);
  return at;
}

}  // namespace

// A kernel call inside the segment being traced: one level below it.
void Runtime::Impl::trace_kernel(const kernels::KernelCall& call) {
  TraceEvent e;
  e.kind = TraceEvent::Kind::kKernel;
  e.start_us = trace->since_origin_us(call.start);
  e.duration_us = std::chrono::duration<double, std::micro>(call.end - call.start).count();
  e.depth = trace_depth + 1;
  e.node = call.node;
  e.index = traced_segment;
  e.inputs = add_shapes(*call.inputs, &trace->shapes);
  e.outputs = add_shapes(*call.outputs, &trace->shapes);
  trace->events.push_back(e);
}

// Only called with a sink: tracing costs nothing when off.
void Runtime::Impl::trace_step(const Step& step, std::chrono::steady_clock::time_point t0,
                               const std::vector<Tensor>& in, const std::vector<const Tensor*>& in_ptrs,
                               const std::vector<Tensor>& out) {
  const auto t1 = std::chrono::steady_clock::now();
  TraceEvent e;
  e.start_us = trace->since_origin_us(t0);
  e.duration_us = std::chrono::duration<double, std::micro>(t1 - t0).count();
  e.depth = trace_depth;
  if (step.segment) {
    e.kind = TraceEvent::Kind::kSegment;
    e.index = static_cast<int64_t>(step.segment->stats_index);
    e.inputs = add_shapes(in, &trace->shapes);
  } else {
    e.kind = TraceEvent::Kind::kControl;
    e.node = step.node;
    e.inputs = add_shapes(in_ptrs, &trace->shapes);
  }
  e.outputs = add_shapes(out, &trace->shapes);
  trace->events.push_back(e);
}

namespace {

std::vector<int64_t> ints_attr(const Node& n, const char* key) {
  const sdk::AttrValue* v = n.attrs().get(key);
  return v && v->as_ints() ? *v->as_ints() : std::vector<int64_t>{};
}

// An int32 or int64 tensor's values.
std::vector<int64_t> kernels_lengths(const Tensor& t) {
  std::vector<int64_t> v;
  const int64_t n = static_cast<int64_t>(t.size_bytes()) / sdk::element_size(t.desc().dtype);
  for (int64_t i = 0; i < n; ++i)
    v.push_back(t.desc().dtype == sdk::DataType::kInt32 ? reinterpret_cast<const int32_t*>(t.data())[i]
                                                        : reinterpret_cast<const int64_t*>(t.data())[i]);
  return v;
}

// Slice `index` of `t` along `axis` (rank drops by one).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t index) {
  const auto& d = t.desc().shape.dims();
  const int64_t es = sdk::element_size(t.desc().dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[a];
  for (size_t a = axis + 1; a < d.size(); ++a) inner *= d[a];
  std::vector<int64_t> od = d;
  od.erase(od.begin() + axis);
  sdk::TensorDesc desc = t.desc();
  desc.shape = sdk::Shape(od);
  char* out = nullptr;
  Tensor r = Tensor::allocate(desc, static_cast<size_t>(outer * inner * es), &out);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * inner * es, t.data() + ((o * d[axis] + index) * inner) * es,
                static_cast<size_t>(inner * es));
  return r;
}

// Stacks equal-shaped tensors along a new `axis`.
Status stack_along(const std::vector<Tensor>& parts, int64_t axis, const sdk::TensorDesc& empty_desc,
                   Tensor* out) {
  if (parts.empty()) {
    sdk::TensorDesc d = empty_desc;
    std::vector<int64_t> dims;
    if (!d.shape.is_unknown_rank()) dims = d.shape.dims();
    for (int64_t& v : dims) v = std::max<int64_t>(v, 0);
    dims.insert(dims.begin() + std::min<int64_t>(axis, static_cast<int64_t>(dims.size())), 0);
    d.shape = sdk::Shape(dims);
    char* p = nullptr;
    *out = Tensor::allocate(d, 0, &p);
    return Status::ok();
  }
  const auto& d = parts[0].desc().shape.dims();
  for (const Tensor& p : parts)
    if (p.desc().shape.dims() != d || p.desc().dtype != parts[0].desc().dtype)
      return Status::invalid_argument("scan outputs differ in shape between iterations");
  const int64_t es = sdk::element_size(parts[0].desc().dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= d[a];
  for (size_t a = axis; a < d.size(); ++a) inner *= d[a];
  std::vector<int64_t> od = d;
  od.insert(od.begin() + axis, static_cast<int64_t>(parts.size()));
  sdk::TensorDesc desc = parts[0].desc();
  desc.shape = sdk::Shape(od);
  char* o = nullptr;
  const auto n = static_cast<int64_t>(parts.size());
  *out = Tensor::allocate(desc, static_cast<size_t>(outer * n * inner * es), &o);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(o + ((r * n + k) * inner) * es, parts[k].data() + r * inner * es,
                  static_cast<size_t>(inner * es));
  return Status::ok();
}

}  // namespace

ControlKind control_kind(std::string_view type) {
  if (type == sdk::op::kNoOp) return ControlKind::kNoOp;
  if (type == sdk::op::kPartitionedCall) return ControlKind::kPartitionedCall;
  if (type == sdk::op::kIf) return ControlKind::kIf;
  if (type == sdk::op::kCase) return ControlKind::kCase;
  if (type == sdk::op::kLoop) return ControlKind::kLoop;
  if (type == sdk::op::kScan) return ControlKind::kScan;
  if (type == sdk::op::kSequenceMap) return ControlKind::kSequenceMap;
  return ControlKind::kUnsupported;
}

Status Runtime::Impl::node_error(sdk::StatusCode code, const Node& n, const std::string& what) const {
  return {code, source + ": " + describe(n) + ": " + what};
}

Status Runtime::Impl::need_input(const Node& n, const std::vector<const Tensor*>& in, size_t i) const {
  if (i >= in.size() || !in[i])
    return node_error(sdk::StatusCode::kInvalidArgument, n, "input " + std::to_string(i) + " is missing");
  return Status::ok();
}

Status Runtime::Impl::run_control(const Step& step, const std::vector<const Tensor*>& in,
                                  std::vector<Tensor>* out) {
  switch (step.control) {
    case ControlKind::kNoOp:
      return Status::ok();
    case ControlKind::kPartitionedCall:
      return run_plan(*step.subplans.at(0), in, out);
    case ControlKind::kIf:
      return run_if(step, in, out);
    case ControlKind::kCase:
      return run_case(step, in, out);
    case ControlKind::kLoop:
      return run_loop(step, in, out);
    case ControlKind::kScan:
      return run_scan(step, in, out);
    case ControlKind::kSequenceMap:
      return run_sequence_map(step, in, out);
    case ControlKind::kUnsupported:
      break;
  }
  return node_error(sdk::StatusCode::kUnsupported, *step.node, "the runtime cannot execute this node type");
}

Status Runtime::Impl::run_if(const Step& step, const std::vector<const Tensor*>& in,
                             std::vector<Tensor>* out) {
  const Node& n = *step.node;
  GS_RETURN_IF_ERROR(need_input(n, in, 0));
  const sdk::AttrValue* branch = n.attrs().get(read_bool(*in[0]) ? "then_branch" : "else_branch");
  if (!branch || !branch->as_graph()) return node_error(sdk::StatusCode::kInvalidArgument, n, "no branch");
  return run_plan(*plans.at(branch->as_graph()), in, out);
}

Status Runtime::Impl::run_case(const Step& step, const std::vector<const Tensor*>& in,
                               std::vector<Tensor>* out) {
  const Node& n = *step.node;
  GS_RETURN_IF_ERROR(need_input(n, in, 0));
  const int64_t index = read_int(*in[0]);
  if (index < 0 || static_cast<size_t>(index) >= step.subplans.size())
    return node_error(sdk::StatusCode::kInvalidArgument, n,
                      "branch index " + std::to_string(index) + " is outside the " +
                          std::to_string(step.subplans.size()) + " branches");
  return run_plan(*step.subplans[index], in, out);
}

namespace {

// Body Data made for values the body captures from outside (the importer appends them as node inputs).
size_t captured_inputs(const Node& n) {
  size_t captured = 0;
  for (const Node* d : n.subgraphs().at(0)->nodes())
    if (d->type() == sdk::op::kData && d->attrs().has(sdk::attr::kOuterValue)) ++captured;
  return captured;
}

// Loop's scan outputs: each iteration's value stacked along a new first axis; an empty loop gives an empty
// tensor of the declared element shape.
Status stack_loop_scans(const Node& n, size_t formal_carried, const std::vector<std::vector<Tensor>>& scans,
                        std::vector<Tensor>* out) {
  for (size_t s = 0; s < scans.size(); ++s) {
    Tensor stacked;
    sdk::TensorDesc elem =
        formal_carried + s < n.num_outputs() ? n.output_desc(formal_carried + s) : sdk::TensorDesc{};
    if (!elem.shape.is_unknown_rank() && !elem.shape.dims().empty())
      elem.shape = sdk::Shape(std::vector<int64_t>(elem.shape.dims().begin() + 1, elem.shape.dims().end()));
    GS_RETURN_IF_ERROR(stack_along(scans[s], 0, elem, &stacked));
    out->push_back(stacked);
  }
  return Status::ok();
}

}  // namespace

// Body inputs: iteration number, condition, carried values, then captured values (their body Data carry
// `_outer_value`). Body outputs: condition, carried, scans.
Status Runtime::Impl::run_loop(const Step& step, const std::vector<const Tensor*>& in,
                               std::vector<Tensor>* out) {
  const Node& n = *step.node;
  const GraphPlan& body = *step.subplans.at(0);
  const auto invalid = [&](const std::string& what) {
    return node_error(sdk::StatusCode::kInvalidArgument, n, what);
  };
  const int64_t max_trip = in.size() > 0 && in[0] && in[0]->size_bytes() > 0 ? read_int(*in[0]) : -1;
  const bool has_cond = in.size() > 1 && in[1] && in[1]->size_bytes() > 0;
  bool cond = has_cond ? read_bool(*in[1]) : true;
  const size_t num_results = body.results.size();
  if (num_results < 1) return invalid("the body has no outputs");
  const size_t captured = captured_inputs(n);
  if (n.num_inputs() < 2 + captured) return invalid("fewer inputs than the Loop contract needs");
  const size_t formal_carried = n.num_inputs() - 2 - captured;
  if (formal_carried > num_results - 1) return invalid("more carried values than body outputs");
  std::vector<Tensor> state;
  for (size_t i = 0; i < formal_carried; ++i) {
    GS_RETURN_IF_ERROR(need_input(n, in, 2 + i));
    state.push_back(*in[2 + i]);
  }
  std::vector<std::vector<Tensor>> scans(num_results - 1 - formal_carried);
  std::vector<Tensor> body_out;
  Tensor iter_t, cond_t;
  std::vector<const Tensor*> body_in(in.begin(), in.end());
  for (int64_t i = 0; (max_trip < 0 || i < max_trip) && cond; ++i) {
    if (max_trip < 0 && !has_cond) return invalid("the loop has neither a trip count nor a condition");
    if (i >= max_loop_iterations)
      return node_error(sdk::StatusCode::kResourceExhausted, n,
                        "more than " + std::to_string(max_loop_iterations) + " iterations");
    iter_t = make_scalar_i64(i);
    cond_t = make_scalar_bool(cond);
    body_in[0] = &iter_t;
    if (body_in.size() > 1) body_in[1] = &cond_t;
    for (size_t c = 0; c < formal_carried; ++c) body_in[2 + c] = &state[c];
    GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
    cond = read_bool(body_out[0]);
    for (size_t c = 0; c < formal_carried; ++c) state[c] = body_out[1 + c];
    for (size_t s = 0; s < scans.size(); ++s) scans[s].push_back(body_out[1 + formal_carried + s]);
  }
  *out = state;
  if (Status st = stack_loop_scans(n, formal_carried, scans, out); !st.is_ok())
    return node_error(st.code(), n, st.message());
  return Status::ok();
}

// The scan inputs' common length along their axes (normalised into `axis`).
Status Runtime::Impl::scan_length(const Node& n, const std::vector<const Tensor*>& in, size_t n_state,
                                  int64_t m, std::vector<int64_t>* axis, int64_t* length) const {
  const std::vector<int64_t> in_axes = ints_attr(n, "scan_input_axes");
  *length = -1;
  axis->assign(static_cast<size_t>(m), 0);
  for (int64_t j = 0; j < m; ++j) {
    GS_RETURN_IF_ERROR(need_input(n, in, n_state + j));
    const auto rank = static_cast<int64_t>(in[n_state + j]->desc().shape.rank());
    int64_t a = j < static_cast<int64_t>(in_axes.size()) ? in_axes[j] : 0;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return node_error(sdk::StatusCode::kInvalidArgument, n, "scan axis out of range");
    (*axis)[j] = a;
    const int64_t len = in[n_state + j]->desc().shape.dims()[a];
    if (*length >= 0 && len != *length)
      return node_error(sdk::StatusCode::kInvalidArgument, n, "scan inputs differ in length");
    *length = len;
  }
  return Status::ok();
}

// Scan before opset 9: input 0 is sequence_lens (optional), every input has a batch axis 0 and the scan axis
// 1; the body runs over each batch row in turn (states, then one slice of each scan input), and the rows'
// results are stacked again. Every row must use the whole sequence.
Status Runtime::Impl::run_scan8(const Step& step, const std::vector<const Tensor*>& in,
                                std::vector<Tensor>* out) {
  const Node& n = *step.node;
  const GraphPlan& body = *step.subplans.at(0);
  const auto invalid = [&](const std::string& what) {
    return node_error(sdk::StatusCode::kInvalidArgument, n, what);
  };
  const int64_t m = n.attrs().get_int("num_scan_inputs", 0);
  const size_t formal = n.num_inputs() - captured_inputs(n);
  if (m <= 0 || static_cast<size_t>(m) + 1 > formal) return invalid("bad num_scan_inputs");
  const size_t n_state = formal - 1 - static_cast<size_t>(m);
  const std::vector<int64_t> dirs = ints_attr(n, "directions");
  for (size_t i = 1; i < formal; ++i) {
    GS_RETURN_IF_ERROR(need_input(n, in, i));
    if (in[i]->desc().shape.rank() < (i > n_state ? 2u : 1u))
      return invalid("input " + std::to_string(i) + " lacks the batch axis");
  }
  const int64_t batch = in[1]->desc().shape.dims()[0];
  const int64_t length = in[1 + n_state]->desc().shape.dims()[1];
  for (size_t i = 1; i < formal; ++i)
    if (in[i]->desc().shape.dims()[0] != batch || (i > n_state && in[i]->desc().shape.dims()[1] != length))
      return invalid("inputs differ in batch size or sequence length");
  if (in[0] && in[0]->size_bytes() > 0)
    for (int64_t len : kernels_lengths(*in[0]))
      if (len != length)
        return node_error(sdk::StatusCode::kUnsupported, n,
                          "sequence_lens shorter than the sequence is not supported");
  std::vector<std::vector<Tensor>> rows(body.results.size());
  std::vector<const Tensor*> body_in(in.begin(), in.end());
  std::vector<Tensor> state(n_state), slices(static_cast<size_t>(m)), body_out;
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < n_state; ++i) state[i] = slice_along(*in[1 + i], 0, b);
    std::vector<Tensor> seqs;
    for (int64_t j = 0; j < m; ++j) seqs.push_back(slice_along(*in[1 + n_state + j], 0, b));
    std::vector<std::vector<Tensor>> scans(body.results.size() - n_state);
    for (int64_t t = 0; t < length; ++t) {
      // The body's inputs keep the node's numbering: they start after sequence_lens.
      for (size_t i = 0; i < n_state; ++i) body_in[1 + i] = &state[i];
      for (int64_t j = 0; j < m; ++j) {
        const bool reverse = j < static_cast<int64_t>(dirs.size()) && dirs[j] == 1;
        slices[j] = slice_along(seqs[j], 0, reverse ? length - 1 - t : t);
        body_in[1 + n_state + j] = &slices[j];
      }
      GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
      for (size_t i = 0; i < n_state; ++i) state[i] = body_out[i];
      for (size_t s = 0; s < scans.size(); ++s) scans[s].push_back(body_out[n_state + s]);
    }
    for (size_t i = 0; i < n_state; ++i) rows[i].push_back(state[i]);
    for (size_t s = 0; s < scans.size(); ++s) {
      Tensor stacked;
      if (Status st = stack_along(scans[s], 0, sdk::TensorDesc{}, &stacked); !st.is_ok())
        return invalid(st.message());
      rows[n_state + s].push_back(stacked);
    }
  }
  out->clear();
  for (auto& r : rows) {
    Tensor stacked;
    if (Status st = stack_along(r, 0, sdk::TensorDesc{}, &stacked); !st.is_ok()) return invalid(st.message());
    out->push_back(stacked);
  }
  return Status::ok();
}

Status Runtime::Impl::run_scan(const Step& step, const std::vector<const Tensor*>& in,
                               std::vector<Tensor>* out) {
  const Node& n = *step.node;
  if (step.scan8) return run_scan8(step, in, out);
  const GraphPlan& body = *step.subplans.at(0);
  const int64_t m = n.attrs().get_int("num_scan_inputs", 0);
  const size_t formal = n.num_inputs() - captured_inputs(n);
  if (m <= 0 || static_cast<size_t>(m) > formal)
    return node_error(sdk::StatusCode::kInvalidArgument, n, "bad num_scan_inputs");
  const size_t n_state = formal - static_cast<size_t>(m);
  const std::vector<int64_t> in_dirs = ints_attr(n, "scan_input_directions");
  std::vector<int64_t> axis;
  int64_t length = -1;
  GS_RETURN_IF_ERROR(scan_length(n, in, n_state, m, &axis, &length));
  std::vector<Tensor> state;
  for (size_t i = 0; i < n_state; ++i) {
    GS_RETURN_IF_ERROR(need_input(n, in, i));
    state.push_back(*in[i]);
  }
  std::vector<std::vector<Tensor>> scans(body.results.size() - n_state);
  std::vector<const Tensor*> body_in(in.begin(), in.end());
  std::vector<Tensor> slices(static_cast<size_t>(m)), body_out;
  for (int64_t t = 0; t < length; ++t) {
    for (size_t i = 0; i < n_state; ++i) body_in[i] = &state[i];
    for (int64_t j = 0; j < m; ++j) {
      const bool reverse = j < static_cast<int64_t>(in_dirs.size()) && in_dirs[j] == 1;
      slices[j] = slice_along(*in[n_state + j], axis[j], reverse ? length - 1 - t : t);
      body_in[n_state + j] = &slices[j];
    }
    GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
    for (size_t i = 0; i < n_state; ++i) state[i] = body_out[i];
    for (size_t s = 0; s < scans.size(); ++s) scans[s].push_back(body_out[n_state + s]);
  }
  *out = state;
  return stack_scan_outputs(n, scans, out);
}

// Scan's outputs: each stacked along its scan_output_axes entry, reversed where scan_output_directions says.
Status Runtime::Impl::stack_scan_outputs(const Node& n, std::vector<std::vector<Tensor>>& scans,
                                         std::vector<Tensor>* out) const {
  const std::vector<int64_t> out_axes = ints_attr(n, "scan_output_axes"),
                             out_dirs = ints_attr(n, "scan_output_directions");
  for (size_t s = 0; s < scans.size(); ++s) {
    if (s < out_dirs.size() && out_dirs[s] == 1) std::reverse(scans[s].begin(), scans[s].end());
    int64_t a = s < out_axes.size() ? out_axes[s] : 0;
    const int64_t rank = scans[s].empty() ? 0 : static_cast<int64_t>(scans[s][0].desc().shape.rank()) + 1;
    if (a < 0) a += rank;
    Tensor stacked;
    if (Status st = stack_along(scans[s], a, sdk::TensorDesc{}, &stacked); !st.is_ok())
      return node_error(st.code(), n, st.message());
    out->push_back(stacked);
  }
  return Status::ok();
}

void Runtime::Impl::find_gear_slots() {
  const auto& shape = shape_data->output_desc(0).shape.dims();
  gear_length = shape.size() == 1 && shape[0] > 0 ? static_cast<size_t>(shape[0]) : 0;
  const sdk::AttrValue* which = shape_data->attrs().get(sdk::attr::kDynamicBatchUnknownDataIndex);
  if (!which || !which->as_ints()) return;
  size_t cursor = 0;
  for (int64_t i : *which->as_ints()) {
    if (i < 0 || static_cast<size_t>(i) >= root_data.size()) continue;
    const sdk::AttrValue* where =
        root_data[static_cast<size_t>(i)]->attrs().get(sdk::attr::kDynamicBatchUnknownDimIndex);
    if (!where || !where->as_ints()) continue;
    const std::vector<int64_t>& axes = *where->as_ints();
    const bool whole = axes.size() == gear_length;
    for (size_t j = 0; j < axes.size(); ++j)
      gear_slots.push_back({static_cast<size_t>(i), axes[j], whole ? j : cursor + j});
    cursor += axes.size();
  }
}

Status Runtime::Impl::fill_shape_data(const std::vector<Tensor>& user_inputs, Tensor* shape) {
  // The gear these inputs are in (GE's ascend_mbatch_shape_data): every input must agree on it.
  const size_t length = gear_length;
  std::vector<int32_t> dims(length, -1);
  std::vector<size_t> from(length, SIZE_MAX);  // the input that set each value
  for (const GearSlot& slot : gear_slots) {
    const auto& actual = user_inputs.at(slot.data_index).desc().shape.dims();
    const std::string& name = root_data[slot.data_index]->name();
    if (slot.axis < 0 || static_cast<size_t>(slot.axis) >= actual.size())
      return Status::invalid_argument(source + ": input '" + name + "' has rank " +
                                      std::to_string(actual.size()) + ", the gears need dimension " +
                                      std::to_string(slot.axis));
    if (slot.position >= length) continue;
    const auto value = static_cast<int32_t>(actual[static_cast<size_t>(slot.axis)]);
    if (from[slot.position] != SIZE_MAX && dims[slot.position] != value)
      return Status::invalid_argument(source + ": inputs '" + root_data[from[slot.position]]->name() +
                                      "' and '" + name +
                                      "' must be in the same gear, but their gear dimensions differ: " +
                                      std::to_string(dims[slot.position]) + " and " + std::to_string(value));
    dims[slot.position] = value;
    from[slot.position] = slot.data_index;
  }
  sdk::TensorDesc desc;
  desc.dtype = sdk::DataType::kInt32;
  desc.shape = sdk::Shape({static_cast<int64_t>(dims.size())});
  char* out = nullptr;
  *shape = Tensor::allocate(desc, dims.size() * 4, &out);
  if (!dims.empty()) std::memcpy(out, dims.data(), dims.size() * 4);
  return Status::ok();
}

// The body runs once per element of the first sequence, taking element j of every sequence input and every
// tensor input whole (captured values follow, as for Loop); output i collects the body's output i.
Status Runtime::Impl::run_sequence_map(const Step& step, const std::vector<const Tensor*>& in,
                                       std::vector<Tensor>* out) {
  const Node& n = *step.node;
  const auto invalid = [&](const std::string& what) {
    return node_error(sdk::StatusCode::kInvalidArgument, n, what);
  };
  const size_t formal = n.num_inputs() - captured_inputs(n);
  GS_RETURN_IF_ERROR(need_input(n, in, 0));
  if (!in[0]->is_container() || in[0]->desc().kind != sdk::ValueKind::kSequence)
    return invalid("input 0 must be a sequence");
  const size_t length = in[0]->elements().size();
  for (size_t i = 1; i < formal; ++i) {
    GS_RETURN_IF_ERROR(need_input(n, in, i));
    if (in[i]->is_container() && in[i]->elements().size() != length)
      return invalid("input " + std::to_string(i) + " has " + std::to_string(in[i]->elements().size()) +
                     " elements but input 0 has " + std::to_string(length));
  }
  const GraphPlan& body = *step.subplans.at(0);
  std::vector<std::vector<Tensor>> collected(n.num_outputs());
  std::vector<const Tensor*> body_in(in.begin(), in.end());
  std::vector<Tensor> body_out;
  for (size_t j = 0; j < length; ++j) {
    for (size_t i = 0; i < formal; ++i) body_in[i] = in[i]->is_container() ? &in[i]->elements()[j] : in[i];
    GS_RETURN_IF_ERROR(run_plan(body, body_in, &body_out));
    if (body_out.size() < collected.size()) return invalid("the body has fewer outputs than the node");
    for (size_t o = 0; o < collected.size(); ++o) collected[o].push_back(std::move(body_out[o]));
  }
  out->clear();
  for (size_t o = 0; o < collected.size(); ++o) {
    const sdk::DataType dtype = collected[o].empty() ? n.output_desc(o).dtype : collected[o][0].desc().dtype;
    out->push_back(Tensor::sequence(dtype, std::move(collected[o])));
  }
  return Status::ok();
}

}  // namespace graphsplit
