#!/usr/bin/env bash
# abi.sh must fail on an ABI change: against a source tree whose SDK baseline is another library's (the same
# version recorded), the check must exit 1 and say the ABI changed without a version bump; with only the recorded
# version changed, it must ask for the baseline to be regenerated.
set -euo pipefail
SRC="$1"; BUILD="$2"
readelf -S "$(ls "$BUILD"/sdk/libgraphsplit_sdk.so.*.*.* | head -1)" | grep -q '\.debug_info' || {
  echo "abi_selftest: no debug information"; exit 77; }
[ "$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")" = RelWithDebInfo ] || {
  echo "abi_selftest: the baselines describe RelWithDebInfo builds"; exit 77; }
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/src/sdk/abi" "$WORK/src/sdk/kernels"
ln -s "$SRC/sdk/include" "$WORK/src/sdk/include"
ln -s "$SRC/sdk/kernels/include" "$WORK/src/sdk/kernels/include"
ln -s "$SRC/sdk/kernels/cmake" "$WORK/src/sdk/kernels/cmake"
cp "$SRC"/sdk/abi/* "$WORK/src/sdk/abi/"
cp "$SRC/sdk/abi/libgraphsplit_kernels.abi.gz" "$WORK/src/sdk/abi/libgraphsplit_sdk.abi.gz"
set +e; out=$("$SRC/tests/abi/abi.sh" check "$WORK/src" "$BUILD" 2>&1); rc=$?; set -e
[ $rc -eq 1 ] || { echo "abi_selftest: a changed ABI gave exit $rc:"; echo "$out"; exit 1; }
echo "$out" | grep -q "libgraphsplit_sdk changed its ABI without a version bump" ||
  { echo "abi_selftest: the change was not reported:"; echo "$out"; exit 1; }
cp "$SRC/sdk/abi/libgraphsplit_sdk.abi.gz" "$WORK/src/sdk/abi/"
echo "0.9" > "$WORK/src/sdk/abi/libgraphsplit_sdk.version"
set +e; out=$("$SRC/tests/abi/abi.sh" check "$WORK/src" "$BUILD" 2>&1); rc=$?; set -e
[ $rc -eq 1 ] && echo "$out" | grep -q "its baseline is for 0.9" ||
  { echo "abi_selftest: a version mismatch was not reported (exit $rc):"; echo "$out"; exit 1; }
echo "abi_selftest: a changed ABI and a stale baseline are both refused"
