"""Session.run against omrun, numpy conversions (dtypes, layouts, zero copies), errors, threads, memory."""
import os
import subprocess
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import ATC, OMRUN, REAL, real_model

DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "bool"]


def identity_model(dtype: str, shape=(2, 3)) -> bytes:
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if hasattr(helper, "np_dtype_to_tensor_dtype") \
        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]
    x = helper.make_tensor_value_info("x", t, list(shape))
    y = helper.make_tensor_value_info("y", t, list(shape))
    nodes = [helper.make_node("Identity", ["x"], ["m"]), helper.make_node("Identity", ["m"], ["y"])]
    g = helper.make_graph(nodes, "identity", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def random_input(shape, seed=0):
    return np.random.RandomState(seed).rand(*shape).astype(np.float32)


@pytest.mark.parametrize("key", sorted(REAL))
def test_outputs_equal_omruns(gs, tmp_path, key):
    model = real_model(key)
    shape = [int(d) for d in REAL[key][1].split(":")[1].split(",")]
    c = gs.compile(model, input_shape={"x": shape})
    c.save(tmp_path / "m.om")
    x = random_input(shape)
    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
    subprocess.run([str(OMRUN), f"--model={tmp_path / 'm.om'}", f"--input={tmp_path / 'x.pb'}",
                    f"--output={tmp_path / 'out'}", "--threads=1"], check=True, capture_output=True)
    got = gs.Session(tmp_path / "m.om", threads=1).run({"x": x})
    assert len(got) == len(list((tmp_path / "out").glob("output_*.pb")))
    for i, y in enumerate(got):
        want = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "out" / f"output_{i}.pb")))
        assert y.dtype == want.dtype and y.shape == want.shape
        assert np.array_equal(y, want), f"output {i} differs from omrun's"


def test_session_from_compiled_model_and_io(gs):
    s = gs.compile(real_model("cls"), input_shape={"x": [6, 3, 48, 192]}).session()
    assert [(v.name, v.dtype, v.shape) for v in s.inputs] == [("x", "float32", [6, 3, 48, 192])]
    assert [(v.dtype, v.shape) for v in s.outputs] == [("float32", [6, 2])]
    y = s.run({"x": random_input((6, 3, 48, 192))})[0]
    assert np.allclose(y.sum(axis=1), 1.0, atol=1e-5)  # a softmax
    assert s.segment_stats and s.segment_stats[0]["calls"] == 1 and s.runs == 1
    # A static model is one segment, compiled as the graph itself (no copy of it).
    assert [st["whole_graph"] for st in s.segment_stats] == [True]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_round_trips_without_a_copy(gs, dtype):
    s = gs.Session(gs.compile(identity_model(dtype)))
    x = (np.arange(6).reshape(2, 3) % 2 == 0) if dtype == "bool" else np.arange(6, dtype=dtype).reshape(2, 3)
    x = x.astype(dtype)
    y = s.run({"x": x})[0]
    assert y.dtype == np.dtype(dtype) and np.array_equal(y, x)
    assert s.input_copies == 0
    assert not y.flags.writeable
    with pytest.raises(ValueError):
        y[0, 0] = 1


def test_layouts_are_copied_once(gs):
    s = gs.Session(gs.compile(identity_model("float32")))
    base = np.arange(12, dtype=np.float32).reshape(2, 6)
    strided = base[:, ::2]
    assert not strided.flags.c_contiguous
    assert np.array_equal(s.run({"x": strided})[0], strided)
    assert s.input_copies == 1
    big = np.arange(6, dtype=">f4").reshape(2, 3)
    assert np.array_equal(s.run({"x": big})[0], big.astype("<f4"))
    assert s.input_copies == 2
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert np.array_equal(s.run({"x": fortran})[0], fortran)
    assert s.input_copies == 3
    s.run({"x": np.zeros((2, 3), np.float32)})
    assert s.input_copies == 3


def test_zero_size_and_scalar_inputs(gs):
    s = gs.Session(gs.compile(identity_model("float32", shape=(0, 3))))
    y = s.run({"x": np.zeros((0, 3), np.float32)})[0]
    assert y.shape == (0, 3)
    s0 = gs.Session(gs.compile(identity_model("int64", shape=())))
    y0 = s0.run({"x": np.array(7, dtype=np.int64)})[0]
    assert y0.shape == () and int(y0) == 7


