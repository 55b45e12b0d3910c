// Only a _v2 entry point, and a static constructor: pre-flight must refuse it without running that
// constructor.
#include "common.h"

static bad::Marker marker;

extern "C" __attribute__((visibility("default"))) const void* graphsplit_plugin_descriptor_v2(void) {
  return nullptr;
}
