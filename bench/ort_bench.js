// Times one model in ONNX Runtime (onnxruntime-node) for bench/vs_ort.py.
// Usage: node ort_bench.js ORT_NODE_MODULES MODEL INPUTS.json THREADS RUNS
// INPUTS.json lists {name, dtype, dims, file} with raw little-endian data in `file`. One warm-up run, then RUNS
// timed runs; prints {"ms": [...]} on stdout. The session is created once, as a serving process would.
'use strict';
const path = require('path');

const {readFeeds} = require(path.join(__dirname, '..', 'scripts', 'ort_feeds.js'));

async function main() {
  const [modules, model, inputsJson, threads, runs] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const n = Number(threads);
  const session = await ort.InferenceSession.create(
      model, {intraOpNumThreads: n, interOpNumThreads: 1, executionMode: 'sequential'});
  const feeds = readFeeds(ort, inputsJson);
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
