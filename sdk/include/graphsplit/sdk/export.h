// Symbol visibility for the SDK library. Everything not marked GS_SDK_API stays hidden, so the exported
// surface is exactly the public IR and plugin API (see docs/ir.md and the design guide, section 3.1).
#pragma once

#define GS_SDK_API __attribute__((visibility("default")))
// For the private members of an exported class: they stay out of the ABI, so that changing them needs no
// version bump (tests/abi checks the exported surface against the committed baseline).
#define GS_SDK_LOCAL __attribute__((visibility("hidden")))
