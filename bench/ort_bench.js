// Times one model in ONNX Runtime (onnxruntime-node) for bench/vs_ort.py.
// Usage: node ort_bench.js ORT_NODE_MODULES MODEL INPUTS.json THREADS RUNS
// INPUTS.json lists {name, dtype, dims, file} with raw little-endian data in `file`. One warm-up run, then RUNS
// timed runs; prints {"ms": [...]} on stdout. The session is created once, as a serving process would.
'use strict';
const fs = require('fs');
const path = require('path');

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int32: Int32Array,
  int64: BigInt64Array, bool: Uint8Array,
};

async function main() {
  const [modules, model, inputsJson, threads, runs] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const n = Number(threads);
  const session = await ort.InferenceSession.create(
      model, {intraOpNumThreads: n, interOpNumThreads: 1, executionMode: 'sequential'});
  const feeds = {};
  for (const i of JSON.parse(fs.readFileSync(inputsJson, 'utf8'))) {
    const bytes = fs.readFileSync(i.file);
    const Array = ARRAYS[i.dtype];
    const data = new Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / Array.BYTES_PER_ELEMENT);
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.dims);
  }
  await session.run(feeds);
  const ms = [];
  for (let r = 0; r < Number(runs); ++r) {
    const start = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  process.stdout.write(JSON.stringify({ms}) + '\n');
}

main().catch((e) => {
  process.stderr.write(`ort_bench: ${String(e.message || e).split('\n')[0]}\n`);
  process.exit(1);
});
