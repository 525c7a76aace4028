"""Epilogues through a reshape (lib/codegen/schedule/fusion.cpp): a contraction followed by a
Reshape, Flatten, Squeeze or Unsqueeze and then elementwise ops (GPT-2's Gemm over [tokens,
features] and the residual add or GELU over [batch, sequence, features]) is one kernel that
stores the last op's output. Each case checks that the contraction's kernel took the whole chain
(its name lists every op), that the CPU artifact matches onnxruntime, and that the CUDA target
compiles it (NVRTC and ptxas accept the kernel; what it computes on a GPU is checked by the GPU
suite's models).
"""

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st


def _model(nodes, inputs, initializers):
    graph = helper.make_graph(nodes, "epilogue", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                 for n, s in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    model.graph.output[0].CopyFrom(inferred.graph.output[0])
    onnx.checker.check_model(model)
    return model


def gemm_reshape_residual(rng):
    """Gemm with bias over [64 tokens, 96], viewed as [4, 16, 96], + residual, tanh, * scale."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["m"]),
             helper.make_node("Reshape", ["m", "shape"], ["v"]),
             helper.make_node("Add", ["v", "r"], ["a"]),
             helper.make_node("Tanh", ["a"], ["t"]),
             helper.make_node("Mul", ["t", "scale"], ["y"])]
    model = _model(nodes, [("x", [64, 48]), ("r", [4, 16, 96])],
                   [("w", rng.standard_normal((48, 96)).astype(np.float32) / 7),
                    ("b", rng.standard_normal(96).astype(np.float32)),
                    ("shape", np.array([4, 16, 96], np.int64)),
                    ("scale", rng.standard_normal(96).astype(np.float32))])
    return model, {"x": rng.standard_normal((64, 48)).astype(np.float32),
                   "r": rng.standard_normal((4, 16, 96)).astype(np.float32)}, ["Gemm", "Reshape", "Add", "Tanh", "Mul"]


def matmul_flatten(rng):
    """A batched MatMul [2, 3, 8, 12] flattened to [6, 96], then Relu."""
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Flatten", ["m"], ["f"], axis=2),
             helper.make_node("Relu", ["f"], ["y"])]
    model = _model(nodes, [("x", [2, 3, 8, 16])], [("w", rng.standard_normal((16, 12)).astype(np.float32))])
    return model, {"x": rng.standard_normal((2, 3, 8, 16)).astype(np.float32)}, ["MatMul", "Flatten", "Relu"]


def conv_unsqueeze(rng):
    """A Conv's [2, 8, 5, 7] output unsqueezed to [2, 1, 8, 5, 7], + a broadcast bias, sigmoid."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Unsqueeze", ["c", "axes"], ["u"]),
             helper.make_node("Add", ["u", "bias"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["y"])]
    model = _model(nodes, [("x", [2, 4, 5, 7])],
                   [("w", rng.standard_normal((8, 4, 3, 3)).astype(np.float32) / 6),
                    ("axes", np.array([1], np.int64)),
                    ("bias", rng.standard_normal((1, 1, 8, 1, 1)).astype(np.float32))])
    return model, {"x": rng.standard_normal((2, 4, 5, 7)).astype(np.float32)}, ["Conv", "Unsqueeze", "Add", "Sigmoid"]


CASES = {case.__name__: case for case in (gemm_reshape_residual, matmul_flatten, conv_unsqueeze)}


def kernel_names(library):
    return [kernel["name"] for kernel in json.loads(st.run_cli(["inspect", library, "--json"]).stdout)["kernels"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_contraction_epilogue_goes_on_through_a_reshape(case, tmp_path):
    model, inputs, ops = CASES[case](np.random.default_rng(len(case)))
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    expected = st.run_onnxruntime(path, inputs)
    fused = "fused_" + "_".join(op.lower() for op in ops)
    for target in (["--target", "cpu"], ["--target", "cuda", "--arch", "sm_90"]):
        library = tmp_path / f"{target[1]}.so"
        st.run_cli(["compile", path, *target, "-o", library, "--force"])
        names = kernel_names(library)
        assert any(name.startswith(fused) for name in names), (target, names)
    st.assert_outputs_match(st.run_artifact(tmp_path / "cpu.so", inputs, tmp_path), expected, case)
