// graphsplit.load_onnx / load_om / compile / validate_pipeline / list_plugins: the compile driver atc runs
// (framework/driver), with the GIL released while it works and Ctrl-C honoured between pipeline entries.
#include "driver/compile.h"

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>

#include "bindings.h"
#include "common/install_paths.h"
#include "common/log.h"
#include "model/om_io.h"
#include "report/onnx_export.h"
#include "report/partition_html.h"
#include "report/placement_report.h"

namespace graphsplit::python {
// What Python passes to the driver; the package's compile() turns dicts and lists into GE's text forms.
CompileRequest request_of(const py::dict& o) {
  CompileRequest r;
  auto str = [&](const char* key, std::string* out) {
    if (o.contains(key) && !o[key].is_none()) *out = o[key].cast<std::string>();
  };
  str("model", &r.model);
  str("pipeline", &r.pipeline);
  str("input_shape", &r.input_shape);
  str("dynamic_batch_size", &r.dynamic_batch_size);
  str("dynamic_image_size", &r.dynamic_image_size);
  str("dynamic_dims", &r.dynamic_dims);
  str("input_format", &r.input_format);
  if (o.contains("model_bytes") && !o["model_bytes"].is_none())
    r.model_bytes = o["model_bytes"].cast<std::string>();
  if (o.contains("plugin_paths")) r.plugin_paths = o["plugin_paths"].cast<std::vector<std::string>>();
  if (o.contains("ge_options")) r.ge_options = o["ge_options"].cast<std::vector<std::string>>();
  if (o.contains("verify_each") && !o["verify_each"].is_none()) r.verify_each = o["verify_each"].cast<bool>();
  r.framework = 5;  // the Python module reads ONNX only; atc's name check does not apply to bytes
  // A pipeline entry past its time limit cannot be stopped in-process: like atc, the process ends.
  if (o.contains("entry_timeout")) r.entry_timeout = o["entry_timeout"].cast<double>();
  return r;
}

namespace {

// Runs between pipeline entries, with the GIL: the progress callback, and Ctrl-C (a pending KeyboardInterrupt
// stops the compile after the entry that was running).
struct Interrupts {
  py::object progress;
  std::optional<py::error_already_set> pending;

