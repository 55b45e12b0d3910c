"""omrun --profile: the runs as Chrome trace-event JSON (issue 20)."""
import json
import re

import pytest

from conftest import OMRUN, atc, one_line_error, real_feeds, real_model, run, write_inputs


def compiled(key, shape, tmp_path):
    args = [f"--model={real_model(key)}", f"--output={tmp_path / key}"]
    if shape:
        args.append(f"--input_shape={shape}")
    atc(*args)
    return tmp_path / f"{key}.om"


def profile(om, tmp_path, loop):
    trace = tmp_path / "trace.json"
    inputs = write_inputs(real_feeds(om.stem), tmp_path / "inputs")
    p = run([OMRUN, f"--model={om}", f"--input={inputs}", f"--loop={loop}", "--threads=1", f"--profile={trace}"])
    events = json.loads(trace.read_text())["traceEvents"]
    mean = float(re.search(r"mean ([0-9.]+) ms", p.stdout).group(1))
    segments = int(re.search(r"(\d+) engine segments", p.stdout).group(1))
    return [e for e in events if e["ph"] == "X"], mean, segments


def inside(e, outer):
    return outer["ts"] <= e["ts"] + 1e-3 and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def test_static_model_trace_adds_up(tmp_path):
    events, mean, segments = profile(compiled("rec", "x:1,3,48,320", tmp_path), tmp_path, loop=3)
    runs = [e for e in events if e["cat"] == "run"]
    assert [e["name"] for e in runs] == ["run 1", "run 2", "run 3"]
    # The runs follow each other on the timeline, and they are what omrun reports.
    assert all(a["ts"] + a["dur"] <= b["ts"] for a, b in zip(runs, runs[1:]))
    assert sum(e["dur"] for e in runs) / 1000 == pytest.approx(3 * mean, rel=1e-3)
    # Segments fill their run and kernels their segment, up to the host's own work between them. A run the OS
    # preempted (a loaded machine: the suite runs two tests at a time) has longer gaps, so each coverage is taken
    # from the best of the three runs (per segment for the kernels); containment holds in every run.
    coverage = {"segments": [], "kernels": {}}
    for r in runs:
        mine = [e for e in events if e["cat"] != "run" and inside(e, r)]
        segs = [e for e in mine if e["cat"] == "segment"]
        assert len(segs) == segments
        assert sum(e["dur"] for e in segs) <= r["dur"] * 1.001
        coverage["segments"].append(sum(e["dur"] for e in segs) / r["dur"])
        for j, s in enumerate(segs):
            assert s["args"]["engine"] and s["args"]["graph"] and int(s["args"]["arena_bytes"]) > 0
            assert s["args"]["inputs"].startswith("float32[1,3,48,320]")
            kernels = [e for e in mine if e["cat"] == "kernel" and inside(e, s)]
            # One event per kernel call: every operator of the segment, plus the layout conversions at the
            # edges of its channels-last regions (a convolution model has some), its time within the segment's.
            # A fused elementwise step ("first+k") runs k + 1 operators.
            conversions = [k for k in kernels if k["args"]["op"] in ("ToChannelsLast", "ToChannelsFirst")]
            fused = [int(k["args"]["node"].rsplit("+", 1)[1]) for k in kernels if k["args"]["op"] == "FusedElementwise"]
            assert fused and min(fused) >= 1
            assert len(kernels) - len(conversions) + sum(fused) == int(s["args"]["nodes"])
            assert conversions and all(k["args"]["outputs"].startswith("float32[") for k in conversions)
            assert all(k["args"]["depth"] == s["args"]["depth"] + 1 and k["args"]["op"] in k["name"] for k in kernels)
            assert sum(k["dur"] for k in kernels) <= s["dur"] * 1.001
            coverage["kernels"].setdefault(j, []).append(sum(k["dur"] for k in kernels) / s["dur"])
    assert max(coverage["segments"]) >= 0.90, coverage
    assert all(max(c) >= 0.90 for c in coverage["kernels"].values()), coverage


def test_control_flow_model_trace_nests(tmp_path):
    events, mean, _ = profile(compiled("silero_v5", "", tmp_path), tmp_path, loop=3)
    runs = [e for e in events if e["cat"] == "run"]
    assert len(runs) == 3
    controls = [e for e in events if e["cat"] == "control"]
    assert {e["name"].split(":")[0] for e in controls} >= {"PartitionedCall", "If"}
    for e in events:
        if e["cat"] == "run":
            continue
        assert any(inside(e, r) for r in runs), e["name"]
        depth = e["args"]["depth"]
        if depth > 0:  # inside a control-flow step one level up
            assert any(inside(e, c) and c["args"]["depth"] == depth - 1 for c in controls + [
                s for s in events if s["cat"] == "segment"]), e["name"]
    # The top-level steps fill their run, up to the host's work between them; the best of the runs counts (a
    # preempted one has longer gaps), and no run's steps add up to more than the run.
    gaps = []
    for r in runs:
        top = [e for e in events if e["cat"] != "run" and e["args"]["depth"] == 0 and inside(e, r)]
        assert sum(e["dur"] for e in top) <= r["dur"] * 1.001
        gaps.append(r["dur"] - sum(e["dur"] for e in top) - 0.10 * r["dur"])
    assert min(gaps) <= 50, gaps


def test_profile_errors(tmp_path):
    om = compiled("cls", "x:6,3,48,192", tmp_path)
    p = run([OMRUN, f"--model={om}", "--random_input", f"--output={tmp_path / 'out'}",
             f"--profile={tmp_path / 'missing' / 't.json'}"], check=False)
    assert "missing" in one_line_error(p, "omrun")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["cls.om"]
    # Outputs that cannot be written after the runs: the profile written before them goes too.
    (tmp_path / "a_file").write_text("")
    p = run([OMRUN, f"--model={om}", "--random_input", f"--output={tmp_path / 'a_file' / 'out'}",
             f"--profile={tmp_path / 't.json'}"], check=False)
    assert "a_file" in one_line_error(p, "omrun")
    assert sorted(f.name for f in tmp_path.iterdir()) == ["a_file", "cls.om"]
    p = run([OMRUN, "--jit", f"--model={real_model('cls')}", "--random_input",
             f"--profile={tmp_path / 't.json'}"], check=False)
    assert "--jit" in one_line_error(p, "omrun")
    assert not (tmp_path / "t.json").exists()
