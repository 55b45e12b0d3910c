#!/usr/bin/python3
"""omrun against ONNX Runtime on the same models and inputs, side by side in one run.

Each model is compiled by atc (default pipeline, input shapes fixed), then run by omrun (the graphsplit runtime
on the engine plugins) and by onnxruntime-node 1.20.1 on the same random inputs, alternating in rounds; each
round times RUNS runs of each after a warm-up, and the figure per model is the median over rounds of each
round's median. Prints one row per model with both medians and the ratio, and the geometric mean of the ratios,
for each thread count asked for.

Models: the pinned real models of the test set (scripts/fetch_models.sh) and three generated here: a ResNet-18 at
batch 4, 224x224 and a 4-layer transformer encoder (width 256, 128 tokens), both with random weights, and a chain
of 1,000 Relu on 8 values that measures per-operator dispatch, and two independent recurrences (an LSTM and a
Loop) timed with omrun's --concurrent=never and =always (these two not in the geometric mean).
Outside CI: installs ONNX Runtime itself (scripts/fetch_ort.sh). Usage:
  bench/vs_ort.py [--threads 1,2] [--rounds 5] [--runs 10] [--models det,rec,...] [--build build]
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, ".cache", "models")

# name -> (file, {input: shape}, {input: fixed value}); shapes fix every symbolic dimension.
REAL = {
    "ppocr_det": ("ch_PP-OCRv4_det_infer.onnx", {"x": [1, 3, 640, 640]}, {}),
    "ppocr_rec": ("ch_PP-OCRv4_rec_infer.onnx", {"x": [1, 3, 48, 320]}, {}),
    "ppocr_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": [1, 3, 48, 192]}, {}),
    "silero_v5": ("silero_vad_v5.onnx", {"input": [1, 512], "state": [2, 1, 128], "sr": []},
                  {"sr": np.array(16000, np.int64)}),
    "silero_legacy": ("silero_vad_legacy.onnx", {"input": [1, 512], "h": [2, 1, 64], "c": [2, 1, 64], "sr": []},
                      {"sr": np.array(16000, np.int64)}),
}


class Builder:
    def __init__(self, seed):
        self.nodes, self.inits, self.count = [], [], 0
        self.rng = np.random.default_rng(seed)

    def name(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def weight(self, shape, scale=None):
        n = self.name("w")
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else math.sqrt(2.0 / fan_in)
        self.inits.append(numpy_helper.from_array((self.rng.standard_normal(shape) * scale).astype(np.float32), n))
        return n

    def const_i64(self, values, dims=None):
        n = self.name("c")
        v = np.array(values, np.int64)
        self.inits.append(numpy_helper.from_array(v.reshape(dims if dims is not None else v.shape), n))
        return n

    def const_f32(self, value):
        n = self.name("c")
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), n))
        return n

    def node(self, op, inputs, **attrs):
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def model(self, name, inputs, output, opset=17):
        graph = helper.make_graph(self.nodes, name, inputs,
                                  [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def resnet18():
    b = Builder(18)

    def conv_bn(x, cin, cout, k, stride, relu):
        y = b.node("Conv", [x, b.weight([cout, cin, k, k]), b.weight([cout], 0.1)], kernel_shape=[k, k],
                   strides=[stride, stride], pads=[k // 2] * 4)
        y = b.node("BatchNormalization", [y, b.weight([cout], 0.1), b.weight([cout], 0.1), b.weight([cout], 0.1),
                                          b.weight([cout], 0.0)], epsilon=1e-5)
        return b.node("Relu", [y]) if relu else y

    x = conv_bn("x", 3, 64, 7, 2, True)
    x = b.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage in range(4):
        out = 64 << stage
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            y = conv_bn(conv_bn(x, channels, out, 3, stride, True), out, out, 3, 1, False)
            skip = x if stride == 1 and channels == out else conv_bn(x, channels, out, 1, stride, False)
            x = b.node("Relu", [b.node("Add", [y, skip])])
            channels = out
    x = b.node("Flatten", [b.node("GlobalAveragePool", [x])])
    x = b.node("Gemm", [x, b.weight([1000, 512]), b.weight([1000], 0.1)], transB=1)
    m = b.model("resnet18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 224, 224])], x)
    # BatchNormalization's variance must be positive.
    for node in m.graph.node:
        if node.op_type == "BatchNormalization":
            var = next(i for i in m.graph.initializer if i.name == node.input[4])
            var.CopyFrom(numpy_helper.from_array(np.abs(numpy_helper.to_array(var)) + 1.0, var.name))
    return m, {"x": [4, 3, 224, 224]}, {}


def encoder():
    b = Builder(4)
    width, heads, tokens = 256, 4, 128
    head = width // heads
    shape_split = b.name("shape")
    b.inits.append(numpy_helper.from_array(np.array([1, tokens, heads, head], np.int64), shape_split))
    shape_merge = b.name("shape")
    b.inits.append(numpy_helper.from_array(np.array([1, tokens, width], np.int64), shape_merge))
    scale = b.name("scale")
    b.inits.append(numpy_helper.from_array(np.array(1 / math.sqrt(head), np.float32), scale))

    def linear(x, cin, cout):
        return b.node("Add", [b.node("MatMul", [x, b.weight([cin, cout])]), b.weight([cout], 0.02)])

    def norm(x):
        return b.node("LayerNormalization", [x, b.weight([width], 0.1), b.weight([width], 0.1)], axis=-1)

    def split(x, perm):
        return b.node("Transpose", [b.node("Reshape", [x, shape_split])], perm=perm)

    x = "x"
    for _ in range(4):
        q = split(linear(x, width, width), [0, 2, 1, 3])
        k = split(linear(x, width, width), [0, 2, 3, 1])
        v = split(linear(x, width, width), [0, 2, 1, 3])
        att = b.node("Softmax", [b.node("Mul", [b.node("MatMul", [q, k]), scale])], axis=-1)
        ctx = b.node("Reshape", [b.node("Transpose", [b.node("MatMul", [att, v])], perm=[0, 2, 1, 3]), shape_merge])
        x = norm(b.node("Add", [x, linear(ctx, width, width)]))
        ff = linear(b.node("Relu", [linear(x, width, 4 * width)]), 4 * width, width)
        x = norm(b.node("Add", [x, ff]))
    m = b.model("encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, tokens, width])], x)
    return m, {"x": [1, tokens, width]}, {}


def relu_chain():
    """1,000 Relu on 8 floats: nothing but per-operator dispatch."""
    b = Builder(1)
    x = "x"
    for _ in range(1000):
        x = b.node("Relu", [x])
    m = b.model("relu_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])], x)
    return m, {"x": [1, 8]}, {}


def two_branches():
    """Two independent recurrences over 64 steps: an LSTM (an engine segment) and the same kind of cell written
    as a Loop, as exporters of scripted models write it (a control-flow step): they may run at once
    (--concurrent)."""
    b = Builder(2)
    seq, width, hidden = 64, 64, 256

    def weight(shape):
        n = b.name("w")
        b.inits.append(numpy_helper.from_array((b.rng.standard_normal(shape) * 0.05).astype(np.float32), n))
        return n

    lstm = b.name("lstm")
    b.nodes.append(helper.make_node("LSTM", ["x", weight((1, 4 * hidden, width)), weight((1, 4 * hidden, hidden))],
                                    ["", lstm], name=lstm, hidden_size=hidden))
    last = b.node("Reshape", [lstm, b.const_i64([1, hidden])])
    w, r = weight((width, hidden)), weight((hidden, hidden))
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["xt"], axis=0),
         helper.make_node("MatMul", ["xt", w], ["a"]), helper.make_node("MatMul", ["h", r], ["c"]),
         helper.make_node("Add", ["a", "c"], ["s"]), helper.make_node("Tanh", ["s"], ["h_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        "cell",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, hidden])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, hidden])])
    loop = b.name("loop")
    b.nodes.append(helper.make_node("Loop", [b.const_i64(seq, []), "", b.const_f32(np.zeros((1, hidden)))],
                                    [loop], name=loop, body=body))
    out = b.node("Add", [last, loop])
    m = b.model("two_branches", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, 1, width])], out)
    return m, {"x": [seq, 1, width]}, {}


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"vs_ort: {' '.join(cmd[:2])} failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]}")
    return p.stdout


def write_inputs(model, shapes, fixed, folder, seed):
    rng = np.random.default_rng(seed)
    init_names = {i.name for i in model.graph.initializer}
    pbs, manifest = [], []
    for i, vi in enumerate(x for x in model.graph.input if x.name not in init_names):
        elem = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[vi.type.tensor_type.elem_type]
        value = fixed.get(vi.name)
        if value is None:
            value = rng.uniform(-1, 1, shapes[vi.name]).astype(elem)
        pb = os.path.join(folder, f"input_{i}.pb")
        with open(pb, "wb") as f:
            f.write(numpy_helper.from_array(value, vi.name).SerializeToString())
        raw = os.path.join(folder, f"input_{i}.bin")
        value.tofile(raw)
        pbs.append(pb)
        manifest.append({"name": vi.name, "dtype": str(value.dtype), "dims": list(value.shape), "file": raw})
    with open(os.path.join(folder, "inputs.json"), "w") as f:
        json.dump(manifest, f)
    return pbs


# The Relu chain measures per-operator dispatch: the runtime would otherwise fuse it into one step.
DISPATCH = "relu_chain_1000"
DISPATCH_ENV = dict(os.environ, GRAPHSPLIT_FUSE_ELEMENTWISE="0")


# Measured with its independent segments one after another and at once; neither is in the geometric mean (the
# model was made for the comparison).
CONCURRENT = "two_branches"


def time_omrun(build, om, pbs, threads, runs, env=None, extra=()):
    # One untimed run first, as ort_bench.js does.
    out = run([os.path.join(build, "bin", "omrun"), f"--model={om}", f"--input={','.join(pbs)}", "--warmup=1",
               f"--loop={runs}", f"--threads={threads}", "--log=error", *extra], env=env)
    m = re.search(r"median ([0-9.]+) ms", out)
    if not m:
        sys.exit(f"vs_ort: no median in omrun's output for {om}")
    return float(m.group(1))


def time_ort(modules, onnx_file, folder, threads, runs):
    out = run(["node", os.path.join(ROOT, "bench", "ort_bench.js"), modules, onnx_file,
               os.path.join(folder, "inputs.json"), str(threads), str(runs)])
    return statistics.median(json.loads(out)["ms"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--models", default="")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = ap.parse_args()
    subprocess.run([os.path.join(ROOT, "scripts", "fetch_models.sh")], check=True)
    subprocess.run([os.path.join(ROOT, "scripts", "fetch_ort.sh")], check=True, stdout=subprocess.DEVNULL)
    modules = os.path.join(ROOT, ".cache", "ort", "node_modules")
    work = tempfile.mkdtemp(prefix="vs_ort_")
    cases = {}
    for name, (file, shapes, fixed) in REAL.items():
        cases[name] = (os.path.join(MODELS, file), shapes, fixed)
    for name, make in (("resnet18_b4", resnet18), ("encoder_4x256", encoder), ("relu_chain_1000", relu_chain),
                       (CONCURRENT, two_branches)):
        model, shapes, fixed = make()
        path = os.path.join(work, name + ".onnx")
        onnx.save(model, path)
        cases[name] = (path, shapes, fixed)
    wanted = [m for m in args.models.split(",") if m] or list(cases)
    prepared = []
    for name in wanted:
        onnx_file, shapes, fixed = cases[name]
        folder = os.path.join(work, name)
        os.makedirs(folder)
        model = onnx.load(onnx_file)
        pbs = write_inputs(model, shapes, fixed, folder, 7)
        spec = ";".join(f"{k}:{','.join(map(str, v))}" for k, v in shapes.items() if v)
        om = os.path.join(folder, "model")
        run([os.path.join(args.build, "bin", "atc"), f"--model={onnx_file}", f"--output={om}",
             f"--input_shape={spec}", "--log=error"])
        prepared.append((name, onnx_file, om + ".om", pbs, folder))
    print(f"machine: {os.cpu_count()} CPUs, {platform_line()}")
    for threads in [int(t) for t in args.threads.split(",")]:
        print(f"\nthreads = {threads}; median of {args.rounds} rounds x {args.runs} runs, ms")
        print(f"{'model':<22}{'omrun':>10}{'ORT':>10}{'omrun/ORT':>11}")
        ratios = []
        for name, onnx_file, om, pbs, folder in prepared:
            ways = [("", ())]
            if name == CONCURRENT:
                ways = [(" seq", ("--concurrent=never",)), (" at once", ("--concurrent=always",))]
            ours, theirs = {w: [] for w, _ in ways}, []
            for _ in range(args.rounds):
                env = DISPATCH_ENV if name == DISPATCH else None
                for way, extra in ways:
                    ours[way].append(time_omrun(args.build, om, pbs, threads, args.runs, env, extra))
                theirs.append(time_ort(modules, onnx_file, folder, threads, args.runs))
            b = statistics.median(theirs)
            for way, _ in ways:
                a = statistics.median(ours[way])
                if name not in (DISPATCH, CONCURRENT):
                    ratios.append(a / b)
                print(f"{name + way:<22}{a:>10.3f}{b:>10.3f}{a / b:>11.2f}", flush=True)
        if ratios:
            geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            print(f"{'geometric mean':<42}{geo:>11.2f}")


def platform_line():
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        model = "unknown CPU"
    return f"{model}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}"


if __name__ == "__main__":
    main()
