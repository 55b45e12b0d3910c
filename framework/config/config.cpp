#include "config/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "config/ge_options.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using sdk::Status;

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

class Parser {
 public:
  Parser(std::string file, PipelineConfig* out, std::vector<Diagnostic>* diags)
      : file_(std::move(file)), out_(out), diags_(diags) {}

  void parse(const toml::table& root) {
    static const std::vector<std::string> kTop = {"schema_version", "plugins",  "options",
                                                  "engines",        "pipeline", "debug"};
    const toml::node* version = root.get("schema_version");
    if (!version) {
      add(SourcePos{file_, 1, 1}, "'schema_version' is missing; the first line must be 'schema_version = " +
                                      std::to_string(kPipelineSchemaVersion) + "'");
    } else if (!version->is_integer()) {
      add(pos(*version), "'schema_version' must be an integer, got " + type_of(*version));
    } else {
      out_->schema_version = version->as_integer()->get();
      if (out_->schema_version != kPipelineSchemaVersion) {
        add(pos(*version), "schema_version " + std::to_string(out_->schema_version) +
                               " is not supported by this graphsplit (it reads schema_version " +
                               std::to_string(kPipelineSchemaVersion) + "); a newer graphsplit is needed");
      }
      for (auto&& [k, v] : root) {
        if (k.str() != "schema_version" && pos(k) < pos(*version)) {
          add(pos(*version), "'schema_version' must come first, before '" + std::string(k.str()) + "' (" +
                                 pos(k).str() + ")");
          break;
        }
      }
    }
    for (auto&& [k, v] : root) {
      const std::string key(k.str());
      if (key == "schema_version") continue;
      if (key == "plugins")
        parse_plugins(v, k);
      else if (key == "options")
        parse_ge_options(v);
      else if (key == "engines")
        parse_engines(v);
      else if (key == "pipeline")
        parse_pipeline(v);
      else if (key == "debug")
        parse_debug(v);
      else
        unknown_key(k, kTop, "top-level key");
    }
  }

 private:
  SourcePos pos(const toml::node& n) const { return {file_, n.source().begin.line, n.source().begin.column}; }
  SourcePos pos(const toml::key& k) const { return {file_, k.source().begin.line, k.source().begin.column}; }
  void add(SourcePos p, std::string message) { diags_->push_back({std::move(p), std::move(message)}); }

