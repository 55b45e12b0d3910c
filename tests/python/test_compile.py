"""compile() is atc: the same .om bytes, the same reports, the same error texts."""
import json

import pytest

from conftest import BUILD, REAL, atc, atc_error, real_model


def bad_pipeline_text() -> str:
    """The default pipeline (with its plugin folder made absolute) plus a pass no plugin provides."""
    share = BUILD / "share" / "graphsplit"
    text = (share / "pipeline.toml").read_text().replace("${CONFIG_DIR}", str(share))
    return text + '\n[[pipeline]]\npass = "std.no_such_pass"\n'


@pytest.mark.parametrize("key", sorted(REAL))
def test_save_is_byte_identical_to_atc(gs, tmp_path, key):
    model = real_model(key)
    shape = REAL[key][1]
    atc(f"--model={model}", f"--output={tmp_path / 'atc'}", f"--input_shape={shape}",
        f"--partition_report={tmp_path / 'report.json'}", f"--dump_placement={tmp_path / 'placement.json'}")
    c = gs.compile(model, input_shape=shape)
    c.save(tmp_path / "py.om")
    assert (tmp_path / "py.om").read_bytes() == (tmp_path / "atc.om").read_bytes()
    assert c.partition_report == json.loads((tmp_path / "report.json").read_text())
    assert c.placement_report == json.loads((tmp_path / "placement.json").read_text())


def test_gear_model_is_byte_identical_to_atc(gs, tmp_path):
    model = real_model("det")
    atc(f"--model={model}", f"--output={tmp_path / 'atc'}", "--input_shape=x:-1,3,640,640",
        "--dynamic_batch_size=1,2", f"--partition_report={tmp_path / 'report.json'}")
    c = gs.compile(model, input_shape={"x": [None, 3, 640, 640]}, dynamic_batch_size=[1, 2])
    assert c.to_bytes() == (tmp_path / "atc.om").read_bytes()
    assert c.partition_report == json.loads((tmp_path / "report.json").read_text())


def test_options_dict_and_explain(gs, tmp_path):
    model = real_model("cls")
    c = gs.compile(model, input_shape={"x": [6, 3, 48, 192]}, options={"ge.exec.static_model_ops_lower_limit": 6})
    p = atc(f"--model={model}", f"--output={tmp_path / 'm'}", "--input_shape=x:6,3,48,192",
            "--options=ge.exec.static_model_ops_lower_limit=6", "--explain=p2o.Conv.0")
    assert c.to_bytes() == (tmp_path / "m.om").read_bytes()
    text = c.explain("p2o.Conv.0")
    assert text.strip() and text in p.stdout
    with pytest.raises(LookupError):
        c.explain("no_such_node")


def test_bytes_and_modelproto_inputs_give_the_same_model(gs):
    import onnx
    path = real_model("cls")
    a = gs.compile(path, input_shape="x:6,3,48,192").to_bytes()
    b = gs.compile(path.read_bytes(), input_shape="x:6,3,48,192").to_bytes()
    proto = onnx.load(str(path))
    before = proto.SerializeToString()
    c = gs.compile(proto, input_shape={"x": [6, 3, 48, 192]}).to_bytes()
    assert proto.SerializeToString() == before, "the input model is not modified"
    assert a == b == c


def test_progress_reports_every_entry(gs):
    seen = []
    gs.compile(real_model("cls"), input_shape="x:6,3,48,192", progress=lambda label, i, n: seen.append((label, i, n)))
    assert [i for _, i, _ in seen] == list(range(1, len(seen) + 1))
    assert seen[0][0] == "pass shape.infer" and all(n == len(seen) for _, _, n in seen)


def test_keyboard_interrupt_stops_after_the_entry(gs, tmp_path):
    seen = []

    def interrupt(label, i, n):
        seen.append(i)
        if i == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gs.compile(real_model("cls"), input_shape="x:6,3,48,192", progress=interrupt)
    assert seen == [1, 2, 3]


def test_sigint_during_compile_raises_keyboard_interrupt(gs):
    import os
    import signal

    def send_sigint(label, i, n):
        if i == 2:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        gs.compile(real_model("cls"), input_shape="x:6,3,48,192", progress=send_sigint)


