#include "config/op_table_loader.h"

#include <toml++/toml.h>

#include <fstream>
#include <sstream>

#include "config/config.h"

namespace graphsplit {
namespace {

using sdk::Status;

class TableParser {
 public:
  TableParser(std::string file, std::vector<Diagnostic>* diags) : file_(std::move(file)), diags_(diags) {}

  void parse(const toml::table& root, sdk::OpSupportTable* out) {
    for (auto&& [k, v] : root) {
      if (k.str() == "kernel_lib") {
        if (!v.is_string() || v.as_string()->get().empty())
          add(pos(v), "'kernel_lib' must be a non-empty string");
        else
          out->set_kernel_lib(std::string(v.as_string()->get()));
        continue;
      }
      if (k.str() != "op") {
        add(pos(k), "unknown top-level key '" + std::string(k.str()) +
                        "'; an op table holds kernel_lib and [[op]] entries");
        continue;
      }
      const toml::array* a = v.as_array();
      if (!a || !a->is_array_of_tables()) {
        add(pos(v), "'op' must be an array of tables: write each row as [[op]]");
        continue;
      }
      for (const toml::node& item : *a) {
        sdk::OpSupportRow row;
        row.line = static_cast<int32_t>(item.source().begin.line);
        if (!parse_row(*item.as_table(), pos(item), &row)) continue;
        if (!out->add(row)) add(pos(item), "op type '" + row.type + "' has a second row");
      }
    }
  }

 private:
  SourcePos pos(const toml::node& n) const { return {file_, n.source().begin.line, n.source().begin.column}; }
  SourcePos pos(const toml::key& k) const { return {file_, k.source().begin.line, k.source().begin.column}; }
  void add(SourcePos p, std::string m) { diags_->push_back({std::move(p), std::move(m)}); }

  bool boolean(const toml::node& v, const std::string& key, bool* out) {
    if (!v.is_boolean()) {
      add(pos(v), "'" + key + "' must be a boolean");
      return false;
    }
    *out = v.as_boolean()->get();
    return true;
  }

  void parse_opset(const toml::node& v, sdk::OpSupportRow* row) {
    const toml::array* a = v.as_array();
    if (!a || a->size() != 2 || !(*a)[0].is_integer() || !(*a)[1].is_integer() ||
        (*a)[0].as_integer()->get() < 1 || (*a)[0].as_integer()->get() > (*a)[1].as_integer()->get()) {
      add(pos(v), "'opset' must be [first, last] with 1 <= first <= last");
      return;
    }
    row->opset_min = (*a)[0].as_integer()->get();
    row->opset_max = (*a)[1].as_integer()->get();
  }

  // dtypes, input_dtypes, output_dtypes or formats: an array of names.
  void parse_type_list(const std::string& key, const toml::node& v, sdk::OpSupportRow* row) {
    const toml::array* a = v.as_array();
    if (!a) {
      add(pos(v), "'" + key + "' must be an array of strings");
      return;
    }
    for (const toml::node& e : *a) {
      if (!e.is_string()) {
        add(pos(e), "'" + key + "' must hold strings");
        continue;
      }
      const std::string s(e.as_string()->get());
      if (key == "formats") {
        if (auto f = sdk::parse_format(s))
          row->formats.push_back(*f);
        else
          add(pos(e), "unknown format '" + s + "'");
        continue;
      }
      auto dt = sdk::parse_data_type(s);
      auto& list = key == "dtypes"         ? row->dtypes
                   : key == "input_dtypes" ? row->input_dtypes
                                           : row->output_dtypes;
      if (!dt || *dt == sdk::DataType::kUndefined)
        add(pos(e), "unknown data type '" + s + "'");
      else
        list.push_back(*dt);
    }
  }

  void parse_dynamic_shape(const toml::node& v, sdk::OpSupportRow* row) {
    const std::string s = v.is_string() ? std::string(v.as_string()->get()) : "";
    if (s == "none")
      row->dynamic_shape = sdk::DynamicShapeSupport::kNone;
    else if (s == "bounded")
      row->dynamic_shape = sdk::DynamicShapeSupport::kBounded;
    else if (s == "full")
      row->dynamic_shape = sdk::DynamicShapeSupport::kFull;
    else
      add(pos(v), "'dynamic_shape' must be \"none\", \"bounded\" or \"full\"");
  }

  // One key of a row; false for a key the schema does not have.
  bool parse_key(const std::string& key, const toml::node& v, sdk::OpSupportRow* row) {
    if (key == "type") {
      if (!v.is_string() || v.as_string()->get().empty())
        add(pos(v), "'type' must be a non-empty string");
      else
        row->type = v.as_string()->get();
    } else if (key == "opset") {
      parse_opset(v, row);
    } else if (key == "dtypes" || key == "input_dtypes" || key == "output_dtypes" || key == "formats") {
      parse_type_list(key, v, row);
    } else if (key == "dynamic_shape") {
      parse_dynamic_shape(v, row);
    } else if (key == "tiling") {
      boolean(v, key, &row->tiling);
    } else if (key == "tiling_sink") {
      boolean(v, key, &row->tiling_sink);
    } else if (key == "addr_refresh") {
      boolean(v, key, &row->addr_refresh);
    } else if (key == "shape_dependent") {
      boolean(v, key, &row->shape_dependent);
    } else if (key == "cost") {
      if (!v.is_integer() || v.as_integer()->get() < 0)
        add(pos(v), "'cost' must be a non-negative integer");
      else
        row->cost = v.as_integer()->get();
    } else {
      return false;
    }
    return true;
  }

  bool parse_row(const toml::table& t, const SourcePos& where, sdk::OpSupportRow* row) {
    static const std::vector<std::string> kKeys = {
        "type",          "opset",  "dtypes",      "input_dtypes", "output_dtypes",   "formats",
        "dynamic_shape", "tiling", "tiling_sink", "addr_refresh", "shape_dependent", "cost"};
    const size_t before = diags_->size();
    for (auto&& [k, v] : t) {
      const std::string key(k.str());
      if (parse_key(key, v, row)) continue;
      std::string msg = "unknown key '" + key + "' in an [[op]] row";
      const std::string dym = did_you_mean(key, kKeys);
      if (!dym.empty()) msg += "; " + dym;
      add(pos(k), msg);
    }
    if (row->type.empty() && diags_->size() == before) add(where, "an [[op]] row needs 'type'");
    return diags_->size() == before;
  }

  std::string file_;
  std::vector<Diagnostic>* diags_;
};

}  // namespace

Status parse_op_table(std::string_view text, const std::string& path, sdk::OpSupportTable* out) {
  *out = sdk::OpSupportTable(path);
  std::vector<Diagnostic> diags;
  try {
    toml::table root = toml::parse(text, path);
    TableParser(path, &diags).parse(root, out);
  } catch (const toml::parse_error& e) {
    diags.push_back(
        {SourcePos{path, e.source().begin.line, e.source().begin.column}, std::string(e.description())});
  }
  return diagnostics_to_status(std::move(diags));
}

Status load_op_table(const std::string& path, sdk::OpSupportTable* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found(path + ": cannot open the op table");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_op_table(ss.str(), path, out);
}

}  // namespace graphsplit
