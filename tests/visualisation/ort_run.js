// Runs an ONNX model in ONNX Runtime (onnxruntime-node) as an independent oracle for the tests of
// tests/visualisation. Usage: node ort_run.js ORT_NODE_MODULES MODEL INPUTS.json OUT_DIR
// INPUTS.json lists {name, dtype, dims, file} with raw little-endian data in `file`; the outputs are written the
// same way to OUT_DIR/outputs.json. One thread, so that the run is reproducible.
'use strict';
const fs = require('fs');
const path = require('path');

const {readFeeds} = require(path.join(__dirname, '..', '..', 'scripts', 'ort_feeds.js'));

async function main() {
  const [modules, model, inputsJson, outDir] = process.argv.slice(2);
  const ort = require(path.join(modules, 'onnxruntime-node'));
  const session = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1});
  const feeds = readFeeds(ort, inputsJson);
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
