#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

std::string_view to_string(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kResourceExhausted:
      return "resource_exhausted";
    case StatusCode::kDeviceError:
      return "device_error";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kNotImplemented:
      return "not_implemented";
  }
  return "unknown";
}

Status Status::with_context(std::string_view context) const {
  if (is_ok()) return *this;
  std::string m(context);
  m += message_;
  return {code_, std::move(m)};
}

}  // namespace graphsplit::sdk
