#!/usr/bin/env bash
# The ABI baselines of the libraries out-of-tree plugins link (libgraphsplit_sdk, libgraphsplit_kernels), kept in
# sdk/abi/ with the ABI version each describes. The abidw XML is stored gzip-compressed (-n: no name or time, so
# the same ABI gives the same bytes): it is mostly the standard library's types, 2-4 MB as text.
#   tests/abi/abi.sh check  <source dir> <build dir>   fails when a library's ABI differs from its baseline
#   tests/abi/abi.sh update <source dir> <build dir>   rewrites the baselines (after a deliberate ABI change)
# A change needs a version bump (GS_SDK_ABI_MINOR/MAJOR in sdk/cmake/version.h.in; the version node in
# sdk/kernels/cmake/kernels.map) and then `update`; check tells which of the two is missing. Needs DWARF: builds
# without debug information (Release), builds of another type than the baselines' and non-GCC builds skip
# with exit code 77.
set -euo pipefail
MODE="$1"; SRC="$2"; BUILD="$3"
command -v abidw >/dev/null || { echo "abi: abidw is not installed (abigail-tools; scripts/setup.sh installs it)"; exit 1; }

sdk_version() { sed -n 's/^#define GS_SDK_ABI_\(MAJOR\|MINOR\) //p' "$BUILD/sdk/include/graphsplit/sdk/version.h" | paste -sd.; }
kernels_version() { sed -n 's/^GRAPHSPLIT_KERNELS_\([0-9.]*\) {.*/\1/p' "$SRC/sdk/kernels/cmake/kernels.map" | tail -1; }

dump() {  # <library> <headers dirs...>
  local lib="$1"; shift
  local args=()
  for h in "$@"; do args+=(--headers-dir "$h"); done
  abidw --no-corpus-path --no-show-locs --drop-private-types --drop-undefined-syms --type-id-style hash "${args[@]}" "$lib"
}

# The baselines come from the default RelWithDebInfo build: other build types inline differently and so export
# other instantiations of standard templates (a Debug build exports std::deque<DimExpr::Node>::emplace_back).
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
if [ "$build_type" != RelWithDebInfo ]; then
  echo "abi: the baselines describe RelWithDebInfo builds; $BUILD is a '$build_type' build"; exit 77
fi

status=0
current=$(mktemp); expected=$(mktemp); trap 'rm -f "$current" "$expected"' EXIT
for name in sdk kernels; do
  case $name in
    sdk) lib=$(ls "$BUILD"/sdk/libgraphsplit_sdk.so.*.*.* | head -1); version=$(sdk_version)
         headers=("$SRC/sdk/include" "$BUILD/sdk/include") ;;
    kernels) lib=$(ls "$BUILD"/sdk/kernels/libgraphsplit_kernels.so.*.*.* | head -1); version=$(kernels_version)
         headers=("$SRC/sdk/kernels/include" "$SRC/sdk/include" "$BUILD/sdk/include") ;;
  esac
  if ! readelf -S "$lib" | grep -q '\.debug_info'; then
    echo "abi: $lib has no debug information (build with RelWithDebInfo or Debug to check the ABI)"; exit 77
  fi
  baseline="$SRC/sdk/abi/libgraphsplit_$name.abi.gz"
  recorded="$SRC/sdk/abi/libgraphsplit_$name.version"
  if [ "$MODE" = update ]; then
    dump "$lib" "${headers[@]}" | gzip -9n > "$baseline"
    echo "$version" > "$recorded"
    echo "abi: wrote $baseline (ABI $version)"
    continue
  fi
  dump "$lib" "${headers[@]}" > "$current"
  gzip -dc "$baseline" > "$expected"
  set +e; report=$(abidiff "$expected" "$current" 2>&1); rc=$?; set -e
  base_version=$(cat "$recorded")
  if [ $rc -ne 0 ] && [ "$base_version" = "$version" ]; then
    echo "abi: libgraphsplit_$name changed its ABI without a version bump (still $version):"
    echo "$report"; status=1
  elif [ "$base_version" != "$version" ]; then
    echo "abi: libgraphsplit_$name is ABI $version but its baseline is for $base_version; run" \
         "tests/abi/abi.sh update <source> <build> and commit sdk/abi/"; status=1
  else
    echo "abi: libgraphsplit_$name matches its ABI $version baseline"
  fi
done
exit $status
