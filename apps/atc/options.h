// atc's options. Each feature area registers its own group on the CLI11 app, so a later feature adds a
// register_*_options function here and a call in main, and nothing else changes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "driver/compile.h"

namespace CLI {
class App;
}

namespace graphsplit::atc {

struct AtcOptions {
  // Core (GE spellings).
  std::string model;
  std::optional<int> framework;  // 5 = ONNX, the only framework graphsplit reads
  std::string output;
  std::string input_shape;
  std::string log = "warning";
  int mode = 0;  // 0: model -> .om; 1: .om (or model) -> JSON
  std::string om;
  std::string json;
  bool version = false;

  // Pipeline and plugins.
  std::string pipeline;                   // default: <atc>/../share/graphsplit/pipeline.toml
  std::vector<std::string> plugin_paths;  // searched first; each value may hold several ':'-separated folders
  std::vector<std::string> ge_options;    // "key=value;key=value", repeatable
  bool list_plugins = false;
  bool print_pipeline = false;
  std::string validate_pipeline;
  bool timing = false;
  std::string dump_graph;
  std::optional<bool> verify_each;
  double entry_timeout = 0;  // seconds per pipeline entry; 0 = no limit

  // Explaining placement.
  std::string dump_placement;
  std::string explain;
  std::string partition_report;
  std::string export_onnx;  // the partitioned model as ONNX (mode 0)
  std::string onnx;         // with --mode=1: the .om as ONNX

  // Dynamic gears (GE's multi-batch).
  std::string dynamic_batch_size;
  std::string dynamic_image_size;
  std::string dynamic_dims;
  std::string input_format;

  // Resource limits.
  int64_t max_nodes = 20'000'000;
  int max_nesting_depth = 25;
};

void register_core_options(CLI::App& app, AtcOptions& options);
void register_pipeline_options(CLI::App& app, AtcOptions& options);
void register_gear_options(CLI::App& app, AtcOptions& options);

// The parsers atc's values go through live in the driver (framework/driver/compile.h).
using graphsplit::parse_ge_options;
using graphsplit::parse_input_shape;

}  // namespace graphsplit::atc
