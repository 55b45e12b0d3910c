// The Pass and Partitioner plugin interfaces. Both edit the graph they are given in place and say whether
// they changed it; errors come back as a Status, never as an exception.
#pragma once

#include "graphsplit/sdk/context.h"
#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

class GS_SDK_API Pass {
 public:
  virtual ~Pass();
  virtual Status run(Graph& root, PassContext& ctx, bool* changed) = 0;

 protected:
  Pass() = default;
};

class GS_SDK_API Partitioner {
 public:
  virtual ~Partitioner();
  virtual Status partition(Graph& root, PassContext& ctx, bool* changed) = 0;

 protected:
  Partitioner() = default;
};

}  // namespace graphsplit::sdk
