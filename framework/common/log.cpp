#include "common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace graphsplit {

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
  spdlog::set_level(l);
  return sdk::Status::ok();
}

}  // namespace graphsplit
