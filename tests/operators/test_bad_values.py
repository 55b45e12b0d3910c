"""Bad values for sequences, optionals and strings: one line naming the file, input or node, exit 1, and no
output folder."""
import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from conftest import helpers


def compile_model(model, work):
    work.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(work / "m.onnx"))
    helpers.atc(f"--model={work / 'm.onnx'}", f"--output={work / 'm'}")
    return work / "m.om"


def omrun_error(om, files, work):
    out = work / "out"
    p = helpers.run([helpers.OMRUN, f"--model={om}", "--input=" + ",".join(map(str, files)), f"--output={out}"],
                    check=False)
    line = helpers.one_line_error(p, "omrun")
    assert not out.exists()
    return line


def save(work, name, proto):
    f = work / name
    f.write_bytes(proto.SerializeToString())
    return f


def sequence_at_model():
    g = helper.make_graph([helper.make_node("SequenceAt", ["s", "i"], ["y"], name="at")], "seq",
                          [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("i", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_sequence_index_out_of_range_names_the_node(tmp_path):
    om = compile_model(sequence_at_model(), tmp_path)
    seq = onnx.numpy_helper.from_list([np.zeros(2, np.float32), np.ones(2, np.float32)], "s")
    files = [save(tmp_path, "s.pb", seq), save(tmp_path, "i.pb", onnx.numpy_helper.from_array(np.array(5), "i"))]
    line = omrun_error(om, files, tmp_path)
    assert "node 'at' (SequenceAt): position 5 is out of range for a sequence of 2 elements" in line


def test_a_tensor_where_a_sequence_is_expected_and_back(tmp_path):
    om = compile_model(sequence_at_model(), tmp_path)
    tensor = save(tmp_path, "t.pb", onnx.numpy_helper.from_array(np.zeros(2, np.float32), "s"))
    index = save(tmp_path, "i.pb", onnx.numpy_helper.from_array(np.array(0), "i"))
    assert "t.pb: not an ONNX SequenceProto (a tensor .pb where a sequence is expected?)" in \
        omrun_error(om, [tensor, index], tmp_path)
    seq = save(tmp_path, "s.pb", onnx.numpy_helper.from_list([np.zeros(2, np.float32)], "s"))
    assert "s.pb: not a tensor (a sequence or optional .pb where a tensor is expected?)" in \
        omrun_error(om, [seq, seq], tmp_path)


def test_a_string_tensor_fed_to_a_numeric_input(tmp_path):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    om = compile_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path)
    text = save(tmp_path, "x.pb", onnx.numpy_helper.from_array(np.array(["a", "b"], dtype=object), "x"))
    assert "input 0 'x' must be float32, got string" in omrun_error(om, [text], tmp_path)


def test_an_invalid_regular_expression_names_the_node(tmp_path):
    g = helper.make_graph([helper.make_node("RegexFullMatch", ["x"], ["y"], name="re", pattern="(ab")], "re",
                          [helper.make_tensor_value_info("x", TensorProto.STRING, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.BOOL, [1])])
    om = compile_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=8), tmp_path)
    text = save(tmp_path, "x.pb", onnx.numpy_helper.from_array(np.array(["ab"], dtype=object), "x"))
    assert "node 're' (RegexFullMatch): invalid regular expression '(ab'" in omrun_error(om, [text], tmp_path)


def test_omrun_writes_sequences_and_optionals_as_onnx_reads_them(tmp_path):
    """SplitToSequence's output as a SequenceProto and an Optional of it as an OptionalProto, read back by
    onnx's own helpers."""
    nodes = [helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
             helper.make_node("Optional", ["rows"], ["maybe"])]
    opt = helper.make_optional_type_proto(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    g = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2])],
                          [helper.make_tensor_sequence_value_info("rows", TensorProto.FLOAT, None),
                           helper.make_value_info("maybe", opt)])
    om = compile_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), tmp_path)
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = tmp_path / "out"
    helpers.run([helpers.OMRUN, f"--model={om}",
                 "--input=" + str(save(tmp_path, "x.pb", onnx.numpy_helper.from_array(x, "x"))), f"--output={out}"])
    seq = onnx.SequenceProto()
    seq.ParseFromString((out / "output_0.pb").read_bytes())
    rows = onnx.numpy_helper.to_list(seq)
    assert seq.name == "rows" and len(rows) == 3 and all(np.array_equal(r, x[k]) for k, r in enumerate(rows))
    o = onnx.OptionalProto()
    o.ParseFromString((out / "output_1.pb").read_bytes())
    assert o.elem_type == onnx.OptionalProto.SEQUENCE
    assert all(np.array_equal(r, x[k]) for k, r in enumerate(onnx.numpy_helper.to_list(o.sequence_value)))


