// Logging setup for the host: spdlog to stderr. Plugins never log directly (design guide, section 3.8).
#pragma once

#include <string_view>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

// level: debug | info | warning | error | null (GE's --log values). Anything else is an invalid_argument.
sdk::Status init_logging(std::string_view level);

// A debug line through the host's logger, for the executables, which do not link spdlog themselves.
void log_debug(std::string_view message);

}  // namespace graphsplit
