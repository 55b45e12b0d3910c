// Reads an engine's op-support table (TOML). Every problem is reported as file:line:column.
#pragma once

#include <string>
#include <string_view>

#include "graphsplit/sdk/op_table.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

sdk::Status load_op_table(const std::string& path, sdk::OpSupportTable* out);
sdk::Status parse_op_table(std::string_view text, const std::string& path, sdk::OpSupportTable* out);

}  // namespace graphsplit
