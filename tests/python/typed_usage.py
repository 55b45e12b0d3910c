"""Checked by mypy --strict against the installed stubs (ctest python.mypy), never run: every public call of
the API with the types a user would write, so a stub that is wrong or missing fails the check."""
from typing import Any, Dict, List, Optional, Union

import numpy as np

import graphsplit as gs


def use(path: str) -> List[int]:
    g: gs.Graph = gs.load_onnx(path, input_shape={"x": [1, 3, None, None]})
    names: List[str] = [n.name for n in g.nodes]
    first: gs.Node = g.nodes[names[0]]
    dims: Optional[List[Union[int, str, None]]] = first.outputs[0].shape
    sub: Optional[gs.Graph] = g.get_subgraph("then")
    if sub is not None:
        g.remove_subgraph(sub)
    engine: Optional[str] = first.engine
    c: gs.CompiledModel = gs.compile(path, input_shape="x:1,3,48,320", options={"ge.topoSortingMode": 1},
                                     progress=lambda label, i, n: None)
    report: Dict[str, object] = c.partition_report
    c.save("/tmp/m.om")
    exported: bytes = c.export_onnx()
    page: str = c.partition_report_html()
    s: gs.Session = c.session(threads=1)
    outs = s.run({"x": np.zeros((1, 3, 48, 320), np.float32)})
    copies: int = s.input_copies
    gs.validate_pipeline("pipeline.toml")
    text: str = gs.list_plugins_text() + str(gs.list_plugins()[0]["name"]) + c.explain(names[0]) + g.to_dot() + g.to_json()
    support = gs.query_support(path)
    try:
        gs.Session(b"")
    except gs.InvalidArgumentError as e:
        text += str(e)
    jit = gs.JitSession(path, cut="data", dynamic_after=4, cache_per_slice=8)
    plan: Dict[str, Any] = jit.plan({"x": np.zeros((1, 3, 48, 320), np.float32)})
    online = jit.run({"x": np.zeros((1, 3, 48, 320), np.float32)})
    jit_report: Dict[str, Any] = jit.report
    del dims, engine, report, support, text, plan, jit_report
    return [len(outs), copies, len(online), len(jit.inputs)]
