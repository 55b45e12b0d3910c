// The _graphsplit extension: the framework and its compile driver behind the graphsplit package. Importing it
// loads no plugin; plugins are loaded when a pipeline or a session is built.
#include "bindings.h"

PYBIND11_MODULE(_graphsplit, m) {
  m.doc() = "graphsplit's compiler and runtime (use the graphsplit package, not this module)";
  m.attr("__version__") = GRAPHSPLIT_VERSION;
  graphsplit::python::register_errors(m);
  graphsplit::python::register_graph(m);
  graphsplit::python::register_compile(m);
  graphsplit::python::register_session(m);
}
