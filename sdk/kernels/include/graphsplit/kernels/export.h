// Symbol visibility for the kernels library. Everything not marked GS_KERNELS_API stays hidden (and the
// version script hides what the standard library instantiates), so the exported surface is exactly the public
// headers.
#pragma once

#define GS_KERNELS_API __attribute__((visibility("default")))
