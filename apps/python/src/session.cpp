// graphsplit.Session: a compiled model on the engine plugins, run with numpy arrays. Conforming inputs
// (C-contiguous, aligned, native byte order, the exact dtype) are read in place; others are copied once; a
// dtype is never cast. Outputs are read-only arrays that own their tensor and outlive the session.
#include "runtime/session.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <mutex>

#include "bindings.h"
#include "graphsplit/kernels/kernels.h"
#include "jit/jit_session.h"
#include "model/om_io.h"

namespace graphsplit::python {
namespace {

std::optional<sdk::DataType> dtype_of(const py::dtype& d) {
  const char k = d.kind();
  const auto size = d.itemsize();
  if (k == 'f') {
    if (size == 4) return sdk::DataType::kFloat;
    if (size == 8) return sdk::DataType::kDouble;
    if (size == 2) return sdk::DataType::kFloat16;
  } else if (k == 'i' || k == 'u') {
    static constexpr sdk::DataType kSigned[] = {sdk::DataType::kInt8, sdk::DataType::kInt16,
                                                sdk::DataType::kInt32, sdk::DataType::kInt64};
    static constexpr sdk::DataType kUnsigned[] = {sdk::DataType::kUint8, sdk::DataType::kUint16,
                                                  sdk::DataType::kUint32, sdk::DataType::kUint64};
    const int at = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : size == 8 ? 3 : -1;
    if (at >= 0) return k == 'i' ? kSigned[at] : kUnsigned[at];
  } else if (k == 'b') {
    return sdk::DataType::kBool;
  } else if (k == 'U' || k == 'O' || k == 'S') {
    return sdk::DataType::kString;
  }
  return std::nullopt;
}

py::dtype numpy_dtype(sdk::DataType t, const std::string& what) {
  switch (t) {
    case sdk::DataType::kFloat:
      return py::dtype("float32");
    case sdk::DataType::kDouble:
      return py::dtype("float64");
    case sdk::DataType::kFloat16:
      return py::dtype("float16");
    case sdk::DataType::kInt8:
      return py::dtype("int8");
    case sdk::DataType::kInt16:
      return py::dtype("int16");
    case sdk::DataType::kInt32:
      return py::dtype("int32");
    case sdk::DataType::kInt64:
      return py::dtype("int64");
    case sdk::DataType::kUint8:
      return py::dtype("uint8");
    case sdk::DataType::kUint16:
      return py::dtype("uint16");
    case sdk::DataType::kUint32:
      return py::dtype("uint32");
    case sdk::DataType::kUint64:
      return py::dtype("uint64");
    case sdk::DataType::kBool:
      return py::dtype("bool");
    default:
      raise_status(
          sdk::Status::unsupported(what + ": " + std::string(sdk::to_string(t)) + " has no numpy type"));
  }
}

void make_read_only(py::array& a) {
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
}

py::object strings_to_numpy(const sdk::Tensor& t) {
  std::vector<std::string> values;
  if (!t.strings(&values)) raise_status(sdk::Status::internal("a string tensor's encoding is corrupt"));
  py::list items;
  for (const std::string& v : values) items.append(py::str(v));
  py::module_ np = py::module_::import("numpy");
  py::array out = np.attr("array")(items, py::dtype("O")).attr("reshape")(py::cast(t.desc().shape.dims()));
  make_read_only(out);
  return out;
}

// Copies (once) what cannot be read in place: non-contiguous, misaligned or byte-swapped arrays, and strings.
sdk::Tensor from_numpy(const py::array& a, const std::string& name, sdk::DataType want,
                       std::atomic<uint64_t>* copies) {
  const std::optional<sdk::DataType> got = dtype_of(a.dtype());
  if (!got || *got != want) {
    raise_value("input '" + name + "': the model takes " + std::string(sdk::to_string(want)) +
                ", got numpy " + std::string(py::str(a.dtype())) + " (graphsplit never casts an input)");
  }
  sdk::TensorDesc desc;
  desc.dtype = want;
  desc.shape = sdk::Shape(std::vector<int64_t>(a.shape(), a.shape() + a.ndim()));
  if (want == sdk::DataType::kString) {
    std::vector<std::string> values;
    py::list flat = a.attr("ravel")().attr("tolist")();
    for (py::handle v : flat)
      values.push_back(py::isinstance<py::bytes>(v) ? v.cast<std::string>() : py::str(v).cast<std::string>());
    ++*copies;
    return sdk::Tensor::from_strings(desc, values);
  }
  const int flags = py::detail::array_proxy(a.ptr())->flags;
  const bool native = a.dtype().attr("isnative").cast<bool>();
  const bool in_place = native && (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) &&
                        (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if (in_place) {
    auto* keep = new py::object(a);
    std::shared_ptr<const char> data(static_cast<const char*>(a.data()), [keep](const char*) {
      py::gil_scoped_acquire gil;
      delete keep;
    });
    return sdk::Tensor(desc, std::move(data), static_cast<size_t>(a.nbytes()));
  }
  ++*copies;
  py::array c =
      py::module_::import("numpy").attr("ascontiguousarray")(a, a.dtype().attr("newbyteorder")("="));
  return sdk::Tensor(desc, std::string(static_cast<const char*>(c.data()), static_cast<size_t>(c.nbytes())));
}

struct Session {
  ModelSession session;
  std::string source;
  std::mutex run_mutex;  // Runtime::run is not reentrant
  std::atomic<uint64_t> input_copies{0};
  std::atomic<uint64_t> runs{0};
};

std::shared_ptr<Session> open_session(const std::shared_ptr<Model>& model, const py::dict& o) {
  auto s = std::make_shared<Session>();
  s->source = model->source;
  RuntimeOptions ro;
  if (o.contains("expand_partitioned_calls"))
    ro.expand_partitioned_calls = o["expand_partitioned_calls"].cast<bool>();
  if (o.contains("max_tensor_bytes")) ro.max_tensor_bytes = o["max_tensor_bytes"].cast<int64_t>();
  if (o.contains("max_loop_iterations")) ro.max_loop_iterations = o["max_loop_iterations"].cast<int64_t>();
  if (o.contains("concurrent")) {
    if (const sdk::Status c = parse_concurrency(o["concurrent"].cast<std::string>(), &ro.concurrency); !c)
      check(sdk::Status::invalid_argument("concurrent: " + c.message()));
  }
  const std::string pipeline = o["pipeline"].cast<std::string>();
  const auto plugins = o["plugin_paths"].cast<std::vector<std::string>>();
  std::string bytes;
  check(serialize_om(*model->root, &bytes));  // the session owns its own copy: later edits do not reach it
  sdk::Status st;
  {
    py::gil_scoped_release release;
    std::unique_ptr<sdk::Graph> root;
    st = parse_om(bytes, model->source, &root);
    if (st.is_ok())
      st = open_graph_session(std::move(root), model->source, pipeline, plugins, ro, &s->session);
  }
  check(st);
  return s;
}

sdk::Tensor array_feed(const py::object& v, const RuntimeIo& io, std::atomic<uint64_t>* copies) {
  if (!py::isinstance<py::array>(v)) raise_value("input '" + io.name + "' must be a numpy.ndarray");
  return from_numpy(v.cast<py::array>(), io.name, io.desc.dtype, copies);
}

// A sequence input takes a list (or tuple) of arrays; an optional one an array, a list, or None (empty).
sdk::Tensor feed_value(const py::object& v, const RuntimeIo& io, std::atomic<uint64_t>* copies) {
  const auto sequence = [&](const py::object& items) {
    if (!py::isinstance<py::list>(items) && !py::isinstance<py::tuple>(items))
      raise_value("input '" + io.name + "' is a sequence: pass a list of numpy.ndarray");
    std::vector<sdk::Tensor> elements;
    for (py::handle e : items)
      elements.push_back(array_feed(py::reinterpret_borrow<py::object>(e), io, copies));
    return sdk::Tensor::sequence(io.desc.dtype, std::move(elements));
  };
  if (io.desc.kind == sdk::ValueKind::kSequence) return sequence(v);
  if (io.desc.kind == sdk::ValueKind::kOptional) {
    if (v.is_none()) return sdk::Tensor::optional(sdk::ValueKind::kTensor, io.desc.dtype, nullptr);
    const bool seq = py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v);
    const sdk::Tensor element = seq ? sequence(v) : array_feed(v, io, copies);
    return sdk::Tensor::optional(seq ? sdk::ValueKind::kSequence : sdk::ValueKind::kTensor, io.desc.dtype,
                                 &element);
  }
  return array_feed(v, io, copies);
}

std::vector<sdk::Tensor> gather_feeds(const std::vector<RuntimeIo>& ios, const py::dict& feeds,
                                      std::atomic<uint64_t>* copies) {
  std::string names;
  for (const RuntimeIo& io : ios) names += (names.empty() ? "" : ", ") + io.name;
  for (auto item : feeds) {
    const std::string key = py::str(item.first);
    bool known = false;
    for (const RuntimeIo& io : ios) known = known || io.name == key;
    if (!known) raise_lookup("the model has no input '" + key + "' (its inputs: " + names + ")");
  }
  std::vector<sdk::Tensor> inputs;
  for (const RuntimeIo& io : ios) {
    if (!feeds.contains(io.name))
      raise_lookup("input '" + io.name + "' is missing (the model takes: " + names + ")");
    inputs.push_back(feed_value(feeds[py::str(io.name)], io, copies));
  }
  return inputs;
}

bool aliases(const sdk::Tensor& t, const std::vector<sdk::Tensor>& inputs) {
  for (const sdk::Tensor& in : inputs) {
    if (t.shares_storage_with(in)) return true;
    if (in.is_container() && aliases(t, in.elements())) return true;
  }
  return false;
}

// A tensor as an array (copied when it is a model input's memory: the caller gets its own), a sequence as a
// list, an optional as its element or None.
py::object output_value(const sdk::Tensor& t, const std::vector<sdk::Tensor>& inputs) {
  if (t.is_container() && t.desc().kind == sdk::ValueKind::kOptional)
    return t.elements().empty() ? py::none() : output_value(t.elements()[0], inputs);
  if (t.is_container() && t.desc().kind == sdk::ValueKind::kMap) {
    py::dict d;
    py::list keys = output_value(t.elements()[0], inputs).attr("tolist")();
    py::list values = output_value(t.elements()[1], inputs).attr("tolist")();
    for (size_t i = 0; i < keys.size(); ++i) d[keys[i]] = values[i];
    return d;
  }
  if (t.is_container()) {
    py::list items;
    for (const sdk::Tensor& e : t.elements()) items.append(output_value(e, inputs));
    return items;
  }
  py::object a = tensor_to_numpy(t);
  return aliases(t, inputs) ? a.attr("copy")() : a;
}

py::list to_outputs(const std::vector<sdk::Tensor>& inputs, const std::vector<sdk::Tensor>& outputs) {
  py::list out;
  for (const sdk::Tensor& t : outputs) out.append(output_value(t, inputs));
  return out;
}

py::list run(Session& s, const py::dict& feeds) {
  std::vector<sdk::Tensor> inputs = gather_feeds(s.session.runtime->inputs(), feeds, &s.input_copies),
                           outputs;
  sdk::Status st;
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(s.run_mutex);
    st = s.session.runtime->run(inputs, &outputs);
  }
  check(st);
  ++s.runs;
  return to_outputs(inputs, outputs);
}

// graphsplit.JitSession: the online mode. Runs may come from several Python threads at once (the session is
// thread-safe; the GIL is released while it runs).
struct Jit {
  std::unique_ptr<jit::JitSession> session;
  std::atomic<uint64_t> input_copies{0};
};

jit::CutPolicy cut_policy(const std::string& text) {
  if (text == "auto") return jit::CutPolicy::kAuto;
  if (text == "data") return jit::CutPolicy::kData;
  if (text == "never") return jit::CutPolicy::kNever;
  raise_value("cut must be 'auto', 'data' or 'never', got '" + text + "'");
}

std::shared_ptr<Jit> open_jit(const py::dict& o) {
  jit::JitOptions jo;
  jo.compile = request_of(o);
  if (o.contains("cut")) jo.cut = cut_policy(o["cut"].cast<std::string>());
  if (o.contains("dynamic_after")) jo.dynamic_after = o["dynamic_after"].cast<int>();
  if (o.contains("cache_per_slice")) {
    const int64_t n = o["cache_per_slice"].cast<int64_t>();
    if (n < 1) raise_value("--jit_cache must be at least 1");
    jo.cache_per_slice = static_cast<size_t>(n);
  }
  if (o.contains("cache_bytes")) jo.cache_bytes = o["cache_bytes"].cast<int64_t>();
  if (o.contains("max_tensor_bytes")) jo.runtime.max_tensor_bytes = o["max_tensor_bytes"].cast<int64_t>();
  if (o.contains("max_loop_iterations"))
    jo.runtime.max_loop_iterations = o["max_loop_iterations"].cast<int64_t>();
  auto j = std::make_shared<Jit>();
  sdk::Status st;
  {
    py::gil_scoped_release release;
    st = jit::JitSession::open(jo, &j->session);
  }
  check(st);
  return j;
}

py::list run_jit(Jit& j, const py::dict& feeds) {
  std::vector<sdk::Tensor> inputs = gather_feeds(j.session->inputs(), feeds, &j.input_copies), outputs;
  sdk::Status st;
  {
    py::gil_scoped_release release;
    st = j.session->run(inputs, &outputs);
  }
  check(st);
  return to_outputs(inputs, outputs);
}

py::dict plan_jit(Jit& j, const py::dict& feeds) {
  std::vector<sdk::Tensor> inputs = gather_feeds(j.session->inputs(), feeds, &j.input_copies);
  jit::JitPlan p;
  check(j.session->plan(inputs, &p));
  py::dict d;
  d["slice_nodes"] = p.slice_nodes;
  d["remaining_nodes"] = p.remaining_nodes;
  d["cuts"] = p.cuts;
  py::list notes;
  for (const jit::SliceNote& n : p.notes) {
    py::dict e;
    e["node"] = n.node;
    e["reason"] = n.reason;
    notes.append(e);
  }
  d["notes"] = notes;
  return d;
}

py::list io_list(const std::vector<RuntimeIo>& ios) {
  py::list out;
  for (const RuntimeIo& io : ios) out.append(value_info(io.name, io.desc));
  return out;
}

py::list segment_stats(const Session& s) {
  py::list out;
  for (const SegmentStats& st : s.session.runtime->segment_stats()) {
    py::dict d;
    d["graph"] = st.graph;
    d["engine"] = st.engine;
    d["first_node"] = st.first_node;
    d["nodes"] = st.nodes;
    d["static_shape"] = st.static_shape;
    d["arena_bytes"] = st.arena_bytes;
    d["whole_graph"] = st.whole_graph;
    d["calls"] = st.calls;
    d["milliseconds"] = st.milliseconds;
    out.append(d);
  }
  return out;
}

}  // namespace

