"""graphsplit: load, inspect and edit ONNX graphs, compile them into engine-partitioned models, and run them.

The same compile driver as the ``atc`` command (errors carry the line atc prints), the same runtime as ``omrun``.
Importing the package loads no plugin; plugins load when a pipeline or a session is built.
"""

from __future__ import annotations

import json as _json
import os as _os
from pathlib import Path as _Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _graphsplit
from ._graphsplit import (  # noqa: F401  (re-exported)
    DeviceError,
    Error,
    FailedPreconditionError,
    Graph,
    InternalError,
    InvalidArgumentError,
    Node,
    NodeList,
    NotFoundError,
    NotImplementedError,
    ResourceExhaustedError,
    UnsupportedError,
    ValueInfo,
)

__version__: str = _graphsplit.__version__
__all__ = [
    "CompiledModel", "DeviceError", "Error", "FailedPreconditionError", "Graph", "InternalError",
    "InvalidArgumentError", "JitSession", "Node", "NodeList", "NotFoundError", "NotImplementedError", "ResourceExhaustedError",
    "Session", "UnsupportedError", "ValueInfo", "compile", "list_plugins", "list_plugins_text", "load_om", "load_onnx",
    "query_support", "set_log_level", "validate_pipeline",
]


def _find_home() -> _Path:
    """The folder holding bin/, lib/graphsplit/plugins and share/graphsplit: the build tree (this package in
    build/python/graphsplit) or the install prefix (prefix/lib/pythonX.Y/dist-packages/graphsplit)."""
    here = _Path(__file__).resolve().parent
    for root in (here.parent.parent, here.parents[3] if len(here.parents) > 3 else here):
        if (root / "share" / "graphsplit" / "pipeline.toml").is_file():
            return root
    raise ImportError(f"graphsplit: no share/graphsplit/pipeline.toml above {here}; is the package installed "
                      "with its plugins?")


_HOME = _find_home()
_graphsplit._set_home(str(_HOME / "bin"))
_graphsplit._init_logging("warning")  # atc's default: warnings and errors on stderr


def set_log_level(level: str) -> None:
    """Log level on stderr: debug, info, warning, error or null (atc --log)."""
    _graphsplit._init_logging(level)

ModelLike = Union[str, "_os.PathLike[str]", bytes, Any]


def _model_request(model: ModelLike) -> Dict[str, Any]:
    """A path, ONNX bytes, or an onnx.ModelProto (serialized here; the object itself is never modified)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return {"model": "", "model_bytes": bytes(model)}
    if isinstance(model, (str, _os.PathLike)):
        return {"model": _os.fspath(model)}
    if hasattr(model, "SerializeToString"):
        name = getattr(getattr(model, "graph", None), "name", "") or "model"
        return {"model": f"<{name}>", "model_bytes": model.SerializeToString()}
    raise InvalidArgumentError(f"model must be a path, bytes or an onnx.ModelProto, not {type(model).__name__}")


def _dims_text(dims: Sequence[Union[int, None]]) -> str:
    return ",".join("-1" if d is None else str(int(d)) for d in dims)


def _input_shape_text(input_shape: Union[None, str, Mapping[str, Sequence[Optional[int]]]]) -> Optional[str]:
    """GE's "name:d0,d1;name2:d0" from a dict {name: [dims]} (None or -1: unknown); a string passes as is."""
    if input_shape is None or isinstance(input_shape, str):
        return input_shape
    if not isinstance(input_shape, Mapping):
        raise InvalidArgumentError("input_shape must be a dict {name: [dims]} or GE's string form")
    return ";".join(f"{name}:{_dims_text(dims)}" for name, dims in input_shape.items())


def _gears_text(value: Any, what: str) -> Optional[str]:
    """GE's gear strings: "1,2,4" for batch sizes, "224,224;448,448" for image sizes and dims."""
    if value is None or isinstance(value, str):
        return value
    items = list(value)
    if what == "dynamic_batch_size":
        return ",".join(str(int(b)) for b in items)
    return ";".join(_dims_text(g) for g in items)


