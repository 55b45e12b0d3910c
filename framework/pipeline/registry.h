// The registry of components (engines, passes, partitioners) from loaded plugin libraries, built from their
// descriptors alone: listing, describing and validating need no plugin object.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/ir/attr.h"
#include "graphsplit/sdk/op_table.h"
#include "graphsplit/sdk/pass.h"
#include "loader/loader.h"

namespace graphsplit {

enum class ComponentKind { kEngine, kPass, kPartitioner };
std::string_view to_string(ComponentKind kind);

struct OptionSpec {
  std::string name;
  uint32_t type = GS_OPT_STRING;  // gs_option_type
  bool required = false;
  sdk::AttrValue default_value;
  bool bounded = false;
  double min = 0, max = 0;
  std::vector<std::string> enum_values;
  std::string help;
  std::string ge_alias;
  std::string describe() const;  // "max_iterations (int, default 10)"
};

struct ComponentInfo {
  ComponentKind kind = ComponentKind::kPass;
  std::string name;  // engines: "aicore"; passes: "<plugin>.<pass>"; partitioners: the stage name
  std::string summary;
  std::string stage;  // partitioners
  std::shared_ptr<const LoadedLibrary> library;
  const gs_component_desc* desc = nullptr;
  std::vector<OptionSpec> options;
  std::shared_ptr<const sdk::OpSupportTable> op_table;  // engines
};

class Registry {
 public:
  // Adds every component of a library. Loading the same library twice is a no-op; one component name claimed
  // by two files is an error naming both. Engines' op tables are read here (beside the library).
  sdk::Status add_library(std::shared_ptr<const LoadedLibrary> library);
  const ComponentInfo* find(ComponentKind kind, std::string_view name) const;
  std::vector<std::string> names(ComponentKind kind) const;
  // Sorted by kind, then name.
  std::vector<const ComponentInfo*> components() const;
  const std::vector<std::shared_ptr<const LoadedLibrary>>& libraries() const { return libraries_; }

 private:
  std::vector<std::shared_ptr<const LoadedLibrary>> libraries_;
  std::vector<std::unique_ptr<ComponentInfo>> components_;
};

// Every call into a plugin goes through here: an exception becomes a Status naming the plugin and the call,
// and its text is copied while the library is certainly loaded.
template <class F>
sdk::Status guarded(const LoadedLibrary& lib, const std::string& what, F&& f) noexcept {
  try {
    sdk::Status s = f();
    if (s.is_ok()) return s;
    return {s.code(), what + " (" + lib.label() + ") failed: " + s.message()};
  } catch (const std::exception& e) {
    return sdk::Status::internal(what + " (" + lib.label() + ") threw: " + e.what());
  } catch (...) {
    return sdk::Status::internal(what + " (" + lib.label() + ") threw a non-standard exception");
  }
}

// Creates a component with validated options and the session's GE options; the handle keeps its library
// loaded. An engine is handed `table` instead of its own op table when one is given (exclude_ops).
sdk::Status create_engine(const ComponentInfo& c, const sdk::OptionValues& options,
                          const sdk::OptionValues& ge, PluginHandle<sdk::Engine>* out,
                          const sdk::OpSupportTable* table = nullptr);
sdk::Status create_pass(const ComponentInfo& c, const sdk::OptionValues& options, const sdk::OptionValues& ge,
                        PluginHandle<sdk::Pass>* out);
sdk::Status create_partitioner(const ComponentInfo& c, const sdk::OptionValues& options,
                               const sdk::OptionValues& ge, PluginHandle<sdk::Partitioner>* out);
// Routes a plugin's log message to spdlog, tagged with `who`.
void plugin_log(const std::string& who, sdk::LogLevel level, std::string_view message);

// Checks `given` against a component's schema and fills in defaults and GE aliases (from `ge_options`, which
// are used only when the entry does not set the option itself).
sdk::Status resolve_options(const ComponentInfo& component, const std::vector<RawOption>& given,
                            const sdk::OptionValues& ge_options, const std::vector<std::string>& ge_explicit,
                            sdk::OptionValues* out, std::vector<Diagnostic>* diags);

}  // namespace graphsplit
