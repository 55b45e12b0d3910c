// Pipeline and op-table diagnostics, golden: the exact message and line:column of each validation error.
#include "config/config.h"

#include <gtest/gtest.h>

#include "config/ge_options.h"
#include "config/op_table_loader.h"
#include "pipeline/pipeline.h"

namespace graphsplit {
namespace {

const std::string kHeader = "schema_version = 1\n[plugins]\nrequired = [\"std\"]\n";

// Parses and builds; returns every diagnostic, one per line.
std::string diagnose(const std::string& text,
                     std::vector<std::pair<std::string, std::string>> ge_overrides = {}) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  std::string out;
  if (parse_pipeline_config_text(text, "p.toml", &config, &diags).is_ok()) {
    PipelineSettings settings;
    settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
    settings.ge_overrides = std::move(ge_overrides);
    std::unique_ptr<Pipeline> pipeline;
    (void)Pipeline::create(config, settings, &pipeline, &diags);
  }
  for (const Diagnostic& d : diags) out += d.str() + "\n";
  return out;
}

TEST(ConfigTest, ValidFileHasNoDiagnostics) {
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unused\"\n"), "");
}

TEST(ConfigTest, SyntaxError) {
  EXPECT_EQ(diagnose("schema_version = 1\n[plugins\n"),
            "p.toml:2:9: error: Error while parsing table header: expected ']', saw '\\n'\n");
}

TEST(ConfigTest, SchemaVersionMissingLateOrUnknown) {
  EXPECT_EQ(diagnose("[plugins]\nrequired = []\n"),
            "p.toml:1:1: error: 'schema_version' is missing; the first line must be 'schema_version = 1'\n");
  EXPECT_EQ(diagnose("[debug]\ntiming = \"off\"\n"),
            "p.toml:1:1: error: 'schema_version' is missing; the first line must be 'schema_version = 1'\n");
  EXPECT_EQ(diagnose("schema_version = 7\n"),
            "p.toml:1:18: error: schema_version 7 is not supported by this graphsplit (it reads "
            "schema_version 1); a "
            "newer graphsplit is needed\n");
}

TEST(ConfigTest, UnknownKeysGetDidYouMean) {
  EXPECT_EQ(diagnose(kHeader + "[[pipline]]\npass = \"std.prune_unused\"\n"),
            "p.toml:4:3: error: unknown top-level key 'pipline'; did you mean 'pipeline'?\n");
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unused\"\nenable = false\n"),
            "p.toml:6:1: error: unknown key 'enable' in a [[pipeline]] entry; did you mean 'enabled'?\n");
}

TEST(ConfigTest, WrongTypes) {
  EXPECT_EQ(diagnose(kHeader + "[engines.template]\npriority = \"high\"\n"),
            "p.toml:5:12: error: 'priority' must be an integer, got string \"high\"\n");
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unused\"\nenabled = \"yes\"\n"),
            "p.toml:6:11: error: 'enabled' must be a boolean, got string \"yes\"\n");
}

TEST(ConfigTest, UnknownPassNamesThePluginThatWouldProvideIt) {
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unsed\"\n"),
            "p.toml:5:8: error: unknown pass 'std.prune_unsed'; did you mean 'std.prune_unused' (plugin std "
            "0.1.0)?\n");
  EXPECT_EQ(
      diagnose(kHeader + "[[pipeline]]\npartition = \"dynamic_shape\"\n"),
      "p.toml:5:13: error: unknown partition stage 'dynamic_shape'; is the plugin that provides it listed in "
      "[plugins] required?\n");
}

