// The engine conformance suite, for an engine plugin's own tests (in tree and out of tree). CMake does the
// work:
//   graphsplit_add_plugin(NAME my_engine KIND engine ... TESTS tests/my_unit_test.cpp CONFORMANCE)
// builds <name>_conformance, which runs every test of the suite on the built libgsplugin_<name>.so, and
// <name>_unit_tests from the TESTS sources, which may use load_table() and the SDK's graph builder.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "graphsplit/sdk/op_table.h"
#include "graphsplit/sdk/testing/graph_builder.h"

namespace graphsplit::testing {

// The plugin to check: its name (libgsplugin_<plugin>.so) and the folder it was built into.
struct ConformanceTarget {
  std::string plugin;
  std::string dir;
};
inline void PrintTo(const ConformanceTarget& t, std::ostream* os) {
  *os << t.plugin;
}

class EngineConformance : public ::testing::TestWithParam<ConformanceTarget> {};

// Referenced by GS_ENGINE_CONFORMANCE so that the linker keeps the suite's tests from the static library.
int conformance_anchor();

// An engine's op table as the host reads it (throws std::runtime_error with the host's message).
sdk::OpSupportTable load_table(const std::string& path);

using sdk::testing::add_net_output;
using sdk::testing::add_op;
using sdk::testing::one_node;
using sdk::testing::OneNode;
using sdk::testing::tensor_desc;

}  // namespace graphsplit::testing

// Runs the suite on one plugin; the CMake function writes this line for you.
#define GS_ENGINE_CONFORMANCE(PLUGIN, DIR)                                               \
  namespace graphsplit::testing {                                                        \
  [[maybe_unused]] static const int gs_engine_conformance_anchor = conformance_anchor(); \
  INSTANTIATE_TEST_SUITE_P(PluginUnderTest, EngineConformance,                           \
                           ::testing::Values(ConformanceTarget{PLUGIN, DIR}));           \
  }                                                                                      \
  static_assert(true, "")
