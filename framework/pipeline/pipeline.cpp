#include "pipeline/pipeline.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "common/atomic_file.h"
#include "common/process_memory.h"
#include "config/ge_options.h"
#include "graphsplit/sdk/ir/verify.h"
#include "model/dot.h"
#include "model/om_io.h"
#include "report/decisions.h"

namespace graphsplit {
namespace {

using sdk::AttrValue;
using sdk::Status;
namespace fs = std::filesystem;

std::string plugin_label(const LoadedLibrary& lib) {
  return lib.plugin_name() + " " + lib.plugin_version();
}

class HostPassContext final : public sdk::PassContext {
 public:
  using Infer = std::function<Status(const sdk::InputDims&, sdk::ValueDescs*)>;
  HostPassContext(std::string who, const sdk::OptionValues& options, const sdk::OptionValues& ge,
                  std::vector<sdk::EngineRef> engines, const Infer* infer = nullptr,
                  DecisionLog* decisions = nullptr)
      : who_(std::move(who)),
        options_(options),
        ge_(ge),
        engines_(std::move(engines)),
        infer_(infer),
        decisions_(decisions) {}
  Status infer_value_shapes(const sdk::InputDims& inputs, sdk::ValueDescs* out) const override {
    if (!infer_ || !*infer_) return sdk::PassContext::infer_value_shapes(inputs, out);
    return (*infer_)(inputs, out);
  }
  const sdk::OptionValues& options() const override { return options_; }
  const sdk::OptionValues& ge_options() const override { return ge_; }
  std::vector<sdk::EngineRef> engines() const override { return engines_; }
  void log(sdk::LogLevel level, std::string_view message) const override { plugin_log(who_, level, message); }
  void record(const sdk::Decision& decision) override {
    if (spdlog::should_log(spdlog::level::debug)) plugin_log(who_, sdk::LogLevel::kDebug, describe(decision));
    if (!decisions_) return;
    decisions_->add(decision, who_);
  }
  bool keeps_decisions() const override { return decisions_ || spdlog::should_log(spdlog::level::debug); }

