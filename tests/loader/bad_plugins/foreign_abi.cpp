// Claims the old libstdc++ string ABI.
#include "common.h"

namespace {
constexpr gs_component_desc kComponents[] = {GS_PASS_COMPONENT("noop", "", bad::NoopPass, GS_NO_OPTIONS)};
}

extern "C" __attribute__((visibility("default"))) const gs_plugin_desc* GS_ENTRY_SYMBOL_NAME(
    GS_SDK_ABI_MAJOR)(void) {
  static constexpr gs_plugin_desc d = {GS_PLUGIN_MAGIC,
                                       sizeof(gs_plugin_desc),
                                       GS_SDK_ABI_MAJOR,
                                       GS_SDK_ABI_MINOR,
                                       0,
                                       0,
                                       GS_SDK_VERSION,
                                       "gcc-12;libstdc++;cxx11abi=0;glibcxx_debug=0",
                                       "foreign_abi",
                                       "1.0",
                                       1,
                                       kComponents};
  return &d;
}
