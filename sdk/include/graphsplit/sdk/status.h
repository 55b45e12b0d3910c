// Status: the error channel of every fallible SDK call. No exception crosses a library boundary, so every
// failure that a user can cause travels as a Status with a code and a one-line message.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kUnsupported,
  kFailedPrecondition,
  kResourceExhausted,
  kDeviceError,
  kInternal,
  kNotImplemented,
};

GS_SDK_API std::string_view to_string(StatusCode code);

class GS_SDK_API Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  static Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
  static Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context ("while importing 'x.onnx': ") so that callers can add where without losing what.
  Status with_context(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace graphsplit::sdk

#define GS_RETURN_IF_ERROR(expr)                   \
  do {                                             \
    ::graphsplit::sdk::Status gs_status_ = (expr); \
    if (!gs_status_.is_ok()) return gs_status_;    \
  } while (0)
