// The shared engine conformance suite (tests/conformance/engine_conformance.cpp), run on
// libgsplugin_ai_core.so.
#include "engine_conformance.h"

namespace graphsplit::testing {
INSTANTIATE_TEST_SUITE_P(ai_core, EngineConformance, ::testing::Values("ai_core"));
}  // namespace graphsplit::testing
