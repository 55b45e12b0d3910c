// Symbol visibility for the SDK library. Everything not marked GS_SDK_API stays hidden, so the exported
// surface is exactly the public IR and plugin API (see docs/ir.md and the design guide, section 3.1).
#pragma once

#define GS_SDK_API __attribute__((visibility("default")))
