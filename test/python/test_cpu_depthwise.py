"""The CPU target's direct depthwise convolution, end to end: Conv models with one input channel
per group (and every attribute the kernel handles: strides 1-4, dilations, asymmetric padding,
padding wider than the kernel, 1-d windows, planes cut into bands, fused activations) are
compiled with `sinter compile --target cpu` at each x86-64 level this machine runs and must match
the reference evaluator (`sinter run --reference`) and onnxruntime. Each case checks that the
convolution went through the depthwise kernel (generator "llvm-x86-depthwise"), so a fallback to
the blocked GEMM cannot pass for it.
"""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st
from test_cpu_contraction import CPU_LEVELS


def depthwise(x_shape, kernel, seed, bias=True, after=(), **attributes):
    """Conv with group = channels, then the nodes `after` (op type, attributes) on its output."""
    rng = np.random.default_rng(seed)
    channels = x_shape[1]
    w = rng.uniform(-1.0, 1.0, size=(channels, 1, *kernel)).astype(np.float32)
    initializers = [numpy_helper.from_array(w, "w")]
    inputs = ["x", "w"]
    if bias:
        initializers.append(numpy_helper.from_array(rng.uniform(-1.0, 1.0, size=(channels,)).astype(np.float32), "bias"))
        inputs.append("bias")
    nodes = [helper.make_node("Conv", inputs, ["c0"], kernel_shape=list(kernel), group=channels, **attributes)]
    for index, (op, extra) in enumerate(after):
        node_inputs = [f"c{index}"] + extra.pop("inputs", [])
        nodes.append(helper.make_node(op, node_inputs, [f"c{index + 1}"], **extra))
    nodes[-1].output[0] = "y"
    for name, value in (("low", 0.0), ("high", 6.0)):
        initializers.append(numpy_helper.from_array(np.array(value, np.float32), name))
    spatial = len(kernel)
    strides = attributes.get("strides", [1] * spatial)
    dilations = attributes.get("dilations", [1] * spatial)
    pads = attributes.get("pads", [0] * 2 * spatial)
    out = list(x_shape[:2]) + [
        (x_shape[2 + d] + pads[d] + pads[spatial + d] - ((kernel[d] - 1) * dilations[d] + 1)) // strides[d] + 1
        for d in range(spatial)]
    graph = helper.make_graph(nodes, "depthwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, {"x": rng.uniform(-1.0, 1.0, size=x_shape).astype(np.float32)}


CASES = {
    "3x3_stride1_pad1": lambda: depthwise((1, 32, 28, 30), (3, 3), 1, pads=[1, 1, 1, 1]),
    "3x3_stride2_odd": lambda: depthwise((1, 24, 25, 23), (3, 3), 2, strides=[2, 2], pads=[1, 1, 1, 1]),
    "5x5_stride2_batch2": lambda: depthwise((2, 16, 17, 19), (5, 5), 3, strides=[2, 2], pads=[2, 2, 2, 2]),
    "7x7_pad3": lambda: depthwise((1, 8, 14, 14), (7, 7), 4, pads=[3, 3, 3, 3]),
    "3x3_dilated": lambda: depthwise((1, 8, 19, 21), (3, 3), 5, dilations=[2, 2], pads=[2, 2, 2, 2]),
    "3x2_asymmetric_no_bias": lambda: depthwise((3, 6, 10, 9), (3, 2), 6, bias=False, pads=[0, 1, 2, 0]),
    "pad_wider_than_kernel": lambda: depthwise((1, 4, 6, 6), (3, 3), 7, pads=[3, 2, 3, 4]),
    "valid_no_pad": lambda: depthwise((1, 16, 10, 37), (3, 3), 8),
    "stride3_and_4": lambda: depthwise((1, 5, 23, 30), (3, 3), 9, strides=[3, 4], pads=[1, 1, 1, 1]),
    "one_column": lambda: depthwise((1, 8, 20, 1), (3, 1), 10, pads=[1, 0, 1, 0]),
    "1d": lambda: depthwise((2, 12, 50), (5,), 11, pads=[2, 2]),
    "1d_stride2_dilated": lambda: depthwise((1, 7, 61), (3,), 12, strides=[2], dilations=[3], pads=[1, 3]),
    # Few planes: the plane is cut into bands of rows (tiles for the threads); a wide plane: the
    # band's padded input is kept to L2's size.
    "few_planes_in_bands": lambda: depthwise((1, 2, 200, 90), (3, 3), 13, pads=[1, 1, 1, 1]),
    "large_plane_in_bands": lambda: depthwise((1, 3, 150, 330), (3, 3), 14, strides=[2, 1], pads=[1, 1, 1, 1]),
    # The epilogue: activations fused after the convolution run over the finished band.
    "fused_relu6": lambda: depthwise((1, 16, 15, 15), (3, 3), 15, pads=[1, 1, 1, 1],
                                     after=[("Clip", {"inputs": ["low", "high"]})]),
    "fused_sigmoid_mul": lambda: depthwise((2, 8, 9, 11), (5, 5), 16, strides=[2, 2], pads=[2, 2, 2, 2],
                                           after=[("Sigmoid", {})]),
}


def _compile_and_compare(case, cpu, tmp_path, threads=None):
    model, inputs = CASES[case]()
    path = tmp_path / f"{case}.onnx"
    onnx.save(model, str(path))
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", "--cpu", cpu, *st.shape_flags(inputs), "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    assert [k["generator"] for k in info["kernels"]] == ["llvm-x86-depthwise"], info["kernels"]
    np.save(tmp_path / "x.npy", inputs["x"])
    out = tmp_path / "outputs.npz"
    st.run_cli(["run", library, *(["--threads", threads] if threads else []),
                "--input", f"x={tmp_path / 'x.npy'}", "-o", out])
    with np.load(out) as archive:
        actual = {name: archive[name] for name in archive.files}
    (tmp_path / "reference").mkdir()
    context = f"{case} ({cpu}, threads {threads or 'default'})"
    st.assert_outputs_match(actual, st.run_reference(path, inputs, tmp_path / "reference"),
                            context=f"{context} against the reference evaluator")
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{context} against onnxruntime")


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_depthwise_matches_reference(case, cpu, tmp_path):
    _compile_and_compare(case, cpu, tmp_path)


@pytest.mark.parametrize("threads", [1, 3])
def test_bands_spread_over_any_number_of_threads(threads, tmp_path):
    _compile_and_compare("few_planes_in_bands", "x86-64-v2", tmp_path, threads)


def test_weights_are_stored_once(tmp_path):
    """The kernel reads its weights from the channel-major copy it packs; the original
    initializer is not stored beside it."""
    model, inputs = depthwise((1, 256, 14, 14), (5, 5), 17, pads=[2, 2, 2, 2])
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    parameters = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", *st.shape_flags(inputs), "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    assert info["weight_bytes"] <= 1.1 * parameters, (info["weight_bytes"], parameters)
