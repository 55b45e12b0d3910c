// Reads the inputs of an ONNX Runtime (onnxruntime-node) run, for tests/visualisation/ort_run.js and
// bench/ort_bench.js: INPUTS.json lists {name, dtype, dims, file} with raw little-endian data in `file`.
'use strict';
const fs = require('fs');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

function readFeeds(ort, inputsJson) {
  const feeds = {};
  for (const i of JSON.parse(fs.readFileSync(inputsJson, 'utf8'))) {
    const bytes = fs.readFileSync(i.file);
    const Array = ARRAYS[i.dtype];
    const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.dims);
  }
  return feeds;
}

module.exports = {readFeeds};
