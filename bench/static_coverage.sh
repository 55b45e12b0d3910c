#!/usr/bin/env bash
# Static coverage of the real models with every input shape fixed: operators left in dynamic PartitionedCalls
# (and how many such calls), from atc's partition report. Give one or more atc binaries to compare them in
# one run (e.g. a build of an older commit next to this one):
#   bench/static_coverage.sh build/bin/atc [/path/to/old/atc ...]
set -euo pipefail
cd "$(dirname "$0")/.."
models=.cache/models
cases=(
  "ch_PP-OCRv4_rec_infer.onnx x:1,3,48,320"
  "ch_PP-OCRv4_det_infer.onnx x:1,3,640,640"
  "ch_ppocr_mobile_v2.0_cls_infer.onnx x:6,3,48,192"
  "silero_vad_legacy.onnx input:1,512;sr:;h:2,1,64;c:2,1,64"
  "silero_vad_v5.onnx input:1,512;state:2,1,128;sr:"
)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf '%-40s' "model (input shapes fixed)"; for atc in "$@"; do printf ' | %-34s' "$atc"; done; echo
for c in "${cases[@]}"; do
  model=${c%% *}; shape=${c#* }
  printf '%-40s' "$model"
  for atc in "$@"; do
    if "$atc" --model="$models/$model" --output="$tmp/m" --input_shape="$shape" --partition_report="$tmp/r.json" \
        >/dev/null 2>"$tmp/err"; then
      python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = [g for g in r["graphs"] if g["kind"] == "partitioned_call" and g["unknown_shape"]]
nodes = sum(int(g["node_count"]) for g in calls)
print(f' | {nodes:5d} nodes in {len(calls):3d} dynamic calls', end='')
PY
    else
      printf ' | %-34s' "error: $(head -c 60 "$tmp/err")"
    fi
  done
  echo
done
