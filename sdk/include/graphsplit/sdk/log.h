// Plugins never write to stdout or stderr; they log through their context, and the host routes it to spdlog
// tagged with the plugin's name.
#pragma once

namespace graphsplit::sdk {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

}  // namespace graphsplit::sdk