def test_hostile_attributes_are_errors_not_crashes(tmp_path):
    """Col2Im with a zero stride (a division by zero) and a tree whose node reads feature -1 (out of bounds)."""
    f = TensorProto.FLOAT
    g = helper.make_graph([helper.make_node("Col2Im", ["x", "image", "block"], ["y"], name="c2i", strides=[0, 1])],
                          "c2i", [helper.make_tensor_value_info("x", f, [1, 4, 9])],
                          [helper.make_tensor_value_info("y", f, None)],
                          initializer=[onnx.numpy_helper.from_array(np.array([4, 4], np.int64), "image"),
                                       onnx.numpy_helper.from_array(np.array([2, 2], np.int64), "block")])
    om = compile_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8), tmp_path / "a")
    x = save(tmp_path, "x.pb", onnx.numpy_helper.from_array(np.zeros((1, 4, 9), np.float32), "x"))
    assert "node 'c2i' (Col2Im): block_shape, strides and dilations must be positive" in \
        omrun_error(om, [x], tmp_path / "a")
    tree = helper.make_node("TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", name="tree",
                            nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[-1, 0, 0],
                            nodes_values=[0.0, 0.0, 0.0], nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"],
                            nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
                            nodes_missing_value_tracks_true=[1, 0, 0], target_treeids=[0, 0],
                            target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[5.0, 7.0], n_targets=1)
    g = helper.make_graph([tree], "tree", [helper.make_tensor_value_info("x", f, [2, 2])],
                          [helper.make_tensor_value_info("y", f, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    om = compile_model(m, tmp_path / "b")
    out = tmp_path / "b" / "out"
    helpers.run([helpers.OMRUN, f"--model={om}", "--input=" + helpers.write_inputs(
        {"x": np.ones((2, 2), np.float32)}, tmp_path / "b" / "in"), f"--output={out}"])
    t = onnx.TensorProto()
    t.ParseFromString((out / "output_0.pb").read_bytes())
    assert onnx.numpy_helper.to_array(t).tolist() == [[5.0], [5.0]]  # feature -1 is missing: NaN goes left


def test_sequence_errors_name_the_node(tmp_path):
    """An empty sequence concatenated, an empty optional read, SequenceMap over sequences of unequal lengths."""
    f = TensorProto.FLOAT
    seq = helper.make_tensor_sequence_value_info
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(f, [2]))
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"])], "body",
                             [helper.make_tensor_value_info("a", f, None), helper.make_tensor_value_info("b", f, None)],
                             [helper.make_tensor_value_info("c", f, None)])
    nodes = [helper.make_node("ConcatFromSequence", ["s"], ["cat"], axis=0, name="concat"),
             helper.make_node("OptionalGetElement", ["o"], ["e"], name="get"),
             helper.make_node("SequenceMap", ["s", "t"], ["m"], body=body, name="map")]
    cases = [(nodes[0], [seq("s", f, None)], [helper.make_tensor_value_info("cat", f, None)],
              {"s": []}, "node 'concat' (ConcatFromSequence): cannot concatenate an empty sequence"),
             (nodes[1], [helper.make_value_info("o", opt_type)], [helper.make_tensor_value_info("e", f, None)],
              {"o": None}, "node 'get' (OptionalGetElement): the optional input is empty"),
             (nodes[2], [seq("s", f, None), seq("t", f, None)], [seq("m", f, None)],
              {"s": [np.zeros(2, np.float32)], "t": []}, ("node 'map' (SequenceMap)", "input 1 has 0 elements but input 0 has 1"))]
    for k, (node, ins, outs, values, message) in enumerate(cases):
        g = helper.make_graph([node], "g", ins, outs)
        om = compile_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)], ir_version=8),
                           tmp_path / str(k))
        files = []
        for name, v in values.items():
            proto = onnx.numpy_helper.from_optional(v, name, onnx.OptionalProto.TENSOR) if name == "o" else \
                onnx.numpy_helper.from_list(v, name, dtype=TensorProto.FLOAT)
            files.append(save(tmp_path / str(k), f"{name}.pb", proto))
        line = omrun_error(om, files, tmp_path / str(k))
        assert all(part in line for part in ((message,) if isinstance(message, str) else message)), line
