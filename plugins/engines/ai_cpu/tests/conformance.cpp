// The shared engine conformance suite (tests/conformance/engine_conformance.cpp), run on
// libgsplugin_ai_cpu.so.
#include "engine_conformance.h"

namespace graphsplit::testing {
INSTANTIATE_TEST_SUITE_P(ai_cpu, EngineConformance, ::testing::Values("ai_cpu"));
}  // namespace graphsplit::testing
