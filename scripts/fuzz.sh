#!/bin/bash
# Long fuzzing runs with libFuzzer (clang), ASan and UBSan, in build-fuzz/. Seeds come from the smoke corpus of the
# normal build (run scripts/test.sh once first). Usage:
#   bash scripts/fuzz.sh [seconds per target, default 300] [targets...]
# Findings land in build-fuzz/findings/<target>/ (crash-*, timeout-*, oom-*); the executions each target survived
# are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET="${1:-300}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(onnx_import om_load pipeline_toml op_table_toml gear_options tensor_pb om_run)
CORPUS=build/tests/fuzz/corpus
[ -d "$CORPUS" ] || { echo "fuzz.sh: no seed corpus in $CORPUS; run scripts/test.sh first" >&2; exit 2; }
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DGRAPHSPLIT_FUZZ=ON -DGRAPHSPLIT_SANITIZE=ON -DGRAPHSPLIT_BUILD_BENCH=OFF >/dev/null
ninja -C build-fuzz $(printf 'fuzz_%s ' "${TARGETS[@]}")
# The shared ASan runtime that clang links the libraries against.
export LD_LIBRARY_PATH="$(dirname "$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for t in "${TARGETS[@]}"; do
  mkdir -p "build-fuzz/findings/$t" "build-fuzz/corpus/$t"
  cp -n "$CORPUS/$t"/* "build-fuzz/corpus/$t/" 2>/dev/null || true
  echo "== $t: ${SECONDS_PER_TARGET} s"
  LD_PRELOAD="$(clang++ -print-file-name=libclang_rt.asan-x86_64.so)" ASAN_OPTIONS=detect_leaks=0 build-fuzz/bin/fuzz_"$t" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=4096 \
    -timeout=20 -artifact_prefix="build-fuzz/findings/$t/" "build-fuzz/corpus/$t" 2>&1 | tee "build-fuzz/$t.log" |
    grep -E "^Done [0-9]+ runs|ERROR|SUMMARY" || true
done
# libFuzzer ends a clean run with "Done N runs in S second(s)"; a run that found something ends without it.
echo "== summary"
for t in "${TARGETS[@]}"; do
  done_line=$(grep -E "^Done [0-9]+ runs" "build-fuzz/$t.log" | tail -1 || true)
  findings=$(find "build-fuzz/findings/$t" -type f | wc -l)
  printf '%-16s %s; %d finding(s) in build-fuzz/findings/%s\n' "$t" "${done_line:-stopped early (see build-fuzz/$t.log)}" \
    "$findings" "$t"
done
