// One libFuzzer binary per target: FUZZ_TARGET names the function of targets.h.
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return graphsplit::fuzz::FUZZ_TARGET(data, size);
}
