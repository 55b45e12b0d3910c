"""Shared fixtures of the Python suite (run by ctest with Debian's /usr/bin/python3; see tests/CMakeLists.txt)."""
import os
import subprocess
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("GRAPHSPLIT_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
MODELS = Path(os.environ.get("GRAPHSPLIT_MODEL_DIR", Path(__file__).resolve().parents[2] / ".cache" / "models"))
ATC = BUILD / "bin" / "atc"
OMRUN = BUILD / "bin" / "omrun"

# The real models with the input shapes the README and the C++ tests use.
REAL = {
    "cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x:6,3,48,192"),
    "rec": ("ch_PP-OCRv4_rec_infer.onnx", "x:1,3,48,320"),
    "det": ("ch_PP-OCRv4_det_infer.onnx", "x:1,3,640,640"),
}


def real_model(key: str) -> Path:
    path = MODELS / REAL[key][0]
    if not path.is_file():
        pytest.fail(f"{path} is missing: run scripts/fetch_models.sh")
    return path


def atc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(ATC), "--log=error", *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"atc failed: {p.stderr}")
    return p


def atc_error(*args: str) -> str:
    """The message atc prints for a failing command, without its "atc: error: " prefix."""
    p = atc(*args, check=False)
    assert p.returncode == 1, p.stdout
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("atc: error: "), line
    return line[len("atc: error: "):]


@pytest.fixture(scope="session")
def gs():
    import graphsplit
    return graphsplit
