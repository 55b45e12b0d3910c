"""A node that takes or gives a sequence is dynamic, and the partition report says why (NOT_A_TENSOR)."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper

from conftest import helpers


def test_sequence_nodes_are_dynamic_with_their_reason(tmp_path):
    f = TensorProto.FLOAT
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("SplitToSequence", ["r"], ["rows"], axis=0, keepdims=0, name="split"),
             helper.make_node("ConcatFromSequence", ["rows"], ["cat"], axis=0, name="concat"),
             helper.make_node("Sigmoid", ["cat"], ["y"], name="sigmoid")]
    g = helper.make_graph(nodes, "seq", [helper.make_tensor_value_info("x", f, [4, 3])],
                          [helper.make_tensor_value_info("y", f, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    report = tmp_path / "report.json"
    helpers.atc(f"--model={path}", f"--output={tmp_path / 'm'}", f"--partition_report={report}")
    decisions = json.loads(report.read_text())["decisions"]
    not_tensor = [d for d in decisions if d["code"] == "NOT_A_TENSOR"]
    named = {n for d in not_tensor for n in d.get("nodes", [])}
    assert {"split", "concat"} <= named, decisions
    assert "relu" not in named and all("sequence or optional" in d["detail"] for d in not_tensor)
    # and it runs: rows of relu(x) concatenated back, through sigmoid
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    out = tmp_path / "out"
    helpers.run([helpers.OMRUN, f"--model={tmp_path / 'm.om'}",
                 "--input=" + helpers.write_inputs({"x": x}, tmp_path / "in"), f"--output={out}"])
    t = onnx.TensorProto()
    t.ParseFromString((out / "output_0.pb").read_bytes())
    np.testing.assert_allclose(onnx.numpy_helper.to_array(t), 1 / (1 + np.exp(-np.maximum(x, 0).reshape(-1))),
                               rtol=1e-6)
