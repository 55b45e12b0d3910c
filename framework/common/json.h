// The JSON the host writes by hand (reports and traces whose shape protobuf does not describe).
#pragma once

#include <string>
#include <string_view>

namespace graphsplit {

// `s` as a JSON string literal, quotes included; control characters as \u00XX.
std::string json_string(std::string_view s);

}  // namespace graphsplit
