"""atc --partition_report=FILE.html, checked in a real browser (headless Chromium from Debian) (issue 20)."""
import html
import json
import os
import re
import shutil
import subprocess

import onnx
import onnx.helper as oh
import pytest

from conftest import ATC, atc, one_line_error, real_model, tool_env


def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return name
    pytest.fail("headless Chromium is missing: apt-get install chromium")


def browse(page, tmp_path, fragment=""):
    """Loads the page in headless Chromium: the DOM after its scripts ran, a screenshot, and the console."""
    common = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
              f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0"]
    url = f"file://{page}{fragment}"
    dom = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120, env=tool_env())
    assert dom.returncode == 0, dom.stderr
    shot = tmp_path / (page.stem + ".png")
    s = subprocess.run([*common, "--window-size=1400,1000", f"--screenshot={shot}", url], capture_output=True,
                       text=True, timeout=120, env=tool_env())
    assert s.returncode == 0, s.stderr
    console = [line for line in (dom.stderr + s.stderr).splitlines() if "CONSOLE" in line]
    return dom.stdout, shot, console


def small_model(path):
    """Static Relu/Mul/Add/Sigmoid, a data-dependent NonZero branch: one static and one dynamic subgraph."""
    t = onnx.TensorProto
    nodes = [oh.make_node("Relu", ["x"], ["r"], name="relu"), oh.make_node("Mul", ["r", "r"], ["m"], name="mul"),
             oh.make_node("NonZero", ["m"], ["nz"], name="nonzero"),
             oh.make_node("Cast", ["nz"], ["nzf"], to=t.FLOAT, name="cast"),
             oh.make_node("ReduceSum", ["nzf"], ["s"], keepdims=0, name="sum"),
             oh.make_node("Add", ["m", "m"], ["a"], name="add"), oh.make_node("Sigmoid", ["a"], ["y"], name="sig")]
    g = oh.make_graph(nodes, "small", [oh.make_tensor_value_info("x", t.FLOAT, [4, 8])],
                      [oh.make_tensor_value_info("y", t.FLOAT, [4, 8]), oh.make_tensor_value_info("s", t.FLOAT, [])])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, str(path))
    return path


def report_pair(model, tmp_path, *extra):
    """The JSON and the HTML report of one compile."""
    atc(f"--model={model}", f"--output={tmp_path / 'm'}", f"--partition_report={tmp_path / 'r.json'}", *extra)
    atc(f"--model={model}", f"--output={tmp_path / 'm'}", f"--partition_report={tmp_path / 'r.html'}", *extra)
    return json.loads((tmp_path / "r.json").read_text()), tmp_path / "r.html"


def summary_cells(dom):
    return {k: int(v) for k, v in re.findall(r'<td data-key="([^"]+)">(\d+)</td>', dom)}


def clusters(dom):
    """(static|dynamic, graph name) of each SVG cluster."""
    return [(kind, html.unescape(name))
            for name, kind in re.findall(r'<g id="graph:([^"]*)" class="cluster partition (static|dynamic)"', dom)]


