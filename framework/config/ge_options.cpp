#include "config/ge_options.h"

#include <charconv>
#include <limits>

#include "graphsplit/sdk/ir/names.h"

namespace graphsplit {

const std::vector<GeOptionSpec>& ge_option_specs() {
  using T = GeOptionSpec::Type;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  static const std::vector<GeOptionSpec> specs = {
      {"ge.exec.static_model_ops_lower_limit",
       {},
       T::kInt,
       "4",
       -1,
       kMax,
       {},
       "Minimum size of a static cluster; smaller ones become dynamic. -1: the whole graph is dynamic"},
      {"ge.topoSortingMode",
       {},
       T::kEnum,
       "",
       0,
       0,
       {"", "0", "1", "2", "3"},
       "Topological order: 0 BFS, 1 DFS, 2 RDFS, 3 StableRDFS; empty: DFS (inference)"},
      {"ge.tiling_schedule_optimize", {}, T::kEnum, "0", 0, 0, {"0", "1"}, "1: tiling may sink to AI CPU"},
      {"ge.host_scheduling_max_threshold",
       {"ge.exec.hostSchedulingMaxThreshold"},
       T::kInt,
       "0",
       0,
       kMax,
       {},
       "A static graph with fewer nodes than this is scheduled on the host as a whole"},
      {"ge.exec.exclude_engines",
       {},
       T::kString,
       "",
       0,
       0,
       {},
       "'|'-separated engines to exclude: AiCore, AiVector, Dsa, Dvpp, AiCpuAscend, AiCpu, HostCpu, Hccl, "
       "FftsPlus"},
      {"ge.engineType",
       {},
       T::kString,
       "",
       0,
       0,
       {},
       "\"VectorCore\" excludes AI Core; anything else excludes AI Vector"},
      {"ge.exec.placement",
       {},
       T::kEnum,
       "",
       0,
       0,
       {"", "HOST", "DEVICE"},
       "HOST: execute on the host, no split"},
      {"ge.buildGraphMode", {}, T::kString, "", 0, 0, {}, "\"offline\": skip the device capability query"},
      {"ge.inputShape", {}, T::kString, "", 0, 0, {}, "Input shapes, as atc --input_shape"},
      {"ge.dynamicDims", {}, T::kString, "", 0, 0, {}, "Gears, as atc --dynamic_dims"},
      {"ge.dynamicBatchSize", {}, T::kString, "", 0, 0, {}, "Gears, as atc --dynamic_batch_size"},
      {"ge.dynamicImageSize", {}, T::kString, "", 0, 0, {}, "Gears, as atc --dynamic_image_size"},
      {"ge.inputFormat",
       {},
       T::kEnum,
       "",
       0,
       0,
       {"", "NCHW", "NHWC", "ND"},
       "Input layout, as atc --input_format"},
      {"ge.dynamicNodeType", {}, T::kEnum, "1", 0, 0, {"0", "1"}, "Input kind for gears: 0 GetNext, 1 Data"},
      {"ge.socVersion", {}, T::kString, "", 0, 0, {}, "Target SoC (informational)"},
      {"ge.exec.precision_mode", {}, T::kString, "", 0, 0, {}, "Precision mode (informational)"},
      {std::string(sdk::option::kMaxTensorBytes),
       {},
       T::kInt,
       "0",
       0,
       kMax,
       {},
       "Largest tensor a CPU kernel may allocate at run time, in bytes; 0: no limit (omrun "
       "--max_tensor_bytes)"},
  };
  return specs;
}

const GeOptionSpec* find_ge_option(std::string_view name) {
  for (const GeOptionSpec& s : ge_option_specs()) {
    if (s.name == name) return &s;
    for (const std::string& a : s.aliases) {
      if (a == name) return &s;
    }
  }
  return nullptr;
}

std::vector<std::string> ge_option_names() {
  std::vector<std::string> names;
  for (const GeOptionSpec& s : ge_option_specs()) {
    names.push_back(s.name);
    names.insert(names.end(), s.aliases.begin(), s.aliases.end());
  }
  return names;
}

sdk::Status set_ge_option(const GeOptionSpec& spec, const std::string& value, sdk::OptionValues* out) {
  switch (spec.type) {
    case GeOptionSpec::Type::kInt: {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty()) {
        return sdk::Status::invalid_argument("E10001: option '" + spec.name + "' is present but empty");
      }
      if (ec != std::errc() || ptr != value.data() + value.size() || v < spec.min || v > spec.max) {
        return sdk::Status::invalid_argument(
            "E10001: value '" + value + "' for option '" + spec.name +
            "' is invalid; it must be an integer in [" + std::to_string(spec.min) + ", " +
            (spec.max == std::numeric_limits<int64_t>::max() ? std::string("INT64_MAX")
                                                             : std::to_string(spec.max)) +
            "]");
      }
      out->set(spec.name, sdk::AttrValue::Int(v));
      return sdk::Status::ok();
    }
    case GeOptionSpec::Type::kEnum: {
      for (const std::string& allowed : spec.values) {
        if (allowed == value) {
          out->set(spec.name, sdk::AttrValue::String(value));
          return sdk::Status::ok();
        }
      }
      std::string list;
      for (const std::string& allowed : spec.values)
        list += (list.empty() ? "" : ", ") + ("\"" + allowed + "\"");
      return sdk::Status::invalid_argument("E10001: value '" + value + "' for option '" + spec.name +
                                           "' is invalid; allowed: " + list);
    }
    case GeOptionSpec::Type::kString:
      out->set(spec.name, sdk::AttrValue::String(value));
      return sdk::Status::ok();
  }
  return sdk::Status::internal("bad option spec");
}

sdk::OptionValues default_ge_options() {
  sdk::OptionValues v;
  for (const GeOptionSpec& s : ge_option_specs()) {
    sdk::Status st = set_ge_option(s, s.default_value, &v);
    (void)st;  // defaults are valid by construction (tested)
  }
  return v;
}

}  // namespace graphsplit
