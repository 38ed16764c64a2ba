"""Small ONNX models in the shapes real models users bring have
(tests/test_onnx_models.c): unused opset domains, symbolic dims and no
value_info, If, Pad's border modes, com.microsoft operators.

usage: python3 onnx_user_models.py CASE DIR
writes DIR/model.onnx and, for the cases with numbers, DIR/data/input_K.pb
and DIR/data/output_K.pb: inputs and the outputs numpy computes for them
(the reference fuselab's --expect compares its interpreter with).
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

RNG = np.random.default_rng(29)


def rand(*shape):
    return RNG.uniform(-1.5, 1.5, shape).astype(np.float32)


def vi(name, dims, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, dims)


def model(nodes, inputs, outputs, inits=(), domains=(), value_info=()):
    g = h.make_graph(nodes, "user", inputs, outputs, list(inits),
                     value_info=list(value_info))
    ops = [h.make_opsetid("", 17)]
    ops += [h.make_opsetid(d, 1) for d in domains]
    m = h.make_model(g, opset_imports=ops, producer_name="user")
    m.ir_version = 8
    return m


def save(out, m, ins=None, outs=None):
    onnx.save(m, os.path.join(out, "model.onnx"))
    if ins is None:
        return
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    for kind, arrays in (("input", ins), ("output", outs)):
        for k, (name, a) in enumerate(arrays):
            t = nh.from_array(np.asarray(a, np.float32), name)
            with open(os.path.join(data, f"{kind}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def gelu(x):
    erf = np.vectorize(math.erf)
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(np.float32)


def gelu_tanh(x):
    k = math.sqrt(2 / math.pi)
    return (0.5 * x * (1 + np.tanh(k * (x + 0.044715 * x ** 3))))


def layernorm(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def rmsnorm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def conv(x, w, b, pad):
    n, c, hh, ww = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = hh + 2 * pad - r + 1, ww + 2 * pad - s + 1
    y = np.zeros((n, k, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i:i + r, j:j + s]
            y[:, :, i, j] = np.tensordot(patch, w, ((1, 2, 3), (1, 2, 3)))
    return y + b.reshape(1, k, 1, 1)


# Silero VAD declares these and uses none.
UNUSED = ["ai.onnx.ml", "com.microsoft", "ai.onnx.training",
          "ai.onnx.preview.training", "com.microsoft.experimental",
          "com.ms.internal.nhwc", "org.pytorch.aten", "com.microsoft.nchwc"]


def case_unused_domains(out):
    """Eight declared domains no node uses; one node of an unknown domain
    (with a declared shape) becomes opaque."""
    nodes = [h.make_node("Relu", ["x"], ["r"], name="relu"),
             h.make_node("Frobnicate", ["r"], ["f"], name="frob",
                         domain="com.example"),
             h.make_node("Tanh", ["f"], ["y"], name="tanh")]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])],
              domains=UNUSED + ["com.example"],
              value_info=[vi("f", [2, 3])])
    save(out, m)


def case_unused_domains_runs(out):
    x = rand(2, 3)
    nodes = [h.make_node("Relu", ["x"], ["y"], name="relu")]
    m = model(nodes, [vi("x", ["batch", 3])], [vi("y", ["batch", 3])],
              domains=UNUSED)
    save(out, m, [("x", x)], [("y", np.maximum(x, 0))])


def case_symbolic(out):
    """Symbolic input dims (named and unk__N), no value_info, outputs
    declared with unk__N dims or with no shape at all."""
    x = rand(2, 3, 6, 5)
    w = rand(4, 3, 3, 3)
    b = rand(4)
    nodes = [h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1],
                         name="conv"),
             h.make_node("Relu", ["c"], ["y"], name="relu"),
             h.make_node("ReduceMean", ["y"], ["m"], axes=[2, 3],
                         keepdims=1, name="mean")]
    y = np.maximum(conv(x, w, b, 1), 0)
    outs = [vi("y", ["unk__7", "unk__8", "unk__9", "unk__10"]),
            h.make_tensor_value_info("m", T.FLOAT, None)]
    m = model(nodes, [vi("x", ["N", 3, "unk__0", "unk__1"])], outs,
              [nh.from_array(w, "w"), nh.from_array(b, "b")])
    save(out, m, [("x", x)], [("y", y), ("m", y.mean((2, 3), keepdims=True))])
    # what following the advice gives: ONNX shape inference's value_info,
    # symbolic dims and all
    inferred = onnx.shape_inference.infer_shapes(m)
    assert len(inferred.graph.value_info) > 0
    onnx.save(inferred, os.path.join(out, "inferred.onnx"))


def case_shared_param(out):
    """Two inputs with the same symbolic batch dim: --input-shape for
    one gives it to both."""
    a, b = rand(3, 4), rand(3, 4)
    nodes = [h.make_node("Add", ["a", "b"], ["y"], name="add")]
    m = model(nodes, [vi("a", ["batch", 4]), vi("b", ["batch", 4])],
              [vi("y", ["batch", 4])])
    save(out, m, [("a", a), ("b", b)], [("y", a + b)])


def case_symbolic_opaque(out):
    """An opaque op whose output declares a dim no input names."""
    nodes = [h.make_node("Frobnicate", ["x"], ["y"], name="frob",
                         domain="com.example")]
    m = model(nodes, [vi("x", ["N", 3])], [vi("y", ["N", "unk__5"])],
              domains=["com.example"])
    save(out, m)


def branch(name, nodes, outs):
    return h.make_graph(nodes, name, [], outs)


def case_if_known(out):
    """The exporter's pattern: If on a shape test folded at import; the
    branches read outer values and an initializer of their own."""
    x = rand(1, 4)
    w = rand(4)
    then_g = branch("then", [
        h.make_node("Mul", ["x", "w"], ["t1"], name="then_mul"),
        h.make_node("Add", ["t1", "two"], ["t2"], name="then_add")],
        [vi("t2", [1, 4])])
    then_g.initializer.append(nh.from_array(np.float32(2), "two"))
    else_g = branch("else", [h.make_node("Neg", ["x"], ["e1"],
                                         name="else_neg")],
                    [vi("e1", [1, 4])])
    nodes = [h.make_node("Shape", ["x"], ["s"], name="shape"),
             h.make_node("Gather", ["s", "zero"], ["n"], axis=0,
                         name="gather"),
             h.make_node("Equal", ["n", "one"], ["cond"], name="eq"),
             h.make_node("If", ["cond"], ["r"], then_branch=then_g,
                         else_branch=else_g, name="iff"),
             h.make_node("Sigmoid", ["r"], ["y"], name="sig")]
    inits = [nh.from_array(np.int64(0), "zero"),
             nh.from_array(np.int64(1), "one"), nh.from_array(w, "w")]
    m = model(nodes, [vi("x", ["N", 4])], [vi("y", ["N", 4])], inits)
    y = 1 / (1 + np.exp(-(x * w + 2)))
    save(out, m, [("x", x)], [("y", y)])


def case_if_else_output(out):
    """The else branch taken, its output an outer value and a graph
    output at once."""
    x = rand(2, 3)
    then_g = branch("then", [h.make_node("Neg", ["x"], ["t"])],
                    [vi("t", [2, 3])])
    else_g = branch("else", [], [vi("x", [2, 3])])
    nodes = [h.make_node("Constant", [], ["cond"],
                         value=h.make_tensor("c", T.BOOL, [], [False])),
             h.make_node("If", ["cond"], ["y"], then_branch=then_g,
                         else_branch=else_g, name="iff")]
    m = model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])])
    save(out, m, [("x", x)], [("y", x)])


def case_if_runtime(out):
    """An If on a run-time condition (Silero VAD tests its sample-rate
    input): opaque, its output shaped by what the branches declare."""
    then_g = branch("then", [h.make_node("Neg", ["x"], ["t"])],
                    [vi("t", [2, 3])])
    else_g = branch("else", [h.make_node("Relu", ["x"], ["e"])],
                    [vi("e", [2, 3])])
    nodes = [h.make_node("If", ["cond"], ["r"], then_branch=then_g,
                         else_branch=else_g, name="iff"),
             h.make_node("Tanh", ["r"], ["y"], name="tanh")]
    m = model(nodes, [vi("x", [2, 3]), vi("cond", [], T.BOOL)],
              [h.make_tensor_value_info("y", T.FLOAT, None)])
    save(out, m)


def case_if_opaque_branch(out):
    """An opaque op inside the branch taken: counted for its own type,
    not for If; its output read only by the outer graph."""
    then_g = branch("then", [
        h.make_node("Frobnicate", ["x"], ["f"], domain="com.example",
                    name="frob"),
        h.make_node("Relu", ["x"], ["t"], name="then_relu")],
        [vi("t", [2, 3])])
    then_g.value_info.append(vi("f", [2, 3]))
    nodes = [h.make_node("Constant", [], ["cond"],
                         value=h.make_tensor("c", T.BOOL, [], [True])),
             h.make_node("If", ["cond"], ["y"], then_branch=then_g,
                         else_branch=branch("else", [], [vi("x", [2, 3])]),
                         name="iff"),
             h.make_node("Add", ["y", "f"], ["z"], name="add")]
    m = model(nodes, [vi("x", [2, 3])], [vi("z", [2, 3])],
              domains=["com.example"])
    save(out, m)


def case_later_output(out):
    """A later output fuselab's mapping does not compute (inference
    BatchNormalization's running mean), read by a node or given out: the
    whole node is opaque (its first output too); the same op type with
    only output 0 read is mapped, and so are LayerNormalization's Mean and
    Dropout's mask, which fuselab computes."""
    nodes = [h.make_node("BatchNormalization", ["x", "g", "b", "m", "v"],
                         ["bn", "bn_mean"], name="bn_mean"),
             h.make_node("Relu", ["bn_mean"], ["br"], name="relu"),
             h.make_node("BatchNormalization", ["x", "g", "b", "m", "v"],
                         ["bn2", "unused"], name="bn_plain"),
             h.make_node("LayerNormalization", ["x", "g"], ["ln", "mean"],
                         axis=-1, name="ln_mean"),
             h.make_node("Dropout", ["x"], ["d", "mask"], name="drop")]
    params = [nh.from_array(np.ones(8, np.float32), n)
              for n in ("g", "b", "m", "v")]
    m = model(nodes, [vi("x", [2, 8])],
              [vi("bn", [2, 8]), vi("br", [8]), vi("bn2", [2, 8]),
               vi("ln", [2, 8]), vi("mean", [2, 1]),
               vi("mask", [2, 8], T.BOOL)],
              params, value_info=[vi("bn_mean", [8])])
    save(out, m)


