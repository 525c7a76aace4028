"""The graph passes end to end (lib/passes; docs/passes.md): small ONNX models holding the
patterns the passes rewrite (batch norm and per-channel Mul/Add after Conv and Gemm, a
decomposed layer norm, both GELU forms, Identity and Transpose pairs, duplicated work) are
compiled for the CPU target and must match onnxruntime; the artifact's kernels must show the
rewrite happened (no BatchNormalization, Erf or Tanh left; LayerNormalization and Gelu present),
and do less than with those passes disabled: no more kernels, fewer fused ops.
"""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

NEW_PASSES = ["canonicalize", "eliminate-common-subexpressions", "fold-batch-norm",
              "merge-sibling-matmuls", "recognise-layer-normalization", "recognise-gelu"]


def const(name, array):
    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def conv_batchnorm_model(path):
    rng = np.random.default_rng(3)
    c = 4
    inits = [const("w1", rng.normal(size=(c, 3, 3, 3)) * 0.3), const("b1", rng.normal(size=c)),
             const("scale", rng.uniform(0.5, 1.5, c)), const("shift", rng.normal(size=c) * 0.1),
             const("mean", rng.normal(size=c) * 0.2), const("var", rng.uniform(0.5, 2.0, c)),
             const("w2", rng.normal(size=(c, c, 1, 1)) * 0.3),
             const("k", rng.uniform(0.5, 2.0, (1, c, 1, 1))), const("a", rng.normal(size=(c, 1, 1))),
             const("wg", rng.normal(size=(5, c)) * 0.3), const("bg", rng.normal(size=5)),
             const("gs", rng.uniform(0.5, 1.5, 5)), const("gt", rng.normal(size=5) * 0.1),
             const("gm", rng.normal(size=5) * 0.2), const("gv", rng.uniform(0.5, 2.0, 5))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "scale", "shift", "mean", "var"], ["n1"], epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("Identity", ["r1"], ["i1"]),
        helper.make_node("Conv", ["i1", "w2"], ["c2"]),
        helper.make_node("Mul", ["c2", "k"], ["m2"]),
        helper.make_node("Add", ["a", "m2"], ["features"]),
        helper.make_node("GlobalAveragePool", ["features"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "wg", "bg"], ["g"], transB=1, alpha=0.5),
        helper.make_node("BatchNormalization", ["g", "gs", "gt", "gm", "gv"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("features", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("logits", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9), path)
    return {"x": rng.normal(size=(2, 3, 8, 8)).astype(np.float32)}


def transformer_model(path):
    rng = np.random.default_rng(4)
    d = 16
    inits = [const("w1", rng.normal(size=(d, 32)) * 0.3), const("b1", rng.normal(size=32) * 0.1),
             const("w2", rng.normal(size=(32, d)) * 0.3),
             helper.make_tensor("axes", TensorProto.INT64, [1], [-1]),
             const("two", 2.0), const("three", 3.0), const("eps", 1e-5), const("one", 1.0), const("half", 0.5),
             const("sqrt2", np.sqrt(2.0)), const("k", 0.044715), const("c", np.sqrt(2 / np.pi)),
             const("gamma", rng.uniform(0.5, 1.5, d)), const("beta", rng.normal(size=d) * 0.1)]
    nodes = [
        # Decomposed layer norm of x.
        helper.make_node("ReduceMean", ["x", "axes"], ["mean"]),
        helper.make_node("Sub", ["x", "mean"], ["dev"]),
        helper.make_node("Pow", ["dev", "two"], ["sq"]),
        helper.make_node("ReduceMean", ["sq", "axes"], ["var"]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["std"]),
        helper.make_node("Div", ["dev", "std"], ["norm"]),
        helper.make_node("Mul", ["norm", "gamma"], ["scaled"]),
        helper.make_node("Add", ["scaled", "beta"], ["ln"]),
        # Up projection and erf GELU.
        helper.make_node("MatMul", ["ln", "w1"], ["u0"]),
        helper.make_node("Add", ["u0", "b1"], ["u"]),
        helper.make_node("Div", ["u", "sqrt2"], ["ud"]),
        helper.make_node("Erf", ["ud"], ["ue"]),
        helper.make_node("Add", ["ue", "one"], ["ua"]),
        helper.make_node("Mul", ["u", "ua"], ["um"]),
        helper.make_node("Mul", ["um", "half"], ["gelu1"]),
        # A transpose pair and a duplicated product (canonicalize and CSE).
        helper.make_node("Transpose", ["gelu1"], ["t1"], perm=[0, 2, 1]),
        helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t2", "w2"], ["v"]),
        helper.make_node("MatMul", ["gelu1", "w2"], ["v_again"]),
        helper.make_node("Add", ["v", "v_again"], ["v2"]),
        # tanh GELU with Pow.
        helper.make_node("Pow", ["v2", "three"], ["v3"]),
        helper.make_node("Mul", ["k", "v3"], ["kv3"]),
        helper.make_node("Add", ["v2", "kv3"], ["inner"]),
        helper.make_node("Mul", ["inner", "c"], ["arg"]),
        helper.make_node("Tanh", ["arg"], ["th"]),
        helper.make_node("Add", ["one", "th"], ["ta"]),
        helper.make_node("Mul", ["half", "v2"], ["hv"]),
        helper.make_node("Mul", ["hv", "ta"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9), path)
    return {"x": rng.normal(size=(1, 8, d)).astype(np.float32)}


def attention_projections_model(path):
    """Separate query, key and value projections with biases (BERT's layout), then attention
    over two heads: merge-sibling-matmuls makes the three projections one product."""
    rng = np.random.default_rng(5)
    tokens, hidden, heads = 6, 16, 2
    inits = [helper.make_tensor("heads", TensorProto.INT64, [4], [1, tokens, heads, hidden // heads])]
    nodes = []
    for name in "qkv":
        inits += [const("w" + name, rng.normal(size=(hidden, hidden)) * 0.3),
                  const("b" + name, rng.normal(size=hidden) * 0.1)]
        nodes += [helper.make_node("MatMul", ["x", "w" + name], [name + "0"]),
                  helper.make_node("Add", [name + "0", "b" + name], [name + "1"]),
                  helper.make_node("Reshape", [name + "1", "heads"], [name + "2"]),
                  helper.make_node("Transpose", [name + "2"], [name + "3"],
                                   perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["q3", "k3"], ["scores"]),
              helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v3"], ["y"])]
    graph = helper.make_graph(nodes, "projections",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, tokens, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9), path)
    return {"x": rng.normal(size=(1, tokens, hidden)).astype(np.float32)}


def kernel_ops(library):
    """The ops of every launch in the plan (a kernel launched twice counts twice: the backends
    give repeated layers one kernel), and the number of launches."""
    manifest = json.loads(st.run_cli(["inspect", library, "--plan", "--json"]).stdout)
    launches = [step for step in manifest["plan"] if step["kind"] == "launch"]
    return [op for step in launches for op in step["ops"]], len(launches)


@pytest.mark.parametrize("make,gone,present", [
    (conv_batchnorm_model, {"BatchNormalization", "Identity", "Mul"}, {"Conv", "Gemm"}),
    (transformer_model, {"Erf", "Tanh", "ReduceMean", "Pow", "Transpose"}, {"LayerNormalization", "Gelu"}),
    (attention_projections_model, set(), {"Slice", "MatMul", "Softmax"}),
])
def test_rewritten_model_matches_onnxruntime(make, gone, present, tmp_path):
    model = tmp_path / "model.onnx"
    inputs = make(model)
    expected = st.run_onnxruntime(model, inputs)
    actual = st.run_cpu(model, inputs, tmp_path)
    st.assert_outputs_match(actual, expected, context=model.name)

    ops, kernels = kernel_ops(tmp_path / "model.so")
    assert not gone & set(ops), f"left in the kernels: {sorted(gone & set(ops))}"
    assert present <= set(ops), f"missing from the kernels: {sorted(present - set(ops))}"

    unrewritten = tmp_path / "unrewritten.so"
    disable = [flag for name in NEW_PASSES for flag in ("--disable-pass", name)]
    st.run_cli(["compile", model, "--target", "cpu", *st.shape_flags(inputs), "-o", unrewritten, *disable])
    ops_before, kernels_before = kernel_ops(unrewritten)
    assert kernels <= kernels_before
    assert len(ops) < len(ops_before)


def views_model(path, with_compute):
    """x -> Reshape -> r (an output); with_compute adds Neg(r) -> n, so r is read twice."""
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [3, 4])
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"])]
    outputs = [helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 4])]
    if with_compute:
        nodes += [helper.make_node("Flatten", ["r"], ["f"], axis=0), helper.make_node("Neg", ["f"], ["n"])]
        outputs.append(helper.make_tensor_value_info("n", TensorProto.FLOAT, [1, 12]))
    graph = helper.make_graph(nodes, "views", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
                              outputs, [shape])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9), path)
    return {"x": np.arange(12, dtype=np.float32).reshape(2, 6) - 5.5}


@pytest.mark.parametrize("with_compute", [False, True])
def test_views_are_not_kernels(with_compute, tmp_path):
    """A Reshape whose value is an output (so no consumer absorbs it) shares its source's arena
    slot instead of copying it: no kernel reads only views, and the outputs are still right."""
    model = tmp_path / "views.onnx"
    inputs = views_model(model, with_compute)
    st.assert_outputs_match(st.run_cpu(model, inputs, tmp_path), st.run_onnxruntime(model, inputs))
    manifest = json.loads(st.run_cli(["inspect", tmp_path / "model.so", "--json"]).stdout)
    assert manifest["kernel_count"] == (1 if with_compute else 0)
    views = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}
    assert not [k["name"] for k in manifest["kernels"] if set(k["ops"]) <= views]


def test_inspect_plan_summarises_fusion_and_memory(tmp_path):
    """`inspect --plan` ends with what the passes and fusion did and what memory reuse saved,
    in numbers that agree with the manifest."""
    model = tmp_path / "model.onnx"
    inputs = transformer_model(model)
    library = tmp_path / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", *st.shape_flags(inputs), "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    text = st.run_cli(["inspect", library, "--plan"]).stdout
    ops = sum(len(kernel["ops"]) for kernel in info["kernels"])
    assert (f"fusion: {info['source_node_count']} source nodes -> {ops} ops in kernels after the "
            f"graph passes -> {info['kernel_count']} kernels") in text
    assert ops < info["source_node_count"]  # the recognisers replaced 19 nodes by 2
    assert f"(ratio {info['arena_ratio']:.3f})" in text.split("memory: ")[1]
    assert "FLOP/B" in text.split("work: ")[1]
