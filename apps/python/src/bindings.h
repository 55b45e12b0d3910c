// Shared by the binding sources of the _graphsplit extension. Handles never hold raw IR pointers: a Graph or
// Node handle names its graph and node, and resolves them on every use, so a handle to something removed
// raises instead of crashing.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::python {

namespace py = pybind11;

// The graphsplit.Error hierarchy, created once by register_errors.
void register_errors(py::module_& m);
// Raises the exception class of the status code with the status message (the line atc or omrun prints).
[[noreturn]] void raise_status(const sdk::Status& s);
[[noreturn]] void raise_lookup(const std::string& message);
[[noreturn]] void raise_value(const std::string& message);
inline void check(const sdk::Status& s) {
  if (!s.is_ok()) raise_status(s);
}

// A model in memory: the root graph every handle into it shares, and what the pipeline decided about it.
struct Model {
  std::unique_ptr<sdk::Graph> root;
  std::string source;
  std::vector<sdk::Decision> decisions;
};

struct GraphRef {
  std::shared_ptr<Model> model;
  std::string name;  // empty: the root
  sdk::Graph& get() const;
};

struct NodeRef {
  std::shared_ptr<Model> model;
  std::string graph;  // empty: the root
  std::string node;
  sdk::Node& get() const;
};

GraphRef ref_of(const std::shared_ptr<Model>& model, const sdk::Graph& g);
NodeRef ref_of(const std::shared_ptr<Model>& model, const sdk::Node& n);

// A model from .om bytes or a file (load_om) and a copy of a model (through its .om form, which is exact).
std::shared_ptr<Model> model_from_om(const std::string& bytes, const std::string& source);
std::shared_ptr<Model> copy_model(const Model& m);

// A graphsplit.ValueInfo (name, dtype, kind, shape with symbolic dims as text) (graph.cpp).
py::object value_info(const std::string& name, const sdk::TensorDesc& desc);

// A read-only numpy array over the tensor's bytes, keeping the tensor alive (session.cpp).
py::object tensor_to_numpy(const sdk::Tensor& t);

// What Python passes to the driver (a dict of atc's options as text) as a request (compile.cpp).
CompileRequest request_of(const py::dict& o);

void register_graph(py::module_& m);
void register_compile(py::module_& m);
void register_session(py::module_& m);

}  // namespace graphsplit::python