def case_runtime_shape(out):
    """A Reshape to a shape given at run time: opaque, shaped as the
    model declares (out_decl) or an error naming why (no declaration)."""
    nodes = [h.make_node("Reshape", ["x", "shp"], ["y"], name="rs")]
    m = model(nodes, [vi("x", [2, 3]), vi("shp", [2], T.INT64)],
              [vi("y", [3, 2])])
    save(out, m)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    onnx.save(m, os.path.join(out, "undeclared.onnx"))


def case_pad_modes(out):
    x = rand(1, 2, 4, 5)
    p_reflect = np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64)
    p_edge = np.array([0, 1, 3, 0, 0, 2, 0, 1], np.int64)
    nodes = [h.make_node("Pad", ["x", "pr"], ["yr"], mode="reflect",
                         name="pad_reflect"),
             h.make_node("Pad", ["x", "pe"], ["ye"], mode="edge",
                         name="pad_edge")]
    yr = np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 3)), mode="reflect")
    ye = np.pad(x, ((0, 0), (1, 2), (3, 0), (0, 1)), mode="edge")
    m = model(nodes, [vi("x", [1, 2, 4, 5])],
              [vi("yr", list(yr.shape)), vi("ye", list(ye.shape))],
              [nh.from_array(p_reflect, "pr"), nh.from_array(p_edge, "pe")])
    save(out, m, [("x", x)], [("yr", yr), ("ye", ye)])


