#!/usr/bin/python3
"""Regenerates the pictures of docs/visualisation.md from a real model (silero VAD legacy, with its If branches):
the HTML partition report as Chromium shows it, an omrun --profile trace as a timeline, and the exported ONNX
model's functions as Graphviz draws them (for PP-OCRv4 rec with its dynamic input: fewer functions). Needs a build (build/), the fetched models, graphviz and chromium.

Usage: /usr/bin/python3 scripts/doc_pictures.py [build-dir]
"""
import html
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
MODEL = ROOT / ".cache" / "models" / "silero_vad_legacy.onnx"
REC = ROOT / ".cache" / "models" / "ch_PP-OCRv4_rec_infer.onnx"  # fewer functions: a readable picture
OUT = ROOT / "docs" / "images"
ENGINE_COLOURS = ["#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3", "#b3de69"]


def sh(*cmd):
    subprocess.run([str(c) for c in cmd], check=True, capture_output=True)


def screenshot(page: Path, png: Path, width=1400, height=900):
    sh("chromium", "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
       f"--window-size={width},{height}", f"--screenshot={png}", f"file://{page}")


def functions_dot(model: onnx.ModelProto) -> str:
    """The call structure: each function a box coloured by engine (segments) or outlined (PartitionedCalls)."""
    meta = {e["function"]: e for e in json.loads(
        {p.key: p.value for p in model.metadata_props}["graphsplit.partition"])["functions"]}
    engines = sorted({e.get("engine", "") for e in meta.values() if e["kind"] == "engine_segment"})
    colour = {e: ENGINE_COLOURS[i % len(ENGINE_COLOURS)] for i, e in enumerate(engines)}
    lines = ["digraph functions {", "  rankdir=LR; node [shape=box, style=filled, fontname=Helvetica, fontsize=10];"]

    def calls(nodes):
        for n in nodes:
            if n.domain == "graphsplit" and n.op_type in meta:
                yield n.op_type
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    yield from calls(a.g.node)

    for f in model.functions:
        e = meta[f.name]
        if e["kind"] == "engine_segment":
            label = f"{f.name}\\n{e['engine']}: {e['nodes']} nodes, {'static' if e['static'] else 'dynamic'}"
            lines.append(f'  "{f.name}" [label="{label}", fillcolor="{colour[e["engine"]]}"];')
        else:
            dyn = e["unknown_shape"]
            label = f"{f.name}\\n{e['kind']}, {'dynamic' if dyn else 'static'}\\n{', '.join(e['reasons'])}"
            lines.append(f'  "{f.name}" [label="{label}", fillcolor=white, penwidth=2, '
                         f'color="{"#d62728" if dyn else "#1f77b4"}"];')
        for callee in sorted(set(calls(f.node))):
            lines.append(f'  "{f.name}" -> "{callee}";')
    lines.append('  "main graph" [shape=ellipse, fillcolor="#eeeeee"];')
    for callee in sorted(set(calls(model.graph.node))):
        lines.append(f'  "main graph" -> "{callee}";')
    return "\n".join(lines) + "\n}\n"


def timeline_page(trace: dict) -> str:
    """A minimal timeline of a Chrome trace: one row per depth, one rectangle per event."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    end = max(e["ts"] + e["dur"] for e in events)
    scale = 1300 / end
    colours = {"run": "#bbbbbb", "segment": "#80b1d3", "control": "#fdb462", "kernel": "#b3de69"}
    rects = []
    for e in events:
        depth = e["args"].get("depth", -1)
        y = 30 + 40 * (depth + 1)
        x, w = 10 + e["ts"] * scale, max(e["dur"] * scale, 0.5)
        rects.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="32" fill="{colours[e["cat"]]}" '
                     f'stroke="#555" stroke-width="0.3"><title>{html.escape(e["name"])}</title></rect>')
        if w > 60:
            rects.append(f'<text x="{x + 3:.1f}" y="{y + 20}" font-size="11">{html.escape(e["name"][:int(w // 7)])}'
                         "</text>")
    legend = " ".join(f'<span style="background:{c};padding:2px 6px">{k}</span>' for k, c in colours.items())
    return (f"<html><body style='font-family:Helvetica'><h3>omrun --profile: silero VAD, 3 runs "
            f"({end / 1000:.2f} ms)</h3><p>{legend} (rows: run, depth 0, 1, 2, ...)</p>"
            f"<svg width='1330' height='420'>{''.join(rects)}</svg></body></html>")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        sh(BUILD / "bin" / "atc", "--log=error", f"--model={MODEL}", f"--output={t / 'm'}",
           f"--partition_report={t / 'report.html'}", f"--export_onnx={t / 'm.part.onnx'}")
        screenshot(t / "report.html", OUT / "partition_report.png", height=1100)
        sh(BUILD / "bin" / "atc", "--log=error", f"--model={REC}", f"--output={t / 'rec'}",
           f"--export_onnx={t / 'rec.part.onnx'}")
        dot = functions_dot(onnx.load(str(t / "rec.part.onnx")))
        (t / "functions.dot").write_text(dot)
        sh("dot", "-Tpng", "-Gdpi=70", f"-o{OUT / 'exported_functions.png'}", t / "functions.dot")
        feeds = {"input": np.random.default_rng(0).uniform(-1, 1, (1, 512)).astype(np.float32),
                 "sr": np.array(16000, np.int64), "h": np.zeros((2, 1, 64), np.float32),
                 "c": np.zeros((2, 1, 64), np.float32)}
        files = []
        for k, (name, v) in enumerate(feeds.items()):
            f = t / f"input_{k}.pb"
            f.write_bytes(onnx.numpy_helper.from_array(v, name).SerializeToString())
            files.append(str(f))
        sh(BUILD / "bin" / "omrun", f"--model={t / 'm.om'}", f"--input={','.join(files)}", "--loop=3",
           "--threads=1", f"--profile={t / 'trace.json'}")
        (t / "timeline.html").write_text(timeline_page(json.loads((t / "trace.json").read_text())))
        screenshot(t / "timeline.html", OUT / "trace_timeline.png", height=520)
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.png')))} in {OUT}")


if __name__ == "__main__":
    main()
