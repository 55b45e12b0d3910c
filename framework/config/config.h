// The pipeline configuration (TOML) as parsed: syntax and schema are checked here, with file:line:column
// positions; names, option schemas and plugins are checked when the pipeline is built (pipeline/pipeline.h).
// toml++ stays inside config.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

struct SourcePos {
  std::string file;
  int64_t line = 0;
  int64_t column = 0;
  std::string str() const;  // "file:line:col", or "file" without a line, or "<command line>"
  friend bool operator<(const SourcePos& a, const SourcePos& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  }
};

struct Diagnostic {
  SourcePos pos;
  std::string message;
  std::string str() const { return pos.str() + ": error: " + message; }
};

// Sorts by position and turns the list into one Status (first diagnostic, plus how many more).
sdk::Status diagnostics_to_status(std::vector<Diagnostic> diags);

struct RawValue {
  std::variant<bool, int64_t, double, std::string, std::vector<std::string>> value;
  SourcePos pos;
  std::string type_name() const;  // "bool", "integer", "float", "string", "array"
  std::string literal() const;    // TOML spelling
};

struct RawOption {
  std::string key;
  RawValue value;
  SourcePos key_pos;
};

struct PipelineEntry {
  bool is_pass = true;  // pass = "...", otherwise partition = "..."
  std::string name;
  SourcePos pos;       // the [[pipeline]] header
  SourcePos name_pos;  // the pass/partition value
  std::string id;
  bool enabled = true;
  std::vector<std::string> engines;
  std::vector<RawOption> options;
};

struct EngineSettings {
  std::string name;
  bool enabled = true;
  std::optional<int64_t> priority;
  std::vector<RawOption> options;
  // Op types this engine must not take although its op table lists them (exclude_ops = [...]).
  std::vector<std::pair<std::string, SourcePos>> exclude_ops;
  SourcePos pos;
};

struct PipelineConfig {
  std::string path;  // as given
  std::string dir;   // ${CONFIG_DIR}
  int64_t schema_version = 0;
  std::vector<std::string> search_paths;  // variables expanded
  std::vector<std::pair<std::string, SourcePos>> required, optional;
  std::string unload = "never";
  bool strict_abi_tag = false;
  std::vector<RawOption> ge_options;
  std::vector<EngineSettings> engines;
  std::vector<PipelineEntry> entries;
  struct Debug {
    std::string timing = "off";  // off | list
    bool verify_each = false;
    std::string dump_graph;  // a folder, or empty
  } debug;
};

inline constexpr int64_t kPipelineSchemaVersion = 1;

// Reads and checks syntax and schema. On failure every problem found is in `diags` (sorted by position) and
// the Status carries the first.
sdk::Status parse_pipeline_config(const std::string& path, PipelineConfig* out,
                                  std::vector<Diagnostic>* diags);
sdk::Status parse_pipeline_config_text(std::string_view text, const std::string& path, PipelineConfig* out,
                                       std::vector<Diagnostic>* diags);

// "did you mean 'x'?" when some candidate is within edit distance 2 or equal ignoring case; else "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

}  // namespace graphsplit
