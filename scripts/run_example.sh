#!/usr/bin/env bash
# Sets everything up and runs atc on a real model (PP-OCRv4 text detection), printing a short summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
mkdir -p out
build/bin/atc --model=.cache/models/ch_PP-OCRv4_det_infer.onnx --output=out/ppocr_det
build/bin/atc --mode=1 --om=out/ppocr_det.om --json=out/ppocr_det.json
