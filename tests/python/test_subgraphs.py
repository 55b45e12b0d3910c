"""GE's subgraph API (GetAllSubgraphs, GetSubGraph, AddSubGraph, RemoveSubgraph) and node/edge editing, on a
model with nested If subgraphs built with onnx.helper."""
import pytest
from onnx import TensorProto, helper


OUTER_THEN, OUTER_ELSE = "outer_if_then_branch", "outer_if_else_branch"
INNER_THEN, INNER_ELSE = "inner_if_then_branch", "inner_if_else_branch"


def nested_if_model() -> bytes:
    """outer If: then = inner If (then: Identity, else: Abs), else = Neg. The importer names each subgraph
    <node>_<attribute>, registered in attribute order (onnx.helper sorts attributes: else before then)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])

    def branch(name, node):
        return helper.make_graph([node], name, [], [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, [2])])

    inner = helper.make_node("If", ["c"], ["t"], name="inner_if",
                             then_branch=branch("inner_then", helper.make_node("Identity", ["x"], ["ti"], name="ti")),
                             else_branch=branch("inner_else", helper.make_node("Abs", ["x"], ["ei"], name="ei")))
    outer_then = helper.make_graph([inner], "outer_then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    outer = helper.make_node("If", ["c"], ["y"], name="outer_if", then_branch=outer_then,
                             else_branch=branch("outer_else", helper.make_node("Neg", ["x"], ["n"], name="neg")))
    g = helper.make_graph([outer], "nested", [x, c], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


@pytest.fixture
def graph(gs):
    return gs.load_onnx(nested_if_model())


def test_all_subgraphs_in_registration_order(graph):
    assert [g.name for g in graph.subgraphs] == [OUTER_ELSE, OUTER_THEN, INNER_ELSE, INNER_THEN]
    outer_then = graph.get_subgraph(OUTER_THEN)
    assert [g.name for g in outer_then.subgraphs] == [INNER_ELSE, INNER_THEN]
    assert outer_then.parent_node.name == "outer_if"
    assert graph.get_subgraph(INNER_THEN).parent_node.graph == outer_then
    assert [g.name for g in graph.nodes["outer_if"].subgraphs] == [OUTER_ELSE, OUTER_THEN]


def test_missing_subgraph_is_none(graph):
    assert graph.get_subgraph("no_such_graph") is None
    with pytest.raises(LookupError, match="no subgraph named 'no_such_graph'"):
        graph.remove_subgraph("no_such_graph")


def test_add_subgraph_and_name_clash(gs, graph):
    node = graph.nodes["outer_if"]
    with pytest.raises(ValueError, match="already has a subgraph in attribute 'then_branch'"):
        graph.add_subgraph("fresh", node, "then_branch")
    with pytest.raises(ValueError, match=f"a subgraph named '{INNER_THEN}' exists already"):
        graph.add_subgraph(INNER_THEN, node, "extra_branch")
    added = graph.add_subgraph("extra", node, "extra_branch")
    assert added.name == "extra" and added.parent_node == node
    assert graph.get_subgraph("extra") == added
    assert [g.name for g in graph.subgraphs][-1] == "extra"
    assert isinstance(node.attrs["extra_branch"], gs.Graph)


def test_nested_removal_and_dead_handles(graph):
    inner_else = graph.get_subgraph(INNER_ELSE)
    ti = graph.get_subgraph(INNER_THEN).nodes["ti"]
    graph.remove_subgraph(OUTER_THEN)
    assert [g.name for g in graph.subgraphs] == [OUTER_ELSE]
    with pytest.raises(LookupError, match=f"subgraph '{INNER_ELSE}' was removed"):
        _ = inner_else.nodes
    with pytest.raises(LookupError, match=f"its graph '{INNER_THEN}' was removed"):
        _ = ti.type
    assert "then_branch" not in graph.nodes["outer_if"].attrs
    with pytest.raises(ValueError, match="root graph is not a subgraph"):
        graph.remove_subgraph(graph)


def test_verify_after_edits(gs, graph):
    graph.verify()
    sub = graph.get_subgraph(OUTER_ELSE)
    neg = sub.nodes["neg"]
    source = neg.input_nodes[0]
    relu = sub.add_node("Relu", inputs=1)
    sub.add_edge(neg, 0, relu, 0)
    sub.remove_edge(source, 0, neg, 0)
    sub.add_edge(relu, 0, neg, 0)  # neg -> relu -> neg
    with pytest.raises(gs.Error, match="cycle"):
        graph.verify()
    sub.remove_node(relu)
    with pytest.raises(LookupError, match="node 'Relu' was removed"):
        _ = relu.name
    sub.add_edge(source, 0, neg, 0)
    graph.verify()


def test_node_and_edge_editing(gs):
    g = gs.load_onnx(nested_if_model())
    sub = g.get_subgraph(OUTER_ELSE)
    relu = sub.add_node("Relu", inputs=1)
    assert relu.name == "Relu" and relu.inputs == [None]
    with pytest.raises(ValueError, match="exists already"):
        sub.add_node("Relu", name="Relu")
    with pytest.raises(ValueError, match="has no input 3"):
        sub.add_edge("neg", 0, relu, 3)
    sub.add_edge("neg", 0, relu, 0)
    assert relu.input_nodes[0].name == "neg"
    sub.remove_edge("neg", 0, relu, 0)
    assert relu.input_nodes == [None]


def test_node_inspection(gs):
    g = gs.load_onnx(nested_if_model())
    assert [v.name for v in g.inputs] == ["x", "c"]
    assert g.inputs[0].dtype == "float32" and g.inputs[0].shape == [2]
    assert g.inputs[1].shape == []
    node = g.nodes["outer_if"]
    assert node.type == "If" and node.outputs[0].shape == [2]
    assert "outer_if" in g.nodes and len(g.nodes) == sum(1 for _ in g.nodes)
    with pytest.raises(LookupError, match="no node named 'nope'"):
        g.nodes["nope"]


def test_symbolic_dims_are_kept(gs):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    m = helper.make_model(helper.make_graph([node], "pool", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    before = m.SerializeToString()
    g = gs.load_onnx(m)
    assert g.inputs[0].shape == ["N", 3, "H", "W"]
    assert g.outputs[0].shape == ["N", 3, "floor(H/2)", "floor(W/2)"]
    assert m.SerializeToString() == before  # the ModelProto passed in is not modified


def test_jupyter_picture_is_capped(gs):
    from conftest import real_model
    big = gs.load_onnx(real_model("det"))
    assert big.total_nodes > 500 and big._repr_svg_() is None
    small = gs.load_onnx(nested_if_model())
    try:
        import graphviz  # noqa: F401
    except ImportError:
        assert small._repr_svg_() is None  # no graphviz: Jupyter shows the text repr
    else:
        assert "<svg" in small._repr_svg_()
    assert small.to_dot().startswith("digraph")