TEST(ConfigTest, OptionNotDeclaredWrongTypeOrOutOfRange) {
  EXPECT_EQ(
      diagnose(kHeader + "[[pipeline]]\npass = \"std.topological_sort\"\noptions = { mod = \"bfs\" }\n"),
      "p.toml:6:13: error: option 'mod' is not declared by pass 'std.topological_sort'; declared: mode "
      "(enum, "
      "default \"auto\")\n");
  EXPECT_EQ(diagnose(kHeader +
                     "[[pipeline]]\npass = \"std.topological_sort\"\noptions = { mode = \"sideways\" }\n"),
            "p.toml:6:20: error: option 'mode' must be one of \"auto\", \"bfs\", \"dfs\", \"rdfs\", "
            "\"stable_rdfs\", got "
            "\"sideways\"\n");
  EXPECT_EQ(
      diagnose(kHeader + "[[pipeline]]\npass = \"std.topological_sort\"\n[pipeline.options]\nmode = 2\n"),
      "p.toml:7:8: error: option 'mode' must be a string, got integer 2\n");
}

TEST(ConfigTest, GeOptions) {
  EXPECT_EQ(diagnose(kHeader + "[options]\nge.exec.static_model_ops_lower_limit = 4\n"),
            "p.toml:5:1: error: 'ge' is a table here; GE option names contain dots, so quote the key: "
            "\"ge.exec.static_model_ops_lower_limit\" = ...\n");
  EXPECT_EQ(
      diagnose(kHeader + "[options]\n\"ge.topoSortingmode\" = \"3\"\n"),
      "p.toml:5:1: error: unknown GE option 'ge.topoSortingmode'; did you mean 'ge.topoSortingMode'?\n");
  EXPECT_EQ(diagnose(kHeader + "[options]\n\"ge.exec.static_model_ops_lower_limit\" = \"-2\"\n"),
            "p.toml:5:42: error: E10001: value '-2' for option 'ge.exec.static_model_ops_lower_limit' is "
            "invalid; it "
            "must be an integer in [-1, INT64_MAX]\n");
  EXPECT_EQ(
      diagnose(kHeader + "[options]\n\"ge.exec.static_model_ops_lower_limit\" = \"\"\n"),
      "p.toml:5:42: error: E10001: option 'ge.exec.static_model_ops_lower_limit' is present but empty\n");
  EXPECT_EQ(
      diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unused\"\n\"ge.topoSortingMode\" = \"1\"\n"),
      "p.toml:6:1: error: unknown key 'ge.topoSortingMode' in a [[pipeline]] entry; GE options belong in "
      "[options] (did you mean [options]?)\n");
}

TEST(ConfigTest, CommandLineGeOptions) {
  EXPECT_EQ(diagnose(kHeader, {{"ge.topoSortingMode", "7"}}),
            "<command line>: error: --options: E10001: value '7' for option 'ge.topoSortingMode' is invalid; "
            "allowed: "
            "\"\", \"0\", \"1\", \"2\", \"3\"\n");
  EXPECT_EQ(diagnose(kHeader, {{"ge.exec.static_model_ops_lower_lmit", "7"}}),
            "<command line>: error: --options: unknown GE option 'ge.exec.static_model_ops_lower_lmit'; did "
            "you mean "
            "'ge.exec.static_model_ops_lower_limit'?\n");
  // A valid override wins over the file and over the default, and the alias spelling is accepted.
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  ASSERT_TRUE(parse_pipeline_config_text(kHeader + "[options]\n\"ge.topoSortingMode\" = \"1\"\n", "p.toml",
                                         &config, &diags)
                  .is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  settings.ge_overrides = {{"ge.topoSortingMode", "3"}, {"ge.exec.hostSchedulingMaxThreshold", "15"}};
  std::unique_ptr<Pipeline> pipeline;
  ASSERT_TRUE(Pipeline::create(config, settings, &pipeline, &diags).is_ok());
  EXPECT_EQ(pipeline->ge_options().get_string("ge.topoSortingMode"), "3");
  EXPECT_EQ(pipeline->ge_options().get_int("ge.host_scheduling_max_threshold", -1), 15);
  EXPECT_EQ(pipeline->ge_options().get_int("ge.exec.static_model_ops_lower_limit", -9), 4);
  EXPECT_NE(pipeline->canonical_toml().find("\"ge.topoSortingMode\" = \"3\"  # --options"),
            std::string::npos);
}

TEST(ConfigTest, EntryShapeErrors) {
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\npass = \"std.prune_unused\"\npartition = \"stage\"\n"),
            "p.toml:6:1: error: a [[pipeline]] entry has exactly one of 'pass' or 'partition'\n");
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\nenabled = true\n"),
            "p.toml:4:1: error: a [[pipeline]] entry needs 'pass = \"<plugin>.<pass>\"' or 'partition = "
            "\"<stage>\"'\n");
  EXPECT_EQ(diagnose(kHeader + "[[pipeline]]\nid = \"a\"\npass = \"std.prune_unused\"\n[[pipeline]]\nid = "
                               "\"a\"\npass = \"std.prune_unused\"\n"),
            "p.toml:8:6: error: pipeline id 'a' is already used at p.toml:5:6\n");
}

