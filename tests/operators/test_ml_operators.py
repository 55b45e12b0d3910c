"""ai.onnx.ml operators on tensors against ONNX Runtime (numeric) and Python's own mapping (strings)."""
import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

from conftest import helpers
from test_new_operators import assert_like_ort, run_graphsplit

RNG = np.random.default_rng(1)


def ml_model(op, inputs, outputs, ml_opset=3, **attrs):
    node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    g = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", ml_opset)],
                             ir_version=8)


F, I = TensorProto.FLOAT, TensorProto.INT64


def test_label_encoder_int_to_int_and_float(tmp_path):
    x = np.array([[1, 5, 3], [7, 1, 2]], np.int64)
    m = ml_model("LabelEncoder", [("x", I, [2, 3])], [("y", I, [2, 3])], 2,
                 keys_int64s=[1, 2, 3], values_int64s=[10, 20, 30], default_int64=-7)
    assert assert_like_ort(m, {"x": x}, tmp_path / "ii")[0].tolist() == [[10, -7, 30], [-7, 10, 20]]
    m = ml_model("LabelEncoder", [("x", I, [2, 3])], [("y", F, [2, 3])], 2,
                 keys_int64s=[1, 2, 3], values_floats=[0.5, 1.5, 2.5], default_float=-1.0)
    assert_like_ort(m, {"x": x}, tmp_path / "if")


def test_label_encoder_strings(tmp_path):
    s = TensorProto.STRING
    m = ml_model("LabelEncoder", [("x", s, [4])], [("y", I, [4])], 2,
                 keys_strings=["a", "b", "déjà"], values_int64s=[1, 2, 3], default_int64=0)
    y = run_graphsplit(m, {"x": np.array(["b", "zz", "déjà", "a"], dtype=object)}, tmp_path / "si")[0][0]
    assert y.tolist() == [2, 0, 3, 1]
    m = ml_model("LabelEncoder", [("x", I, [3])], [("y", s, [3])], 2,
                 keys_int64s=[4, 5], values_strings=["four", "five"], default_string="?")
    y = run_graphsplit(m, {"x": np.array([5, 6, 4], np.int64)}, tmp_path / "is")[0][0]
    assert [v if isinstance(v, str) else v.decode() for v in y] == ["five", "?", "four"]


def test_binarizer_scaler_normalizer_imputer(tmp_path):
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    x[1, 2] = np.nan
    for k, (op, attrs) in enumerate([("Binarizer", {"threshold": 0.2}),
                                     ("Scaler", {"offset": [0.1, -0.2, 0.3], "scale": [2.0, 0.5, -1.0]}),
                                     ("Imputer", {"imputed_value_floats": [9.0, 8.0, 7.0],
                                                  "replaced_value_float": float("nan")})]):
        m = ml_model(op, [("x", F, [4, 3])], [("y", F, [4, 3])], **attrs)
        assert_like_ort(m, {"x": x if op == "Imputer" else np.nan_to_num(x)}, tmp_path / str(k))  # ORT refuses NaN
    finite = np.nan_to_num(x)
    for norm in ("MAX", "L1", "L2"):
        m = ml_model("Normalizer", [("x", F, [4, 3])], [("y", F, [4, 3])], norm=norm)
        assert_like_ort(m, {"x": finite}, tmp_path / norm)


def test_array_feature_extractor_one_hot_linear_regressor(tmp_path):
    x = RNG.normal(size=(3, 5)).astype(np.float32)
    g = helper.make_graph(
        [helper.make_node("ArrayFeatureExtractor", ["x", "idx"], ["y"], domain="ai.onnx.ml")], "afe",
        [helper.make_tensor_value_info("x", F, [3, 5])], [helper.make_tensor_value_info("y", F, None)],
        initializer=[onnx.numpy_helper.from_array(np.array([4, 0, 2], np.int64), "idx")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)],
                          ir_version=8)
    assert assert_like_ort(m, {"x": x}, tmp_path / "afe")[0].shape == (3, 3)
    cats = np.array([[3, 1], [2, 9]], np.int64)
    m = ml_model("OneHotEncoder", [("x", I, [2, 2])], [("y", F, None)], cats_int64s=[1, 2, 3], zeros=1)
    assert assert_like_ort(m, {"x": cats}, tmp_path / "ohe")[0].shape == (2, 2, 3)
    m = ml_model("LinearRegressor", [("x", F, [3, 5])], [("y", F, None)], targets=2,
                 coefficients=RNG.normal(size=10).tolist(), intercepts=[0.5, -1.0])
    assert assert_like_ort(m, {"x": x}, tmp_path / "lr")[0].shape == (3, 2)
