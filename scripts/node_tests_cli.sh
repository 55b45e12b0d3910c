#!/usr/bin/env bash
# The ONNX backend node tests through the command-line tools, one process each: atc compiles model.onnx with the
# default pipeline, omrun runs the .om on test_data_set_0's inputs and compares with its outputs. Prints a count
# per outcome and the wall time. (The test suite runs the same in-process: build/bin/node_tests.)
# Usage: scripts/node_tests_cli.sh [build-dir]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
DATA=/usr/share/libonnx-testdata/data/node
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
pass=0; mismatch=0; compile_error=0; run_error=0
start=$(date +%s.%N)
for dir in "$DATA"/*/; do
  name="$(basename "$dir")"
  inputs="$(ls "$dir"test_data_set_0/input_*.pb 2>/dev/null | sort -V | paste -sd, -)"
  if ! "$BUILD"/bin/atc --model="$dir"model.onnx --output="$WORK/$name" >/dev/null 2>&1; then
    compile_error=$((compile_error + 1)); continue
  fi
  "$BUILD"/bin/omrun --model="$WORK/$name.om" ${inputs:+--input="$inputs"} --compare="$dir"test_data_set_0 \
    >/dev/null 2>"$WORK/err"
  if [ $? -eq 0 ]; then pass=$((pass + 1))
  elif grep -q "omrun: mismatch" "$WORK/err"; then mismatch=$((mismatch + 1)); echo "mismatch: $name"
  else run_error=$((run_error + 1)); fi
  rm -f "$WORK/$name.om"
done
end=$(date +%s.%N)
echo "node tests via atc + omrun: pass $pass, mismatch $mismatch, atc refused $compile_error, omrun refused $run_error"
echo "wall time: $(echo "$end - $start" | bc) s"
