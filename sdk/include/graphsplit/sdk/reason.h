// Reason codes: a stable enumeration for every placement, merge, demotion or skip decision, so that reports
// and `atc --explain` can say why (design guide, section 5).
#pragma once

#include <string_view>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

enum class ReasonCode : int {
  kOk = 0,
  kEngineUnsupportedOp,
  kEngineUnsupportedDtype,
  kEngineUnsupportedFormat,
  kEngineNoDynamicShape,
  kEngineCheckFailed,
  kEngineDisabled,
  kLowerPriority,
  kShapeUnknown,
  kCycle,
  kColourMismatch,
  kAtomicGroup,
  kSizeBelowLimit,
  kSizeAboveLimit,
  kResourceBudget,
  kStageCut,
  kUserRule,
};

// "ENGINE_UNSUPPORTED_OP", ...
GS_SDK_API std::string_view to_string(ReasonCode code);

}  // namespace graphsplit::sdk