TEST(ConfigTest, PluginsAndEngines) {
  EXPECT_EQ(
      diagnose("schema_version = 1\n[plugins]\nrequired = [\"nosuch\"]\nsearch_paths = [\"/nonexistent\"]\n"),
      "p.toml:3:13: error: required plugin 'nosuch' could not be loaded; tried in order; "
      "1. " GRAPHSPLIT_PLUGIN_DIR
      "/libgsplugin_nosuch.so: not found; 2. /nonexistent/libgsplugin_nosuch.so: not found\n");
  EXPECT_EQ(diagnose("schema_version = 1\n[plugins]\nrequired = [\"std\", "
                     "\"template\"]\n[engines.templte]\npriority = 3\n"),
            "p.toml:4:10: error: unknown engine 'templte'; did you mean 'template'?\n");
  EXPECT_EQ(
      diagnose("schema_version = 1\n[plugins]\nsearch_paths = [\"${HOME_DIR}/x\"]\n"),
      "p.toml:3:17: error: unknown variable '${HOME_DIR}' in path '${HOME_DIR}/x'; only ${CONFIG_DIR} and "
      "${GRAPHSPLIT_HOME} are expanded\n");
}

TEST(ConfigTest, DiagnosticsAreSortedByPosition) {
  const std::string text =
      kHeader + "[debug]\ntiming = \"tree\"\n[[pipline]]\n[engines.x]\npriority = \"1\"\n";
  EXPECT_EQ(diagnose(text),
            "p.toml:5:10: error: 'debug.timing' must be \"off\" or \"list\", got \"tree\"\n"
            "p.toml:6:3: error: unknown top-level key 'pipline'; did you mean 'pipeline'?\n"
            "p.toml:8:12: error: 'priority' must be an integer, got string \"1\"\n");
}

