// The pipeline: plugins loaded and checked, components created with validated options, entries run in the
// order of the [[pipeline]] array, with timing, per-entry verification and graph dumps.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/pass.h"
#include "pipeline/decision_log.h"
#include "pipeline/registry.h"

namespace graphsplit {

struct EntryReport {
  std::string label;   // "pass std.prune_unused", "partition dynamic_shape"
  std::string plugin;  // "std 0.1.0"
  bool enabled = true;
  bool ran = false;
  bool changed = false;
  double milliseconds = 0;
  int64_t resident_kb = 0;  // the process's resident memory once the entry ended (--timing)
  int64_t peak_kb = 0;      // and its high-water mark so far
};

struct PipelineSettings {
  std::vector<std::string> plugin_paths;   // atc --plugin_path: searched before the file's search_paths
  std::vector<std::string> builtin_paths;  // beside the executable: searched last
  std::vector<std::pair<std::string, std::string>> ge_overrides;  // atc --options, applied over [options]
  std::optional<bool> verify_each;
  std::optional<bool> timing;
  std::optional<std::string> dump_graph;
  // What PassContext::infer_value_shapes does (atc: the model's shape inference with those input shapes).
  std::function<sdk::Status(const sdk::InputDims&, sdk::ValueDescs*)> infer_shapes;
  // A plugin call that runs longer than this (seconds; 0 = no limit) cannot be stopped safely in-process: the
  // watchdog reports the entry and its plugin through `on_time_limit`, which must not return (atc prints the
  // error and exits 1; nothing has been written at that point). Without a callback the process exits 1 after
  // printing the message.
  double entry_time_limit_s = 0;
  std::function<void(const std::string& message)> on_time_limit;
  // Called after each entry (disabled ones too) with its report, its 1-based index and the entry count; a
  // non-ok status stops the run with it.
  std::function<sdk::Status(const EntryReport&, size_t index, size_t count)> after_entry;
  // Called before each enabled entry runs (atc's progress line), with its label, 1-based index and the count.
  std::function<void(const std::string& label, size_t index, size_t count)> before_entry;
  // Keep the entries' decisions for the reports (decisions()). Placement records two a node: about 100 MB at
  // a million nodes, which atc spares when no option of it reads them.
  bool keep_decisions = true;
};

class Pipeline {
 public:
  // Loads every plugin the configuration names, validates names and options against the descriptors, and
  // creates the components. All problems found go to `diags` (file:line:column); the Status carries the
  // first.
  static sdk::Status create(const PipelineConfig& config, const PipelineSettings& settings,
                            std::unique_ptr<Pipeline>* out, std::vector<Diagnostic>* diags);
  ~Pipeline();

  sdk::Status run(sdk::Graph& root);
  // Whether the first enabled entry is the shape.infer pass: then the importer's own inference would be done
  // twice (atc imports without it; a graph that is never run through the pipeline keeps it).
  bool begins_with_shape_inference() const;

  const std::vector<EntryReport>& reports() const { return reports_; }
  // Every decision the entries of the last run() recorded, in order, with the entry in Decision::stage. Empty
  // when the settings did not keep them (decisions_kept()).
  const std::vector<sdk::Decision>& decisions() const { return decisions_.decisions(); }
  bool decisions_kept() const { return keep_decisions_; }
  std::string timing_table() const;
  // The resolved pipeline as TOML, every option filled in, with where each value came from.
  std::string canonical_toml() const;
  const Registry& registry() const { return registry_; }
  const std::vector<std::string>& search_paths() const { return search_paths_; }
  bool timing_enabled() const { return timing_; }
  const sdk::OptionValues& ge_options() const { return ge_options_; }
  // The enabled engine of that name (its component name, e.g. "AIcoreEngine"); nullptr if none. The runtime
  // compiles and runs segments with these objects.
  sdk::Engine* find_engine(const std::string& name) const;

 private:
  void load_plugins(const PipelineConfig& config, const PipelineSettings& settings,
                    std::vector<Diagnostic>* diags);
  void resolve_ge_options(const PipelineConfig& config, const PipelineSettings& settings,
                          std::vector<std::string>* ge_explicit, std::vector<Diagnostic>* diags);
  void select_engines(const PipelineConfig& config, const std::vector<std::string>& ge_explicit,
                      std::vector<Diagnostic>* diags);
  void build_stages(const PipelineConfig& config, const std::vector<std::string>& ge_explicit,
                    std::vector<Diagnostic>* diags);
  std::string unknown_entry_message(const PipelineEntry& e, ComponentKind kind) const;
  void create_components(const SourcePos& file_pos, std::vector<Diagnostic>* diags);
  struct Engine;
  struct Stage;
  static void exclude_ops(const EngineSettings& settings, Engine* engine, std::vector<Diagnostic>* diags);
  Pipeline() = default;
  sdk::Status dump(const sdk::Graph& root, size_t index, const std::string& label) const;

  PipelineConfig config_;
  Registry registry_;
  std::vector<std::string> search_paths_;
  sdk::OptionValues ge_options_;
  DecisionLog decisions_;
  bool keep_decisions_ = true;
  std::vector<std::pair<std::string, std::string>> ge_sources_;  // option -> where its value came from
  std::vector<std::unique_ptr<Engine>> engines_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<EntryReport> reports_;
  bool verify_each_ = false;
  bool timing_ = false;
  std::string dump_dir_;
  std::function<sdk::Status(const sdk::InputDims&, sdk::ValueDescs*)> infer_shapes_;
  double entry_time_limit_s_ = 0;
  std::function<void(const std::string&)> on_time_limit_;
  std::function<sdk::Status(const EntryReport&, size_t, size_t)> after_entry_;
  std::function<void(const std::string&, size_t, size_t)> before_entry_;
};

// What a plugin library declares (atc --list_plugins, graphsplit.list_plugins()).
struct PluginDescription {
  struct Component {
    std::string kind, name, stage, summary;
    std::vector<std::pair<std::string, std::string>> options;  // description, help
    std::string op_table;                                      // its source; empty: none
    size_t op_types = 0;
  };
  std::string path;
  std::string refused;  // why the library could not be loaded; empty: it loaded
  std::string name, version, sdk_version, abi, abi_tag;
  int64_t min_host_minor = 0;
  std::vector<Component> components;
};
std::vector<PluginDescription> describe_plugins(const std::vector<std::string>& paths);

// Every libgsplugin_*.so found in `paths`, loaded and described; libraries that fail are listed with the
// reason.
std::string list_plugins(const std::vector<std::string>& paths, bool* all_ok);

}  // namespace graphsplit
