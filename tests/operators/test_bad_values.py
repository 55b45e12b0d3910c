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