def test_no_silent_casts_and_name_errors(gs):
    s = gs.Session(gs.compile(identity_model("float32")))
    with pytest.raises(ValueError, match=r"input 'x': the model takes float32, got numpy float64 \(graphsplit never casts"):
        s.run({"x": np.zeros((2, 3))})
    with pytest.raises(LookupError, match=r"input 'x' is missing \(the model takes: x\)"):
        s.run({})
    with pytest.raises(LookupError, match=r"the model has no input 'z' \(its inputs: x\)"):
        s.run({"x": np.zeros((2, 3), np.float32), "z": np.zeros(1)})
    with pytest.raises(ValueError, match="must be a numpy.ndarray"):
        s.run({"x": [[1, 2, 3], [4, 5, 6]]})
    with pytest.raises(gs.Error, match="shape|dimension|rank"):
        s.run({"x": np.zeros((3, 3), np.float32)})


def test_outputs_outlive_the_session(gs):
    s = gs.Session(gs.compile(identity_model("int32")))
    y = s.run({"x": np.arange(6, dtype=np.int32).reshape(2, 3)})[0]
    del s
    import gc
    gc.collect()
    assert y.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_two_threads_share_a_session(gs):
    s = gs.compile(real_model("cls"), input_shape={"x": [6, 3, 48, 192]}).session()
    inputs = [random_input((6, 3, 48, 192), seed) for seed in range(2)]
    want = [s.run({"x": x})[0].copy() for x in inputs]
    errors = []

    def worker(k):
        try:
            for _ in range(10):
                if not np.array_equal(s.run({"x": inputs[k]})[0], want[k]):
                    errors.append(f"thread {k}: wrong output")
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert s.runs == 22


def rss_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


# Under the sanitizers' preloaded allocator freed blocks wait in ASan's quarantine (up to 256 MB), so resident
# size grows by design there; leaks are LeakSanitizer's to find in that build.
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="ASan's quarantine grows RSS by design")
def test_a_thousand_runs_do_not_grow_memory(gs):
    s = gs.Session(gs.compile(identity_model("float32", shape=(64, 64))))
    x = np.ones((64, 64), np.float32)
    for _ in range(100):
        s.run({"x": x})
    before = rss_kb()
    for _ in range(1000):
        s.run({"x": x})
    grown = rss_kb() - before
    # 1,000 leaked 16 KiB outputs would be 16 MB.
    assert grown < 2048, f"RSS grew by {grown} KiB over 1,000 runs"


def test_bfloat16_output_has_no_numpy_type(gs):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2])
    g = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)], "c", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    s = gs.Session(gs.compile(m))
    with pytest.raises(gs.UnsupportedError, match="bfloat16 has no numpy type"):
        s.run({"x": np.ones(2, np.float32)})


NODE_TESTS = Path("/usr/share/libonnx-testdata/data/node")


def node_test_sample(every: int = 25):
    """Every 25th ONNX node test (about 40), in name order."""
    dirs = sorted(d for d in NODE_TESTS.iterdir() if (d / "model.onnx").is_file() and (d / "test_data_set_0").is_dir())
    return dirs[::every]


def load_value(path, kind):
    """A .pb file as the Python API takes and gives it: an array, a list (sequence), or an element or None
    (optional)."""
    data = Path(path).read_bytes()
    if kind == "sequence":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    return numpy_helper.to_array(onnx.load_tensor(str(path)))


def assert_same_value(got, want, what):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), what
        for g, w in zip(got, want):
            assert_same_value(g, w, what)
        return
    if want is None:
        assert got is None, what
        return
    assert got.dtype == want.dtype and got.shape == want.shape, what
    assert np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), what


