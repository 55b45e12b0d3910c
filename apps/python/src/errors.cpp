// graphsplit.Error and one subclass per status code. Bad arguments are also ValueErrors and missing names
// LookupErrors, so that callers can catch what Python code usually catches.
#include <array>

#include "bindings.h"

namespace graphsplit::python {
namespace {

struct ErrorClass {
  sdk::StatusCode code;
  const char* name;
  PyObject* extra_base;  // besides graphsplit.Error; nullptr: none
  PyObject* type = nullptr;
};

PyObject* g_error = nullptr;
std::array<ErrorClass, 8>& classes() {
  static std::array<ErrorClass, 8> c = {{
      {sdk::StatusCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError},
      {sdk::StatusCode::kNotFound, "NotFoundError", PyExc_LookupError},
      {sdk::StatusCode::kUnsupported, "UnsupportedError", nullptr},
      {sdk::StatusCode::kFailedPrecondition, "FailedPreconditionError", nullptr},
      {sdk::StatusCode::kResourceExhausted, "ResourceExhaustedError", nullptr},
      {sdk::StatusCode::kDeviceError, "DeviceError", nullptr},
      {sdk::StatusCode::kInternal, "InternalError", nullptr},
      {sdk::StatusCode::kNotImplemented, "NotImplementedError", nullptr},
  }};
  return c;
}

PyObject* class_of(sdk::StatusCode code) {
  for (const ErrorClass& c : classes()) {
    if (c.code == code) return c.type;
  }
  return g_error;
}

}  // namespace

void register_errors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("graphsplit.Error",
                                      "A graphsplit failure; the message is the line atc or omrun prints.",
                                      PyExc_Exception, nullptr);
  m.add_object("Error", py::handle(g_error));
  for (ErrorClass& c : classes()) {
    const std::string qualified = std::string("graphsplit.") + c.name;
    py::tuple bases = c.extra_base ? py::make_tuple(py::handle(g_error), py::handle(c.extra_base))
                                   : py::make_tuple(py::handle(g_error));
    c.type = PyErr_NewException(qualified.c_str(), bases.ptr(), nullptr);
    m.add_object(c.name, py::handle(c.type));
  }
}

void raise_status(const sdk::Status& s) {
  PyErr_SetString(class_of(s.code()), s.message().c_str());
  throw py::error_already_set();
}

void raise_lookup(const std::string& message) {
  raise_status(sdk::Status(sdk::StatusCode::kNotFound, message));
}

void raise_value(const std::string& message) {
  raise_status(sdk::Status(sdk::StatusCode::kInvalidArgument, message));
}

}  // namespace graphsplit::python
