"""Reduction loops on the CPU target, whose float sums the emitter marks reassociable so that LLVM
vectorizes them (lib/codegen/llvm/kernel_emitter.cpp, reductionStmts): GlobalAveragePool over
planes of many shapes (one a vector's width, odd ones, 1x1, 1-d and 3-d windows, several
images), and a squeeze-excitation block's 1x1 convolutions over a 1x1 plane, which are too thin
to tile and stay naive loops (a GEMV per image: generator "llvm-x86"), with long reductions
whose length is no multiple of a vector. Each model is compiled with `sinter compile --target
cpu` at each x86-64 level this machine runs and must match the reference evaluator (`sinter run
--reference`) and onnxruntime; the generator is checked so the cases keep testing the loops
they are about.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st
from test_cpu_contraction import CPU_LEVELS, compile_for_cpu


def _model(nodes, x_shape, y_shape, initializers=()):
    graph = helper.make_graph(nodes, "reductions", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(array, name) for name, array in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def global_average_pool(x_shape, seed):
    rng = np.random.default_rng(seed)
    model = _model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], x_shape,
                   list(x_shape[:2]) + [1] * (len(x_shape) - 2))
    # Values with a large common offset: a sum that dropped or repeated a term would be far off.
    return model, {"x": (rng.uniform(-1.0, 1.0, size=x_shape) + 3.0).astype(np.float32)}


def squeeze_excitation_gate(images, channels, squeezed, seed):
    """GlobalAveragePool -> Conv 1x1 (channels -> squeezed) -> Relu -> Conv 1x1 (back) ->
    HardSigmoid: MobileNetV3's gate, without the Mul that applies it."""
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-0.2, 0.2, size=(squeezed, channels, 1, 1)).astype(np.float32)
    b1 = rng.uniform(-0.2, 0.2, size=(squeezed,)).astype(np.float32)
    w2 = rng.uniform(-0.2, 0.2, size=(channels, squeezed, 1, 1)).astype(np.float32)
    b2 = rng.uniform(-0.2, 0.2, size=(channels,)).astype(np.float32)
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["pooled"]),
             helper.make_node("Conv", ["pooled", "w1", "b1"], ["squeezed"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["squeezed"], ["activated"]),
             helper.make_node("Conv", ["activated", "w2", "b2"], ["expanded"], kernel_shape=[1, 1]),
             helper.make_node("HardSigmoid", ["expanded"], ["y"], alpha=1.0 / 6, beta=0.5)]
    model = _model(nodes, (images, channels, 5, 3), (images, channels, 1, 1),
                   [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)])
    return model, {"x": rng.uniform(-1.0, 1.0, size=(images, channels, 5, 3)).astype(np.float32)}


CASES = {
    # name: (make, the generators of its kernels)
    "gap_16x16": (lambda: global_average_pool((1, 3, 16, 16), 1), ["llvm-x86"]),
    "gap_7x7_many_channels": (lambda: global_average_pool((1, 67, 7, 7), 2), ["llvm-x86"]),
    "gap_odd_plane_images": (lambda: global_average_pool((3, 5, 13, 17), 3), ["llvm-x86"]),
    "gap_1x1": (lambda: global_average_pool((2, 9, 1, 1), 4), ["llvm-x86"]),
    "gap_large_plane": (lambda: global_average_pool((1, 2, 112, 112), 5), ["llvm-x86"]),
    "gap_1d": (lambda: global_average_pool((2, 4, 37), 6), ["llvm-x86"]),
    "gap_3d": (lambda: global_average_pool((1, 3, 4, 5, 6), 7), ["llvm-x86"]),
    # The convolutions are naive GEMVs (n = 1 per image); the pool and its first convolution
    # share no kernel (the pool is not injective).
    "se_gate_960": (lambda: squeeze_excitation_gate(1, 960, 240, 8), ["llvm-x86"] * 3),
    "se_gate_odd_channels_images": (lambda: squeeze_excitation_gate(3, 37, 11, 9), ["llvm-x86"] * 3),
}


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_reduction_loops_match_reference(case, cpu, tmp_path):
    make, expected_generators = CASES[case]
    model, inputs = make()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path, cpu)
    assert generators == expected_generators, generators
    actual = st.run_artifact(library, inputs, tmp_path)
    (tmp_path / "reference").mkdir()
    reference = st.run_reference(path, inputs, tmp_path / "reference")
    st.assert_outputs_match(actual, reference, context=f"{case} ({cpu}) against the reference evaluator")
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{case} ({cpu}) against onnxruntime")
