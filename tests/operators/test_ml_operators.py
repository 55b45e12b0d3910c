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


@pytest.mark.parametrize("labels,transform", [([0, 1], "NONE"), ([3, 7], "LOGISTIC"), ([1, 2, 3], "SOFTMAX"),
                                              ([1, 2, 3], "NONE")])
def test_linear_classifier(tmp_path, labels, transform):
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    rows = 1 if len(labels) == 2 else len(labels)
    m = ml_model("LinearClassifier", [("x", F, [5, 4])], [("label", I, None), ("scores", F, None)], 1,
                 coefficients=RNG.normal(size=rows * 4).tolist(), intercepts=RNG.normal(size=rows).tolist(),
                 classlabels_ints=labels, post_transform=transform)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_zip_map_gives_a_sequence_of_maps(tmp_path):
    """LinearClassifier's scores zipped with string labels, as skl2onnx writes classifiers: omrun writes a
    SequenceProto of MapProto that onnx reads back, and the Python API returns a list of dicts."""
    import graphsplit as gs
    x = RNG.normal(size=(3, 2)).astype(np.float32)
    names = ["cat", "dog", "émeu"]
    coef = RNG.normal(size=6).tolist()
    nodes = [helper.make_node("LinearClassifier", ["x"], ["label", "scores"], domain="ai.onnx.ml",
                              coefficients=coef, classlabels_strings=names, post_transform="SOFTMAX"),
             helper.make_node("ZipMap", ["scores"], ["probs"], domain="ai.onnx.ml", classlabels_strings=names)]
    map_type = onnx.TypeProto()
    map_type.map_type.key_type = TensorProto.STRING
    map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, []))
    seq_of_maps = helper.make_sequence_type_proto(map_type)
    g = helper.make_graph(nodes, "clf", [helper.make_tensor_value_info("x", F, [3, 2])],
                          [helper.make_tensor_value_info("label", TensorProto.STRING, None),
                           helper.make_value_info("probs", seq_of_maps)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)],
                          ir_version=8)
    scores = x.astype(np.float64) @ np.array(coef).reshape(3, 2).T
    probs = np.exp(scores - scores.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    work = tmp_path / "om"
    work.mkdir()
    onnx.save(m, str(work / "m.onnx"))
    helpers.atc(f"--model={work / 'm.onnx'}", f"--output={work / 'm'}")
    helpers.run([helpers.OMRUN, f"--model={work / 'm.om'}", "--input=" + helpers.write_inputs({"x": x}, work / "in"),
                 f"--output={work / 'out'}"])
    seq = onnx.SequenceProto()
    seq.ParseFromString((work / "out" / "output_1.pb").read_bytes())
    assert seq.elem_type == onnx.SequenceProto.MAP and len(seq.map_values) == 3
    for n, mp in enumerate(seq.map_values):
        assert [k.decode() for k in mp.string_keys] == names
        got = [onnx.numpy_helper.to_array(t) for t in mp.values.tensor_values]
        np.testing.assert_allclose(got, probs[n], rtol=1e-5)
    label, maps = gs.Session(work / "m.om").run({"x": x})
    assert [str(v) for v in label] == [names[k] for k in probs.argmax(1)]
    assert isinstance(maps, list) and all(isinstance(d, dict) and list(d) == names for d in maps)
    np.testing.assert_allclose([[d[k] for k in names] for d in maps], probs, rtol=1e-5)


def tree_attrs(prefix, n_out, seed):
    """Two trees of depth 2 over 3 features (modes, NaN tracking and leaf weights varied)."""
    rng = np.random.default_rng(seed)
    a = {"nodes_treeids": [], "nodes_nodeids": [], "nodes_featureids": [], "nodes_values": [], "nodes_modes": [],
         "nodes_truenodeids": [], "nodes_falsenodeids": [], "nodes_missing_value_tracks_true": [],
         f"{prefix}_treeids": [], f"{prefix}_nodeids": [], f"{prefix}_ids": [], f"{prefix}_weights": []}
    for tree, mode in ((0, "BRANCH_LEQ"), (1, "BRANCH_GT")):
        for node, (kind, yes, no) in enumerate([(mode, 1, 2), ("BRANCH_LT", 3, 4), ("LEAF", 0, 0),
                                                ("LEAF", 0, 0), ("LEAF", 0, 0)]):
            a["nodes_treeids"].append(tree)
            a["nodes_nodeids"].append(node)
            a["nodes_featureids"].append(int(rng.integers(0, 3)))
            a["nodes_values"].append(float(rng.normal()))
            a["nodes_modes"].append(kind)
            a["nodes_truenodeids"].append(yes)
            a["nodes_falsenodeids"].append(no)
            a["nodes_missing_value_tracks_true"].append(node % 2)
            if kind == "LEAF":
                for k in range(n_out):
                    a[f"{prefix}_treeids"].append(tree)
                    a[f"{prefix}_nodeids"].append(node)
                    a[f"{prefix}_ids"].append(k)
                    a[f"{prefix}_weights"].append(float(rng.uniform(0, 1)))
    return a


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
def test_tree_ensemble_regressor(tmp_path, aggregate):
    x = RNG.normal(size=(8, 3)).astype(np.float32)
    x[2, 0] = np.nan
    m = ml_model("TreeEnsembleRegressor", [("x", F, [8, 3])], [("y", F, None)], n_targets=2,
                 aggregate_function=aggregate, base_values=[0.5, -0.5], **tree_attrs("target", 2, 3))
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("transform", ["NONE", "SOFTMAX"])
def test_tree_ensemble_classifier(tmp_path, transform):
    x = RNG.normal(size=(8, 3)).astype(np.float32)
    m = ml_model("TreeEnsembleClassifier", [("x", F, [8, 3])], [("label", I, None), ("scores", F, None)],
                 classlabels_int64s=[4, 5, 6], post_transform=transform, **tree_attrs("class", 3, 4))
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("kernel,params,one_class", [("LINEAR", [0.0, 0.0, 0.0], 0), ("RBF", [0.4, 0.0, 0.0], 0),
                                                     ("POLY", [0.5, 1.0, 3.0], 0), ("SIGMOID", [0.3, 0.2, 0.0], 1)])
def test_svm_regressor(tmp_path, kernel, params, one_class):
    x = RNG.normal(size=(6, 3)).astype(np.float32)
    m = ml_model("SVMRegressor", [("x", F, [6, 3])], [("y", F, None)], kernel_type=kernel, kernel_params=params,
                 n_supports=4, support_vectors=RNG.normal(size=12).tolist(), coefficients=RNG.normal(size=4).tolist(),
                 rho=[0.25], one_class=one_class)
    assert assert_like_ort(m, {"x": x}, tmp_path)[0].shape == (6, 1)
