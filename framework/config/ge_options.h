// GE options ("ge.*") that graphsplit understands, with GE's names, defaults and validation. They come from
// the pipeline file's [options] table and from atc --options, and reach plugins through
// PassContext::ge_options().
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/options.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

struct GeOptionSpec {
  std::string name;
  std::vector<std::string> aliases;  // other accepted spellings
  enum class Type { kInt, kString, kEnum } type = Type::kString;
  std::string default_value;        // as GE spells it
  int64_t min = 0, max = 0;         // kInt
  std::vector<std::string> values;  // kEnum
  std::string help;
};

const std::vector<GeOptionSpec>& ge_option_specs();
// Finds a spec by name or alias.
const GeOptionSpec* find_ge_option(std::string_view name);
std::vector<std::string> ge_option_names();

// Validates `value` (GE passes every option as a string) and stores it under the canonical name: kInt options
// as ints, the others as strings. The message names the option and, for range errors, GE's code E10001.
sdk::Status set_ge_option(const GeOptionSpec& spec, const std::string& value, sdk::OptionValues* out);
// Every option at its default.
sdk::OptionValues default_ge_options();

}  // namespace graphsplit