def load_onnx(model: ModelLike, input_shape: Union[None, str, Mapping[str, Sequence[Optional[int]]]] = None,
              max_nodes: Optional[int] = None) -> Graph:
    """Imports an ONNX model (path, bytes or onnx.ModelProto) with graphsplit's shape inference."""
    request = _model_request(model)
    request["input_shape"] = _input_shape_text(input_shape)
    if max_nodes is not None:
        request["max_nodes"] = int(max_nodes)
    return _graphsplit._graph_of(_graphsplit._load_onnx(request))


def load_om(model: Union[str, "_os.PathLike[str]", bytes]) -> Graph:
    """Reads a compiled .om model (a path or its bytes)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _graphsplit._load_om(bytes(model), "<bytes>")
    path = _os.fspath(model)
    try:
        data = _Path(path).read_bytes()
    except OSError as e:
        raise NotFoundError(f"{path}: cannot read the file: {e.strerror}") from None
    return _graphsplit._load_om(data, path)


class CompiledModel:
    """The result of compile(): the partitioned graph, atc's reports as dicts, and the .om bytes."""

    def __init__(self, compiled: Any, request: Dict[str, Any]) -> None:
        self._compiled = compiled
        self._request = request
        self.graph: Graph = compiled.graph
        self.partition_report: Dict[str, Any] = _json.loads(compiled.partition_report)
        self.placement_report: Dict[str, Any] = _json.loads(compiled.placement_report)
        self.timing: str = compiled.timing

    def explain(self, node_name: str) -> str:
        """Why the node went where it did (atc --explain)."""
        return str(self._compiled.explain(node_name))

    def export_onnx(self) -> bytes:
        """The partitioned model as ONNX (atc --export_onnx): each PartitionedCall and engine segment a function
        of domain graphsplit, the decisions in the metadata; byte-identical to atc's file."""
        return bytes(self._compiled.export_onnx())

    def partition_report_html(self) -> str:
        """The partition report as one self-contained HTML page (atc --partition_report=FILE.html); needs
        Graphviz's dot."""
        return str(self._compiled.partition_report_html())

    def to_bytes(self) -> bytes:
        """The .om file's bytes; byte-identical to atc's output for the same model and options."""
        return bytes(self.graph.to_om())

    def save(self, path: Union[str, "_os.PathLike[str]"]) -> None:
        """Writes the .om file (atomically: a failed write leaves no file behind)."""
        target = _Path(_os.fspath(path))
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_bytes(self.to_bytes())
            _os.replace(tmp, target)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise Error(f"{target}: cannot write the model: {e.strerror}") from None

    def session(self, threads: Optional[int] = None, **options: Any) -> "Session":
        return Session(self, pipeline=self._request.get("pipeline"), plugin_paths=self._request.get("plugin_paths"),
                       threads=threads, **options)


def compile(model: ModelLike, pipeline: Optional[Union[str, "_os.PathLike[str]"]] = None,  # noqa: A001
            options: Optional[Mapping[str, Any]] = None,
            input_shape: Union[None, str, Mapping[str, Sequence[Optional[int]]]] = None,
            dynamic_batch_size: Union[None, str, Iterable[int]] = None,
            dynamic_image_size: Union[None, str, Iterable[Sequence[int]]] = None,
            dynamic_dims: Union[None, str, Iterable[Sequence[int]]] = None,
            input_format: Optional[str] = None,
            plugin_paths: Optional[Sequence[str]] = None,
            progress: Optional[Callable[[str, int, int], None]] = None) -> CompiledModel:
    """Compiles an ONNX model as atc does: the pipeline (default: the installed one), GE options as a dict
    ({"ge.exec.static_model_ops_lower_limit": 6}), input shapes, gears. ``progress(label, index, count)`` is
    called after each pipeline entry; Ctrl-C stops the compile after the running entry (KeyboardInterrupt)."""
    request = _model_request(model)
    if pipeline is not None:
        request["pipeline"] = _os.fspath(pipeline)
    request["plugin_paths"] = [str(p) for p in (plugin_paths or [])]
    if options is not None:
        if not isinstance(options, Mapping):
            raise InvalidArgumentError("options must be a dict of GE options")
        request["ge_options"] = [f"{k}={_option_text(v)}" for k, v in options.items()]
    request["input_shape"] = _input_shape_text(input_shape)
    request["dynamic_batch_size"] = _gears_text(dynamic_batch_size, "dynamic_batch_size")
    request["dynamic_image_size"] = _gears_text(dynamic_image_size, "dynamic_image_size")
    request["dynamic_dims"] = _gears_text(dynamic_dims, "dynamic_dims")
    request["input_format"] = input_format
    return CompiledModel(_graphsplit._compile(request, progress), request)


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if ";" in text:
        raise InvalidArgumentError(f"option value {text!r} contains ';'")
    return text


