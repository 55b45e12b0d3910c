// Logging setup for the host: spdlog to stderr. Plugins never log directly (design guide, section 3.8).
#pragma once

#include <string_view>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

// level: debug | info | warning | error | null (GE's --log values). Anything else is an invalid_argument.
sdk::Status init_logging(std::string_view level);

}  // namespace graphsplit
