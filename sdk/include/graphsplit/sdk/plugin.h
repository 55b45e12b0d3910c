// The binary boundary between the host and a plugin library (design guide, section 3).
//
// A plugin exports exactly one symbol, graphsplit_plugin_descriptor_v<ABI major>, returning a constant,
// C-layout descriptor. The host reads and checks it before any C++ object of the plugin exists; only then
// does it call a component's `create`. Use GS_DEFINE_PLUGIN and the GS_*_COMPONENT helpers; never fill the
// structs by hand.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/pass.h"
#include "graphsplit/sdk/version.h"

extern "C" {

#define GS_PLUGIN_MAGIC 0x4C505347u  // "GSPL" read as a little-endian uint32

enum gs_component_kind : uint32_t { GS_ENGINE = 1, GS_PASS = 2, GS_PARTITIONER = 3 };
enum gs_option_type : uint32_t {
  GS_OPT_BOOL = 0,
  GS_OPT_INT,
  GS_OPT_FLOAT,
  GS_OPT_STRING,
  GS_OPT_ENUM,
  GS_OPT_LIST
};

struct gs_option_desc {
  const char* name;
  uint32_t type;  // gs_option_type
  // A TOML literal: "true", "4", "0.5", "\"fast\"", "[\"a\", \"b\"]"; NULL means the option is required.
  const char* default_value;
  double min, max;          // GS_OPT_INT / GS_OPT_FLOAT; min > max means unbounded
  const char* enum_values;  // GS_OPT_ENUM: "a|b|c"
  const char* help;
  const char* ge_alias;  // a GE option that sets it from [options], e.g. "ge.dynamicBatchSize"; or NULL
};

struct gs_component_desc {
  uint32_t kind;  // gs_component_kind
  const char* name;
  const char* summary;
  uint32_t n_options;
  const gs_option_desc* options;
  const char* op_table;  // engines: the table's file name, installed beside the library; else NULL
  const char* stage;     // partitioners: "stage", "dynamic_shape", "engine", or another name; else NULL
  void* (*create)(const void* plugin_context);  // returns Engine*, Pass* or Partitioner* by kind
  void (*destroy)(void* object);                // the creating library deletes
};

struct gs_plugin_desc {
  // The prefix up to `abi_tag` never moves in any ABI major, so any host can recognise and refuse a plugin.
  uint32_t magic;
  uint32_t struct_size;
  uint16_t abi_major;
  uint16_t abi_minor;
  uint16_t min_host_minor;
  uint16_t reserved;
  const char* sdk_version;
  const char* abi_tag;
  const char* name;
  const char* version;
  uint32_t n_components;
  const gs_component_desc* components;
};

}  // extern "C"

static_assert(offsetof(gs_plugin_desc, magic) == 0 && offsetof(gs_plugin_desc, struct_size) == 4 &&
                  offsetof(gs_plugin_desc, abi_major) == 8 && offsetof(gs_plugin_desc, abi_minor) == 10 &&
                  offsetof(gs_plugin_desc, min_host_minor) == 12 &&
                  offsetof(gs_plugin_desc, sdk_version) == 16 && offsetof(gs_plugin_desc, abi_tag) == 24,
              "the descriptor prefix is frozen");

#define GS_STRINGIFY_(x) #x
#define GS_STRINGIFY(x) GS_STRINGIFY_(x)
#if defined(__clang__)
#define GS_ABI_COMPILER "clang-" GS_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define GS_ABI_COMPILER "gcc-" GS_STRINGIFY(__GNUC__)
#else
#define GS_ABI_COMPILER "unknown"
#endif
#if defined(_LIBCPP_VERSION)
#define GS_ABI_STDLIB "libc++;cxx11abi=1"
#elif defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define GS_ABI_STDLIB "libstdc++;cxx11abi=1"
#else
#define GS_ABI_STDLIB "libstdc++;cxx11abi=0"
#endif
#if defined(_GLIBCXX_DEBUG)
#define GS_ABI_DEBUG "glibcxx_debug=1"
#else
#define GS_ABI_DEBUG "glibcxx_debug=0"
#endif
// Compiler family and major; the standard library, its string ABI and its debug mode must match the host's.
#define GS_ABI_TAG GS_ABI_COMPILER ";" GS_ABI_STDLIB ";" GS_ABI_DEBUG

#define GS_ENTRY_SYMBOL_NAME_(major) graphsplit_plugin_descriptor_v##major
#define GS_ENTRY_SYMBOL_NAME(major) GS_ENTRY_SYMBOL_NAME_(major)
#define GS_ENTRY_SYMBOL GS_STRINGIFY(GS_ENTRY_SYMBOL_NAME(GS_SDK_ABI_MAJOR))