def _feeds(feeds: Mapping[str, Any]) -> Dict[str, Any]:
    if not isinstance(feeds, Mapping):
        raise InvalidArgumentError("feeds must be a dict {input name: numpy.ndarray}")
    return dict(feeds)


class _Runner:
    """What Session and JitSession share: the model's inputs and outputs, run, and the copy counter."""

    _session: Any

    @property
    def inputs(self) -> List[ValueInfo]:
        return list(self._session.inputs)

    @property
    def outputs(self) -> List[ValueInfo]:
        return list(self._session.outputs)

    def run(self, feeds: Mapping[str, Any]) -> List[Any]:
        """Runs once (the online mode compiles what these shapes need first); the outputs in model order, as
        read-only numpy arrays."""
        return list(self._session.run(_feeds(feeds)))

    @property
    def input_copies(self) -> int:
        """How many inputs were copied so far (non-contiguous, misaligned, byte-swapped or string arrays)."""
        return int(self._session.input_copies)


class Session(_Runner):
    """A compiled model ready to run (omrun's runtime). ``model``: a CompiledModel, a Graph from load_om, or
    the path or bytes of a .om file. Safe to share between threads (runs are serialised)."""

    def __init__(self, model: Union[CompiledModel, Graph, str, "_os.PathLike[str]", bytes],
                 pipeline: Optional[Union[str, "_os.PathLike[str]"]] = None,
                 plugin_paths: Optional[Sequence[str]] = None, threads: Optional[int] = None,
                 expand_partitioned_calls: bool = False, max_tensor_bytes: int = 0,
                 max_loop_iterations: int = 100_000_000, concurrent: str = "auto") -> None:
        if isinstance(model, CompiledModel):
            graph = model.graph
        elif isinstance(model, Graph):
            graph = model
        else:
            graph = load_om(model)
        if threads is not None:
            # OpenBLAS's thread pool is process-wide, as omrun --threads.
            _graphsplit._set_blas_threads(int(threads))
        opts = {
            "pipeline": _os.fspath(pipeline) if pipeline is not None else _graphsplit._default_pipeline(),
            "plugin_paths": [str(p) for p in (plugin_paths or [])],
            "expand_partitioned_calls": bool(expand_partitioned_calls),
            "max_tensor_bytes": int(max_tensor_bytes),
            "max_loop_iterations": int(max_loop_iterations),
            "concurrent": str(concurrent),
        }
        self._session = _graphsplit._Session(graph._model(), opts)

    @property
    def segment_stats(self) -> List[Dict[str, Any]]:
        return list(self._session.segment_stats)

    @property
    def runs(self) -> int:
        return int(self._session.runs)

    def timing_summary(self) -> str:
        return str(self._session.timing_summary)


