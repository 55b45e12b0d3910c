// Library-local: the op-type vocabulary, kept as AttrKey keeps attribute names (attr.cpp).
#pragma once

#include <string>
#include <string_view>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

// The one copy of `type` in this process; never freed.
GS_SDK_LOCAL const std::string* intern_op_type(std::string_view type);

}  // namespace graphsplit::sdk
