// The shared engine conformance suite (tests/conformance/engine_conformance.cpp), run on libgsplugin_dvpp.so.
#include "engine_conformance.h"

namespace graphsplit::testing {
INSTANTIATE_TEST_SUITE_P(dvpp, EngineConformance, ::testing::Values("dvpp"));
}  // namespace graphsplit::testing
