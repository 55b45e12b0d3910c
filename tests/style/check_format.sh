#!/usr/bin/env bash
# Fails when a C++ source under version control differs from what clang-format (the repository's .clang-format)
# would write, and names each such file.
# Usage: check_format.sh <source dir> [build dir]; files under the build dir (generated code) are never checked.
set -euo pipefail
cd "$1"
BUILD_REL=""
if [ $# -ge 2 ]; then
  BUILD_REL=$(realpath -m --relative-to="$PWD" "$2")
  case "$BUILD_REL" in ..*) BUILD_REL="" ;; esac
fi
command -v clang-format >/dev/null || { echo "check_format: clang-format is not installed (scripts/setup.sh installs it)"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.h' '*.cc' |
                       { if [ -n "$BUILD_REL" ]; then grep -v "^$BUILD_REL/" || true; else cat; fi; })
else
  mapfile -t files < <(find . \( -path ./build -o -path "./$BUILD_REL" -o -name CMakeFiles \) -prune -o \
                       \( -name '*.cpp' -o -name '*.h' -o -name '*.cc' \) -print)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  printf 'check_format: %d file(s) differ from clang-format; run clang-format -i on:\n' "${#bad[@]}"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
