#!/usr/bin/env bash
# Fetches ONNX Runtime for Node.js (onnxruntime-node, CPU build, with its one runtime dependency) with `npm pack`
# at pinned versions, checks each tarball against its sha256 and unpacks them into .cache/ort/node_modules (never
# committed). The tests use it as an independent oracle for exported models (tests/visualisation); nothing of
# graphsplit links it. No install script runs: the CPU binaries ship inside the package.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/npm_pack.sh
DEST="${GRAPHSPLIT_ORT_DIR:-$PWD/.cache/ort}"
mkdir -p "$DEST/node_modules"

PACKAGES=(
  "onnxruntime-common@1.20.1 57773ec29c9087ce3441eb9cdd999dfaad3138b1f579930fc8d8198de05e7244"
  "onnxruntime-node@1.20.1 0d8e3928e14fd4e2bdcf4feabbd5db689ba980ccabb9c806f43a303cdc13c5a5"
)

for entry in "${PACKAGES[@]}"; do
  read -r spec sha <<<"$entry"
  name="${spec%@*}"
  stamp="$DEST/.$name.ok"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ]; then continue; fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tgz=$(npm_pack_checked fetch_ort "$spec" "$sha" "$tmp")
  rm -rf "${DEST:?}/node_modules/$name"
  tar -xzf "$tgz" -C "$tmp"
  mv "$tmp/package" "$DEST/node_modules/$name"
  echo "$sha" >"$stamp"
  rm -rf "$tmp"
  trap - EXIT
done
