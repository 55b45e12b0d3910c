#include "common/log.h"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace graphsplit {
namespace {

// protobuf prints parse complaints (invalid UTF-8 in a string field...) straight to stderr; a corrupt file
// must give one error line, ours, so they go to the debug log instead.
void protobuf_to_debug_log(google::protobuf::LogLevel, const char* file, int line,
                           const std::string& message) {
  spdlog::debug("protobuf {}:{}: {}", file, line, message);
}

}  // namespace

sdk::Status init_logging(std::string_view level) {
  spdlog::level::level_enum l;
  if (level == "debug")
    l = spdlog::level::debug;
  else if (level == "info")
    l = spdlog::level::info;
  else if (level == "warning")
    l = spdlog::level::warn;
  else if (level == "error")
    l = spdlog::level::err;
  else if (level == "null")
    l = spdlog::level::off;
  else
    return sdk::Status::invalid_argument("--log: '" + std::string(level) +
                                         "' is not one of debug, info, warning, error, null");
  static auto logger = [] {
    auto lg = spdlog::stderr_color_st("graphsplit");
    lg->set_pattern("[%l] %v");
    return lg;
  }();
  spdlog::set_default_logger(logger);
  google::protobuf::SetLogHandler(&protobuf_to_debug_log);
  spdlog::set_level(l);
  return sdk::Status::ok();
}

void log_debug(std::string_view message) {
  spdlog::debug("{}", message);
}

}  // namespace graphsplit
