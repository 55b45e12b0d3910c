// The conformance suite every engine plugin runs on its own .so through the real host (loader, registry,
// option resolution): the descriptor, the op table against the engine's answers, determinism, option schemas,
// a broken table file, and compile errors as Status. Installed with the SDK as
// libgraphsplit_engine_conformance.a; graphsplit_add_plugin(... CONFORMANCE) instantiates it for a plugin, in
// tree and out of tree.
#include "graphsplit/testing/engine_conformance.h"

#include <filesystem>
#include <fstream>

#include "config/ge_options.h"
#include "config/op_table_loader.h"
#include "loader/loader.h"
#include "pipeline/registry.h"

namespace graphsplit::testing {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  std::shared_ptr<const LoadedLibrary> lib;
  Registry registry;
  const ComponentInfo* engine = nullptr;
};

std::unique_ptr<Loaded> load(const ConformanceTarget& target) {
  auto l = std::make_unique<Loaded>();
  PluginLoader loader(LoaderOptions{{target.dir}, false, false});
  sdk::Status s = loader.load(target.plugin, &l->lib);
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return nullptr;
  s = l->registry.add_library(l->lib);
  EXPECT_TRUE(s.is_ok()) << s.message();
  for (const ComponentInfo* c : l->registry.components()) {
    if (c->kind == ComponentKind::kEngine) l->engine = c;
  }
  return l;
}

sdk::Status create_with_defaults(const ComponentInfo& c, PluginHandle<sdk::Engine>* engine) {
  sdk::OptionValues defaults;
  std::vector<Diagnostic> diags;
  GS_RETURN_IF_ERROR(resolve_options(c, {}, {}, {}, &defaults, &diags));
  return create_engine(c, defaults, default_ge_options(), engine);
}

// A data type the row does not allow, or kUndefined when it allows everything.
sdk::DataType outside(const std::vector<sdk::DataType>& allowed) {
  if (allowed.empty()) return sdk::DataType::kUndefined;
  for (sdk::DataType d :
       {sdk::DataType::kDouble, sdk::DataType::kComplex64, sdk::DataType::kUint64, sdk::DataType::kInt16}) {
    if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) return d;
  }
  return sdk::DataType::kUndefined;
}

sdk::DataType first_or(const std::vector<sdk::DataType>& a, const std::vector<sdk::DataType>& b,
                       sdk::DataType fallback) {
  if (!a.empty()) return a.front();
  if (!b.empty()) return b.front();
  return fallback;
}

}  // namespace

int conformance_anchor() {
  return 0;
}

TEST_P(EngineConformance, DescriptorHasOneEngineAndAKernelLibTable) {
  auto l = load(GetParam());
  ASSERT_TRUE(l && l->engine);
  ASSERT_NE(l->engine->op_table, nullptr);
  EXPECT_FALSE(l->engine->op_table->empty());
  EXPECT_FALSE(l->engine->op_table->kernel_lib().empty());
  EXPECT_FALSE(l->engine->summary.empty());
  size_t engines = 0;
  for (const ComponentInfo* c : l->registry.components()) engines += c->kind == ComponentKind::kEngine;
  EXPECT_EQ(engines, 1u);
}