TEST(ConfigTest, ExecutionOrderIsArrayOrder) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  const std::string text =
      kHeader +
      "[[pipeline]]\npass = \"std.topological_sort\"\n[[pipeline]]\npass = \"std.prune_unused\"\n"
      "enabled = false\n[[pipeline]]\nid = \"again\"\npass = \"std.prune_unused\"\n";
  ASSERT_TRUE(parse_pipeline_config_text(text, "p.toml", &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  std::unique_ptr<Pipeline> pipeline;
  ASSERT_TRUE(Pipeline::create(config, settings, &pipeline, &diags).is_ok());
  auto g = sdk::Graph::create("g");
  ASSERT_TRUE(pipeline->run(*g).is_ok());
  std::vector<std::string> labels;
  for (const EntryReport& r : pipeline->reports()) labels.push_back(r.label + (r.ran ? "" : " (disabled)"));
  EXPECT_EQ(labels, (std::vector<std::string>{"pass std.topological_sort", "pass std.prune_unused (disabled)",
                                              "pass std.prune_unused"}));
}

TEST(ConfigTest, GeOptionDefaultsAreValid) {
  const sdk::OptionValues d = default_ge_options();
  EXPECT_EQ(d.size(), ge_option_specs().size());
  EXPECT_EQ(d.get_int("ge.exec.static_model_ops_lower_limit", 0), 4);
}

std::string table_errors(const std::string& text) {
  sdk::OpSupportTable table;
  return parse_op_table(text, "ops.toml", &table).message();
}

TEST(OpTableTest, ParsesRows) {
  sdk::OpSupportTable table;
  ASSERT_TRUE(
      parse_op_table("[[op]]\ntype = \"Conv\"\nopset = [1, 17]\ndtypes = [\"float16\", \"float32\"]\n"
                     "dynamic_shape = \"bounded\"\ntiling = true\ncost = 10\n[[op]]\ntype = \"Add\"\n",
                     "ops.toml", &table)
          .is_ok());
  ASSERT_EQ(table.rows().size(), 2u);
  const sdk::OpSupportRow* conv = table.find("Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->dtypes, (std::vector<sdk::DataType>{sdk::DataType::kFloat16, sdk::DataType::kFloat}));
  EXPECT_EQ(conv->dynamic_shape, sdk::DynamicShapeSupport::kBounded);
  EXPECT_EQ(conv->cost, 10);
  EXPECT_EQ(conv->line, 1);
  EXPECT_EQ(table.find("Add")->opset_min, 1);
}

// find() remembers its last answer per thread; rows added since, and other tables, must not see it.
TEST(OpTableTest, FindAfterAnAddOrInAnotherTableGivesThatTablesRow) {
  sdk::OpSupportTable table, other;
  sdk::OpSupportRow row;
  for (const char* type : {"Add", "Conv", "Relu"}) {
    row.type = type;
    row.cost = static_cast<int64_t>(row.type.size());
    ASSERT_TRUE(table.add(row));
  }
  row.type = "Relu";
  row.cost = 7;
  ASSERT_TRUE(other.add(row));
  ASSERT_NE(table.find("Relu"), nullptr);
  EXPECT_EQ(other.find("Relu")->cost, 7);
  EXPECT_EQ(table.find("Relu")->cost, 4);
  // "Mul" goes where "Relu" was and moves it one row on (within the same block: three rows leave room for a
  // fourth).
  row.type = "Mul";
  row.cost = 30;
  ASSERT_TRUE(table.add(row));
  EXPECT_EQ(table.find("Relu")->type, "Relu");
  EXPECT_EQ(table.find("Relu")->cost, 4);
  EXPECT_EQ(table.find("Mul")->cost, 30);
  EXPECT_EQ(table.find("Sub"), nullptr);
  EXPECT_EQ(table.find("Add")->cost, 3);
}

TEST(OpTableTest, ErrorsHavePositions) {
  EXPECT_EQ(table_errors("[[op]]\ntype = \"Conv\"\ndtype = [\"float32\"]\n"),
            "ops.toml:3:1: error: unknown key 'dtype' in an [[op]] row; did you mean 'dtypes'?");
  EXPECT_EQ(table_errors("[[op]]\ntype = \"Conv\"\ndtypes = [\"float32\", \"float33\"]\n"),
            "ops.toml:3:22: error: unknown data type 'float33'");
  EXPECT_EQ(table_errors("[[op]]\ntype = \"Conv\"\nopset = [9, 3]\n"),
            "ops.toml:3:9: error: 'opset' must be [first, last] with 1 <= first <= last");
  EXPECT_EQ(table_errors("[[op]]\ntype = \"Conv\"\n[[op]]\ntype = \"Conv\"\n"),
            "ops.toml:3:1: error: op type 'Conv' has a second row");
  EXPECT_EQ(table_errors("[[op]]\ntype = \"Conv\"\ncost = -1\n"),
            "ops.toml:3:8: error: 'cost' must be a non-negative integer");
  EXPECT_EQ(table_errors("[[op]]\ncost = 1\n"), "ops.toml:1:1: error: an [[op]] row needs 'type'");
  EXPECT_EQ(
      table_errors("rows = 1\n"),
      "ops.toml:1:1: error: unknown top-level key 'rows'; an op table holds kernel_lib and [[op]] entries");
}

}  // namespace
}  // namespace graphsplit