  static std::string type_of(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::string:
        return "string \"" + std::string(n.as_string()->get()) + "\"";
      case toml::node_type::integer:
        return "integer " + std::to_string(n.as_integer()->get());
      case toml::node_type::floating_point:
        return "float";
      case toml::node_type::boolean:
        return n.as_boolean()->get() ? "boolean true" : "boolean false";
      case toml::node_type::array:
        return "array";
      case toml::node_type::table:
        return "table";
      default:
        return "date/time";
    }
  }

  // "unknown <what> '<key>' <where>; did you mean ...?"
  void unknown_key(const toml::key& k, const std::vector<std::string>& allowed, const std::string& what,
                   const std::string& where = "", const std::string& extra = "") {
    std::string msg =
        "unknown " + what + " '" + std::string(k.str()) + "'" + (where.empty() ? "" : " " + where);
    const std::string dym = did_you_mean(k.str(), allowed);
    if (!dym.empty())
      msg += "; " + dym;
    else if (!extra.empty())
      msg += "; " + extra;
    else {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      msg += "; allowed: " + list;
    }
    add(pos(k), msg);
  }

  const toml::table* expect_table(const toml::node& n, const std::string& what) {
    if (const toml::table* t = n.as_table()) return t;
    add(pos(n), "'" + what + "' must be a table, got " + type_of(n));
    return nullptr;
  }

  bool get_bool(const toml::node& n, const std::string& what, bool* out) {
    if (!n.is_boolean()) {
      add(pos(n), "'" + what + "' must be a boolean, got " + type_of(n));
      return false;
    }
    *out = n.as_boolean()->get();
    return true;
  }

  bool get_string(const toml::node& n, const std::string& what, std::string* out) {
    if (!n.is_string()) {
      add(pos(n), "'" + what + "' must be a string, got " + type_of(n));
      return false;
    }
    *out = n.as_string()->get();
    return true;
  }

  bool get_strings(const toml::node& n, const std::string& what,
                   std::vector<std::pair<std::string, SourcePos>>* out) {
    const toml::array* a = n.as_array();
    if (!a) {
      add(pos(n), "'" + what + "' must be an array of strings, got " + type_of(n));
      return false;
    }
    for (const toml::node& e : *a) {
      if (!e.is_string()) {
        add(pos(e), "'" + what + "' must hold strings only, got " + type_of(e));
        return false;
      }
      out->emplace_back(std::string(e.as_string()->get()), pos(e));
    }
    return true;
  }

  bool raw_value(const toml::node& n, const std::string& what, RawValue* out) {
    out->pos = pos(n);
    switch (n.type()) {
      case toml::node_type::boolean:
        out->value = n.as_boolean()->get();
        return true;
      case toml::node_type::integer:
        out->value = n.as_integer()->get();
        return true;
      case toml::node_type::floating_point:
        out->value = n.as_floating_point()->get();
        return true;
      case toml::node_type::string:
        out->value = std::string(n.as_string()->get());
        return true;
      case toml::node_type::array: {
        std::vector<std::pair<std::string, SourcePos>> items;
        if (!get_strings(n, what, &items)) return false;
        std::vector<std::string> v;
        for (auto& [s, p] : items) v.push_back(std::move(s));
        out->value = std::move(v);
        return true;
      }
      default:
        add(pos(n), "'" + what + "' must be a boolean, integer, float, string or array of strings, got " +
                        type_of(n));
        return false;
    }
  }

  void parse_options_table(const toml::node& n, const std::string& owner, std::vector<RawOption>* out) {
    const toml::table* t = expect_table(n, owner + ".options");
    if (!t) return;
    for (auto&& [k, v] : *t) {
      RawOption o;
      o.key = std::string(k.str());
      o.key_pos = pos(k);
      if (raw_value(v, o.key, &o.value)) out->push_back(std::move(o));
    }
  }

  std::string expand(const std::string& path, const SourcePos& p) {
    std::string out;
    size_t i = 0;
    while (i < path.size()) {
      if (path.compare(i, 2, "${") == 0) {
        const size_t end = path.find('}', i);
        if (end == std::string::npos) {
          add(p, "unterminated '${' in path '" + path + "'");
          return "";
        }
        const std::string var = path.substr(i + 2, end - i - 2);
        if (var == "CONFIG_DIR") {
          out += out_->dir;
        } else if (var == "GRAPHSPLIT_HOME") {
          const char* home = std::getenv("GRAPHSPLIT_HOME");
          if (!home || !*home) return "";  // unset: the path is skipped
          out += home;
        } else {
          add(p, "unknown variable '${" + var + "}' in path '" + path +
                     "'; only ${CONFIG_DIR} and ${GRAPHSPLIT_HOME} are expanded");
          return "";
        }
        i = end + 1;
      } else {
        out += path[i++];
      }
    }
    return out;
  }

  void parse_plugins(const toml::node& n, const toml::key&) {
    static const std::vector<std::string> kKeys = {"search_paths", "required", "optional", "unload",
                                                   "strict_abi_tag"};
    const toml::table* t = expect_table(n, "plugins");
    if (!t) return;
    for (auto&& [k, v] : *t) {
      const std::string key(k.str());
      if (key == "search_paths") {
        std::vector<std::pair<std::string, SourcePos>> paths;
        if (!get_strings(v, "plugins.search_paths", &paths)) continue;
        for (auto& [p, where] : paths) {
          std::string e = expand(p, where);
          if (!e.empty()) out_->search_paths.push_back(e);
        }
      } else if (key == "required") {
        get_strings(v, "plugins.required", &out_->required);
      } else if (key == "optional") {
        get_strings(v, "plugins.optional", &out_->optional);
      } else if (key == "unload") {
        if (get_string(v, "plugins.unload", &out_->unload) && out_->unload != "never" &&
            out_->unload != "checked") {
          add(pos(v), "'plugins.unload' must be \"never\" or \"checked\", got \"" + out_->unload + "\"");
        }
      } else if (key == "strict_abi_tag") {
        get_bool(v, "plugins.strict_abi_tag", &out_->strict_abi_tag);
      } else {
        unknown_key(k, kKeys, "key", "in [plugins]");
      }
    }
  }

  void parse_ge_options(const toml::node& n) {
    const toml::table* t = expect_table(n, "options");
    if (!t) return;
    const std::vector<std::string> known = ge_option_names();
    for (auto&& [k, v] : *t) {
      const std::string key(k.str());
      if (v.is_table()) {
        // `ge.exec.x = 1` without quotes is a nested table in TOML.
        std::string example = key;
        const toml::node* cur = &v;
        while (cur->is_table() && !cur->as_table()->empty()) {
          auto first = cur->as_table()->begin();
          example += "." + std::string(first->first.str());
          cur = &first->second;
        }
        add(pos(k), "'" + key + "' is a table here; GE option names contain dots, so quote the key: \"" +
                        example + "\" = ...");
        continue;
      }
      const GeOptionSpec* spec = find_ge_option(key);
      if (!spec) {
        std::string msg = "unknown GE option '" + key + "'";
        const std::string dym = did_you_mean(key, known);
        msg += dym.empty() ? "; run 'atc --help' for the options graphsplit reads" : "; " + dym;
        add(pos(k), msg);
        continue;
      }
      RawOption o;
      o.key = key;
      o.key_pos = pos(k);
      if (!raw_value(v, key, &o.value)) continue;
      if (std::holds_alternative<std::vector<std::string>>(o.value.value) ||
          std::holds_alternative<double>(o.value.value)) {
        add(pos(v), "GE option '" + key + "' takes a string or an integer, got " + type_of(v));
        continue;
      }
      out_->ge_options.push_back(std::move(o));
    }
  }

  void parse_engines(const toml::node& n) {
    const toml::table* t = expect_table(n, "engines");
    if (!t) return;
    static const std::vector<std::string> kKeys = {"enabled", "priority", "options", "exclude_ops"};
    for (auto&& [name, body] : *t) {
      EngineSettings e;
      e.name = std::string(name.str());
      e.pos = pos(name);
      const toml::table* bt = expect_table(body, "engines." + e.name);
      if (!bt) continue;
      for (auto&& [k, v] : *bt) {
        const std::string key(k.str());
        if (key == "enabled") {
          get_bool(v, "engines." + e.name + ".enabled", &e.enabled);
        } else if (key == "priority") {
          if (!v.is_integer())
            add(pos(v), "'priority' must be an integer, got " + type_of(v));
          else
            e.priority = v.as_integer()->get();
        } else if (key == "options") {
          parse_options_table(v, "engines." + e.name, &e.options);
        } else if (key == "exclude_ops") {
          get_strings(v, "engines." + e.name + ".exclude_ops", &e.exclude_ops);
        } else {
          unknown_key(k, kKeys, "key", "in [engines." + e.name + "]");
        }
      }
      out_->engines.push_back(std::move(e));
    }
  }

  void parse_pipeline(const toml::node& n) {
    const toml::array* a = n.as_array();
    if (!a || !a->is_array_of_tables()) {
      add(pos(n), "'pipeline' must be an array of tables: write each entry as [[pipeline]]");
      return;
    }
    static const std::vector<std::string> kKeys = {"pass",    "partition", "id",
                                                   "enabled", "engines",   "options"};
    std::map<std::string, SourcePos> ids;
    for (const toml::node& item : *a) {
      const toml::table& t = *item.as_table();
      PipelineEntry e;
      e.pos = pos(item);
      const toml::node* pass = t.get("pass");
      const toml::node* partition = t.get("partition");
      const bool have_name = pass || partition;
      if (pass && partition) {
        const toml::key& later = pos(t.find("pass")->first) < pos(t.find("partition")->first)
                                     ? t.find("partition")->first
                                     : t.find("pass")->first;
        add(pos(later), "a [[pipeline]] entry has exactly one of 'pass' or 'partition'");
      } else if (have_name) {
        e.is_pass = pass != nullptr;
        e.name_pos = pos(pass ? *pass : *partition);
        get_string(pass ? *pass : *partition, pass ? "pass" : "partition", &e.name);
      }
      for (auto&& [k, v] : t) {
        const std::string key(k.str());
        if (key == "pass" || key == "partition") {
          continue;
        } else if (key == "id") {
          if (get_string(v, "id", &e.id)) {
            auto [it, fresh] = ids.emplace(e.id, pos(v));
            if (!fresh) add(pos(v), "pipeline id '" + e.id + "' is already used at " + it->second.str());
          }
        } else if (key == "enabled") {
          get_bool(v, "enabled", &e.enabled);
        } else if (key == "engines") {
          std::vector<std::pair<std::string, SourcePos>> engines;
          if (get_strings(v, "engines", &engines)) {
            for (auto& [s, p] : engines) e.engines.push_back(s);
          }
        } else if (key == "options") {
          parse_options_table(v, "pipeline", &e.options);
        } else if (key.rfind("ge.", 0) == 0) {
          add(pos(k),
              "unknown key '" + key +
                  "' in a [[pipeline]] entry; GE options belong in [options] (did you mean [options]?)");
        } else {
          unknown_key(k, kKeys, "key", "in a [[pipeline]] entry");
        }
      }
      if (!have_name)
        add(e.pos, "a [[pipeline]] entry needs 'pass = \"<plugin>.<pass>\"' or 'partition = \"<stage>\"'");
      out_->entries.push_back(std::move(e));
    }
  }

  void parse_debug(const toml::node& n) {
    const toml::table* t = expect_table(n, "debug");
    if (!t) return;
    static const std::vector<std::string> kKeys = {"timing", "verify_each", "dump_graph"};
    for (auto&& [k, v] : *t) {
      const std::string key(k.str());
      if (key == "timing") {
        if (get_string(v, "debug.timing", &out_->debug.timing) && out_->debug.timing != "off" &&
            out_->debug.timing != "list") {
          add(pos(v), "'debug.timing' must be \"off\" or \"list\", got \"" + out_->debug.timing + "\"");
        }
      } else if (key == "verify_each") {
        get_bool(v, "debug.verify_each", &out_->debug.verify_each);
      } else if (key == "dump_graph") {
        if (get_string(v, "debug.dump_graph", &out_->debug.dump_graph)) {
          out_->debug.dump_graph = expand(out_->debug.dump_graph, pos(v));
        }
      } else {
        unknown_key(k, kKeys, "key", "in [debug]");
      }
    }
  }

  std::string file_;
  PipelineConfig* out_;
  std::vector<Diagnostic>* diags_;
};

}  // namespace

