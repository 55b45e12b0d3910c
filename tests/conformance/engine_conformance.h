// Instantiate with: INSTANTIATE_TEST_SUITE_P(MyEngine, EngineConformance, ::testing::Values("<plugin
// name>"));
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "pipeline/pipeline.h"

namespace graphsplit::testing {

class EngineConformance : public ::testing::TestWithParam<std::string> {};

}  // namespace graphsplit::testing
