// Only an entry point for the ABI major after this host's (a newer graphsplit built it), and a static
// constructor: pre-flight must refuse it without running that constructor.
#include "common.h"

static bad::Marker marker;

extern "C" __attribute__((visibility("default"))) const void* graphsplit_plugin_descriptor_v3(void) {
  return nullptr;
}
