#!/usr/bin/python3
"""torch.fx's CapabilityBasedPartitioner against graphsplit's engine partitioner on the same graph.

The graph: layers of 32 nodes, each node adding two random nodes of the layer before (the first layer is Relu of
the input), every tenth node a multiplication instead; every node without a consumer is a graph output, so
nothing is dead code. torch.fx (Debian's python3-torch) is told that only add and relu are supported; graphsplit
gets the same graph as ONNX with a pipeline whose [engines.AIcoreEngine] table says exclude_ops = ["Mul"], so the
multiplications go to AI CPU. Reported: the partitioner's time and the number of partitions of supported nodes
(torch.fx's partitions; graphsplit's AI Core engine subgraphs). graphsplit's time is the engine partition entry
of atc --timing, and placement plus engine partition beside it (torch.fx asks its support check inside
propose_partitions); once with GE's merge rule (the default) and once with the engine partitioner's
merge_siblings option, which also joins same-engine clusters that read one cluster, as torch.fx does.

Needs Debian's python3-torch and python3-onnx (apt-get install python3-torch python3-onnx), a built tree.
Run: /usr/bin/python3 bench/vs_fx.py [--nodes 10000] [--build build] [--rounds 3]. Not run by CI.
"""
import argparse
import json
import operator
import os
import random
import re
import subprocess
import sys
import tempfile
import time

WIDTH = 32


def make_dag(n, seed=11):
    """(inputs, is_mul) per node; node 0..WIDTH-1 read the graph input (index -1)."""
    rng = random.Random(seed)
    nodes = []
    for k in range(n):
        layer = k // WIDTH
        if layer == 0:
            nodes.append(([-1], False))
            continue
        base = (layer - 1) * WIDTH
        nodes.append(([base + rng.randrange(WIDTH), base + rng.randrange(WIDTH)], k % 10 == 0))
    return nodes


def sinks(dag):
    used = set()
    for ins, _ in dag:
        used.update(i for i in ins if i >= 0)
    return [k for k in range(len(dag)) if k not in used]


def fx_partition(dag):
    import torch
    import torch.fx as fx
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupport

    g = fx.Graph()
    x = g.placeholder("x")
    vals = []
    for ins, mul in dag:
        if ins == [-1]:
            vals.append(g.call_function(torch.relu, (x,)))
        else:
            vals.append(g.call_function(operator.mul if mul else operator.add, (vals[ins[0]], vals[ins[1]])))
    g.output(tuple(vals[k] for k in sinks(dag)))
    gm = fx.GraphModule(torch.nn.Module(), g)

    class Support(OperatorSupport):
        def is_node_supported(self, submodules, node):
            return node.op == "call_function" and node.target in (operator.add, torch.relu)

    start = time.perf_counter()
    partitions = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True).propose_partitions()
    return time.perf_counter() - start, len(partitions)


def onnx_model(dag, path):
    import onnx
    from onnx import TensorProto, helper

    nodes = []
    for k, (ins, mul) in enumerate(dag):
        if ins == [-1]:
            nodes.append(helper.make_node("Relu", ["x"], [f"n{k}"], name=f"n{k}"))
        else:
            nodes.append(helper.make_node("Mul" if mul else "Add", [f"n{i}" for i in ins], [f"n{k}"], name=f"n{k}"))
    outputs = [helper.make_tensor_value_info(f"n{k}", TensorProto.FLOAT, [64, 64]) for k in sinks(dag)]
    graph = helper.make_graph(nodes, "layered", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                              outputs)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def graphsplit_partition(dag, build, work, siblings=False):
    model = os.path.join(work, "layered.onnx")
    onnx_model(dag, model)
    default = open(os.path.join(build, "share/graphsplit/pipeline.toml")).read()
    header = "[engines.AIcoreEngine]\n"
    assert header in default
    config = os.path.join(work, "pipeline.toml")
    with open(config, "w") as f:
        text = default.replace(header, header + 'exclude_ops = ["Mul"]\n')
        if siblings:
            entry = 'options = { modes = ["composite", "atomic"] }'
            assert entry in text
            text = text.replace(entry, 'options = { modes = ["composite", "atomic"], merge_siblings = true }')
        f.write(text)
    report = os.path.join(work, "report.json")
    out = subprocess.run([os.path.join(build, "bin/atc"), "--model=" + model, "--output=" + os.path.join(work, "m"),
                          "--pipeline=" + config, "--timing", "--log=error", "--partition_report=" + report],
                         check=True, capture_output=True, text=True).stdout
    ms = {}
    for line in out.splitlines():
        m = re.match(r"^\d+\s+(pass|partition) (\S+)\s+\S+ \S+\s+([0-9.]+)", line)
        if m:
            ms[m.group(2)] = ms.get(m.group(2), 0.0) + float(m.group(3))
    entries = json.load(open(report))["graphs"]
    aicore = sum(1 for e in entries if e.get("kind") == "engine_subgraph" and e.get("engine") == "AIcoreEngine")
    aicpu = sum(1 for e in entries if e.get("kind") == "engine_subgraph" and e.get("engine") == "DNN_VM_AICPU")
    return ms["engine"] / 1e3, (ms["engine"] + ms["placement.engine_place"]) / 1e3, aicore, aicpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    dag = make_dag(args.nodes)
    fx_times, gs_times, gs_with_placement, sib_times = [], [], [], []
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.rounds):
            t, fx_parts = fx_partition(dag)
            fx_times.append(t)
            e, ep, aicore, aicpu = graphsplit_partition(dag, args.build, work)
            gs_times.append(e)
            gs_with_placement.append(ep)
            s, _, sib_aicore, sib_aicpu = graphsplit_partition(dag, args.build, work, siblings=True)
            sib_times.append(s)
    fx_t, gs_t, gs_tp = min(fx_times), min(gs_times), min(gs_with_placement)
    print(f"graph: {args.nodes} nodes in layers of {WIDTH}, every tenth a Mul (unsupported / excluded)")
    print(f"torch.fx CapabilityBasedPartitioner: {fx_t * 1e3:10.1f} ms, {fx_parts} partitions")
    print(f"graphsplit engine partition:         {gs_t * 1e3:10.1f} ms, {aicore} AI Core subgraphs "
          f"({aicpu} AI CPU), {fx_t / gs_t:.0f}x faster")
    print(f"graphsplit placement + engine:       {gs_tp * 1e3:10.1f} ms, {fx_t / gs_tp:.0f}x faster")
    sib_t = min(sib_times)
    print(f"graphsplit engine, merge_siblings:   {sib_t * 1e3:10.1f} ms, {sib_aicore} AI Core subgraphs "
          f"({sib_aicpu} AI CPU), {fx_t / sib_t:.0f}x faster")
    print(f"(best of {args.rounds} rounds each, alternating; torch {__import__('torch').__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
