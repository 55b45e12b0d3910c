#!/usr/bin/env bash
# Sets everything up (packages, models, build) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
scripts/fetch_ort.sh  # ONNX Runtime, the tests' independent oracle (tests/visualisation)
ctest --test-dir build --output-on-failure -j"$(nproc)"
