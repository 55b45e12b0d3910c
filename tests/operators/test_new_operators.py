"""Each new operator in a one-node model: compiled by atc, run by omrun, compared with ONNX Runtime on the same
inputs (float: within 1e-4 relative, 1e-5 absolute; integers exactly)."""
import subprocess

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

from conftest import helpers

NP = {TensorProto.FLOAT: np.float32, TensorProto.INT32: np.int32, TensorProto.UINT8: np.uint8,
      TensorProto.INT64: np.int64}


def one_node_model(op, inputs, outputs, opset, consts=None, **attrs):
    """inputs/outputs: (name, elem_type, dims); consts: name -> array given as initializers."""
    consts = consts or {}
    node = helper.make_node(op, [i[0] for i in inputs] + list(consts), [o[0] for o in outputs], **attrs)
    g = helper.make_graph([node], op.lower(), [helper.make_tensor_value_info(*i) for i in inputs],
                          [helper.make_tensor_value_info(*o) for o in outputs],
                          initializer=[onnx.numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def run_graphsplit(model, feeds, work):
    work.mkdir(parents=True, exist_ok=True)
    path = work / "model.onnx"
    onnx.save(model, str(path))
    helpers.atc(f"--model={path}", f"--output={work / 'model'}")
    out = work / "out"
    helpers.run([helpers.OMRUN, f"--model={work / 'model.om'}", "--input=" + helpers.write_inputs(feeds, work / "in"),
                 f"--output={out}", "--threads=1"])
    results = []
    for k in range(len(model.graph.output)):
        t = onnx.TensorProto()
        t.ParseFromString((out / f"output_{k}.pb").read_bytes())
        results.append(onnx.numpy_helper.to_array(t))
    return results, path


def assert_like_ort(model, feeds, work):
    got, path = run_graphsplit(model, feeds, work)
    want = helpers.ort_run(path, feeds, work / "ort")
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if np.issubdtype(g.dtype, np.floating):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(g, w)
    return got


RNG = np.random.default_rng(16)


def test_mish(tmp_path):
    x = RNG.uniform(-4, 4, (3, 5)).astype(np.float32)
    m = one_node_model("Mish", [("x", TensorProto.FLOAT, [3, 5])], [("y", TensorProto.FLOAT, [3, 5])], 18)
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("elem", [TensorProto.INT32, TensorProto.UINT8])
def test_bitwise_binary_broadcasts(tmp_path, op, elem):
    a = RNG.integers(0, 200, (2, 4)).astype(NP[elem])
    b = RNG.integers(0, 200, (4,)).astype(NP[elem])
    m = one_node_model(op, [("a", elem, [2, 4]), ("b", elem, [4])], [("y", elem, [2, 4])], 18)
    assert_like_ort(m, {"a": a, "b": b}, tmp_path)


def test_bitwise_not(tmp_path):
    x = RNG.integers(-100, 100, (6,)).astype(np.int32)
    m = one_node_model("BitwiseNot", [("x", TensorProto.INT32, [6])], [("y", TensorProto.INT32, [6])], 18)
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("opset,per", [(18, "group"), (21, "channel")])
def test_group_normalization(tmp_path, opset, per):
    x = RNG.normal(size=(2, 6, 3, 3)).astype(np.float32)
    n = 3 if per == "group" else 6
    consts = {"scale": RNG.normal(size=n).astype(np.float32), "bias": RNG.normal(size=n).astype(np.float32)}
    m = one_node_model("GroupNormalization", [("x", TensorProto.FLOAT, [2, 6, 3, 3])],
                       [("y", TensorProto.FLOAT, [2, 6, 3, 3])], opset, consts, num_groups=3, epsilon=1e-3)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_col2im(tmp_path):
    x = RNG.normal(size=(1, 2 * 4, 9)).astype(np.float32)  # C=2, block 2x2, a 4x4 image at stride 1: 3x3 blocks
    consts = {"image_shape": np.array([4, 4], np.int64), "block_shape": np.array([2, 2], np.int64)}
    m = one_node_model("Col2Im", [("x", TensorProto.FLOAT, [1, 8, 9])], [("y", TensorProto.FLOAT, None)], 18,
                       consts)
    y = assert_like_ort(m, {"x": x}, tmp_path)[0]
    assert y.shape == (1, 2, 4, 4)


@pytest.mark.parametrize("target", [[3, 7], [6, 2]])
def test_center_crop_pad(tmp_path, target):
    x = RNG.normal(size=(5, 4, 2)).astype(np.float32)
    m = one_node_model("CenterCropPad", [("x", TensorProto.FLOAT, [5, 4, 2])], [("y", TensorProto.FLOAT, None)],
                       18, {"shape": np.array(target, np.int64)}, axes=[0, 1])
    assert assert_like_ort(m, {"x": x}, tmp_path)[0].shape == (target[0], target[1], 2)


@pytest.mark.parametrize("size,align", [([2, 3, 4, 5], 0), ([2, 3, 4, 5], 1), ([1, 1, 2, 3, 4], 0)])
def test_affine_grid(tmp_path, size, align):
    s = len(size) - 2
    theta = RNG.normal(size=(size[0], s, s + 1)).astype(np.float32)
    m = one_node_model("AffineGrid", [("theta", TensorProto.FLOAT, [size[0], s, s + 1])],
                       [("grid", TensorProto.FLOAT, None)], 20, {"size": np.array(size, np.int64)},
                       align_corners=align)
    assert assert_like_ort(m, {"theta": theta}, tmp_path)[0].shape == (size[0], *size[2:], s)


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization(tmp_path, p):
    x = RNG.normal(size=(3, 4)).astype(np.float32)
    m = one_node_model("LpNormalization", [("x", TensorProto.FLOAT, [3, 4])], [("y", TensorProto.FLOAT, [3, 4])],
                       17, axis=0, p=p)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_global_lp_pool(tmp_path):
    x = RNG.normal(size=(2, 3, 4, 4)).astype(np.float32)
    m = one_node_model("GlobalLpPool", [("x", TensorProto.FLOAT, [2, 3, 4, 4])], [("y", TensorProto.FLOAT, None)],
                       17, p=3)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_dft_opset20_axis_input(tmp_path):
    x = RNG.normal(size=(2, 6, 5, 1)).astype(np.float32)
    m = one_node_model("DFT", [("x", TensorProto.FLOAT, [2, 6, 5, 1])], [("y", TensorProto.FLOAT, None)], 20,
                       {"dft_length": np.array(8, np.int64), "axis": np.array(-2, np.int64)}, onesided=1)
    y = assert_like_ort(m, {"x": x}, tmp_path)[0]
    np.testing.assert_allclose(y[..., 0] + 1j * y[..., 1], np.fft.rfft(x[..., 0], 8, axis=2), rtol=1e-4, atol=1e-4)


def test_rms_normalization_opset23(tmp_path):
    """Past ONNX Runtime 1.20: against the specification's formula."""
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    scale = RNG.normal(size=(4,)).astype(np.float32)
    m = one_node_model("RMSNormalization", [("x", TensorProto.FLOAT, [2, 3, 4])], [("y", TensorProto.FLOAT, None)],
                       23, {"scale": scale}, axis=-1, epsilon=1e-5)
    y = run_graphsplit(m, {"x": x}, tmp_path)[0][0]
    want = x / np.sqrt(np.mean(x.astype(np.float64) ** 2, axis=-1, keepdims=True) + 1e-5) * scale
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


def test_strings_opset20(tmp_path):
    """StringConcat, StringSplit and RegexFullMatch (RE2) against Python's own string functions."""
    s = TensorProto.STRING
    nodes = [helper.make_node("StringConcat", ["a", "b"], ["cat"]),
             helper.make_node("StringSplit", ["cat"], ["parts", "count"], delimiter="-"),
             helper.make_node("RegexFullMatch", ["cat"], ["match"], pattern=r"[a-z]+-\d+")]
    g = helper.make_graph(nodes, "strings", [helper.make_tensor_value_info("a", s, [3]),
                                             helper.make_tensor_value_info("b", s, [3])],
                          [helper.make_tensor_value_info("parts", s, None),
                           helper.make_tensor_value_info("count", TensorProto.INT64, None),
                           helper.make_tensor_value_info("match", TensorProto.BOOL, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=8)
    a = np.array(["ab-", "x", "déjà-"], dtype=object)
    b = np.array(["12", "-y-z", "vu"], dtype=object)
    parts, count, match = run_graphsplit(m, {"a": a, "b": b}, tmp_path)[0]
    joined = [x + y for x, y in zip(a, b)]
    want = [j.split("-") for j in joined]
    width = max(len(w) for w in want)
    assert count.tolist() == [len(w) for w in want]
    assert [[v if isinstance(v, str) else v.decode() for v in row] for row in parts] == [w + [""] * (width - len(w)) for w in want]
    assert match.tolist() == [True, False, False]


# ---- operators whose semantics changed in opsets 18-21
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_opset19_axes_and_modes(tmp_path, mode):
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    m = one_node_model("Pad", [("x", TensorProto.FLOAT, [3, 4, 5])], [("y", TensorProto.FLOAT, None)], 19,
                       {"pads": np.array([1, 2, 2, 1], np.int64), "value": np.array(0.5, np.float32),
                        "axes": np.array([0, -1], np.int64)}, mode=mode)
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceSumSquare", "ReduceL2", "ReduceLogSumExp"])
def test_reductions_opset18_axes_input(tmp_path, op):
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    m = one_node_model(op, [("x", TensorProto.FLOAT, [2, 3, 4])], [("y", TensorProto.FLOAT, None)], 18,
                       {"axes": np.array([0, 2], np.int64)}, keepdims=0)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_split_opset18_num_outputs(tmp_path):
    x = RNG.normal(size=(7, 2)).astype(np.float32)
    m = one_node_model("Split", [("x", TensorProto.FLOAT, [7, 2])],
                       [(n, TensorProto.FLOAT, None) for n in ("a", "b", "c")], 18, axis=0, num_outputs=3)
    assert [y.shape[0] for y in assert_like_ort(m, {"x": x}, tmp_path)] == [3, 3, 1]


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_scatter_elements_opset18_min_max(tmp_path, reduction):
    x = RNG.normal(size=(3, 3)).astype(np.float32)
    upd = RNG.normal(size=(2, 3)).astype(np.float32)
    m = one_node_model("ScatterElements", [("x", TensorProto.FLOAT, [3, 3]), ("u", TensorProto.FLOAT, [2, 3])],
                       [("y", TensorProto.FLOAT, None)], 18,
                       {"idx": np.array([[1, 0, 2], [0, 2, 1]], np.int64)}, axis=0, reduction=reduction)
    m.graph.node[0].input[:] = ["x", "idx", "u"]
    assert_like_ort(m, {"x": x, "u": upd}, tmp_path)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
def test_resize_opset18_keep_aspect_ratio(tmp_path, policy):
    x = RNG.normal(size=(1, 1, 4, 6)).astype(np.float32)
    m = one_node_model("Resize", [("x", TensorProto.FLOAT, [1, 1, 4, 6])], [("y", TensorProto.FLOAT, None)], 18,
                       {"roi": np.array([], np.float32), "scales": np.array([], np.float32),
                        "sizes": np.array([5, 5], np.int64)}, mode="linear", axes=[2, 3],
                       keep_aspect_ratio_policy=policy)
    assert_like_ort(m, {"x": x}, tmp_path)


def test_resize_opset18_antialias(tmp_path):
    x = RNG.normal(size=(1, 1, 8, 8)).astype(np.float32)
    m = one_node_model("Resize", [("x", TensorProto.FLOAT, [1, 1, 8, 8])], [("y", TensorProto.FLOAT, None)], 18,
                       {"roi": np.array([], np.float32), "scales": np.array([1, 1, 0.5, 0.5], np.float32)},
                       mode="linear", antialias=1)
    assert_like_ort(m, {"x": x}, tmp_path)


@pytest.mark.parametrize("mode,scales", [("linear", [1, 1, 0.5, 0.5]), ("cubic", [1, 1, 0.6, 0.35]),
                                         ("linear", [1, 1, 0.7, 1.5])])
def test_resize_opset18_antialias_modes(tmp_path, mode, scales):
    x = RNG.normal(size=(1, 2, 9, 8)).astype(np.float32)
    m = one_node_model("Resize", [("x", TensorProto.FLOAT, [1, 2, 9, 8])], [("y", TensorProto.FLOAT, None)], 18,
                       {"roi": np.array([], np.float32), "scales": np.array(scales, np.float32)},
                       mode=mode, antialias=1)
    assert_like_ort(m, {"x": x}, tmp_path)


# ---- opset 23, past ONNX Runtime 1.20: against numpy written from the specification
def sdpa_reference(q, k, v, mask=None, causal=False, scale=None, softcap=0.0):
    """q [B, Hq, Sq, D], k/v [B, Hkv, T, D]: scores, bias, softcap, softmax, weighted values."""
    group = q.shape[1] // k.shape[1]
    k = np.repeat(k, group, axis=1).astype(np.float64)
    v = np.repeat(v, group, axis=1).astype(np.float64)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = s + (np.where(mask, 0, -np.inf) if mask.dtype == bool else mask)
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), k=1)
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def test_attention_gqa_with_past_and_bool_mask(tmp_path):
    B, Hq, Hkv, S, P, D = 2, 4, 2, 3, 2, 8
    q = RNG.normal(size=(B, Hq, S, D)).astype(np.float32)
    k = RNG.normal(size=(B, Hkv, S, D)).astype(np.float32)
    v = RNG.normal(size=(B, Hkv, S, D)).astype(np.float32)
    pk = RNG.normal(size=(B, Hkv, P, D)).astype(np.float32)
    pv = RNG.normal(size=(B, Hkv, P, D)).astype(np.float32)
    mask = RNG.uniform(size=(S, S + P)) > 0.3
    mask[:, 0] = True
    f = TensorProto.FLOAT
    node = helper.make_node("Attention", ["q", "k", "v", "mask", "pk", "pv"], ["y", "present_k", "present_v"])
    g = helper.make_graph([node], "attention",
                          [helper.make_tensor_value_info(n, f, a.shape) for n, a in
                           [("q", q), ("k", k), ("v", v), ("pk", pk), ("pv", pv)]] +
                          [helper.make_tensor_value_info("mask", TensorProto.BOOL, mask.shape)],
                          [helper.make_tensor_value_info(n, f, None) for n in ("y", "present_k", "present_v")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    y, present_k, present_v = run_graphsplit(m, {"q": q, "k": k, "v": v, "pk": pk, "pv": pv, "mask": mask},
                                             tmp_path)[0]
    ks, vs = np.concatenate([pk, k], axis=2), np.concatenate([pv, v], axis=2)
    np.testing.assert_array_equal(present_k, ks)
    np.testing.assert_array_equal(present_v, vs)
    np.testing.assert_allclose(y, sdpa_reference(q, ks, vs, mask=mask), rtol=1e-5, atol=1e-6)


def test_attention_3d_causal_softcap(tmp_path):
    B, H, S, D = 1, 2, 5, 4
    q = RNG.normal(size=(B, S, H * D)).astype(np.float32)
    k = RNG.normal(size=(B, S, H * D)).astype(np.float32)
    v = RNG.normal(size=(B, S, H * D)).astype(np.float32)
    f = TensorProto.FLOAT
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], q_num_heads=H, kv_num_heads=H, is_causal=1,
                            softcap=2.0, scale=0.3)
    g = helper.make_graph([node], "attention", [helper.make_tensor_value_info(n, f, [B, S, H * D]) for n in "qkv"],
                          [helper.make_tensor_value_info("y", f, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    y = run_graphsplit(m, {"q": q, "k": k, "v": v}, tmp_path)[0][0]
    heads = lambda a: a.reshape(B, S, H, D).transpose(0, 2, 1, 3)  # noqa: E731
    want = sdpa_reference(heads(q), heads(k), heads(v), causal=True, scale=0.3, softcap=2.0)
    np.testing.assert_allclose(y, want.transpose(0, 2, 1, 3).reshape(B, S, H * D), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding(tmp_path, interleaved):
    B, H, S, D, rot = 2, 2, 3, 8, 6
    x = RNG.normal(size=(B, H, S, D)).astype(np.float32)
    angles = RNG.uniform(0, 3, size=(10, rot // 2))
    cos, sin = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)
    pos = RNG.integers(0, 10, size=(B, S)).astype(np.int64)
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], interleaved=interleaved,
                            rotary_embedding_dim=rot)
    f = TensorProto.FLOAT
    g = helper.make_graph([node], "rope", [helper.make_tensor_value_info("x", f, x.shape),
                                           helper.make_tensor_value_info("pos", TensorProto.INT64, pos.shape)],
                          [helper.make_tensor_value_info("y", f, None)],
                          initializer=[onnx.numpy_helper.from_array(cos, "cos"),
                                       onnx.numpy_helper.from_array(sin, "sin")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    y = run_graphsplit(m, {"x": x, "pos": pos}, tmp_path)[0][0]
    c, s = cos[pos][:, None], sin[pos][:, None]  # [B, 1, S, rot/2]
    r = x[..., :rot].astype(np.float64)
    a, b = (r[..., 0::2], r[..., 1::2]) if interleaved else (r[..., : rot // 2], r[..., rot // 2:])
    out_a, out_b = a * c - b * s, b * c + a * s
    want = x.astype(np.float64).copy()
    if interleaved:
        want[..., 0:rot:2], want[..., 1:rot:2] = out_a, out_b
    else:
        want[..., : rot // 2], want[..., rot // 2: rot] = out_a, out_b
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset,attrs", [(17, {"p": 2}), (18, {"p": 3, "strides": [2, 2], "pads": [1, 0, 1, 1]}),
                                         (18, {"p": 1, "dilations": [2, 1], "ceil_mode": 1, "strides": [2, 2]})])
def test_lp_pool(tmp_path, opset, attrs):
    x = RNG.normal(size=(1, 2, 7, 6)).astype(np.float32)
    m = one_node_model("LpPool", [("x", TensorProto.FLOAT, [1, 2, 7, 6])], [("y", TensorProto.FLOAT, None)], opset,
                       kernel_shape=[3, 2], **attrs)
    assert_like_ort(m, {"x": x}, tmp_path)


def deform_model(k, group, og, masked, shapes):
    names = ["x", "w", "offset", "", "mask"] if masked else ["x", "w", "offset"]
    node = helper.make_node("DeformConv", names, ["y"], kernel_shape=[k, k], pads=[1, 0, 1, 0], strides=[2, 2],
                            group=group, offset_group=og)
    g = helper.make_graph([node], "deform", [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shapes[n]))
                                             for n in names if n],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


def deform_reference(x, w, offset, mask, group, og):
    """Loop-by-loop DeformConv: each tap's bilinear sample (zero outside) at its shifted position."""
    N, C, H, W = x.shape
    M, _, k, _ = w.shape
    OH, OW = offset.shape[2:]
    y = np.zeros((N, M, OH, OW))

    def sample(plane, py, px):
        if py <= -1 or py >= H or px <= -1 or px >= W:
            return 0.0
        y0, x0 = int(np.floor(py)), int(np.floor(px))
        total = 0.0
        for yy, wy in ((y0, 1 - (py - y0)), (y0 + 1, py - y0)):
            for xx, wx in ((x0, 1 - (px - x0)), (x0 + 1, px - x0)):
                if 0 <= yy < H and 0 <= xx < W:
                    total += wy * wx * plane[yy, xx]
        return total

    for n in range(N):
        for o in range(M):
            g = o // (M // group)
            for oh in range(OH):
                for ow in range(OW):
                    acc = 0.0
                    for c in range(C // group):
                        ch = g * (C // group) + c
                        grp = ch // (C // og)
                        for i in range(k):
                            for j in range(k):
                                t = i * k + j
                                dy = offset[n, grp * 2 * k * k + 2 * t, oh, ow]
                                dx = offset[n, grp * 2 * k * k + 2 * t + 1, oh, ow]
                                m = 1.0 if mask is None else mask[n, grp * k * k + t, oh, ow]
                                v = sample(x[n, ch], oh * 2 - 1 + i + dy, ow * 2 + j + dx)
                                acc += w[o, c, i, j] * m * v
                    y[n, o, oh, ow] = acc
    return y


def test_deform_conv_with_zero_offsets_is_conv(tmp_path):
    """Against ONNX Runtime's Conv (ONNX Runtime 1.20 has no DeformConv): zero offsets sample the regular grid."""
    x = RNG.normal(size=(1, 4, 6, 5)).astype(np.float32)
    w = RNG.normal(size=(4, 2, 3, 3)).astype(np.float32)
    offset = np.zeros((1, 2 * 9, 3, 2), np.float32)
    got = run_graphsplit(deform_model(3, 2, 1, False, {"x": x.shape, "w": w.shape, "offset": offset.shape}),
                         {"x": x, "w": w, "offset": offset}, tmp_path / "deform")[0][0]
    conv = one_node_model("Conv", [("x", TensorProto.FLOAT, [1, 4, 6, 5])], [("y", TensorProto.FLOAT, None)], 17,
                          {"w": w}, kernel_shape=[3, 3], pads=[1, 0, 1, 0], strides=[2, 2], group=2)
    onnx.save(conv, str(tmp_path / "conv.onnx"))
    want = helpers.ort_run(tmp_path / "conv.onnx", {"x": x}, tmp_path / "ort")[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("masked,groups", [(False, (1, 1)), (True, (2, 2))])
def test_deform_conv_against_a_loop_reference(tmp_path, masked, groups):
    group, og = groups
    x = RNG.normal(size=(1, 4, 6, 5)).astype(np.float32)
    w = RNG.normal(size=(4, 4 // group, 3, 3)).astype(np.float32)
    feeds = {"x": x, "w": w, "offset": RNG.normal(scale=1.5, size=(1, og * 18, 3, 2)).astype(np.float32)}
    if masked:
        feeds["mask"] = RNG.uniform(size=(1, og * 9, 3, 2)).astype(np.float32)
    m = deform_model(3, group, og, masked, {n: a.shape for n, a in feeds.items()})
    got = run_graphsplit(m, feeds, tmp_path)[0][0]
    want = deform_reference(x, w, feeds["offset"], feeds.get("mask"), group, og)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
