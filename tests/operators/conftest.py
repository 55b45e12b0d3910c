"""The operators of opsets 18-23 (issue 16) run by graphsplit against ONNX Runtime (onnxruntime-node 1.20.1,
fetched by scripts/fetch_ort.sh), and against numpy formulas where ONNX Runtime 1.20 stops (opset 21).
Shares the ONNX Runtime and atc helpers of tests/visualisation."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "visualisation_helpers", Path(__file__).resolve().parents[1] / "visualisation" / "conftest.py")
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
