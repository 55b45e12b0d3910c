#!/usr/bin/env bash
# The ONNX backend tests (node, simple, pytorch-converted, pytorch-operator) through the command-line tools, one
# process each: atc compiles model.onnx with the default pipeline, omrun runs the .om on test_data_set_0's inputs
# and compares with its outputs; one test per core at a time. Prints a count per outcome, the mismatches, and
# the wall time. (The test suite runs the same in-process, with the expected exceptions: build/bin/node_tests.)
# Usage: scripts/node_tests_cli.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="$(cd "${1:-build}" && pwd)"
DATA=/usr/share/libonnx-testdata/data
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export BUILD WORK

one_test() {
  local dir="$1" name inputs
  name="$(basename "$(dirname "$dir")")/$(basename "$dir")"
  inputs="$(ls "$dir"/test_data_set_0/input_*.pb 2>/dev/null | sort -V | paste -sd, -)"
  local out="$WORK/${name//\//_}"
  if ! "$BUILD"/bin/atc --model="$dir"/model.onnx --output="$out" >/dev/null 2>&1; then
    echo "atc_refused $name"
    return
  fi
  if "$BUILD"/bin/omrun --model="$out.om" ${inputs:+--input="$inputs"} --compare="$dir"/test_data_set_0 \
      >/dev/null 2>"$out.err"; then
    echo "pass $name"
  elif grep -q "omrun: mismatch" "$out.err"; then
    echo "mismatch $name"
  else
    echo "omrun_refused $name"
  fi
  rm -f "$out.om" "$out.err"
}
export -f one_test

start=$(date +%s.%N)
find "$DATA"/{node,simple,pytorch-converted,pytorch-operator} -mindepth 1 -maxdepth 1 -type d | sort | xargs -P "$(nproc)" -I{} bash -c 'one_test "$1"' _ {} \
  > "$WORK/outcomes"
end=$(date +%s.%N)
grep '^mismatch ' "$WORK/outcomes" | sort
count() { grep -c "^$1 " "$WORK/outcomes"; }
echo "backend tests via atc + omrun: pass $(count pass), mismatch $(count mismatch), atc refused $(count atc_refused)," \
     "omrun refused $(count omrun_refused)"
echo "wall time: $(echo "$end - $start" | bc) s on $(nproc) cores"
