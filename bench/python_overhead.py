#!/usr/bin/python3
"""Per-call overhead of graphsplit.Session.run against omrun's own timing of the same .om, and the module's
import time. Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [build-dir]"""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

BUILD = Path(sys.argv[1] if len(sys.argv) > 1 else "build")
RUNS = 20000


def one_op_model(inputs: int) -> bytes:
    ins = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [4]) for i in range(inputs)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4]) for i in range(inputs)]
    nodes = [helper.make_node("Relu", [f"x{i}"], [f"y{i}"]) for i in range(inputs)]
    g = helper.make_graph(nodes, "relu", ins, outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def import_ms() -> float:
    code = "import time; t = time.perf_counter(); import graphsplit; print((time.perf_counter() - t) * 1e3)"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    runs = [float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True).stdout) for _ in range(7)]
    return statistics.median(runs)


def omrun_median_us(om: Path) -> float:
    out = subprocess.run([str(BUILD / "bin" / "omrun"), f"--model={om}", "--random_input", f"--loop={RUNS}"],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1)) * 1e3


def main() -> None:
    sys.path.insert(0, str(BUILD / "python"))
    import graphsplit as gs
    print(f"import graphsplit: {import_ms():.1f} ms (median of 7 fresh interpreters)")
    with tempfile.TemporaryDirectory() as tmp:
        for tensors in (1, 8):
            c = gs.compile(one_op_model(tensors))
            om = Path(tmp) / f"m{tensors}.om"
            c.save(om)
            s = gs.Session(om)
            feeds = {f"x{i}": np.ones(4, np.float32) for i in range(tensors)}
            for _ in range(1000):
                s.run(feeds)
            times = []
            for _ in range(RUNS):
                t = time.perf_counter_ns()
                s.run(feeds)
                times.append(time.perf_counter_ns() - t)
            py = statistics.median(times) / 1e3
            native = omrun_median_us(om)
            print(f"{tensors} input(s) + {tensors} output(s): Session.run {py:.1f} us, omrun {native:.1f} us, "
                  f"overhead {py - native:.1f} us (target {20 + 3 * 2 * tensors} us)")


if __name__ == "__main__":
    main()