@pytest.mark.parametrize("kwargs,args,error", [
    ({"input_shape": "x:1,a"}, ["--input_shape=x:1,a"], ValueError),
    ({"input_shape": "x:6,3,48,192", "dynamic_batch_size": [4]}, ["--input_shape=x:6,3,48,192", "--dynamic_batch_size=4"], ValueError),
    ({"options": {"ge.no_such_option": 1}}, ["--options=ge.no_such_option=1"], Exception),
    ({"input_shape": "y:1,3,48,192"}, ["--input_shape=y:1,3,48,192"], Exception),
])
def test_errors_are_atcs(gs, tmp_path, kwargs, args, error):
    model = real_model("cls")
    expected = atc_error(f"--model={model}", f"--output={tmp_path / 'm'}", *args)
    with pytest.raises(gs.Error) as e:
        gs.compile(model, **kwargs)
    assert isinstance(e.value, error)
    assert str(e.value) == expected


def test_missing_model_and_bad_pipeline(gs, tmp_path):
    missing = str(tmp_path / "missing.onnx")
    expected = atc_error(f"--model={missing}", f"--output={tmp_path / 'm'}")
    with pytest.raises(gs.Error) as e:
        gs.compile(missing)
    assert str(e.value) == expected
    bad = tmp_path / "bad.toml"
    bad.write_text(bad_pipeline_text())
    expected = atc_error(f"--model={real_model('cls')}", f"--output={tmp_path / 'm'}", f"--pipeline={bad}")
    with pytest.raises(gs.Error) as e:
        gs.compile(real_model("cls"), pipeline=bad)
    assert str(e.value) == expected
    with pytest.raises(gs.Error, match="no.such_pass"):
        gs.validate_pipeline(bad)
    with pytest.raises(gs.InvalidArgumentError, match="model must be a path"):
        gs.compile(12)


def test_validate_pipeline_and_list_plugins(gs):
    gs.validate_pipeline(BUILD / "share" / "graphsplit" / "pipeline.toml")
    with pytest.raises(gs.Error, match="<pipeline>:.*no.such_pass"):
        gs.validate_pipeline(bad_pipeline_text())
    plugins = gs.list_plugins()
    by_name = {p["name"]: p for p in plugins}
    assert {"ai_core", "multibatch", "std"} <= set(by_name)
    engines = [c for c in by_name["ai_core"]["components"] if c["kind"] == "engine"]
    assert [c["name"] for c in engines] == ["AIcoreEngine"] and engines[0]["op_types"] > 100
    assert all(p["refused"] is None for p in plugins if "bad" not in p["path"])
    text = gs.list_plugins_text()
    for p in plugins:
        assert p["path"] in text


def test_query_support_names_every_engines_verdict(gs):
    q = gs.query_support(real_model("cls"), input_shape={"x": [6, 3, 48, 192]})
    conv = q["p2o.Conv.0"]
    assert conv["engine"] == "AIcoreEngine"
    assert any(v["engine"] == "AIcoreEngine" and v["supported"] for v in conv["verdicts"])
    assert all("engine" in v for v in q.values())


def test_nodes_carry_their_engine_and_placement_reasons(gs):
    c = gs.compile(real_model("cls"), input_shape={"x": [6, 3, 48, 192]})
    conv = c.graph.nodes["p2o.Conv.0"]
    assert conv.engine == "AIcoreEngine"
    verdicts = [d for d in conv.decisions if not d["final"]]
    final = [d for d in conv.decisions if d["final"]]
    assert any(d["engine"] == "AIcoreEngine" and d["code"] == "OK" for d in verdicts)
    assert final and all(d["stage"].startswith("placement.") for d in final)
    assert gs.load_onnx(real_model("cls")).nodes["p2o.Conv.0"].decisions == []  # nothing decided before a compile


def test_load_onnx_refuses_input_shapes_as_compile_does(gs, tmp_path):
    model = real_model("cls")
    for bad in ("x:1,a", "x:0,3,48,192", "x:1;x:2"):
        expected = atc_error(f"--model={model}", f"--output={tmp_path / 'm'}", f"--input_shape={bad}")
        with pytest.raises(ValueError) as e:
            gs.load_onnx(model, input_shape=bad)
        assert str(e.value) == expected, bad
