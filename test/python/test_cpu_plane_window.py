"""The CPU target's plane-window kernels, end to end: depthwise convolutions (Conv with one input
channel per group) and pooling (MaxPool, AveragePool), with every attribute the kernel handles
(strides 1-4, dilations, asymmetric padding, padding wider than the kernel, ceil mode, 1-d
windows, planes cut into bands, fused activations), are compiled with `sinter compile --target
cpu` at each x86-64 level this machine runs and must match the reference evaluator (`sinter run
--reference`) and onnxruntime. Each case checks that the node went through the direct kernel
(generator "llvm-x86-depthwise" or "llvm-x86-pool"), so a fallback to the blocked GEMM or the
naive loops cannot pass for it.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st
from test_cpu_contraction import CPU_LEVELS, assert_weights_stored_once, compile_for_cpu


def depthwise(x_shape, kernel, seed, bias=True, after=(), op="Conv", **attributes):
    """Conv with group = channels (or the pooling `op`), then the nodes `after` (op type,
    attributes) on its output."""
    rng = np.random.default_rng(seed)
    channels = x_shape[1]
    initializers, inputs = [], ["x"]
    if op == "Conv":
        w = rng.uniform(-1.0, 1.0, size=(channels, 1, *kernel)).astype(np.float32)
        initializers.append(numpy_helper.from_array(w, "w"))
        inputs.append("w")
        attributes["group"] = channels
        if bias:
            initializers.append(numpy_helper.from_array(rng.uniform(-1.0, 1.0, size=(channels,)).astype(np.float32), "bias"))
            inputs.append("bias")
    nodes = [helper.make_node(op, inputs, ["c0"], kernel_shape=list(kernel), **attributes)]
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
    def extent(d):
        span = x_shape[2 + d] + pads[d] + pads[spatial + d] - ((kernel[d] - 1) * dilations[d] + 1)
        if attributes.get("ceil_mode"):
            out = -(-span // strides[d]) + 1
            # The last window must start inside the input or its leading padding (ONNX).
            return out - 1 if (out - 1) * strides[d] >= x_shape[2 + d] + pads[d] else out
        return span // strides[d] + 1
    out = list(x_shape[:2]) + [extent(d) for d in range(spatial)]
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
    # Strided columns are split into phases when a band is copied: taps whose reach is not a
    # multiple of the stride, dilated, with pads on one side, over two images.
    "stride3_columns_dilated_phases": lambda: depthwise((2, 6, 26, 47), (3, 5), 42, strides=[2, 3],
                                                        dilations=[1, 2], pads=[1, 3, 2, 1]),
    "one_column": lambda: depthwise((1, 8, 20, 1), (3, 1), 10, pads=[1, 0, 1, 0]),
    "1d": lambda: depthwise((2, 12, 50), (5,), 11, pads=[2, 2]),
    "1d_stride2_dilated": lambda: depthwise((1, 7, 61), (3,), 12, strides=[2], dilations=[3], pads=[1, 3]),
    # Few planes: the plane is cut into bands of rows (tiles for the threads); a wide plane: the
    # band's padded input and outputs are kept to L1's size; many planes of bands over many rows,
    # the last one partial, over two images.
    "few_planes_in_bands": lambda: depthwise((1, 2, 200, 90), (3, 3), 13, pads=[1, 1, 1, 1]),
    "large_plane_in_bands": lambda: depthwise((1, 3, 150, 330), (3, 3), 14, strides=[2, 1], pads=[1, 1, 1, 1]),
    "many_planes_in_tall_bands": lambda: depthwise((2, 5, 61, 100), (3, 3), 40, pads=[1, 1, 1, 1]),
    "many_planes_in_tall_bands_5x5_stride2": lambda: depthwise((2, 6, 91, 75), (5, 5), 41, strides=[2, 2],
                                                                pads=[2, 1, 2, 2], after=[("Relu", {})]),
    # The epilogue: activations fused after the convolution run over the finished band.
    "fused_relu6": lambda: depthwise((1, 16, 15, 15), (3, 3), 15, pads=[1, 1, 1, 1],
                                     after=[("Clip", {"inputs": ["low", "high"]})]),
    "fused_sigmoid_mul": lambda: depthwise((2, 8, 9, 11), (5, 5), 16, strides=[2, 2], pads=[2, 2, 2, 2],
                                           after=[("Sigmoid", {})]),
    # Rows shorter than a vector (the band's outputs lie densely in the tile, each row's last
    # vector reaching into the next row's place): MobileNetV3's 7x7 planes, and rows of 14 in
    # bands over several images.
    "short_rows_fused_hardswish": lambda: depthwise((1, 40, 7, 7), (5, 5), 17, pads=[2, 2, 2, 2],
                                                    after=[("HardSwish", {})]),
    "short_rows_in_bands": lambda: depthwise((3, 1, 64, 14), (3, 3), 18, pads=[1, 1, 1, 1], after=[("Relu", {})]),
    # Pooling: ResNet's stem, SqueezeNet's ceil mode, GoogLeNet's stride-1 pools, DenseNet's
    # averages, and the count an average divides by at the edges (with and without the padding).
    "maxpool_3x3_stride2_pad1": lambda: depthwise((1, 16, 28, 30), (3, 3), 20, op="MaxPool", strides=[2, 2],
                                                  pads=[1, 1, 1, 1]),
    "maxpool_ceil_mode": lambda: depthwise((2, 8, 27, 27), (3, 3), 21, op="MaxPool", strides=[2, 2], ceil_mode=1),
    "maxpool_stride1_pad1": lambda: depthwise((1, 12, 14, 14), (3, 3), 22, op="MaxPool", pads=[1, 1, 1, 1]),
    "maxpool_dilated_1d": lambda: depthwise((2, 6, 40), (3,), 23, op="MaxPool", strides=[2], dilations=[2],
                                            pads=[1, 2]),
    "maxpool_fused_relu": lambda: depthwise((1, 8, 16, 17), (2, 2), 24, op="MaxPool", strides=[2, 2],
                                            after=[("Relu", {})]),
    "avgpool_2x2_stride2": lambda: depthwise((2, 16, 28, 28), (2, 2), 25, op="AveragePool", strides=[2, 2]),
    "avgpool_padded_excluded": lambda: depthwise((1, 8, 13, 11), (3, 3), 26, op="AveragePool", strides=[2, 2],
                                                 pads=[1, 1, 1, 1]),
    "avgpool_padded_included": lambda: depthwise((1, 8, 13, 11), (3, 3), 27, op="AveragePool", strides=[2, 2],
                                                 pads=[1, 0, 1, 2], count_include_pad=1),
    "avgpool_ceil_5x5": lambda: depthwise((1, 4, 17, 16), (5, 5), 28, op="AveragePool", strides=[3, 3],
                                          pads=[2, 2, 2, 2], ceil_mode=1),
}


def _compile_and_compare(case, cpu, tmp_path, threads=None):
    model, inputs = CASES[case]()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path, cpu)
    expected = "llvm-x86-depthwise" if model.graph.node[0].op_type == "Conv" else "llvm-x86-pool"
    assert generators == [expected], generators
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
def test_plane_window_matches_reference(case, cpu, tmp_path):
    _compile_and_compare(case, cpu, tmp_path)


@pytest.mark.parametrize("threads", [1, 3])
def test_bands_spread_over_any_number_of_threads(threads, tmp_path):
    _compile_and_compare("few_planes_in_bands", "x86-64-v2", tmp_path, threads)


def test_maxpool_never_lets_nan_win(tmp_path):
    """A NaN in a MaxPool window never wins it, as in sinter's reference evaluator and the onnx
    package's evaluator. (onnxruntime is no truth here: what its MaxPool gives depends on where
    in the window the NaN falls, -FLT_MAX for one window of this case.)"""
    from onnx.reference import ReferenceEvaluator

    model, inputs = depthwise((1, 4, 9, 9), (3, 3), 30, op="MaxPool", strides=[2, 2], pads=[1, 1, 1, 1])
    inputs["x"][0, 1, 4, 4] = np.nan  # in one window: output (2, 2)
    inputs["x"][0, 2, 3, 8] = np.nan  # in two: outputs (1, 4) and (2, 4)
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    (tmp_path / "reference").mkdir()
    truths = {"the reference evaluator": st.run_reference(path, inputs, tmp_path / "reference")["y"],
              "onnx.reference": ReferenceEvaluator(model).run(None, inputs)[0]}
    np.save(tmp_path / "x.npy", inputs["x"])
    for cpu in CPU_LEVELS:
        library = tmp_path / f"{cpu}.so"
        st.run_cli(["compile", path, "--target", "cpu", "--cpu", cpu, *st.shape_flags(inputs), "-o", library])
        out = tmp_path / f"{cpu}.npz"
        st.run_cli(["run", library, "--input", f"x={tmp_path / 'x.npy'}", "-o", out])
        with np.load(out) as archive:
            actual = archive["y"]
        for name, truth in truths.items():
            np.testing.assert_array_equal(actual, truth, err_msg=f"{cpu} against {name}")


def test_weights_are_stored_once(tmp_path):
    """The kernel reads its weights from the channel-major copy it packs; the original
    initializer is not stored beside it."""
    model, inputs = depthwise((1, 256, 14, 14), (5, 5), 17, pads=[2, 2, 2, 2])
    assert_weights_stored_once(model, inputs, tmp_path)