def test_small_model_page_in_chromium(tmp_path):
    model = small_model(tmp_path / "small.onnx")
    report, page = report_pair(model, tmp_path, "--options=ge.exec.static_model_ops_lower_limit=1")
    dom, shot, console = browse(page, tmp_path)
    assert console == []
    s = report["summary"]
    cells = summary_cells(dom)
    assert cells["graphs"] == int(s["graphs"]) == 3
    assert cells["static_graphs"] == int(s["static_graphs"]) == 1
    assert cells["dynamic_graphs"] == int(s["dynamic_graphs"]) == 1
    assert cells["boundary_edges"] == int(s["boundary_edges"])
    # One SVG cluster per subgraph, marked static or dynamic as the report says.
    drawn = clusters(dom)
    want = sorted("dynamic" if g["unknown_shape"] else "static" for g in report["graphs"]
                  if g["kind"] not in ("root", "engine_subgraph"))
    assert sorted(kind for kind, _ in drawn) == want
    assert sorted(name for _, name in drawn) == sorted(g["name"] for g in report["graphs"]
                                                       if g["kind"] not in ("root", "engine_subgraph"))
    # Small enough to draw every node: one SVG node per IR node (15 here, with Data, Const and NetOutputs).
    om = tmp_path / "m.json"
    atc("--mode=1", f"--om={tmp_path / 'm.om'}", f"--json={om}")
    j = json.loads(om.read_text())
    total = sum(len(g.get("nodes", [])) for g in [j["root"], *j.get("subgraphs", [])])
    assert len(re.findall(r'<g id="node\d+" class="node"', dom)) == total
    assert "nonzero (NonZero) on " in dom  # each node's tooltip names its engine
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_large_model_collapses_to_its_subgraphs(tmp_path):
    report, page = report_pair(real_model("silero_v5"), tmp_path)
    dom, shot, console = browse(page, tmp_path)
    assert console == []
    cells = summary_cells(dom)
    for key in ("graphs", "static_graphs", "dynamic_graphs", "boundary_edges", "engine_subgraphs"):
        assert cells[key] == int(report["summary"][key]), key
    drawn = clusters(dom)
    subgraphs = [g for g in report["graphs"] if g["kind"] not in ("root", "engine_subgraph")]
    assert len(drawn) == len(subgraphs) == int(report["summary"]["graphs"]) - 1
    assert sorted(name for _, name in drawn) == sorted(g["name"] for g in subgraphs)
    assert sum(kind == "dynamic" for kind, _ in drawn) == sum(g["unknown_shape"] for g in subgraphs)
    # Collapsed: one summary node per subgraph, the root's inputs, outputs and owners of subgraphs.
    assert "each subgraph is drawn as one node" in dom
    assert len(re.findall(r'<g id="node\d+" class="node"', dom)) < 200
    # Every decision is listed, each with its code.
    assert len(re.findall(r'<tr class="decision"', dom)) == len(report["decisions"])


def test_decisions_filter_in_the_page(tmp_path):
    report, page = report_pair(real_model("silero_legacy"), tmp_path)
    codes = [d["code"] for d in report["decisions"]]
    code = max(set(codes), key=codes.count)
    dom, _, console = browse(page, tmp_path, f"#code={code}")
    assert console == []
    assert f'id="shown">{codes.count(code)} of {len(codes)} shown' in dom
    hidden = re.findall(r'<tr class="decision hidden" data-code="([^"]+)"', dom)
    assert len(hidden) == len(codes) - codes.count(code) and code not in hidden


def test_report_errors(tmp_path):
    model = small_model(tmp_path / "small.onnx")
    p = atc(f"--model={model}", f"--output={tmp_path / 'm'}", f"--partition_report={tmp_path / 'no' / 'r.html'}",
            check=False)
    assert "r.html" in one_line_error(p, "atc")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["small.onnx"]
    # Without Graphviz's dot the HTML report is refused, naming what to install; nothing is written.
    env = dict(os.environ, PATH="/nonexistent")
    p = subprocess.run([str(ATC), "--log=error", f"--model={model}", f"--output={tmp_path / 'm'}",
                        f"--partition_report={tmp_path / 'r.html'}"], capture_output=True, text=True, env=env)
    assert "graphviz" in one_line_error(p, "atc")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["small.onnx"]


def test_reports_are_byte_identical_across_runs(tmp_path):
    """Found while testing the page: protobuf's JSON printer walked the by_kind map in a per-process hash order."""
    model = real_model("silero_v5")
    for ext in ("json", "html"):
        texts = set()
        for k in range(3):
            atc(f"--model={model}", f"--output={tmp_path / 'm'}", f"--partition_report={tmp_path / f'{k}.{ext}'}")
            texts.add((tmp_path / f"{k}.{ext}").read_bytes())
        assert len(texts) == 1, ext