  sdk::Status after_entry(const EntryReport& e, size_t index, size_t count) {
    py::gil_scoped_acquire gil;
    if (!progress.is_none()) {
      try {
        progress(e.label, index, count);
      } catch (py::error_already_set& err) {
        pending.emplace(std::move(err));
        return sdk::Status::failed_precondition("stopped by the progress callback");
      }
    }
    if (PyErr_CheckSignals() != 0) {
      pending.emplace();
      return sdk::Status::failed_precondition("interrupted");
    }
    return sdk::Status::ok();
  }
};

std::shared_ptr<Model> load_onnx(const py::dict& options) {
  CompileRequest r = request_of(options);
  auto m = std::make_shared<Model>();
  m->source = r.model.empty() ? std::string("<bytes>") : r.model;
  sdk::Status s;
  {
    py::gil_scoped_release release;
    s = load_model(r, &m->root);
  }
  check(s);
  return m;
}

struct Compiled {
  std::shared_ptr<Model> model;
  std::string partition_report, placement_report;
  std::vector<sdk::Decision> decisions;
  std::string timing;
};

Compiled compile(const py::dict& options, const py::object& progress) {
  CompileRequest r = request_of(options);
  Interrupts interrupts{progress, std::nullopt};
  r.after_entry = [&](const EntryReport& e, size_t i, size_t n) { return interrupts.after_entry(e, i, n); };
  Compilation c;
  Compiled out;
  sdk::Status s;
  {
    py::gil_scoped_release release;
    s = compile_model(r, &c);
    if (s.is_ok()) s = c.partition_report(&out.partition_report);
    if (s.is_ok()) s = c.placement_report(&out.placement_report);
  }
  if (interrupts.pending) throw std::move(*interrupts.pending);  // KeyboardInterrupt, or the callback's error
  check(s);
  out.timing = c.pipeline->timing_table();
  out.model = std::make_shared<Model>();
  out.model->source = c.model;
  out.model->decisions = c.pipeline->decisions();
  out.model->root = std::move(c.root);
  return out;
}

std::string explain(const Compiled& c, const std::string& node) {
  std::string text;
  check(explain_node(*c.model->root, node, c.model->decisions, &text));
  return text;
}

void validate_pipeline(const std::string& path_or_text, bool is_text,
                       const std::vector<std::string>& plugins) {
  CompileRequest r;
  r.plugin_paths = plugins;
  std::unique_ptr<Pipeline> p;
  std::vector<Diagnostic> diags;
  sdk::Status s;
  {
    py::gil_scoped_release release;
    s = is_text ? build_pipeline_from_text(r, path_or_text, "<pipeline>", &p, &diags)
                : build_pipeline(r, path_or_text, &p, &diags);
  }
  if (s.is_ok()) return;
  // One line: the first problem (every problem is in the message's later lines only when there are several).
  std::string message = diags.empty() ? s.message() : diags.front().str();
  for (size_t i = 1; i < diags.size(); ++i) message += "\n" + diags[i].str();
  raise_status(sdk::Status(s.code(), message));
}

std::vector<std::string> plugin_dirs(const std::vector<std::string>& extra) {
  std::vector<std::string> paths = split_search_paths(extra);
  for (const std::string& p : builtin_plugin_paths()) paths.push_back(p);
  return paths;
}

std::string plugins_text(const std::vector<std::string>& extra) {
  bool all_ok = true;
  const std::vector<std::string> paths = plugin_dirs(extra);
  py::gil_scoped_release release;
  return list_plugins(paths, &all_ok);
}

py::dict component_dict(const PluginDescription::Component& c) {
  py::dict d;
  d["kind"] = c.kind;
  d["name"] = c.name;
  d["stage"] = c.stage.empty() ? py::object(py::none()) : py::object(py::str(c.stage));
  d["summary"] = c.summary;
  py::list options;
  for (const auto& [option, help] : c.options) {
    py::dict o;
    o["option"] = option;
    o["help"] = help;
    options.append(o);
  }
  d["options"] = options;
  d["op_table"] = c.op_table.empty() ? py::object(py::none()) : py::object(py::str(c.op_table));
  d["op_types"] = c.op_types;
  return d;
}

py::list plugins_list(const std::vector<std::string>& extra) {
  std::vector<PluginDescription> plugins;
  {
    const std::vector<std::string> paths = plugin_dirs(extra);
    py::gil_scoped_release release;
    plugins = describe_plugins(paths);
  }
  py::list out;
  for (const PluginDescription& p : plugins) {
    py::dict d;
    d["path"] = p.path;
    d["refused"] = p.refused.empty() ? py::object(py::none()) : py::object(py::str(p.refused));
    d["name"] = p.name;
    d["version"] = p.version;
    d["sdk_version"] = p.sdk_version;
    d["abi"] = p.abi;
    py::list components;
    for (const auto& c : p.components) components.append(component_dict(c));
    d["components"] = components;
    out.append(d);
  }
  return out;
}

}  // namespace

void register_compile(py::module_& m) {
  m.def("_init_logging", [](const std::string& level) { check(init_logging(level)); });
  m.def("_set_home", [](const std::string& bin_dir) { set_executable_dir(bin_dir); });
  m.def("_default_pipeline", [] { return default_pipeline_path(); });
  m.def("_load_onnx", &load_onnx);
  m.def("_load_om", [](const std::string& bytes, const std::string& source) {
    return GraphRef{model_from_om(bytes, source), {}};
  });
  m.def("_graph_of", [](const std::shared_ptr<Model>& model) { return GraphRef{model, {}}; });
  m.def("_validate_pipeline", &validate_pipeline);
  m.def("_list_plugins", &plugins_text);
  m.def("_describe_plugins", &plugins_list);
  py::class_<Model, std::shared_ptr<Model>>(m, "_Model");
  py::class_<Compiled>(m, "_Compiled")
      .def_readonly("partition_report", &Compiled::partition_report)
      .def_readonly("placement_report", &Compiled::placement_report)
      .def_readonly("timing", &Compiled::timing)
      .def_property_readonly("graph",
                             [](const Compiled& c) {
                               return GraphRef{c.model, {}};
                             })
      .def("explain", &explain)
      .def("export_onnx",
           [](const Compiled& c) {
             std::string bytes;
             check(export_onnx(*c.model->root, c.model->decisions, &bytes));
             return py::bytes(bytes);
           })
      .def("partition_report_html", [](const Compiled& c) {
        std::string html;
        check(partition_report_html(*c.model->root, c.model->source, c.model->decisions, &html));
        return html;
      });
  m.def("_compile", &compile);
}

}  // namespace graphsplit::python