def case_pad_wrap(out):
    """Modes fuselab cannot model: opaque, each named once in the
    summary."""
    nodes = [h.make_node("Pad", ["x", "p"], ["y"], mode="wrap", name="pw"),
             h.make_node("Pad", ["y", "p"], ["z"], mode="wrap", name="pw2"),
             h.make_node("Pad", ["z", "p"], ["w"], mode="mirror",
                         name="pm"),
             # an initializer made a const tensor, then the Pad undone
             h.make_node("Pad", ["ci", "p"], ["cw"], mode="wrap",
                         name="pc"),
             h.make_node("Add", ["ci", "x"], ["s"], name="add")]
    m = model(nodes, [vi("x", [2, 3])],
              [vi("w", [2, 9]), vi("cw", [2, 5]), vi("s", [2, 3])],
              [nh.from_array(np.array([0, 1, 0, 1], np.int64), "p"),
               nh.from_array(rand(2, 3), "ci")],
              value_info=[vi("y", [2, 5]), vi("z", [2, 7])])
    save(out, m)


def case_msft(out):
    """Every com.microsoft operator fuselab maps, against numpy."""
    ms = "com.microsoft"
    x = rand(2, 3, 8)
    skip, bias, g, be = rand(2, 3, 8), rand(8), rand(8), rand(8)
    wm = rand(5, 8)
    xc, wc, bc = rand(1, 2, 5, 5), rand(3, 2, 3, 3), rand(3)
    n = lambda op, i, o, **a: h.make_node(op, i, o, domain=ms, name=o[0],
                                          **a)
    nodes = [
        n("Gelu", ["x"], ["gelu"]),
        n("FastGelu", ["x", "bias"], ["fast_gelu"]),
        n("FastGelu", ["x"], ["fast_gelu_nb"]),
        n("BiasGelu", ["x", "bias"], ["bias_gelu"]),
        n("QuickGelu", ["x"], ["quick_gelu"], alpha=1.5),
        n("QuickGelu", ["x"], ["quick_gelu_d"]),
        n("LayerNormalization", ["x", "g", "be"], ["ln"], epsilon=1e-3),
        n("SkipLayerNormalization", ["x", "skip", "g", "be", "bias"],
          ["sln", "", "", "sln_sum"], epsilon=1e-4),
        n("SkipLayerNormalization", ["x", "skip", "g"], ["sln2"]),
        n("SimplifiedLayerNormalization", ["x", "g"], ["rms"],
          epsilon=1e-3),
        n("SkipSimplifiedLayerNormalization", ["x", "skip", "g"],
          ["srms", "", "", "srms_sum"]),
        n("FusedMatMul", ["x", "wm"], ["fmm"], transB=1, alpha=0.5),
        n("FusedConv", ["xc", "wc", "bc"], ["fc_leaky"], pads=[1, 1, 1, 1],
          activation="LeakyRelu", activation_params=[0.2]),
        n("FusedConv", ["xc", "wc", "bc"], ["fc_clip"], pads=[1, 1, 1, 1],
          activation="Clip", activation_params=[-0.5, 0.7]),
        n("FusedConv", ["xc", "wc", "bc"], ["fc_hsig"], pads=[1, 1, 1, 1],
          activation="HardSigmoid", activation_params=[0.3, 0.4]),
        n("FusedConv", ["xc", "wc", "bc"], ["fc_relu"], pads=[1, 1, 1, 1],
          activation="Relu"),
    ]
    s = x + skip + bias
    c = conv(xc, wc, bc, 1)
    want = {
        "gelu": gelu(x),
        "fast_gelu": gelu_tanh(x + bias),
        "fast_gelu_nb": gelu_tanh(x),
        "bias_gelu": gelu(x + bias),
        "quick_gelu": x / (1 + np.exp(-1.5 * x)),
        "quick_gelu_d": x / (1 + np.exp(-1.702 * x)),
        "ln": layernorm(x, g, be, 1e-3),
        "sln": layernorm(s, g, be, 1e-4),
        "sln_sum": s,
        "sln2": layernorm(x + skip, g, 0, 1e-12),
        "rms": rmsnorm(x, g, 1e-3),
        "srms": rmsnorm(x + skip, g, 1e-5),
        "srms_sum": x + skip,
        "fmm": 0.5 * (x @ wm.T),
        "fc_leaky": np.where(c > 0, c, 0.2 * c),
        "fc_clip": np.clip(c, -0.5, 0.7),
        "fc_hsig": np.clip(0.3 * c + 0.4, 0, 1),
        "fc_relu": np.maximum(c, 0),
    }
    inits = [nh.from_array(a, k) for k, a in
             (("bias", bias), ("g", g), ("be", be), ("wm", wm), ("wc", wc),
              ("bc", bc))]
    ins = [("x", x), ("skip", skip), ("xc", xc)]
    outs = [vi(k, list(v.shape)) for k, v in want.items()]
    m = model(nodes, [vi(k, list(v.shape)) for k, v in ins], outs, inits,
              domains=[ms])
    save(out, m, ins, list(want.items()))


def case_msft_opaque(out):
    """Forms that cannot be modelled: an unknown activation, the training
    outputs of SkipLayerNormalization, an op the domain has that fuselab
    does not map."""
    ms = "com.microsoft"
    nodes = [
        h.make_node("FusedConv", ["x", "w"], ["fc"], domain=ms,
                    activation="Softsign", name="fc"),
        h.make_node("SkipLayerNormalization", ["v", "v", "g"],
                    ["sl", "mean"], domain=ms, name="sl"),
        h.make_node("Relu", ["mean"], ["mr"], name="mr"),
        h.make_node("Attention", ["v"], ["at"], domain=ms, name="at"),
    ]
    m = model(nodes, [vi("x", [1, 2, 4, 4]), vi("v", [2, 8])],
              [vi("fc", [1, 3, 2, 2]), vi("sl", [2, 8]), vi("mr", [2, 1]),
               vi("at", [2, 8])],
              [nh.from_array(rand(3, 2, 3, 3), "w"),
               nh.from_array(rand(8), "g")],
              domains=[ms], value_info=[vi("mean", [2, 1])])
    save(out, m)


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]](sys.argv[2])
