#!/usr/bin/python3
"""Prints the op-table sections of docs/engines.md from the engines' data/ops.toml files (Python 3.11 tomllib).
Usage: scripts/gen_engine_docs.py > /tmp/tables.md, then paste over the generated part of docs/engines.md."""
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINES = [("ai_core", "AIcoreEngine"), ("dvpp", "DNN_VM_DVPP"), ("host_cpu", "DNN_VM_HOST_CPU"), ("ai_cpu", "DNN_VM_AICPU")]

def types(row):
    parts = []
    if row.get("dtypes"): parts.append(", ".join(row["dtypes"]))
    if row.get("input_dtypes"): parts.append("in: " + ", ".join(row["input_dtypes"]))
    if row.get("output_dtypes"): parts.append("out: " + ", ".join(row["output_dtypes"]))
    return "; ".join(parts) or "any"

for plugin, engine in ENGINES:
    data = tomllib.loads((ROOT / "plugins/engines" / plugin / "data/ops.toml").read_text())
    rows = data["op"]
    print(f"### {engine} (`plugins/engines/{plugin}/data/ops.toml`, kernel lib `{data.get('kernel_lib', engine)}`, {len(rows)} op types)\n")
    if plugin == "ai_cpu":
        print("Every ONNX operator up to opset 17, every ai.onnx.ml operator and every ai.onnx.preview.training operator, with no dtype limit, dynamic shapes, no "
              "tiling, cost 100:\n")
        print(", ".join(r["type"] for r in rows) + "\n")
        continue
    print("| Op | Data types | Dynamic shape | Tiling | Engine check | Cost |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        opset = f" ({r['opset'][0]}-{r['opset'][1]})" if "opset" in r else ""
        print(f"| {r['type']}{opset} | {types(r)} | {r.get('dynamic_shape', 'none')} | {'yes' if r.get('tiling') else 'no'} "
              f"| {'yes' if r.get('shape_dependent') else 'no'} | {r.get('cost', 0)} |")
    print()
