#!/usr/bin/python3
"""Compile times on graph shapes that have made some pass quadratic: one table, one row per shape.

Each shape was found slow once (issue 21, round 15); the script keeps them measured, so that a pass that walks
a graph per node shows up as a row that grows 100x when the size grows 10x. Shapes (N operators each):
  consts+gears   a chain of Adds, each with its own constant, compiled with two batch gears
  outputs+gears  N Relus of one input, each a graph output, with two batch gears
  inputs         a chain of Adds over N inputs of symbolic size N, the first set to -1 (also run online:
                 omrun --jit compiles and runs it in one process)
  hub            N Relus of one input, joined by one Concat
  segments       a chain of N operators on two engines in turn (Relu; Abs, excluded from AI Core): omrun's load of
                 N engine segments in one graph
  weights        (one size) 50 MatMuls over 200 MiB of float weights: atc's and omrun's peak against the
                 weights' size
  expand         the random-10%-dynamic bench model's compiled .om, run by omrun with every
                 PartitionedCall expanded (the online mode does this with an .om)
  load           (the atc_bench models, 100k and 1M nodes, when atc_bench has made them) omrun's load,
                 compile and one run of each .om atc_bench wrote: the runtime's own cost per node
Reported: wall time and peak memory of the atc (or omrun) process, and the slowest pipeline entry.
--sizes gives the sizes to run (default 10000 50000); t(big)/t(small) near the size ratio is linear.

Needs python3-onnx and python3-numpy (Debian) and a built tree. Not run by CI.
Run: /usr/bin/python3 bench/graph_shapes.py [--build build] [--sizes 10000 50000] [--only load]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def value(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def save(path, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, list(inits))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def consts_chain(path, n):
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(np.full((1, 4), i % 7, dtype=np.float32), f"c{i}"))
        nodes.append(helper.make_node("Add", [prev, f"c{i}"], [f"a{i}"], name=f"add{i}"))
        prev = f"a{i}"
    save(path, nodes, [value("x", ["N", 4])], [value(prev, ["N", 4])], inits)


def many_outputs(path, n):
    nodes = [helper.make_node("Relu", ["x"], [f"r{i}"], name=f"relu{i}") for i in range(n)]
    save(path, nodes, [value("x", ["N", 4])], [value(f"r{i}", ["N", 4]) for i in range(n)])


def many_inputs(path, n):
    nodes, prev = [], "i0"
    for i in range(1, n):
        nodes.append(helper.make_node("Add", [prev, f"i{i}"], [f"s{i}"], name=f"add{i}"))
        prev = f"s{i}"
    save(path, nodes, [value(f"i{i}", ["N", 4]) for i in range(n)], [value(prev, ["N", 4])])


def alternating(path, n):
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Relu" if i % 2 == 0 else "Abs", [prev], [f"v{i}"], name=f"n{i}"))
        prev = f"v{i}"
    save(path, nodes, [value("x", [4])], [value(prev, [4])])


def hub(path, n):
    nodes = [helper.make_node("Relu", ["x"], [f"r{i}"], name=f"relu{i}") for i in range(n)]
    nodes.append(helper.make_node("Concat", [f"r{i}" for i in range(n)], ["y"], name="cat", axis=1))
    save(path, nodes, [value("x", ["N", 4])], [value("y", ["N", 4 * n])])


def weights(path, n):
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        inits.append(numpy_helper.from_array(rng.standard_normal((1024, 1024), dtype=np.float32) * 0.03, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}"))
        prev = f"r{i}"
    save(path, nodes, [value("x", ["N", 1024])], [value(prev, ["N", 1024])], inits)


def measure(cmd):
    """Wall seconds, peak MiB, the slowest timing-table entry, and whether the command succeeded."""
    out = subprocess.run(["/usr/bin/time", "-f", "@@ %e %M"] + cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    wall, peak = re.findall(r"@@ ([\d.]+) (\d+)", text)[-1]
    entries = re.findall(r"^\s*\d+\s+(?:pass|partition)\s+(\S+)\s+\S+\s+\S+\s+([\d.]+)", text, re.M)
    slow = max(entries, key=lambda e: float(e[1]), default=("-", "0"))
    return float(wall), int(peak) / 1024, f"{slow[0]} {float(slow[1]):.0f} ms", out.returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 50000])
    parser.add_argument("--bench_dir", default="/tmp/graphsplit_atc_bench",
                        help="where atc_bench left its models and .om files (for the expand and load rows)")
    parser.add_argument("--only", choices=["load"], help="run only these rows")
    args = parser.parse_args()
    if args.only == "load":
        print(f"{'shape':<14} {'N':>7} {'wall s':>8} {'peak MiB':>9}  per node")
        with tempfile.TemporaryDirectory() as tmp:
            return load_rows(os.path.join(args.build, "bin", "omrun"), args.bench_dir, tmp)
    atc = os.path.join(args.build, "bin", "atc")
    omrun = os.path.join(args.build, "bin", "omrun")
    gears = ["--input_shape=x:-1,4", "--dynamic_batch_size=1,2"]
    shapes = [
        ("consts+gears", consts_chain, gears),
        ("outputs+gears", many_outputs, gears),
        ("inputs", many_inputs, ["--input_shape=i0:-1,4"]),
        ("hub", hub, []),
    ]
    failed = False
    print(f"{'shape':<14} {'N':>7} {'wall s':>8} {'peak MiB':>9}  slowest entry")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, options in shapes:
            for n in args.sizes:
                model = os.path.join(tmp, f"{name}_{n}.onnx".replace("+", "_"))
                make(model, n)
                wall, peak, slow, ok = measure([atc, f"--model={model}", f"--output={model[:-5]}", "--timing"]
                                               + options)
                failed |= not ok
                print(f"{name:<14} {n:>7} {wall:>8.2f} {peak:>9.0f}  {slow}{'' if ok else '  FAILED'}")
        # The online mode compiles and runs in one process: its own per-input work shows here.
        for n in args.sizes:
            model = os.path.join(tmp, f"online_{n}.onnx")
            many_inputs(model, n)
            wall, peak, _, ok = measure([omrun, f"--model={model}", "--jit", "--random_input",
                                         "--input_shape=i0:-1,4"])
            failed |= not ok
            print(f"{'inputs online':<14} {n:>7} {wall:>8.2f} {peak:>9.0f}  (omrun --jit){'' if ok else '  FAILED'}")
        # One graph cut into N engine segments: planning each must not walk the whole graph.
        with open(os.path.join(args.build, "share", "graphsplit", "pipeline.toml")) as f:
            text = f.read()
        header = "[engines.AIcoreEngine]\n"
        assert header in text, "the default pipeline has no [engines.AIcoreEngine] table"
        text = text.replace(header, header + 'exclude_ops = ["Abs"]\n')
        config = os.path.join(tmp, "two_engines.toml")
        with open(config, "w") as f:
            f.write(text)
        for n in args.sizes:
            model = os.path.join(tmp, f"segments_{n}.onnx")
            alternating(model, n)
            subprocess.run([atc, f"--model={model}", f"--output={model[:-5]}", f"--pipeline={config}"], check=True,
                           capture_output=True)
            wall, peak, _, ok = measure([omrun, f"--model={model[:-5]}.om", "--random_input", f"--pipeline={config}"])
            failed |= not ok
            print(f"{'segments':<14} {n:>7} {wall:>8.2f} {peak:>9.0f}  (omrun load and run){'' if ok else '  FAILED'}")
        # Weights, not nodes: 50 MatMuls with 4 MiB of float weights each (200 MiB). Peaks are compared with
        # the weights' size: each copy of them kept at once adds 1.0 to the ratio.
        model = os.path.join(tmp, "weights.onnx")
        weights(model, 50)
        mib = 50 * 4.0
        for label, cmd in (("weights atc", [atc, f"--model={model}", f"--output={model[:-5]}",
                                            "--input_shape=x:4,1024"]),
                           ("weights omrun", [omrun, f"--model={model[:-5]}.om", "--random_input"])):
            wall, peak, _, ok = measure(cmd)
            failed |= not ok
            print(f"{label:<14} {50:>7} {wall:>8.2f} {peak:>9.0f}  {peak / mib:.2f}x the weights"
                  f"{'' if ok else '  FAILED'}")
        source = os.path.join(args.bench_dir, "random10pct_100000.onnx")
        if os.path.exists(source):
            om = os.path.join(tmp, "random")
            subprocess.run([atc, f"--model={source}", f"--output={om}"], check=True, capture_output=True)
            for flags in ([], ["--expand_partitioned_calls"]):
                # The model's Reshapes need real shape values, so the run itself fails after the load and the
                # expansion: the time up to there is what is measured.
                wall, peak, _, _ = measure([omrun, f"--model={om}.om", "--random_input"] + flags)
                label = "expand" if flags else "no expand"
                print(f"{label:<14} {100000:>7} {wall:>8.2f} {peak:>9.0f}  (omrun load of random10pct)")
        else:
            print(f"(no {source}: run atc_bench once to make the bench models, for the expand rows)")
        failed |= load_rows(omrun, args.bench_dir, tmp) != 0
    return 1 if failed else 0


def load_rows(omrun, bench_dir, tmp):
    """omrun on the .om files atc_bench wrote: the load (the .om read, planning, every segment compiled) and
    one run, with the inputs the bench models' Reshapes need (n0 float32[64,64], dims = [64, 64])."""
    x, dims = os.path.join(tmp, "n0.pb"), os.path.join(tmp, "dims.pb")
    with open(x, "wb") as f:
        f.write(numpy_helper.from_array(np.random.default_rng(0).random((64, 64), np.float32), "n0").SerializeToString())
    with open(dims, "wb") as f:
        f.write(numpy_helper.from_array(np.array([64, 64], np.int64), "dims").SerializeToString())
    failed, found = False, False
    for shape in ("chain", "layered", "random10pct", "transformer"):
        for n in (100000, 1000000):
            om = os.path.join(bench_dir, f"{shape}_{n}.om")
            if not os.path.exists(om):
                continue
            found = True
            wall, peak, _, ok = measure([omrun, f"--model={om}", f"--input={x},{dims}"])
            failed |= not ok
            label = "load " + shape[:9]
            print(f"{label:<14} {n:>7} {wall:>8.2f} {peak:>9.0f}  {peak * 1024 * 1024 / n:.0f} bytes"
                  f"{'' if ok else '  FAILED'}")
    if not found:
        print(f"(no .om in {bench_dir}: run atc_bench once, for the load rows)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