TEST_P(EngineConformance, EveryRowAnswersAsTheTableSays) {
  auto l = load(GetParam());
  ASSERT_TRUE(l && l->engine);
  PluginHandle<sdk::Engine> engine;
  ASSERT_TRUE(create_with_defaults(*l->engine, &engine).is_ok());
  for (const sdk::OpSupportRow& row : l->engine->op_table->rows()) {
    SCOPED_TRACE(row.type);
    // A version the row covers: its newest up to 23, the newest ai.onnx opset graphsplit reads.
    const int opset = static_cast<int>(std::min<int64_t>(row.opset_max, 23));
    const sdk::DataType in = first_or(row.input_dtypes, row.dtypes, sdk::DataType::kFloat);
    const sdk::DataType out = first_or(row.output_dtypes, row.dtypes, in);
    OneNode g =
        one_node(row.type, {tensor_desc(in, {1, 3, 16, 16})}, {tensor_desc(out, {1, 3, 16, 16})}, opset);
    const sdk::SupportVerdict v = engine->check_support(*g.node);
    if (!row.shape_dependent) {
      EXPECT_TRUE(v.supported) << v.detail;
    } else if (!v.supported) {
      EXPECT_FALSE(v.detail.empty()) << "a refusal needs a reason";
      EXPECT_NE(v.reason, sdk::ReasonCode::kEngineUnsupportedOp);
    }
    // Asking twice gives the same answer.
    const sdk::SupportVerdict again = engine->check_support(*g.node);
    EXPECT_EQ(again.supported, v.supported);
    EXPECT_EQ(again.detail, v.detail);
    // A data type outside the row is refused as such.
    const std::vector<sdk::DataType>& in_allowed = row.input_dtypes.empty() ? row.dtypes : row.input_dtypes;
    if (const sdk::DataType bad = outside(in_allowed); bad != sdk::DataType::kUndefined) {
      OneNode b =
          one_node(row.type, {tensor_desc(bad, {1, 3, 16, 16})}, {tensor_desc(out, {1, 3, 16, 16})}, opset);
      const sdk::SupportVerdict r = engine->check_support(*b.node);
      EXPECT_FALSE(r.supported);
      EXPECT_EQ(r.reason, sdk::ReasonCode::kEngineUnsupportedDtype) << r.detail;
    }
    // A row without dynamic-shape support refuses dynamic shapes.
    if (row.dynamic_shape == sdk::DynamicShapeSupport::kNone) {
      OneNode d =
          one_node(row.type, {tensor_desc(in, {-1, 3, 16, 16})}, {tensor_desc(out, {-1, 3, 16, 16})}, opset);
      const sdk::SupportVerdict r = engine->check_support(*d.node);
      EXPECT_FALSE(r.supported);
      EXPECT_EQ(r.reason, sdk::ReasonCode::kEngineNoDynamicShape) << r.detail;
    }
  }
  // An op type the table does not list is refused as such.
  OneNode unknown = one_node("NoSuchOperator", {tensor_desc(sdk::DataType::kFloat, {4})},
                             {tensor_desc(sdk::DataType::kFloat, {4})});
  const sdk::SupportVerdict r = engine->check_support(*unknown.node);
  EXPECT_FALSE(r.supported);
  EXPECT_EQ(r.reason, sdk::ReasonCode::kEngineUnsupportedOp);
}

TEST_P(EngineConformance, OptionDefaultsValidateAndWrongTypesAreRefused) {
  auto l = load(GetParam());
  ASSERT_TRUE(l && l->engine);
  for (const OptionSpec& o : l->engine->options) {
    SCOPED_TRACE(o.name);
    EXPECT_FALSE(o.help.empty());
    RawValue wrong;
    if (o.type == GS_OPT_STRING || o.type == GS_OPT_ENUM)
      wrong.value = true;
    else
      wrong.value = std::string("text");
    sdk::OptionValues values;
    std::vector<Diagnostic> diags;
    EXPECT_FALSE(
        resolve_options(*l->engine, {RawOption{o.name, wrong, {}}}, {}, {}, &values, &diags).is_ok());
  }
}

TEST_P(EngineConformance, ABrokenTableFileIsRefusedWithItsPosition) {
  auto l = load(GetParam());
  ASSERT_TRUE(l && l->engine);
  const fs::path dir =
      fs::temp_directory_path() / ("gs_conf_" + GetParam().plugin + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string lib_name = "libgsplugin_" + GetParam().plugin + ".so";
  fs::copy_file(l->lib->path(), dir / lib_name, fs::copy_options::overwrite_existing);
  const std::string table = GetParam().plugin + ".ops.toml";
  fs::copy_file(fs::path(l->lib->path()).parent_path() / table, dir / table,
                fs::copy_options::overwrite_existing);
  std::ifstream in(dir / table);
  const size_t lines = std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  std::ofstream(dir / table, std::ios::app) << "\n[[op]]\ntype = \"Broken\"\ncost = \"cheap\"\n";
  PluginLoader loader(LoaderOptions{{dir.string()}, false, false});
  std::shared_ptr<const LoadedLibrary> copy;
  ASSERT_TRUE(loader.load(GetParam().plugin, &copy).is_ok());
  Registry registry;
  sdk::Status s = registry.add_library(copy);
  EXPECT_NE(s.message().find((dir / table).string() + ":" + std::to_string(lines + 4) +
                             ":8: error: 'cost' must be a non-negative integer"),
            std::string::npos)
      << s.message();
  fs::remove_all(dir);
}

TEST_P(EngineConformance, CompileFailuresArriveAsStatus) {
  auto l = load(GetParam());
  ASSERT_TRUE(l && l->engine);
  PluginHandle<sdk::Engine> engine;
  ASSERT_TRUE(create_with_defaults(*l->engine, &engine).is_ok());
  OneNode g = one_node("NoSuchOperator", {tensor_desc(sdk::DataType::kFloat, {4})},
                       {tensor_desc(sdk::DataType::kFloat, {4})});
  std::unique_ptr<sdk::Executable> executable;
  sdk::Status s = guarded(*l->lib, "compile", [&] { return engine->compile(*g.root, &executable); });
  EXPECT_FALSE(
      s.is_ok());  // nothing compiles an unknown operator; the point is that it says so without throwing
  EXPECT_EQ(s.message().find("threw"), std::string::npos) << s.message();
}

}  // namespace graphsplit::testing
