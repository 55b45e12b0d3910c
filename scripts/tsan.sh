#!/bin/bash
# The multi-threaded suites under ThreadSanitizer, in their own build folder (build-tsan/): the online mode's
# session (concurrent runs of one key, eviction under in-flight runs, hits while another key compiles) and the
# runtime. Not part of CI (a second build). Usage, after scripts/setup.sh:
#   bash scripts/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAPHSPLIT_BUILD_BENCH=OFF -DGRAPHSPLIT_SANITIZE_THREAD=ON
ninja -C build-tsan jit_tests runtime_tests
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 build-tsan/bin/jit_tests
TSAN_OPTIONS=halt_on_error=1 build-tsan/bin/runtime_tests
