// The loader against deliberately broken plugins (tests/loader/bad_plugins): each refusal names the file and
// the reason, nothing crashes, and a refused library does not stay mapped.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "pipeline/pipeline.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;

std::string bad(const std::string& name) {
  return std::string(BAD_PLUGIN_DIR) + "/libgsplugin_" + name + ".so";
}

std::string refusal(const std::string& name) {
  PluginLoader loader(LoaderOptions{{BAD_PLUGIN_DIR}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load_file(bad(name), &lib);
  EXPECT_FALSE(s.is_ok()) << name << " was accepted";
  EXPECT_EQ(lib, nullptr);
  EXPECT_NE(s.message().find(bad(name)), std::string::npos)
      << "the message must name the file: " << s.message();
  return s.message();
}

bool is_mapped(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(LoaderTest, NoEntryPoint) {
  EXPECT_NE(refusal("no_entry")
                .find("not a graphsplit plugin (it exports no graphsplit_plugin_descriptor_v* symbol)"),
            std::string::npos);
}

TEST(LoaderTest, WrongMajorIsRefusedBeforeAnyOfItsCodeRuns) {
  const fs::path marker = fs::temp_directory_path() / ("gs_marker_" + std::to_string(::getpid()));
  fs::remove(marker);
  ::setenv("GS_MARKER", marker.c_str(), 1);
  const std::string m = refusal("wrong_major");
  ::unsetenv("GS_MARKER");
  EXPECT_NE(m.find("it was built for SDK ABI major 3; this host provides SDK ABI major 2"), std::string::npos)
      << m;
  EXPECT_FALSE(fs::exists(marker)) << "the plugin's static constructor ran";
  EXPECT_FALSE(is_mapped(bad("wrong_major")));
}

TEST(LoaderTest, BadMagicAndTruncatedDescriptor) {
  EXPECT_NE(refusal("bad_magic").find("corrupt or foreign descriptor (bad magic)"), std::string::npos);
  EXPECT_NE(refusal("short_struct").find("corrupt or foreign descriptor (struct_size 16 <"),
            std::string::npos);
  // Refused after dlopen: the library must have been released again.
  EXPECT_FALSE(is_mapped(bad("bad_magic")));
}

TEST(LoaderTest, HostTooOldForThePluginsMinimumMinor) {
  EXPECT_NE(refusal("future_minor")
                .find("it requires SDK ABI >= " GS_SDK_ABI_STRINGIFY(
                    GS_SDK_ABI_MAJOR) ".9 (built with SDK 0.9.0); this host provides SDK "
                                      "ABI " GS_SDK_ABI_STRING),
            std::string::npos);
}

TEST(LoaderTest, NewerMinorThatAcceptsThisHostLoads) {
  PluginLoader loader(LoaderOptions{{BAD_PLUGIN_DIR}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load("newer_minor_ok", &lib);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(lib->descriptor().abi_minor, 5);
}

TEST(LoaderTest, ForeignStandardLibraryAbi) {
  const std::string m = refusal("foreign_abi");
  EXPECT_NE(m.find("its C++ ABI tag 'gcc-12;libstdc++;cxx11abi=0;glibcxx_debug=0' does not match the host's"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("cxx11abi differs"), std::string::npos) << m;
}

TEST(LoaderTest, MissingDependencyGivesTheDlerrorTextAndAHint) {
  const std::string m = refusal("missing_dep");
  EXPECT_NE(m.find("dlopen failed"), std::string::npos) << m;
  EXPECT_NE(m.find("libgs_vanishing_dep.so: cannot open shared object file"), std::string::npos) << m;
  EXPECT_NE(m.find("hint: a dependency is missing; run 'ldd'"), std::string::npos) << m;
}

TEST(LoaderTest, UndefinedSymbolFailsAtLoadNotAtCall) {
  const std::string m = refusal("undefined_symbol");
  EXPECT_NE(m.find("undefined symbol: graphsplit_symbol_nobody_defines"), std::string::npos) << m;
  EXPECT_NE(m.find("-z defs"), std::string::npos) << m;
}

TEST(LoaderTest, NotASharedLibrary) {
  const fs::path dir = fs::temp_directory_path() / ("gs_text_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "libgsplugin_text.so") << "just text\n";
  PluginLoader loader(LoaderOptions{{dir.string()}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load("text", &lib);
  EXPECT_NE(s.message().find("not a loadable shared library"), std::string::npos) << s.message();
  fs::remove_all(dir);
}

// Packagers strip libraries: the entry point must be found in the dynamic symbol table, as dlsym finds it.
TEST(LoaderTest, StrippedPluginLoads) {
  const fs::path dir = fs::temp_directory_path() / ("gs_strip_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path copy = dir / "libgsplugin_newer_minor_ok.so";
  fs::copy_file(bad("newer_minor_ok"), copy, fs::copy_options::overwrite_existing);
  ASSERT_EQ(std::system(("strip --strip-all '" + copy.string() + "'").c_str()), 0);
  PluginLoader loader(LoaderOptions{{dir.string()}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load_file(copy.string(), &lib);
  EXPECT_TRUE(s.is_ok()) << s.message();
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(std::string(lib->descriptor().name), "newer_minor_ok");
  lib.reset();
  fs::remove_all(dir);
}

// An ELF header whose section table lies past the end of the file.
TEST(LoaderTest, TruncatedElfIsRefusedWithTheReason) {
  const fs::path dir = fs::temp_directory_path() / ("gs_trunc_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path cut = dir / "libgsplugin_cut.so";
  {
    std::ifstream in(bad("newer_minor_ok"), std::ios::binary);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream(cut, std::ios::binary) << head;
  }
  PluginLoader loader(LoaderOptions{{dir.string()}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load_file(cut.string(), &lib);
  EXPECT_EQ(s.message(), "refusing plugin " + cut.string() +
                             ": not a loadable shared library (section headers past the end of the file)");
  EXPECT_EQ(lib, nullptr);
  fs::remove_all(dir);
}

TEST(LoaderTest, NotFoundListsEveryPathTried) {
  PluginLoader loader(LoaderOptions{{"/nonexistent/a", "/nonexistent/b"}, false, false});
  std::shared_ptr<const LoadedLibrary> lib;
  sdk::Status s = loader.load("dvpp", &lib);
  EXPECT_EQ(s.message(),
            "required plugin 'dvpp' could not be loaded; tried in order; 1. "
            "/nonexistent/a/libgsplugin_dvpp.so: not found; "
            "2. /nonexistent/b/libgsplugin_dvpp.so: not found");
}

TEST(LoaderTest, OneComponentNameInTwoFilesNamesBoth) {
  PluginLoader loader(LoaderOptions{{BAD_PLUGIN_DIR}, false, false});
  std::shared_ptr<const LoadedLibrary> a, b;
  ASSERT_TRUE(loader.load("twin_a", &a).is_ok());
  ASSERT_TRUE(loader.load("twin_b", &b).is_ok());
  Registry registry;
  ASSERT_TRUE(registry.add_library(a).is_ok());
  sdk::Status s = registry.add_library(b);
  EXPECT_EQ(s.message(), "partitioner 'twin' is provided by both " + bad("twin_a") + " and " + bad("twin_b"));
  EXPECT_TRUE(registry.add_library(a).is_ok());  // the same library again is not a clash
}

TEST(LoaderTest, TheSameFileThroughASymlinkLoadsOnce) {
  const fs::path dir = fs::temp_directory_path() / ("gs_link_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::create_symlink(std::string(GRAPHSPLIT_PLUGIN_DIR) + "/libgsplugin_std.so", dir / "libgsplugin_std.so");
  PluginLoader via_link(LoaderOptions{{dir.string()}, false, false});
  PluginLoader direct(LoaderOptions{{GRAPHSPLIT_PLUGIN_DIR}, false, false});
  std::shared_ptr<const LoadedLibrary> a, b;
  ASSERT_TRUE(via_link.load("std", &a).is_ok());
  ASSERT_TRUE(direct.load("std", &b).is_ok());
  EXPECT_EQ(a.get(), b.get());
  Registry registry;
  EXPECT_TRUE(registry.add_library(a).is_ok());
  EXPECT_TRUE(registry.add_library(b).is_ok());
  fs::remove_all(dir);
}

// Exceptions and failures inside plugin code, through the real pipeline.
std::string pipeline_error(const std::string& pass, bool verify_each, bool at_create) {
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  const std::string text =
      "schema_version = 1\n[plugins]\nrequired = [\"thrower\"]\n[[pipeline]]\npass = \"" + pass + "\"\n";
  EXPECT_TRUE(parse_pipeline_config_text(text, "t.toml", &config, &diags).is_ok());
  PipelineSettings settings;
  settings.plugin_paths = {BAD_PLUGIN_DIR};
  settings.verify_each = verify_each;
  std::unique_ptr<Pipeline> pipeline;
  sdk::Status s = Pipeline::create(config, settings, &pipeline, &diags);
  if (at_create) return s.message();
  EXPECT_TRUE(s.is_ok()) << s.message();
  if (!s.is_ok()) return s.message();
  auto g = sdk::Graph::create("victim");
  return pipeline->run(*g).message();
}

TEST(LoaderTest, FactoryThatThrows) {
  EXPECT_EQ(pipeline_error("thrower.throws_on_create", false, true),
            "t.toml:5:8: error: pass 'thrower.throws_on_create' create (libgsplugin_thrower.so 1.0, SDK "
            "ABI " GS_SDK_ABI_STRING
            ") threw: "
            "cannot build the thing");
}

TEST(LoaderTest, MethodThatThrowsAnInt) {
  EXPECT_EQ(
      pipeline_error("thrower.throws_on_run", false, false),
      "pipeline entry 1 (pass thrower.throws_on_run) (libgsplugin_thrower.so 1.0, SDK ABI " GS_SDK_ABI_STRING
      ") threw a "
      "non-standard exception");
}

TEST(LoaderTest, MethodThatReturnsAnError) {
  EXPECT_EQ(
      pipeline_error("thrower.fails_on_run", false, false),
      "pipeline entry 1 (pass thrower.fails_on_run) (libgsplugin_thrower.so 1.0, SDK ABI " GS_SDK_ABI_STRING
      ") failed: "
      "graph 'victim' "
      "is not to my taste");
}

TEST(LoaderTest, VerifyEachNamesThePassThatBrokeTheGraph) {
  const std::string m = pipeline_error("thrower.breaks_graph", true, false);
  EXPECT_NE(m.find("pipeline entry 1 (pass thrower.breaks_graph) (libgsplugin_thrower.so 1.0, SDK "
                   "ABI " GS_SDK_ABI_STRING ") "
                   "left an invalid graph"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("has a cycle"), std::string::npos) << m;
  EXPECT_EQ(pipeline_error("thrower.breaks_graph", false, false), "");  // unnoticed without verification
}

}  // namespace
}  // namespace graphsplit
