// The shared engine conformance suite (tests/conformance/engine_conformance.cpp), run on
// libgsplugin_host_cpu.so.
#include "engine_conformance.h"

namespace graphsplit::testing {
INSTANTIATE_TEST_SUITE_P(host_cpu, EngineConformance, ::testing::Values("host_cpu"));
}  // namespace graphsplit::testing
