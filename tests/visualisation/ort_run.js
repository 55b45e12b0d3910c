// Runs an ONNX model in ONNX Runtime (onnxruntime-node) as an independent oracle for the tests of
// tests/visualisation. Usage: node ort_run.js ORT_NODE_MODULES MODEL INPUTS.json OUT_DIR
// INPUTS.json lists {name, dtype, dims, file} with raw little-endian data in `file`; the outputs are written the
// same way to OUT_DIR/outputs.json. One thread, so that the run is reproducible.
'use strict';
const fs = require('fs');
const path = require('path');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

async function main() {
  const [modules, model, inputsJson, outDir] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1});
  const feeds = {};
  for (const i of JSON.parse(fs.readFileSync(inputsJson, 'utf8'))) {
    const bytes = fs.readFileSync(i.file);
    const Array = ARRAYS[i.dtype];
    const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.dims);
  }
  const results = await session.run(feeds);
  const manifest = [];
  session.outputNames.forEach((name, k) => {
    const t = results[name];
    const file = path.join(outDir, `output_${k}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    manifest.push({name, dtype: t.type, dims: t.dims, file});
  });
  fs.writeFileSync(path.join(outDir, 'outputs.json'), JSON.stringify(manifest));
}

main().catch((e) => {
  process.stderr.write(`ort_run: ${String(e.message || e).split('\n')[0]}\n`);
  process.exit(1);
});
