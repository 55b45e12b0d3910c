#!/usr/bin/env bash
# Sets everything up and runs atc on a real model (PP-OCRv4 text detection), printing a short summary, then runs
# the compiled model with omrun, and the .onnx online (omrun --jit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
mkdir -p out
build/bin/atc --model=.cache/models/ch_PP-OCRv4_det_infer.onnx --output=out/ppocr_det
build/bin/atc --mode=1 --om=out/ppocr_det.om --json=out/ppocr_det.json
# The same model with its input shape fixed, run by omrun on the engines (random input, three runs timed).
build/bin/atc --model=.cache/models/ch_PP-OCRv4_det_infer.onnx --output=out/ppocr_det_640 --input_shape=x:1,3,640,640
build/bin/omrun --model=out/ppocr_det_640.om --random_input --output=out/ppocr_det_640_outputs --loop=3
# The same .onnx online (omrun --jit): compiled slice by slice as its shapes become known, the same random input,
# outputs compared exactly with the offline run's.
build/bin/omrun --jit --model=.cache/models/ch_PP-OCRv4_det_infer.onnx --input_shape=x:1,3,640,640 --random_input \
  --loop=3 --compare=out/ppocr_det_640_outputs --rtol=0 --atol=0 --jit_report=out/ppocr_det_jit.json