@pytest.mark.skipif(not NODE_TESTS.is_dir(), reason="libonnx-testdata is not installed")
def test_node_test_sample_equals_omrun(gs, tmp_path):
    compared = 0
    for case in node_test_sample():
        data = case / "test_data_set_0"
        inputs = sorted(data.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
        om = tmp_path / f"{case.name}.om"
        p = subprocess.run([str(ATC), "--log=null", f"--model={case / 'model.onnx'}", f"--output={om}"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            continue  # a model the compiler refuses (reported by the C++ node tests)
        out_dir = tmp_path / case.name
        r = subprocess.run([str(OMRUN), f"--model={om}", "--input=" + ",".join(map(str, inputs)),
                            f"--output={out_dir}", "--threads=1"], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # an operator the runtime does not run (reported by the C++ node tests)
        s = gs.Session(om, threads=1)
        feeds = {info.name: load_value(path, info.kind) for info, path in zip(s.inputs, inputs)}
        got = s.run(feeds)
        for i, (y, info) in enumerate(zip(got, s.outputs)):
            want = load_value(out_dir / f"output_{i}.pb", info.kind)
            assert_same_value(y, want, f"{case.name}: output {i}")
        compared += 1
    print(f"{compared} node tests compared")
    assert compared >= 30, f"only {compared} node tests compared"


def test_strings_round_trip(gs):
    x = helper.make_tensor_value_info("x", TensorProto.STRING, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.STRING, [2, 2])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "s", [x], [y])
    s = gs.Session(gs.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])))
    out = s.run({"x": np.array([["ab", "c"], ["", "déjà"]])})[0]
    assert out.dtype == object and out.tolist() == [["ab", "c"], ["", "déjà"]]
    assert s.input_copies == 1  # strings are always encoded


def test_an_output_that_is_the_input_is_a_copy(gs):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    g = helper.make_graph([], "passthrough", [x], [x])
    s = gs.Session(gs.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])))
    a = np.arange(3, dtype=np.float32)
    y = s.run({"x": a})[0]
    assert np.array_equal(y, a) and not np.shares_memory(y, a)
    a[0] = 42
    assert y[0] == 0


def sequence_model():
    """x [4,2] split into a sequence of rows (output 0); the sequence input s gets x's first row inserted at
    the front, and its length and concatenation are outputs 1 and 2; o (optional) says whether it is set."""
    seq = helper.make_tensor_sequence_value_info
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2])
    s = seq("s", TensorProto.FLOAT, None)
    opt_type = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
    o = helper.make_value_info("o", opt_type)
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
        helper.make_node("SequenceAt", ["rows", "zero"], ["first"]),
        helper.make_node("SequenceInsert", ["s", "first", "zero"], ["s2"]),
        helper.make_node("SequenceLength", ["s2"], ["n"]),
        helper.make_node("ConcatFromSequence", ["s2"], ["cat"], axis=0),
        helper.make_node("OptionalHasElement", ["o"], ["has"]),
    ]
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    outs = [seq("rows", TensorProto.FLOAT, None), helper.make_tensor_value_info("n", TensorProto.INT64, []),
            helper.make_tensor_value_info("cat", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("has", TensorProto.BOOL, [])]
    g = helper.make_graph(nodes, "seq", [x, s, o], outs, initializer=[zero])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


def test_sequences_and_optionals_in_and_out(gs):
    s = gs.Session(gs.compile(sequence_model()))
    assert [i.kind for i in s.inputs] == ["tensor", "sequence", "optional"]
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    parts = [np.full(2, 7, np.float32), np.full(2, 9, np.float32)]
    rows, n, cat, has = s.run({"x": x, "s": parts, "o": None})
    assert isinstance(rows, list) and len(rows) == 4
    assert all(np.array_equal(r, x[k]) for k, r in enumerate(rows))
    assert n == 3 and not has
    assert np.array_equal(cat, np.concatenate([x[0], parts[0], parts[1]]))
    assert s.run({"x": x, "s": [], "o": np.zeros(2, np.float32)})[3]


def test_a_sequence_input_needs_a_list(gs):
    s = gs.Session(gs.compile(sequence_model()))
    x = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="input 's' is a sequence: pass a list of numpy.ndarray"):
        s.run({"x": x, "s": np.zeros(2, np.float32), "o": None})
    with pytest.raises(ValueError, match="input 's': the model takes float32, got numpy int64"):
        s.run({"x": x, "s": [np.zeros(2, np.int64)], "o": None})


def test_concurrent_option(gs):
    c = gs.compile(identity_model("float32"))
    x = random_input((2, 3))
    got = {mode: gs.Session(c, concurrent=mode).run({"x": x})[0] for mode in ("auto", "always", "never")}
    assert all(np.array_equal(y, x) for y in got.values())
    with pytest.raises(ValueError, match="concurrent: 'sometimes' is not one of 'auto', 'always', 'never'"):
        gs.Session(c, concurrent="sometimes")
