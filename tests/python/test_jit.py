"""graphsplit.JitSession (the online mode) against the offline compile, its report, plan and errors."""
import subprocess
import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import OMRUN, REAL, real_model


def nonzero_model() -> bytes:
    """x[N,4] -> Relu -> NonZero -> Transpose -> Cast: a data-dependent size in the middle."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonZero", ["r"], ["nz"], name="nz"),
             helper.make_node("Transpose", ["nz"], ["t"], name="t"),
             helper.make_node("Cast", ["t"], ["y"], name="cast", to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "nonzero", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_outputs_equal_the_offline_compile(gs):
    jit = gs.JitSession(nonzero_model(), cut="data")  # always cut and specialise (no adaptive rule)
    offline = gs.compile(nonzero_model()).session()
    for rows in (1, 3, 3, 5):
        x = np.random.RandomState(rows).randn(rows, 4).astype(np.float32)
        got, want = jit.run({"x": x}), offline.run({"x": x})
        assert got[0].shape == want[0].shape and np.array_equal(got[0], want[0])
        assert got[0].shape == (int((x > 0).sum()), 2)
    report = jit.report
    assert len(report["slices"]) == 2
    assert report["slices"][0]["cuts"] == ["nz"]
    assert report["runs"] == 4 and report["cache_hits"] >= 1
    assert report["cache_misses"][0]["symbol"] == "first run"
    assert all("compile_ms" in s for s in report["slices"])


def test_plan_without_compiling(gs):
    jit = gs.JitSession(nonzero_model())
    p = jit.plan({"x": np.ones((2, 4), np.float32)})
    assert (p["slice_nodes"], p["remaining_nodes"], p["cuts"]) == (2, 2, ["nz"])
    assert any(n["node"] == "nz" and n["reason"].startswith("cut: data-dependent") for n in p["notes"])
    assert jit.report["compiles"] == 0


SEQUENCES = {
    "cls": [(6, 3, 48, 192), (2, 3, 48, 192), (6, 3, 48, 192)],
    "rec": [(1, 3, 48, 320), (1, 3, 48, 160), (2, 3, 48, 320)],
    "det": [(1, 3, 320, 480), (1, 3, 224, 224)],
}


@pytest.mark.parametrize("key", sorted(SEQUENCES))
def test_real_models_online_equal_their_static_compiles(gs, key):
    """A sequence of input shapes through one online session, each run against atc's compile for that shape."""
    model = real_model(key)
    jit = gs.JitSession(model, threads=1)
    for i, shape in enumerate(SEQUENCES[key]):
        x = np.random.RandomState(i).rand(*shape).astype(np.float32)
        want = gs.compile(model, input_shape={"x": list(shape)}).session(threads=1).run({"x": x})
        got = jit.run({"x": x})
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and np.array_equal(g, w), f"{key} at {shape}"
    report = jit.report
    distinct = len(set(SEQUENCES[key]))
    assert report["compiles"] == distinct * len(report["slices"])
    assert report["cache_hits"] == (len(SEQUENCES[key]) - distinct) * len(report["slices"])


def test_threads_share_one_session(gs):
    jit = gs.JitSession(nonzero_model())
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    want = jit.run({"x": x})[0]
    results = []
    threads = [threading.Thread(target=lambda: results.append(jit.run({"x": x})[0])) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.array_equal(r, want) for r in results)
    assert jit.report["compiles"] == 2


def test_errors(gs):
    with pytest.raises(gs.InvalidArgumentError, match="cut must be 'auto', 'data' or 'never'"):
        gs.JitSession(nonzero_model(), cut="sometimes")
    with pytest.raises(ValueError, match="--jit_dynamic_after must not be negative"):
        gs.JitSession(nonzero_model(), dynamic_after=-1)
    jit = gs.JitSession(nonzero_model())
    with pytest.raises(LookupError, match="the model has no input 'y'"):
        jit.run({"x": np.ones((1, 4), np.float32), "y": np.ones(1)})
    with pytest.raises(ValueError, match="never casts"):
        jit.run({"x": np.ones((1, 4), np.float64)})
    with pytest.raises(gs.InvalidArgumentError, match="feeds must be a dict"):
        jit.run([np.ones((1, 4), np.float32)])  # type: ignore[arg-type]
    with pytest.raises(gs.InvalidArgumentError, match="feeds must be a dict"):
        jit.plan([np.ones((1, 4), np.float32)])  # type: ignore[arg-type]


def test_errors_are_omruns_lines(gs, tmp_path):
    """The same fault gives the line omrun --jit prints."""
    model = tmp_path / "nz.onnx"
    model.write_bytes(nonzero_model())
    p = subprocess.run([str(OMRUN), "--jit", f"--model={model}", "--random_input", "--jit_dynamic_after=-1"],
                       capture_output=True, text=True)
    assert p.returncode == 1
    line = p.stderr.strip()
    assert line.startswith("omrun: error: ")
    with pytest.raises(gs.Error) as e:
        gs.JitSession(model, dynamic_after=-1)
    assert str(e.value) == line[len("omrun: error: "):]
