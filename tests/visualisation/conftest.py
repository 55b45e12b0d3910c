"""Shared helpers of the visualisation suite (issue 20): the partitioned model as ONNX, the HTML report, the trace.

Run by ctest with Debian's /usr/bin/python3 (tests/CMakeLists.txt). ONNX Runtime (onnxruntime-node, fetched by
scripts/fetch_ort.sh) and headless Chromium serve as independent oracles; a test that needs one of them fails
with the command that installs it rather than skipping silently.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GRAPHSPLIT_BUILD_DIR", ROOT / "build"))
MODELS = Path(os.environ.get("GRAPHSPLIT_MODEL_DIR", ROOT / ".cache" / "models"))
ORT_MODULES = Path(os.environ.get("GRAPHSPLIT_ORT_DIR", ROOT / ".cache" / "ort")) / "node_modules"
NODE_TESTS = Path("/usr/share/libonnx-testdata/data/node")
ATC = BUILD / "bin" / "atc"
OMRUN = BUILD / "bin" / "omrun"
ORT_RUN = Path(__file__).resolve().parent / "ort_run.js"

# Real models without gears: the shapes they are compiled for ("" keeps the model's own, dynamic, shapes), and
# the input dims and fixed values their runs use.
REAL = {
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x:6,3,48,192", "x:6,3,48,192", {}),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", "x:1,3,48,320", "x:1,3,48,320", {}),
    "det": ("ch_PP-OCRv4_det_infer.onnx", "x:1,3,160,160", "x:1,3,160,160", {}),
    "rec_dynamic": ("ch_PP-OCRv4_rec_infer.onnx", "", "x:1,3,48,160", {}),
    "silero_v5": ("silero_vad_v5.onnx", "", "input:1,512;state:2,1,128", {"sr": np.array(16000, np.int64)}),
    "silero_legacy": ("silero_vad_legacy.onnx", "", "input:1,512;h:2,1,64;c:2,1,64",
                      {"sr": np.array(16000, np.int64)}),
}

NP_TO_ORT = {
    np.float32: "float32", np.float64: "float64", np.int8: "int8", np.uint8: "uint8", np.int16: "int16",
    np.uint16: "uint16", np.int32: "int32", np.uint32: "uint32", np.int64: "int64", np.uint64: "uint64",
    np.bool_: "bool", np.float16: "float16",
}


def real_model(key: str) -> Path:
    path = MODELS / REAL[key][0]
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/fetch_models.sh")
    return path


def tool_env():
    """The environment for tools that are not ours (node, chromium): without the sanitizer runtimes a sanitizer
    build preloads into python3 (tests/CMakeLists.txt), which they do not survive."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def run(cmd, check=True):
    env = tool_env() if Path(str(cmd[0])).name in ("node", "chromium") else None
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd[0]} failed ({p.returncode}): {p.stderr}")
    return p


def atc(*args, check=True):
    return run([ATC, "--log=error", *args], check)


def one_line_error(p, tool: str) -> str:
    """The single stderr line of a failed atc/omrun run, checked for its form."""
    assert p.returncode == 1, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"{tool}: error: "), lines[0]
    return lines[0]


def compile_and_export(model: Path, shape: str, out: Path, *extra: str) -> Path:
    """atc with --export_onnx; returns the exported file (beside OUT.om)."""
    exported = out.with_suffix(".part.onnx")
    args = [f"--model={model}", f"--output={out}", f"--export_onnx={exported}", *extra]
    if shape:
        args.append(f"--input_shape={shape}")
    atc(*args)
    return exported


def need_ort():
    if not (ORT_MODULES / "onnxruntime-node").is_dir() or shutil.which("node") is None:
        pytest.fail(f"ONNX Runtime for Node.js is missing in {ORT_MODULES}: run scripts/fetch_ort.sh")


def ort_run(model: Path, feeds: dict, work: Path) -> list:
    """Runs `model` in ONNX Runtime (one thread); returns its outputs in order, or raises with ORT's message."""
    need_ort()
    work.mkdir(parents=True, exist_ok=True)
    manifest = []
    for k, (name, value) in enumerate(feeds.items()):
        value = np.ascontiguousarray(value)
        f = work / f"input_{k}.bin"
        value.tofile(f)
        manifest.append({"name": name, "dtype": NP_TO_ORT[value.dtype.type], "dims": list(value.shape),
                         "file": str(f)})
    (work / "inputs.json").write_text(json.dumps(manifest))
    p = run(["node", ORT_RUN, ORT_MODULES, model, work / "inputs.json", work], check=False)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    outs = []
    for o in json.loads((work / "outputs.json").read_text()):
        dtype = {v: k for k, v in NP_TO_ORT.items()}[o["dtype"]]
        outs.append(np.fromfile(o["file"], dtype=dtype).reshape(o["dims"]))
    return outs


def real_feeds(key: str) -> dict:
    return random_feeds(real_model(key), REAL[key][2], values=REAL[key][3])


def random_feeds(model: Path, fixed: str, seed: int = 0, values=None) -> dict:
    """Inputs for every graph input of an ONNX model: the --input_shape dims when given, 1 for unknown ones."""
    m = onnx.load(str(model), load_external_data=False)
    shapes = {}
    for item in filter(None, fixed.split(";")):
        name, dims = item.rsplit(":", 1)
        shapes[name] = [int(d) for d in dims.split(",")]
    inits = {t.name for t in m.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        if values and vi.name in values:
            feeds[vi.name] = values[vi.name]
            continue
        t = vi.type.tensor_type
        dims = shapes.get(vi.name) or [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]
        if np.issubdtype(dtype, np.floating):
            feeds[vi.name] = rng.uniform(-1, 1, dims).astype(dtype)
        else:
            feeds[vi.name] = rng.integers(0, 2, dims).astype(dtype)
    return feeds


def om_graphs(om: Path, work: Path) -> dict:
    """The compiled model's graphs (atc --mode=1 JSON): name -> (parent node, node list)."""
    j = work / (om.stem + ".json")
    atc("--mode=1", f"--om={om}", f"--json={j}")
    model = json.loads(j.read_text())
    graphs = {}
    for g in [model["root"], *model.get("subgraphs", [])]:
        graphs[g["name"]] = (g.get("parent_node", ""), g.get("nodes", []))
    return graphs


def write_inputs(feeds: dict, folder: Path) -> str:
    """The feeds as ONNX TensorProto files for omrun --input (comma-separated, in order)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for k, (name, value) in enumerate(feeds.items()):
        f = folder / f"input_{k}.pb"
        f.write_bytes(onnx.numpy_helper.from_array(np.asarray(value), name).SerializeToString())
        files.append(str(f))
    return ",".join(files)
