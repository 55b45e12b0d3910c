#include "pipeline/registry.h"

#include <spdlog/spdlog.h>
#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "config/op_table_loader.h"
#include "graphsplit/sdk/strings.h"

namespace graphsplit {
namespace {

using sdk::AttrValue;
using sdk::Status;
namespace fs = std::filesystem;

std::string_view type_name(uint32_t t) {
  switch (t) {
    case GS_OPT_BOOL:
      return "bool";
    case GS_OPT_INT:
      return "int";
    case GS_OPT_FLOAT:
      return "float";
    case GS_OPT_STRING:
      return "string";
    case GS_OPT_ENUM:
      return "enum";
    case GS_OPT_LIST:
      return "list";
  }
  return "invalid";
}

// Converts a TOML-ish value to the option's type, or explains why not.
bool convert(const OptionSpec& spec, const RawValue& raw, AttrValue* out, std::string* why) {
  const auto& v = raw.value;
  switch (spec.type) {
    case GS_OPT_BOOL:
      if (!std::holds_alternative<bool>(v)) break;
      *out = AttrValue::Bool(std::get<bool>(v));
      return true;
    case GS_OPT_INT: {
      if (!std::holds_alternative<int64_t>(v)) break;
      const int64_t x = std::get<int64_t>(v);
      if (spec.bounded && (static_cast<double>(x) < spec.min || static_cast<double>(x) > spec.max)) {
        std::ostringstream s;
        s << "option '" << spec.name << "' must be in [" << spec.min << ", " << spec.max << "], got " << x;
        *why = s.str();
        return false;
      }
      *out = AttrValue::Int(x);
      return true;
    }
    case GS_OPT_FLOAT: {
      double x;
      if (std::holds_alternative<double>(v))
        x = std::get<double>(v);
      else if (std::holds_alternative<int64_t>(v))
        x = static_cast<double>(std::get<int64_t>(v));
      else
        break;
      if (spec.bounded && (x < spec.min || x > spec.max)) {
        std::ostringstream s;
        s << "option '" << spec.name << "' must be in [" << spec.min << ", " << spec.max << "], got " << x;
        *why = s.str();
        return false;
      }
      *out = AttrValue::Float(x);
      return true;
    }
    case GS_OPT_STRING:
      if (!std::holds_alternative<std::string>(v)) break;
      *out = AttrValue::String(std::get<std::string>(v));
      return true;
    case GS_OPT_ENUM: {
      if (!std::holds_alternative<std::string>(v)) break;
      const std::string& s = std::get<std::string>(v);
      if (std::find(spec.enum_values.begin(), spec.enum_values.end(), s) == spec.enum_values.end()) {
        std::string list;
        for (const auto& e : spec.enum_values) list += (list.empty() ? "\"" : ", \"") + e + "\"";
        *why = "option '" + spec.name + "' must be one of " + list + ", got \"" + s + "\"";
        return false;
      }
      *out = AttrValue::String(s);
      return true;
    }
    case GS_OPT_LIST:
      if (!std::holds_alternative<std::vector<std::string>>(v)) break;
      *out = AttrValue::Strings(std::get<std::vector<std::string>>(v));
      return true;
  }
  static const char* const kExpected[] = {"a boolean", "an integer", "a number",
                                          "a string",  "a string",   "an array of strings"};
  *why = "option '" + spec.name + "' must be " + kExpected[spec.type] + ", got " + raw.type_name() + " " +
         raw.literal();
  return false;
}

Status parse_option_spec(const gs_option_desc& d, const std::string& owner, OptionSpec* out) {
  auto refuse = [&](const std::string& why) {
    return Status::failed_precondition(owner + ": option " +
                                       (d.name ? "'" + std::string(d.name) + "'" : "?") + ": " + why);
  };
  if (!d.name || !*d.name) return refuse("has no name");
  if (d.type > GS_OPT_LIST) return refuse("has unknown type " + std::to_string(d.type));
  out->name = d.name;
  out->type = d.type;
  out->bounded = d.min <= d.max;
  out->min = d.min;
  out->max = d.max;
  out->help = d.help ? d.help : "";
  out->ge_alias = d.ge_alias ? d.ge_alias : "";
  if (d.type == GS_OPT_ENUM) {
    if (!d.enum_values || !*d.enum_values) return refuse("is an enum without values");
    out->enum_values = sdk::split(d.enum_values, '|');
  }
  if (!d.default_value) {
    out->required = true;
    return Status::ok();
  }
  // Defaults are TOML literals, so they go through the same conversion as user values.
  RawValue raw;
  try {
    toml::table t = toml::parse(std::string("v = ") + d.default_value);
    const toml::node& n = *t.get("v");
    if (n.is_boolean())
      raw.value = n.as_boolean()->get();
    else if (n.is_integer())
      raw.value = n.as_integer()->get();
    else if (n.is_floating_point())
      raw.value = n.as_floating_point()->get();
    else if (n.is_string())
      raw.value = std::string(n.as_string()->get());
    else if (n.is_array()) {
      std::vector<std::string> items;
      for (const toml::node& e : *n.as_array()) {
        if (!e.is_string()) return refuse("default is not an array of strings");
        items.emplace_back(e.as_string()->get());
      }
      raw.value = items;
    } else {
      return refuse("default '" + std::string(d.default_value) + "' has an unsupported type");
    }
  } catch (const toml::parse_error& e) {
    return refuse("default '" + std::string(d.default_value) +
                  "' is not a TOML value: " + std::string(e.description()));
  }
  std::string why;
  if (!convert(*out, raw, &out->default_value, &why)) return refuse("default does not fit: " + why);
  return Status::ok();
}

class HostPluginContext final : public sdk::PluginContext {
 public:
  HostPluginContext(const ComponentInfo& c, const sdk::OptionValues& options, const sdk::OptionValues& ge,
                    const sdk::OpSupportTable* table)
      : c_(c), options_(options), ge_(ge), table_(table ? table : c.op_table.get()) {}
  std::string_view component_name() const override { return c_.name; }
  const sdk::OptionValues& options() const override { return options_; }
  const sdk::OpSupportTable* op_table() const override { return table_; }
  void log(sdk::LogLevel level, std::string_view message) const override {
    plugin_log(c_.name, level, message);
  }
  const sdk::OptionValues& ge_options() const override { return ge_; }

