// The built libgsplugin_std.so through the real host: descriptor, option schema, and a pipeline run.
#include <gtest/gtest.h>

#include "config/config.h"
#include "pipeline/pipeline.h"

namespace graphsplit {
namespace {

TEST(StdConformanceTest, DescriptorAndOptionSchema) {
  PluginLoader loader(LoaderOptions{{GRAPHSPLIT_PLUGIN_DIR}, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load("std", &lib);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(lib->plugin_name(), "std");
  Registry registry;
  ASSERT_TRUE(registry.add_library(lib).is_ok());
  EXPECT_EQ(registry.names(ComponentKind::kPass),
            (std::vector<std::string>{"std.prune_unused", "std.topological_sort"}));
  const ComponentInfo* sort = registry.find(ComponentKind::kPass, "std.topological_sort");
  ASSERT_NE(sort, nullptr);
  // Defaults validate; a wrong type and a value outside the enum are refused with their position.
  sdk::OptionValues values;
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(resolve_options(*sort, {}, {}, {}, &values, &diags).is_ok());
  EXPECT_EQ(values.get_string("mode"), "auto");
  RawOption wrong_type{"mode", RawValue{int64_t{3}, SourcePos{"p.toml", 7, 20}}, SourcePos{"p.toml", 7, 13}};
  s = resolve_options(*sort, {wrong_type}, {}, {}, &values, &diags);
  EXPECT_EQ(s.message(), "p.toml:7:20: error: option 'mode' must be a string, got integer 3");
  RawOption wrong_value{"mode", RawValue{std::string("sideways"), SourcePos{"p.toml", 8, 20}},
                        SourcePos{"p.toml", 8, 13}};
  diags.clear();
  s = resolve_options(*sort, {wrong_value}, {}, {}, &values, &diags);
  EXPECT_NE(s.message().find("p.toml:8:20: error: option 'mode' must be one of \"auto\", \"bfs\""),
            std::string::npos)
      << s.message();
}

TEST(StdConformanceTest, RunsInAPipelineAndReportsChanges) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  const std::string text =
      "schema_version = 1\n[plugins]\nrequired = [\"std\"]\n"
      "[[pipeline]]\npass = \"std.prune_unused\"\n"
      "[[pipeline]]\npass = \"std.topological_sort\"\noptions = { mode = \"bfs\" }\n";
  ASSERT_TRUE(parse_pipeline_config_text(text, "inline.toml", &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  settings.verify_each = true;
  std::unique_ptr<Pipeline> pipeline;
  sdk::Status s = Pipeline::create(config, settings, &pipeline, &diags);
  ASSERT_TRUE(s.is_ok()) << s.message();

  auto g = sdk::Graph::create("g");
  sdk::Node* out = g->add_node("out", sdk::op::kNetOutput, 1, 0);
  sdk::Node* x = g->add_node("x", sdk::op::kData, 0, 1);
  g->add_node("dead", "Relu", 0, 1);
  ASSERT_TRUE(g->add_edge({x, 0}, {out, 0}).is_ok());
  ASSERT_TRUE(pipeline->run(*g).is_ok());
  ASSERT_EQ(pipeline->reports().size(), 2u);
  EXPECT_TRUE(pipeline->reports()[0].changed);  // dead removed
  EXPECT_TRUE(pipeline->reports()[1].changed);  // out moved after x
  EXPECT_EQ(g->num_nodes(), 2u);
  EXPECT_EQ(g->node_list().front(), x);
  EXPECT_EQ(pipeline->reports()[0].plugin, "std 0.1.0");
}

}  // namespace
}  // namespace graphsplit
