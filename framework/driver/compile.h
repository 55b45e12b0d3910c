// The compile driver: what atc does between reading its arguments and printing its summary, as a library, so
// that atc and the Python module run one code path and cannot drift (same behaviour, same error text).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"
#include "import/onnx_import.h"
#include "pipeline/pipeline.h"

namespace graphsplit {

// Everything a compile depends on, in GE's option spellings (atc's --name).
struct CompileRequest {
  std::string model;        // a path (also the name in messages and reports)
  std::string model_bytes;  // when non-empty, the model is parsed from here; `model` only names it
  std::optional<int> framework;
  std::string pipeline;  // a pipeline file; empty: the installed default
  std::vector<std::string> plugin_paths;
  std::vector<std::string> ge_options;  // "key=value;key=value" items
  std::string input_shape;              // GE's "name:d0,d1;name2:d0"
  std::string dynamic_batch_size, dynamic_image_size, dynamic_dims, input_format;
  int64_t max_nodes = 20'000'000;
  int max_nesting_depth = 25;
  std::optional<bool> verify_each;
  bool timing = false;
  std::string dump_graph;
  double entry_timeout = 0;
  std::function<void(const std::string&)> on_time_limit;
  // Called after each pipeline entry ran; a non-ok status stops the compile with it (Python: Ctrl-C, a
  // progress callback that raised).
  std::function<sdk::Status(const EntryReport& entry, size_t index, size_t count)> after_entry;
  // What the compile is doing now, for a progress display: "loading plugins", "reading the model", then each
  // pipeline entry's label with its 1-based index and the entry count (0 and 0 outside the pipeline).
  std::function<void(const std::string& what, size_t index, size_t count)> on_step;
  // Keep the pipeline's decisions: the reports and explain() read them (PipelineSettings::keep_decisions).
  bool keep_decisions = true;
};

// Splits --options values ("k=v;k=v") into pairs; a value may be empty, a key may not.
sdk::Status parse_ge_options(const std::vector<std::string>& values,
                             std::vector<std::pair<std::string, std::string>>* out);

// Parses GE's --input_shape syntax: "name:d0,d1;name2:d0" (sdk::parse_gear_options's rules and codes). A name
// is everything before the last ':' (names may contain ':'); an empty dimension list is a scalar; -1 marks an
// unknown dimension.
sdk::Status parse_input_shape(const std::string& text, std::vector<InputShapeOverride>* out);

std::string pipeline_path(const CompileRequest& r);
std::vector<std::string> plugin_search_paths(const CompileRequest& r);

// Parses the pipeline file at `path` and loads its plugins with the request's settings (gear options, GE
// options, verification, timing, time limit).
sdk::Status build_pipeline(const CompileRequest& r, const std::string& path, std::unique_ptr<Pipeline>* out,
                           std::vector<Diagnostic>* diags);

// The same from a parsed configuration, or from pipeline TOML text (`name` stands for its file in messages;
// relative search paths are taken from the working folder).
sdk::Status build_pipeline(const CompileRequest& r, const PipelineConfig& config,
                           std::unique_ptr<Pipeline>* out, std::vector<Diagnostic>* diags);
sdk::Status build_pipeline_from_text(const CompileRequest& r, std::string_view text, const std::string& name,
                                     std::unique_ptr<Pipeline>* out, std::vector<Diagnostic>* diags);

// Reads the model (a file, or `model_bytes`) with the request's input shapes and limits; `infer_shapes` false
// leaves the shapes as the file gives them (for a pipeline that infers them first).
sdk::Status load_model(const CompileRequest& r, std::unique_ptr<sdk::Graph>* root, bool infer_shapes = true);

// A compiled model: the partitioned graph and the pipeline that made it (its decisions and timing).
struct Compilation {
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<sdk::Graph> root;

  // Writes the .om atomically without holding it whole in memory; `size` receives the file's size.
  sdk::Status write_om(const std::string& path, size_t* size) const;
  sdk::Status partition_report(std::string* json) const;
  sdk::Status partition_report_html(std::string* html) const;
  sdk::Status placement_report(std::string* json) const;
  sdk::Status explain(const std::string& node, std::string* text) const;
  std::string model;
  // Wall time of each phase of compile_model (atc --timing).
  double plugins_ms = 0, import_ms = 0, pipeline_ms = 0;
  int64_t import_resident_kb = 0;  // the process's resident memory once the model was imported (timing only)
};

// Builds the pipeline, loads the model and runs the pipeline on it. Nothing is written. An error of the
// pipeline run is prefixed with the model's name, as atc prints it.
sdk::Status compile_model(const CompileRequest& r, Compilation* out);

}  // namespace graphsplit