std::string SourcePos::str() const {
  if (file.empty()) return "<command line>";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Status diagnostics_to_status(std::vector<Diagnostic> diags) {
  if (diags.empty()) return Status::ok();
  std::stable_sort(diags.begin(), diags.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.pos < b.pos; });
  std::string msg = diags.front().str();
  if (diags.size() > 1) msg += " (and " + std::to_string(diags.size() - 1) + " more)";
  return Status::invalid_argument(msg);
}

std::string RawValue::type_name() const {
  switch (value.index()) {
    case 0:
      return "boolean";
    case 1:
      return "integer";
    case 2:
      return "float";
    case 3:
      return "string";
    default:
      return "array";
  }
}

std::string RawValue::literal() const {
  std::ostringstream s;
  switch (value.index()) {
    case 0:
      return std::get<bool>(value) ? "true" : "false";
    case 1:
      return std::to_string(std::get<int64_t>(value));
    case 2:
      s << std::get<double>(value);
      return s.str();
    case 3:
      s << toml::value<std::string>(std::get<std::string>(value));
      return s.str();
    default: {
      toml::array a;
      for (const std::string& x : std::get<std::vector<std::string>>(value)) a.push_back(x);
      s << a;
      return s.str();
    }
  }
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  size_t best_d = 3;
  auto extends = [&](const std::string& c) { return c.rfind(name, 0) == 0 || name.rfind(c, 0) == 0; };
  for (const std::string& c : candidates) {
    if (iequals(c, name)) return "did you mean '" + c + "'?";
    const size_t d = edit_distance(name, c);
    // Ties go to a candidate that extends the name ("dtype" -> "dtypes", not "type").
    if (d < best_d || (d == best_d && best && !extends(*best) && extends(c))) {
      best_d = d;
      best = &c;
    }
  }
  return best ? "did you mean '" + *best + "'?" : "";
}

Status parse_pipeline_config_text(std::string_view text, const std::string& path, PipelineConfig* out,
                                  std::vector<Diagnostic>* diags) {
  diags->clear();
  *out = PipelineConfig{};
  out->path = path;
  std::error_code ec;
  fs::path abs = fs::absolute(path, ec);
  out->dir = abs.parent_path().string();
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    diags->push_back(
        {SourcePos{path, e.source().begin.line, e.source().begin.column}, std::string(e.description())});
    return diagnostics_to_status(*diags);
  }
  Parser(path, out, diags).parse(root);
  std::stable_sort(diags->begin(), diags->end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.pos < b.pos; });
  return diagnostics_to_status(*diags);
}

Status parse_pipeline_config(const std::string& path, PipelineConfig* out, std::vector<Diagnostic>* diags) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags->assign(1, {SourcePos{path, 0, 0}, "cannot open the pipeline file"});
    return Status::not_found(path + ": cannot open the pipeline file");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_pipeline_config_text(ss.str(), path, out, diags);
}

}  // namespace graphsplit