namespace graphsplit::sdk::plugin_detail {

// An engine class that does not declare optimize() inherits Engine's, whose member pointer names Engine.
// (An engine with several optimize overloads, or a private one, must say which: this does not compile.)
template <class T>
inline constexpr bool kOverridesOptimize =
    !std::is_same_v<decltype(&T::optimize), Status (Engine::*)(Graph&, PassContext&, bool*)>;

struct EngineAccess {
  static void set_optimizes(Engine& engine, bool value) { engine.optimizes_ = value; }
};

template <class Base, class T>
void* create(const void* context) {
  T* object = new T(*static_cast<const PluginContext*>(context));
  if constexpr (std::is_same_v<Base, Engine>) EngineAccess::set_optimizes(*object, kOverridesOptimize<T>);
  return static_cast<Base*>(object);
}
template <class Base>
void destroy(void* object) {
  delete static_cast<Base*>(object);
}

}  // namespace graphsplit::sdk::plugin_detail

// One component entry. OPTIONS is a `constexpr gs_option_desc[]` or GS_NO_OPTIONS.
#define GS_NO_OPTIONS 0, nullptr
#define GS_OPTIONS(array) static_cast<uint32_t>(sizeof(array) / sizeof((array)[0])), (array)
#define GS_ENGINE_COMPONENT(NAME, SUMMARY, CLASS, OPTIONS, OP_TABLE)                 \
  gs_component_desc {                                                                \
    GS_ENGINE, NAME, SUMMARY, OPTIONS, OP_TABLE, nullptr,                            \
        &::graphsplit::sdk::plugin_detail::create<::graphsplit::sdk::Engine, CLASS>, \
        &::graphsplit::sdk::plugin_detail::destroy<::graphsplit::sdk::Engine>        \
  }
#define GS_PASS_COMPONENT(NAME, SUMMARY, CLASS, OPTIONS)                           \
  gs_component_desc {                                                              \
    GS_PASS, NAME, SUMMARY, OPTIONS, nullptr, nullptr,                             \
        &::graphsplit::sdk::plugin_detail::create<::graphsplit::sdk::Pass, CLASS>, \
        &::graphsplit::sdk::plugin_detail::destroy<::graphsplit::sdk::Pass>        \
  }
#define GS_PARTITIONER_COMPONENT(NAME, SUMMARY, CLASS, OPTIONS, STAGE)                    \
  gs_component_desc {                                                                     \
    GS_PARTITIONER, NAME, SUMMARY, OPTIONS, nullptr, STAGE,                               \
        &::graphsplit::sdk::plugin_detail::create<::graphsplit::sdk::Partitioner, CLASS>, \
        &::graphsplit::sdk::plugin_detail::destroy<::graphsplit::sdk::Partitioner>        \
  }

// Defines the entry point. Only constant data: nothing runs when the library is loaded.
#define GS_DEFINE_PLUGIN_EX(NAME, VERSION, MIN_HOST_MINOR, COMPONENTS)                          \
  extern "C" __attribute__((visibility("default"))) const gs_plugin_desc* GS_ENTRY_SYMBOL_NAME( \
      GS_SDK_ABI_MAJOR)(void) {                                                                 \
    static constexpr gs_plugin_desc kDescriptor = {                                             \
        GS_PLUGIN_MAGIC,                                                                        \
        static_cast<uint32_t>(sizeof(gs_plugin_desc)),                                          \
        GS_SDK_ABI_MAJOR,                                                                       \
        GS_SDK_ABI_MINOR,                                                                       \
        MIN_HOST_MINOR,                                                                         \
        0,                                                                                      \
        GS_SDK_VERSION,                                                                         \
        GS_ABI_TAG,                                                                             \
        NAME,                                                                                   \
        VERSION,                                                                                \
        static_cast<uint32_t>(sizeof(COMPONENTS) / sizeof((COMPONENTS)[0])),                    \
        COMPONENTS};                                                                            \
    return &kDescriptor;                                                                        \
  }
#define GS_DEFINE_PLUGIN(NAME, VERSION, COMPONENTS) \
  GS_DEFINE_PLUGIN_EX(NAME, VERSION, GS_SDK_ABI_MINOR, COMPONENTS)

// graphsplit_add_plugin(NAME ...) defines GS_PLUGIN_NAME, so that the plugin's name is written once, in its
// CMakeLists.txt: GS_DEFINE_THIS_PLUGIN uses it, and GS_PLUGIN_DATA_FILE("ops.toml") names a DATA file as
// CMake installs it ("<name>.ops.toml").
#ifdef GS_PLUGIN_NAME
#define GS_DEFINE_THIS_PLUGIN(VERSION, COMPONENTS) GS_DEFINE_PLUGIN(GS_PLUGIN_NAME, VERSION, COMPONENTS)
#define GS_PLUGIN_DATA_FILE(FILE) GS_PLUGIN_NAME "." FILE
#endif