 private:
  const ComponentInfo& c_;
  const sdk::OptionValues& options_;
  const sdk::OptionValues& ge_;
  const sdk::OpSupportTable* table_;
};

template <class T>
Status instantiate(const ComponentInfo& c, ComponentKind expected, const sdk::OptionValues& options,
                   const sdk::OptionValues& ge, PluginHandle<T>* out,
                   const sdk::OpSupportTable* table = nullptr) {
  if (c.kind != expected) {
    return Status::invalid_argument("'" + c.name + "' is a " + std::string(to_string(c.kind)) + ", not a " +
                                    std::string(to_string(expected)));
  }
  HostPluginContext ctx(c, options, ge, table);
  void* object = nullptr;
  GS_RETURN_IF_ERROR(guarded(*c.library, std::string(to_string(c.kind)) + " '" + c.name + "' create", [&] {
    object = c.desc->create(&ctx);
    return object ? Status::ok() : Status::internal("create returned null");
  }));
  *out = PluginHandle<T>(c.library, static_cast<T*>(object), c.desc->destroy);
  return Status::ok();
}

}  // namespace

void plugin_log(const std::string& who, sdk::LogLevel level, std::string_view message) {
  switch (level) {
    case sdk::LogLevel::kDebug:
      spdlog::debug("[{}] {}", who, message);
      break;
    case sdk::LogLevel::kInfo:
      spdlog::info("[{}] {}", who, message);
      break;
    case sdk::LogLevel::kWarning:
      spdlog::warn("[{}] {}", who, message);
      break;
    case sdk::LogLevel::kError:
      spdlog::error("[{}] {}", who, message);
      break;
  }
}

Status create_engine(const ComponentInfo& c, const sdk::OptionValues& options, const sdk::OptionValues& ge,
                     PluginHandle<sdk::Engine>* out, const sdk::OpSupportTable* table) {
  return instantiate(c, ComponentKind::kEngine, options, ge, out, table);
}
Status create_pass(const ComponentInfo& c, const sdk::OptionValues& options, const sdk::OptionValues& ge,
                   PluginHandle<sdk::Pass>* out) {
  return instantiate(c, ComponentKind::kPass, options, ge, out);
}
Status create_partitioner(const ComponentInfo& c, const sdk::OptionValues& options,
                          const sdk::OptionValues& ge, PluginHandle<sdk::Partitioner>* out) {
  return instantiate(c, ComponentKind::kPartitioner, options, ge, out);
}

std::string_view to_string(ComponentKind kind) {
  switch (kind) {
    case ComponentKind::kEngine:
      return "engine";
    case ComponentKind::kPass:
      return "pass";
    case ComponentKind::kPartitioner:
      return "partitioner";
  }
  return "?";
}

std::string OptionSpec::describe() const {
  std::string s = name + " (" + std::string(type_name(type));
  if (required) return s + ", required)";
  std::ostringstream d;
  switch (default_value.kind()) {
    case AttrValue::Kind::kBool:
      d << (*default_value.as_bool() ? "true" : "false");
      break;
    case AttrValue::Kind::kInt:
      d << *default_value.as_int();
      break;
    case AttrValue::Kind::kFloat:
      d << std::get<double>(default_value.storage());
      break;
    case AttrValue::Kind::kString:
      d << '"' << *default_value.as_string() << '"';
      break;
    case AttrValue::Kind::kStrings: {
      d << '[';
      bool first = true;
      for (const auto& x : *default_value.as_strings()) {
        d << (first ? "" : ", ") << '"' << x << '"';
        first = false;
      }
      d << ']';
      break;
    }
    default:
      break;
  }
  return s + ", default " + d.str() + ")";
}

Status Registry::add_library(std::shared_ptr<const LoadedLibrary> library) {
  for (const auto& l : libraries_) {
    if (l == library) return Status::ok();
  }
  const gs_plugin_desc& d = library->descriptor();
  std::vector<std::unique_ptr<ComponentInfo>> fresh;
  for (uint32_t i = 0; i < d.n_components; ++i) {
    const gs_component_desc& c = d.components[i];
    auto info = std::make_unique<ComponentInfo>();
    info->kind = c.kind == GS_ENGINE ? ComponentKind::kEngine
                 : c.kind == GS_PASS ? ComponentKind::kPass
                                     : ComponentKind::kPartitioner;
    info->name =
        info->kind == ComponentKind::kPass ? std::string(d.name) + "." + c.name : std::string(c.name);
    info->summary = c.summary ? c.summary : "";
    info->stage = c.stage ? c.stage : "";
    info->library = library;
    info->desc = &c;
    const std::string owner =
        "plugin " + library->path() + " " + std::string(to_string(info->kind)) + " '" + info->name + "'";
    for (uint32_t j = 0; j < c.n_options; ++j) {
      OptionSpec spec;
      GS_RETURN_IF_ERROR(parse_option_spec(c.options[j], owner, &spec));
      info->options.push_back(std::move(spec));
    }
    if (info->kind == ComponentKind::kEngine) {
      if (!c.op_table || !*c.op_table) return Status::failed_precondition(owner + " declares no op table");
      auto table = std::make_shared<sdk::OpSupportTable>();
      const std::string path = (fs::path(library->path()).parent_path() / c.op_table).string();
      GS_RETURN_IF_ERROR(load_op_table(path, table.get()).with_context(owner + ": "));
      if (table->kernel_lib().empty()) table->set_kernel_lib(info->name);
      info->op_table = std::move(table);
    }
    if (const ComponentInfo* clash = find(info->kind, info->name)) {
      return Status::failed_precondition(std::string(to_string(info->kind)) + " '" + info->name +
                                         "' is provided by both " + clash->library->path() + " and " +
                                         library->path());
    }
    fresh.push_back(std::move(info));
  }
  libraries_.push_back(std::move(library));
  for (auto& f : fresh) components_.push_back(std::move(f));
  return Status::ok();
}

const ComponentInfo* Registry::find(ComponentKind kind, std::string_view name) const {
  for (const auto& c : components_) {
    if (c->kind == kind && c->name == name) return c.get();
  }
  return nullptr;
}

std::vector<std::string> Registry::names(ComponentKind kind) const {
  std::vector<std::string> out;
  for (const auto& c : components_) {
    if (c->kind == kind) out.push_back(c->name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<const ComponentInfo*> Registry::components() const {
  std::vector<const ComponentInfo*> out;
  for (const auto& c : components_) out.push_back(c.get());
  std::sort(out.begin(), out.end(), [](const ComponentInfo* a, const ComponentInfo* b) {
    return a->kind != b->kind ? a->kind < b->kind : a->name < b->name;
  });
  return out;
}

Status resolve_options(const ComponentInfo& component, const std::vector<RawOption>& given,
                       const sdk::OptionValues& ge_options, const std::vector<std::string>& ge_explicit,
                       sdk::OptionValues* out, std::vector<Diagnostic>* diags) {
  const size_t before = diags->size();
  const std::string who = std::string(to_string(component.kind)) + " '" + component.name + "'";
  for (const RawOption& o : given) {
    auto spec = std::find_if(component.options.begin(), component.options.end(),
                             [&](const OptionSpec& s) { return s.name == o.key; });
    if (spec == component.options.end()) {
      std::string declared;
      for (const OptionSpec& s : component.options) declared += (declared.empty() ? "" : ", ") + s.describe();
      diags->push_back({o.key_pos, "option '" + o.key + "' is not declared by " + who +
                                       "; declared: " + (declared.empty() ? "none" : declared)});
      continue;
    }
    if (!spec->ge_alias.empty() &&
        std::find(ge_explicit.begin(), ge_explicit.end(), spec->ge_alias) != ge_explicit.end()) {
      diags->push_back({o.key_pos, "option '" + o.key + "' of " + who + " is also set through GE option '" +
                                       spec->ge_alias + "' in [options]; set it in one place"});
      continue;
    }
    AttrValue v;
    std::string why;
    if (!convert(*spec, o.value, &v, &why)) {
      diags->push_back({o.value.pos, why});
      continue;
    }
    out->set(o.key, std::move(v));
  }
  for (const OptionSpec& s : component.options) {
    if (out->has(s.name)) continue;
    if (!s.ge_alias.empty()) {
      if (const AttrValue* g = ge_options.get(s.ge_alias)) {
        out->set(s.name, *g);
        continue;
      }
    }
    if (s.required) {
      diags->push_back({SourcePos{}, who + " needs option '" + s.name + "'"});
      continue;
    }
    out->set(s.name, s.default_value);
  }
  return diags->size() == before ? Status::ok() : diagnostics_to_status(*diags);
}

}  // namespace graphsplit
