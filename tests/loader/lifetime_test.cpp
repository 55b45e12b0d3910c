// Release order: under unload = "checked", the registry, an engine, a pass, a compiled artifact and a graph
// the pass edited are released in every order, each order in its own process; none may crash, and after the
// last release both libraries must be unmapped.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "pipeline/registry.h"

namespace graphsplit {
namespace {

bool is_mapped(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

int run_order(const std::vector<int>& order) {
  PluginLoader loader(LoaderOptions{{GRAPHSPLIT_PLUGIN_DIR}, false, true});
  std::shared_ptr<const LoadedLibrary> engine_lib, pass_lib;
  if (!loader.load("template", &engine_lib).is_ok() || !loader.load("std", &pass_lib).is_ok()) return 10;
  const std::string engine_path = engine_lib->path(), pass_path = pass_lib->path();
  auto registry = std::make_unique<Registry>();
  if (!registry->add_library(engine_lib).is_ok() || !registry->add_library(pass_lib).is_ok()) return 11;
  engine_lib.reset();
  pass_lib.reset();

  PluginHandle<sdk::Engine> engine;
  PluginHandle<sdk::Pass> pass;
  if (!create_engine(*registry->find(ComponentKind::kEngine, "template"), {}, {}, &engine).is_ok()) return 12;
  if (!create_pass(*registry->find(ComponentKind::kPass, "std.prune_unused"), {}, {}, &pass).is_ok())
    return 13;

  auto graph = sdk::Graph::create("g");
  sdk::Node* x = graph->add_node("x", sdk::op::kData, 0, 0);
  sdk::TensorDesc desc;
  desc.dtype = sdk::DataType::kFloat;
  desc.shape = sdk::Shape({4});
  x->add_output(desc, "x");
  x->attrs().set(sdk::attr::kIndex, sdk::AttrValue::Int(0));
  sdk::Node* relu = graph->add_node("relu", "Relu", 1, 0);
  relu->add_output(desc, "y");
  graph->add_node("dead", "Relu", 0, 1);
  sdk::Node* out = graph->add_node("out", sdk::op::kNetOutput, 1, 0);
  (void)graph->add_edge({x, 0}, {relu, 0});
  (void)graph->add_edge({relu, 0}, {out, 0});
  class Ctx final : public sdk::PassContext {
   public:
    const sdk::OptionValues& options() const override { return o; }
    const sdk::OptionValues& ge_options() const override { return o; }
    std::vector<sdk::EngineRef> engines() const override { return {}; }
    void log(sdk::LogLevel, std::string_view) const override {}
    sdk::OptionValues o;
  } ctx;
  bool changed = false;
  if (!pass->run(*graph, ctx, &changed).is_ok() || !changed) return 14;
  // The executable goes before the engine, as the runtime does; the other objects go in every order.
  std::unique_ptr<sdk::Executable> executable;
  if (!engine->compile(*graph, &executable).is_ok()) return 15;
  std::vector<sdk::Tensor> outputs;
  if (!executable->run({sdk::Tensor(desc, std::string(16, '\0'))}, &outputs).is_ok() || outputs.size() != 1)
    return 16;
  auto artifact = std::make_unique<sdk::Tensor>(outputs[0]);
  executable.reset();

  std::vector<std::function<void()>> release = {
      [&] { registry.reset(); }, [&] { engine.reset(); }, [&] { pass.reset(); },
      [&] { artifact.reset(); }, [&] { graph.reset(); },
  };
  for (int i : order) release[i]();
  if (is_mapped(engine_path) || is_mapped(pass_path)) return 20;
  return 0;
}

TEST(LifetimeDeathTest, EveryReleaseOrder) {
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  std::vector<int> order = {0, 1, 2, 3, 4};
  size_t orders = 0;
  do {
    EXPECT_EXIT(std::exit(run_order(order)), ::testing::ExitedWithCode(0), "")
        << "order " << ::testing::PrintToString(order);
    ++orders;
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(orders, 120u);
}

}  // namespace
}  // namespace graphsplit