 private:
  std::string who_;
  const sdk::OptionValues& options_;
  const sdk::OptionValues& ge_;
  std::vector<sdk::EngineRef> engines_;
  const Infer* infer_;
  DecisionLog* decisions_;
};

std::string literal(const AttrValue& v) {
  std::ostringstream s;
  auto quoted = [&](const std::string& x) {
    std::string q = "\"";
    for (char c : x) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  };
  switch (v.kind()) {
    case AttrValue::Kind::kBool:
      return *v.as_bool() ? "true" : "false";
    case AttrValue::Kind::kInt:
      return std::to_string(*v.as_int());
    case AttrValue::Kind::kFloat:
      s << std::get<double>(v.storage());
      return s.str();
    case AttrValue::Kind::kString:
      return quoted(*v.as_string());
    case AttrValue::Kind::kStrings: {
      std::string out = "[";
      for (const auto& x : *v.as_strings()) out += (out.size() > 1 ? ", " : "") + quoted(x);
      return out + "]";
    }
    default:
      return "\"?\"";
  }
}

std::string file_safe(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return s;
}

}  // namespace

struct Pipeline::Engine {
  const ComponentInfo* info = nullptr;
  int64_t priority = 0;
  sdk::OptionValues options;
  // The op table placement and the engine see: the plugin's, or a copy without the exclude_ops rows.
  std::shared_ptr<const sdk::OpSupportTable> table;
  std::vector<std::string> excluded_ops;
  PluginHandle<sdk::Engine> handle;
};

struct Pipeline::Stage {
  PipelineEntry entry;
  const ComponentInfo* info = nullptr;
  sdk::OptionValues options;
  PluginHandle<sdk::Pass> pass;
  PluginHandle<sdk::Partitioner> partitioner;
  std::string label;
};

Pipeline::~Pipeline() = default;

// Loading: the search path (de-duplicated), then every required plugin (an error each) and optional one
// (logged).
void Pipeline::load_plugins(const PipelineConfig& config, const PipelineSettings& settings,
                            std::vector<Diagnostic>* diags) {
  search_paths_ = settings.plugin_paths;
  search_paths_.insert(search_paths_.end(), config.search_paths.begin(), config.search_paths.end());
  search_paths_.insert(search_paths_.end(), settings.builtin_paths.begin(), settings.builtin_paths.end());
  {
    std::vector<std::string> unique;
    for (const std::string& path : search_paths_) {
      const std::string normal = fs::path(path).lexically_normal().string();
      if (std::find(unique.begin(), unique.end(), normal) == unique.end()) unique.push_back(normal);
    }
    search_paths_ = std::move(unique);
  }
  PluginLoader loader(LoaderOptions{search_paths_, config.strict_abi_tag, config.unload == "checked"});
  for (const auto& [name, pos] : config.required) {
    std::shared_ptr<const LoadedLibrary> lib;
    Status s = loader.load(name, &lib);
    if (s.is_ok()) s = registry_.add_library(lib);
    if (!s.is_ok()) diags->push_back({pos, s.message()});
  }
  for (const auto& [name, pos] : config.optional) {
    std::shared_ptr<const LoadedLibrary> lib;
    Status s = loader.load(name, &lib);
    if (s.is_ok()) s = registry_.add_library(lib);
    if (!s.is_ok()) spdlog::info("{}: optional plugin '{}' not loaded: {}", pos.str(), name, s.message());
  }
}

// GE options: defaults, then [options], then atc --options; `ge_explicit` lists those set by the user.
void Pipeline::resolve_ge_options(const PipelineConfig& config, const PipelineSettings& settings,
                                  std::vector<std::string>* ge_explicit_out, std::vector<Diagnostic>* diags) {
  std::vector<std::string>& ge_explicit = *ge_explicit_out;
  ge_options_ = default_ge_options();
  for (const GeOptionSpec& spec : ge_option_specs()) ge_sources_.emplace_back(spec.name, "default");
  auto set_source = [&](const std::string& name, const std::string& where) {
    for (auto& [n, w] : ge_sources_) {
      if (n == name) w = where;
    }
  };
  for (const RawOption& o : config.ge_options) {
    const GeOptionSpec* spec = find_ge_option(o.key);
    std::string text;
    if (const auto* i = std::get_if<int64_t>(&o.value.value))
      text = std::to_string(*i);
    else if (const auto* s = std::get_if<std::string>(&o.value.value))
      text = *s;
    else if (const auto* b = std::get_if<bool>(&o.value.value))
      text = *b ? "1" : "0";
    Status s = set_ge_option(*spec, text, &ge_options_);
    if (!s.is_ok()) {
      diags->push_back({o.value.pos, s.message()});
      continue;
    }
    set_source(spec->name, o.key_pos.str());
    ge_explicit.push_back(spec->name);
  }
  for (const auto& [key, value] : settings.ge_overrides) {
    const GeOptionSpec* spec = find_ge_option(key);
    if (!spec) {
      const std::string dym = did_you_mean(key, ge_option_names());
      diags->push_back(
          {SourcePos{}, "--options: unknown GE option '" + key + "'" + (dym.empty() ? "" : "; " + dym)});
      continue;
    }
    Status s = set_ge_option(*spec, value, &ge_options_);
    if (!s.is_ok()) {
      diags->push_back({SourcePos{}, "--options: " + s.message()});
      continue;
    }
    set_source(spec->name, "--options");
    if (std::find(ge_explicit.begin(), ge_explicit.end(), spec->name) == ge_explicit.end())
      ge_explicit.push_back(spec->name);
  }
}

// Every engine of a loaded plugin takes part unless disabled, in priority order.
void Pipeline::select_engines(const PipelineConfig& config, const std::vector<std::string>& ge_explicit,
                              std::vector<Diagnostic>* diags) {
  for (const EngineSettings& e : config.engines) {
    if (!registry_.find(ComponentKind::kEngine, e.name)) {
      const std::string dym = did_you_mean(e.name, registry_.names(ComponentKind::kEngine));
      diags->push_back({e.pos, "unknown engine '" + e.name + "'" +
                                   (dym.empty() ? "; no loaded plugin provides it" : "; " + dym)});
    }
  }
  for (const ComponentInfo* c : registry_.components()) {
    if (c->kind != ComponentKind::kEngine) continue;
    auto settings_it = std::find_if(config.engines.begin(), config.engines.end(),
                                    [&](const EngineSettings& e) { return e.name == c->name; });
    if (settings_it != config.engines.end() && !settings_it->enabled) continue;
    auto engine = std::make_unique<Engine>();
    engine->info = c;
    if (settings_it != config.engines.end() && settings_it->priority)
      engine->priority = *settings_it->priority;
    static const std::vector<RawOption> kNone;
    if (!resolve_options(*c, settings_it != config.engines.end() ? settings_it->options : kNone, ge_options_,
                         ge_explicit, &engine->options, diags)
             .is_ok()) {
      continue;
    }
    engine->table = c->op_table;
    if (settings_it != config.engines.end() && !settings_it->exclude_ops.empty())
      exclude_ops(*settings_it, engine.get(), diags);
    engines_.push_back(std::move(engine));
  }
  std::stable_sort(engines_.begin(), engines_.end(), [](const auto& a, const auto& b) {
    return a->priority != b->priority ? a->priority > b->priority : a->info->name < b->info->name;
  });
}

// A copy of the engine's op table without the rows the user excluded; each name must be a row of the table,
// so that a misspelt op type is an error rather than a silent no-op.
void Pipeline::exclude_ops(const EngineSettings& settings, Engine* engine, std::vector<Diagnostic>* diags) {
  const sdk::OpSupportTable* original = engine->info->op_table.get();
  std::vector<std::string> listed;
  if (original) {
    for (const sdk::OpSupportRow& row : original->rows()) listed.push_back(row.type);
  }
  std::set<std::string> excluded;
  for (const auto& [type, pos] : settings.exclude_ops) {
    if (!original || !original->find(type)) {
      const std::string dym = did_you_mean(type, listed);
      diags->push_back({pos, "exclude_ops of [engines." + settings.name + "]: op type '" + type +
                                 "' is not in the engine's op table" + (dym.empty() ? "" : "; " + dym)});
      continue;
    }
    excluded.insert(type);
  }
  if (excluded.empty()) return;
  auto table = std::make_shared<sdk::OpSupportTable>(
      original->source() + " (exclude_ops: " + std::to_string(excluded.size()) + " op types)");
  table->set_kernel_lib(original->kernel_lib());
  for (const sdk::OpSupportRow& row : original->rows()) {
    if (!excluded.count(row.type)) table->add(row);
  }
  engine->table = std::move(table);
  engine->excluded_ops.assign(excluded.begin(), excluded.end());
}

std::string Pipeline::unknown_entry_message(const PipelineEntry& e, ComponentKind kind) const {
  std::string msg = "unknown " + std::string(e.is_pass ? "pass" : "partition stage") + " '" + e.name + "'";
  const std::vector<std::string> candidates = registry_.names(kind);
  const std::string dym = did_you_mean(e.name, candidates);
  if (!dym.empty()) {
    const std::string suggestion = dym.substr(dym.find('\'') + 1, dym.rfind('\'') - dym.find('\'') - 1);
    const ComponentInfo* c = registry_.find(kind, suggestion);
    msg += "; " + dym.substr(0, dym.size() - 1) + " (plugin " + plugin_label(*c->library) + ")?";
  } else if (e.is_pass && e.name.find('.') == std::string::npos) {
    msg += "; pass names are '<plugin>.<pass>'";
  } else {
    msg += "; is the plugin that provides it listed in [plugins] required?";
  }
  return msg;
}

void Pipeline::build_stages(const PipelineConfig& config, const std::vector<std::string>& ge_explicit,
                            std::vector<Diagnostic>* diags) {
  std::vector<std::string> partition_stages;
  for (const PipelineEntry& e : config.entries) {
    if (e.name.empty()) continue;  // already reported by the parser
    auto stage = std::make_unique<Stage>();
    stage->entry = e;
    const ComponentKind kind = e.is_pass ? ComponentKind::kPass : ComponentKind::kPartitioner;
    stage->info = registry_.find(kind, e.name);
    if (!stage->info) {
      diags->push_back({e.name_pos, unknown_entry_message(e, kind)});
      continue;
    }
    if (!e.is_pass) {
      if (std::find(partition_stages.begin(), partition_stages.end(), e.name) != partition_stages.end()) {
        diags->push_back(
            {e.name_pos, "partition stage '" + e.name + "' appears twice; each stage runs at most once"});
        continue;
      }
      partition_stages.push_back(e.name);
    }
    if (!e.engines.empty()) {
      diags->push_back({e.pos, "engine-scoped entries ('engines = [...]') are not supported yet"});
      continue;
    }
    if (!resolve_options(*stage->info, e.options, ge_options_, ge_explicit, &stage->options, diags).is_ok())
      continue;
    stage->label = std::string(e.is_pass ? "pass " : "partition ") + e.name;
    stages_.push_back(std::move(stage));
  }
}

// The components, once every option is valid.
void Pipeline::create_components(const SourcePos& file_pos, std::vector<Diagnostic>* diags) {
  for (auto& engine : engines_) {
    Status s =
        create_engine(*engine->info, engine->options, ge_options_, &engine->handle, engine->table.get());
    if (!s.is_ok()) diags->push_back({file_pos, s.message()});
  }
  for (auto& stage : stages_) {
    if (!stage->entry.enabled) continue;
    Status s = stage->entry.is_pass
                   ? create_pass(*stage->info, stage->options, ge_options_, &stage->pass)
                   : create_partitioner(*stage->info, stage->options, ge_options_, &stage->partitioner);
    if (!s.is_ok()) diags->push_back({stage->entry.name_pos, s.message()});
  }
}

Status Pipeline::create(const PipelineConfig& config, const PipelineSettings& settings,
                        std::unique_ptr<Pipeline>* out, std::vector<Diagnostic>* diags) {
  diags->clear();
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->config_ = config;
  p->load_plugins(config, settings, diags);
  if (!diags->empty()) return diagnostics_to_status(*diags);
  std::vector<std::string> ge_explicit;
  p->resolve_ge_options(config, settings, &ge_explicit, diags);
  p->select_engines(config, ge_explicit, diags);
  p->build_stages(config, ge_explicit, diags);
  if (!diags->empty()) return diagnostics_to_status(*diags);
  p->create_components(SourcePos{config.path, 0, 0}, diags);
  if (!diags->empty()) return diagnostics_to_status(*diags);
  p->verify_each_ = settings.verify_each.value_or(config.debug.verify_each);
  p->timing_ = settings.timing.value_or(config.debug.timing != "off");
  p->dump_dir_ = settings.dump_graph.value_or(config.debug.dump_graph);
  p->infer_shapes_ = settings.infer_shapes;
  p->entry_time_limit_s_ = settings.entry_time_limit_s;
  p->on_time_limit_ = settings.on_time_limit;
  p->after_entry_ = settings.after_entry;
  p->before_entry_ = settings.before_entry;
  p->keep_decisions_ = settings.keep_decisions;
  *out = std::move(p);
  return Status::ok();
}

Status Pipeline::dump(const sdk::Graph& root, size_t index, const std::string& label) const {
  if (dump_dir_.empty()) return Status::ok();
  std::error_code ec;
  fs::create_directories(dump_dir_, ec);
  if (ec) return Status::invalid_argument("--dump_graph: cannot create '" + dump_dir_ + "': " + ec.message());
  char prefix[8];
  std::snprintf(prefix, sizeof prefix, "%03zu_", index);
  const std::string base = (fs::path(dump_dir_) / (prefix + file_safe(label))).string();
  std::string json;
  GS_RETURN_IF_ERROR(graph_to_json(root, &json));
  GS_RETURN_IF_ERROR(write_file_atomically(base + ".json", json));
  return write_file_atomically(base + ".dot", graph_to_dot(root));
}

bool Pipeline::begins_with_shape_inference() const {
  for (const auto& stage : stages_) {
    if (stage->entry.enabled) return stage->entry.is_pass && stage->info->name == "shape.infer";
  }
  return false;
}

Status Pipeline::run(sdk::Graph& root) {
  reports_.clear();
  decisions_.clear();
  std::vector<sdk::EngineRef> engines;
  for (const auto& e : engines_)
    engines.push_back({e->info->name, e->priority, e->table.get(), e->handle.get()});
  GS_RETURN_IF_ERROR(dump(root, 0, "input"));
  size_t index = 0;
  for (const auto& stage : stages_) {
    ++index;
    EntryReport report;
    report.label = stage->label;
    report.plugin = plugin_label(*stage->info->library);
    report.enabled = stage->entry.enabled;
    if (!stage->entry.enabled) {
      reports_.push_back(report);
      if (after_entry_) GS_RETURN_IF_ERROR(after_entry_(report, index, stages_.size()));
      continue;
    }
    if (before_entry_) before_entry_(stage->label, index, stages_.size());
    HostPassContext ctx(stage->info->name, stage->options, ge_options_, engines, &infer_shapes_,
                        keep_decisions_ ? &decisions_ : nullptr);
    const std::string what = "pipeline entry " + std::to_string(index) + " (" + stage->label + ")";
    bool changed = false;
    const auto start = std::chrono::steady_clock::now();
    // The watchdog: a plugin call past the time limit is reported with its entry and plugin.
    std::mutex watch_mutex;
    std::condition_variable watch_cv;
    bool finished = false;
    std::thread watchdog;
    if (entry_time_limit_s_ > 0) {
      const std::string message = what + " (" + stage->info->library->label() +
                                  ") exceeded the time limit of " +
                                  std::to_string(static_cast<int64_t>(entry_time_limit_s_)) + " s";
      watchdog = std::thread([&, message] {
        std::unique_lock<std::mutex> lock(watch_mutex);
        if (watch_cv.wait_for(lock, std::chrono::duration<double>(entry_time_limit_s_),
                              [&] { return finished; }))
          return;
        if (on_time_limit_) on_time_limit_(message);
        std::fprintf(stderr, "error: %s\n", message.c_str());
        std::_Exit(1);
      });
    }
    Status s = guarded(*stage->info->library, what, [&] {
      return stage->entry.is_pass ? stage->pass->run(root, ctx, &changed)
                                  : stage->partitioner->partition(root, ctx, &changed);
    });
    if (watchdog.joinable()) {
      {
        const std::lock_guard<std::mutex> lock(watch_mutex);
        finished = true;
      }
      watch_cv.notify_all();
      watchdog.join();
    }
    report.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    report.ran = true;
    report.changed = changed;
    if (timing_) {
      const ProcessMemory memory = process_memory();
      report.resident_kb = memory.resident_kb;
      report.peak_kb = memory.peak_kb;
    }
    reports_.push_back(report);
    GS_RETURN_IF_ERROR(s);
    if (verify_each_) {
      Status v = sdk::verify(root);
      if (!v.is_ok()) {
        return Status::failed_precondition(what + " (" + stage->info->library->label() +
                                           ") left an invalid graph: " + v.message());
      }
    }
    GS_RETURN_IF_ERROR(dump(root, index, stage->info->name));
    if (after_entry_) GS_RETURN_IF_ERROR(after_entry_(reports_.back(), index, stages_.size()));
  }
  return Status::ok();
}

std::string Pipeline::timing_table() const {
  // Columns as wide as their longest cell: a fixed 18 for the plugin let "partition_dynamic_shape 0.1.0" push
  // that row's numbers out of line with the others.
  int entry_w = 5, plugin_w = 6;
  for (const EntryReport& r : reports_) {
    entry_w = std::max(entry_w, static_cast<int>(r.label.size()));
    plugin_w = std::max(plugin_w, static_cast<int>(r.plugin.size()));
  }
  std::ostringstream out;
  // Room for the widest row whatever the names' lengths: a fixed buffer cut a long one, newline and all.
  std::vector<char> buffer(static_cast<size_t>(entry_w + plugin_w) + 64);
  char* line = buffer.data();
  std::snprintf(line, buffer.size(), "%-3s %-*s %-*s %10s  %-7s %7s %7s\n", "#", entry_w, "entry", plugin_w,
                "plugin", "ms", "changed", "rss MB", "peak MB");
  out << line;
  double total = 0;
  for (size_t i = 0; i < reports_.size(); ++i) {
    const EntryReport& r = reports_[i];
    // A disabled entry ran nothing, so it has no memory to show.
    const auto mb = [&](int64_t kb) { return r.ran ? std::to_string((kb + 512) / 1024) : std::string(); };
    std::snprintf(line, buffer.size(), "%-3zu %-*s %-*s %10.3f  %-7s %7s %7s\n", i + 1, entry_w,
                  r.label.c_str(), plugin_w, r.plugin.c_str(), r.milliseconds,
                  !r.enabled  ? "disabled"
                  : r.changed ? "+"
                              : "-",
                  mb(r.resident_kb).c_str(), mb(r.peak_kb).c_str());
    out << line;
    total += r.milliseconds;
  }
  std::snprintf(line, buffer.size(), "%-3s %-*s %-*s %10.3f\n", "", entry_w, "total", plugin_w, "", total);
  out << line;
  return out.str();
}

std::string Pipeline::canonical_toml() const {
  std::ostringstream out;
  out << "# resolved from " << config_.path << "\nschema_version = " << kPipelineSchemaVersion
      << "\n\n[plugins]\n";
  out << "search_paths = [";
  for (size_t i = 0; i < search_paths_.size(); ++i) out << (i ? ", " : "") << '"' << search_paths_[i] << '"';
  out << "]\nrequired = [";
  for (size_t i = 0; i < config_.required.size(); ++i)
    out << (i ? ", " : "") << '"' << config_.required[i].first << '"';
  out << "]\n";
  for (const auto& lib : registry_.libraries())
    out << "# loaded: " << lib->plugin_name() << " " << lib->plugin_version() << " from " << lib->path()
        << "\n";
  out << "\n[options]\n";
  for (const auto& [name, where] : ge_sources_) {
    const AttrValue* v = ge_options_.get(name);
    out << '"' << name << "\" = " << (v->as_int() ? "\"" + std::to_string(*v->as_int()) + "\"" : literal(*v))
        << "  # " << where << "\n";
  }
  for (const auto& e : engines_) {
    out << "\n[engines." << e->info->name << "]  # " << plugin_label(*e->info->library)
        << "\nenabled = true\npriority = " << e->priority << "\n";
    if (!e->excluded_ops.empty()) {
      out << "exclude_ops = [";
      for (size_t i = 0; i < e->excluded_ops.size(); ++i)
        out << (i ? ", \"" : "\"") << e->excluded_ops[i] << '"';
      out << "]\n";
    }
    if (!e->options.empty()) {
      out << "options = {";
      bool first = true;
      for (const auto& [k, v] : e->options.entries()) {
        out << (first ? " " : ", ") << k << " = " << literal(v);
        first = false;
      }
      out << " }\n";
    }
  }
  for (const auto& s : stages_) {
    out << "\n[[pipeline]]  # " << plugin_label(*s->info->library) << ", " << s->entry.pos.str() << "\n"
        << (s->entry.is_pass ? "pass" : "partition") << " = \"" << s->info->name << "\"\n";
    if (!s->entry.id.empty()) out << "id = \"" << s->entry.id << "\"\n";
    out << "enabled = " << (s->entry.enabled ? "true" : "false") << "\n";
    if (!s->options.empty()) {
      out << "options = {";
      bool first = true;
      for (const auto& [k, v] : s->options.entries()) {
        out << (first ? " " : ", ") << k << " = " << literal(v);
        first = false;
      }
      out << " }\n";
    }
  }
  return out.str();
}

std::vector<PluginDescription> describe_plugins(const std::vector<std::string>& paths) {
  PluginLoader loader(LoaderOptions{paths, false, false});
  Registry registry;
  std::vector<PluginDescription> out;
  for (const std::string& file : loader.discover()) {
    PluginDescription p;
    p.path = file;
    std::shared_ptr<const LoadedLibrary> lib;
    Status s = loader.load_file(file, &lib);
    if (s.is_ok()) s = registry.add_library(lib);
    if (!s.is_ok()) {
      p.refused = s.message();
      out.push_back(std::move(p));
      continue;
    }
    const gs_plugin_desc& d = lib->descriptor();
    p.path = lib->path();
    p.name = d.name;
    p.version = d.version;
    p.sdk_version = d.sdk_version;
    p.abi = std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor);
    p.min_host_minor = d.min_host_minor;
    p.abi_tag = d.abi_tag;
    for (const ComponentInfo* c : registry.components()) {
      if (c->library != lib) continue;
      PluginDescription::Component comp{
          std::string(to_string(c->kind)), c->name, c->stage, c->summary, {}, {}, 0};
      for (const OptionSpec& o : c->options) comp.options.emplace_back(o.describe(), o.help);
      if (c->op_table) {
        comp.op_table = c->op_table->source();
        comp.op_types = c->op_table->rows().size();
      }
      p.components.push_back(std::move(comp));
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string list_plugins(const std::vector<std::string>& paths, bool* all_ok) {
  std::ostringstream out;
  *all_ok = true;
  const std::vector<PluginDescription> plugins = describe_plugins(paths);
  for (const PluginDescription& p : plugins) {
    if (!p.refused.empty()) {
      *all_ok = false;
      out << p.path << "\n  refused: " << p.refused << "\n";
      continue;
    }
    out << p.path << "\n  plugin " << p.name << " " << p.version << ", SDK " << p.sdk_version << ", ABI "
        << p.abi << " (host minor >= " << p.min_host_minor << "), " << p.abi_tag << "\n";
    for (const PluginDescription::Component& c : p.components) {
      out << "  " << c.kind << " " << c.name;
      if (!c.stage.empty()) out << " [stage " << c.stage << "]";
      out << ": " << c.summary << "\n";
      for (const auto& [option, help] : c.options)
        out << "    option " << option << (help.empty() ? "" : ": " + help) << "\n";
      if (!c.op_table.empty()) out << "    op table " << c.op_table << " (" << c.op_types << " op types)\n";
    }
  }
  if (plugins.empty()) {
    out << "no plugins found in:";
    for (const std::string& p : paths) out << " " << p;
    out << "\n";
  }
  return out.str();
}

sdk::Engine* Pipeline::find_engine(const std::string& name) const {
  for (const auto& e : engines_)
    if (e->info->name == name) return e->handle.get();
  return nullptr;
}

}  // namespace graphsplit
