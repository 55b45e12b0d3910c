// Inside the SDK library only (not exported): shared by topo.cpp and verify.cpp.
#pragma once

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

// Ok, or the cycle error topological_order would give (its message names a path), without ordering anything.
GS_SDK_LOCAL Status check_acyclic(const Graph& g);

}  // namespace graphsplit::sdk
