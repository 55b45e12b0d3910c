// Option values handed to plugins. Values are already validated against the component's declared schema, so a
// plugin can read them without checking types; the typed values reuse the IR's AttrMap:
// bool -> kBool, int -> kInt, float -> kFloat, string and enum -> kString, list -> kStrings.
#pragma once

#include "graphsplit/sdk/ir/attr.h"

namespace graphsplit::sdk {

using OptionValues = AttrMap;

}  // namespace graphsplit::sdk
