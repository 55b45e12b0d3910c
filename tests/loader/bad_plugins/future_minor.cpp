// Built against a future SDK minor that it really needs: min_host_minor above this host's.
#include "common.h"

namespace {
constexpr gs_component_desc kComponents[] = {GS_PASS_COMPONENT("noop", "", bad::NoopPass, GS_NO_OPTIONS)};
}

extern "C" __attribute__((visibility("default"))) const gs_plugin_desc* GS_ENTRY_SYMBOL_NAME(
    GS_SDK_ABI_MAJOR)(void) {
  static constexpr gs_plugin_desc d = {GS_PLUGIN_MAGIC,
                                       sizeof(gs_plugin_desc),
                                       GS_SDK_ABI_MAJOR,
                                       9,
                                       9,
                                       0,
                                       "0.9.0",
                                       GS_ABI_TAG,
                                       "future_minor",
                                       "1.0",
                                       1,
                                       kComponents};
  return &d;
}