class JitSession(_Runner):
    """The online mode (omrun --jit): the model is compiled slice by slice as the shapes of its values become
    known, with a cache of compiled slices keyed by the dimensions (and small shape values) each depends on.
    ``model``: an .onnx path, ONNX bytes or an onnx.ModelProto. Safe to share between threads."""

    def __init__(self, model: ModelLike, input_shape: Union[None, str, Mapping[str, Sequence[Optional[int]]]] = None,
                 pipeline: Optional[Union[str, "_os.PathLike[str]"]] = None,
                 plugin_paths: Optional[Sequence[str]] = None, threads: Optional[int] = None,
                 cut: str = "auto", dynamic_after: int = 2, cache_per_slice: int = 16,
                 cache_bytes: int = 1 << 32, max_tensor_bytes: int = 0,
                 max_loop_iterations: int = 100_000_000) -> None:
        request = _model_request(model)
        request["input_shape"] = _input_shape_text(input_shape)
        request["pipeline"] = _os.fspath(pipeline) if pipeline is not None else _graphsplit._default_pipeline()
        request["plugin_paths"] = [str(p) for p in (plugin_paths or [])]
        if threads is not None:
            _graphsplit._set_blas_threads(int(threads))
        request.update({"cut": str(cut), "dynamic_after": int(dynamic_after),
                        "cache_per_slice": int(cache_per_slice), "cache_bytes": int(cache_bytes),
                        "max_tensor_bytes": int(max_tensor_bytes),
                        "max_loop_iterations": int(max_loop_iterations)})
        self._session = _graphsplit._JitSession(request)

    def plan(self, feeds: Mapping[str, Any]) -> Dict[str, Any]:
        """What the first slice would hold for these inputs, without compiling: node counts, cuts, reasons."""
        return dict(self._session.plan(_feeds(feeds)))

    @property
    def report(self) -> Dict[str, Any]:
        """omrun --jit_report's content: slices, compiles, cache hits and misses (with what differed), time."""
        import json
        return dict(json.loads(self._session.report_json(True)))


_SVG_NODE_LIMIT = 500


def _graph_svg(self: Graph) -> Optional[str]:
    """Jupyter's picture of the graph, through graphviz when it is importable; None (text repr) for graphs over
    500 nodes, which graphviz cannot lay out readably."""
    if self.total_nodes > _SVG_NODE_LIMIT:
        return None
    try:
        import graphviz  # type: ignore[import]
    except ImportError:
        return None
    return str(graphviz.Source(self.to_dot()).pipe(format="svg").decode("utf-8"))


setattr(Graph, "_repr_svg_", _graph_svg)


def validate_pipeline(path_or_text: Union[str, "_os.PathLike[str]"],
                      plugin_paths: Optional[Sequence[str]] = None) -> None:
    """Checks a pipeline configuration (a file, or TOML text when no such file exists) as atc
    --validate_pipeline does; raises graphsplit.Error naming the first problem (all of them on later lines)."""
    text = _os.fspath(path_or_text)
    is_text = "\n" in text or not _Path(text).exists()
    _graphsplit._validate_pipeline(text, is_text, [str(p) for p in (plugin_paths or [])])


def query_support(model: ModelLike,
                  input_shape: Union[None, str, Mapping[str, Sequence[Optional[int]]]] = None,
                  pipeline: Optional[Union[str, "_os.PathLike[str]"]] = None,
                  plugin_paths: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, Any]]:
    """For each node of the model: the engine it is placed on and every asked engine's verdict with its reason
    (OpenVINO's query_model). Runs the pipeline to placement and beyond, as a compile does; writes nothing."""
    compiled = compile(model, pipeline=pipeline, input_shape=input_shape, plugin_paths=plugin_paths)
    out: Dict[str, Dict[str, Any]] = {}
    for p in compiled.placement_report.get("placements", []):
        key = p["node"] if p["graph"] == compiled.graph.name else f'{p["graph"]}/{p["node"]}'
        out[key] = {"type": p["type"], "engine": p.get("engine"), "decision": p.get("decision"),
                    "verdicts": p.get("verdicts", [])}
    return out


def list_plugins(plugin_paths: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """The plugins found beside the package (and in ``plugin_paths`` first), as atc --list_plugins finds them:
    per library its path, name, version, SDK and ABI, ``refused`` (why it could not be loaded, else None) and its
    components (kind, name, stage, summary, options, op table and its op-type count)."""
    return list(_graphsplit._describe_plugins([str(p) for p in (plugin_paths or [])]))


def list_plugins_text(plugin_paths: Optional[Sequence[str]] = None) -> str:
    """The same as atc --list_plugins prints it."""
    return str(_graphsplit._list_plugins([str(p) for p in (plugin_paths or [])]))