py::object tensor_to_numpy(const sdk::Tensor& t) {
  if (t.desc().dtype == sdk::DataType::kString) return strings_to_numpy(t);
  const py::dtype dt = numpy_dtype(t.desc().dtype, "a tensor");
  auto* owned = new sdk::Tensor(t);
  py::capsule keep(owned, [](void* p) { delete static_cast<sdk::Tensor*>(p); });
  static const char kEmpty[8] = {};
  const void* data = owned->data() ? owned->data() : kEmpty;
  py::array a(dt, owned->desc().shape.dims(), {}, data, keep);
  make_read_only(a);
  return a;
}

void register_session(py::module_& m) {
  m.def("_set_blas_threads", [](int n) { kernels::set_blas_threads(n); });
  py::class_<Session, std::shared_ptr<Session>>(m, "_Session")
      .def(py::init(&open_session))
      .def_property_readonly("inputs", [](const Session& s) { return io_list(s.session.runtime->inputs()); })
      .def_property_readonly("outputs",
                             [](const Session& s) { return io_list(s.session.runtime->outputs()); })
      .def("run", &run)
      .def_property_readonly("segment_stats", &segment_stats)
      .def_property_readonly("timing_summary",
                             [](const Session& s) { return s.session.runtime->timing_summary(); })
      .def_property_readonly("input_copies", [](const Session& s) { return s.input_copies.load(); })
      .def_property_readonly("runs", [](const Session& s) { return s.runs.load(); });
  py::class_<Jit, std::shared_ptr<Jit>>(m, "_JitSession")
      .def(py::init(&open_jit))
      .def_property_readonly("inputs", [](const Jit& j) { return io_list(j.session->inputs()); })
      .def_property_readonly("outputs", [](const Jit& j) { return io_list(j.session->outputs()); })
      .def("run", &run_jit)
      .def("plan", &plan_jit)
      .def("report_json", [](const Jit& j, bool timing) { return j.session->report_json(timing); })
      .def_property_readonly("input_copies", [](const Jit& j) { return j.input_copies.load(); });
}

}  // namespace graphsplit::python
