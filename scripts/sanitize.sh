#!/bin/bash
# The whole test suite under AddressSanitizer + UndefinedBehaviorSanitizer, in its own build folder
# (build-asan/). Not part of CI: a second full build does not fit next to the normal one. Usage:
#   bash scripts/sanitize.sh      # after scripts/setup.sh: configure, build, run every test but the out-of-tree one
set -euo pipefail
cd "$(dirname "$0")/.."
# Packages and models as scripts/setup.sh installs them (run it once first).
scripts/fetch_models.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGRAPHSPLIT_BUILD_BENCH=OFF -DGRAPHSPLIT_SANITIZE=ON
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j"$(nproc)" -E out_of_tree --output-on-failure
