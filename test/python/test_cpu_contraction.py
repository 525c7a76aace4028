"""The CPU target's blocked MatMul, Gemm and Conv kernels, end to end: one-node models with shapes
that are not multiples of the register or cache blocks (and every convolution attribute that
changes the gather) are compiled with `sinter compile --target cpu` and must match the reference
evaluator (`sinter run --reference`) and onnxruntime within 1e-5 of max|expected|. Each case also
checks that the kernel went through the blocked path (generator "llvm-x86-blocked"), so a silent
fallback to the naive loops cannot pass for the blocked kernel.
"""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

def _cpu_levels():
    """The --cpu levels this machine runs: v2 always, v3 with AVX2 and FMA, v4 with AVX-512."""
    try:
        flags = set(open("/proc/cpuinfo").read().split())
    except OSError:
        flags = set()
    levels = ["x86-64-v2"]
    if {"avx2", "fma"} <= flags:
        levels.append("x86-64-v3")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        levels.append("x86-64-v4")
    return levels


CPU_LEVELS = _cpu_levels()


def _model(node, inputs, output_shape, initializers=()):
    graph = helper.make_graph(
        [node], "contraction",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(array, name) for name, array in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _values(rng, shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def matmul(a_shape, b_shape, b_constant, seed):
    rng = np.random.default_rng(seed)
    out = np.matmul(np.zeros(a_shape, np.float32), np.zeros(b_shape, np.float32)).shape
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    if b_constant:
        return _model(node, [("a", a_shape)], out, [("b", _values(rng, b_shape))]), {"a": _values(rng, a_shape)}
    return (_model(node, [("a", a_shape), ("b", b_shape)], out),
            {"a": _values(rng, a_shape), "b": _values(rng, b_shape)})


def gemm(m, n, k, trans_a, trans_b, alpha, beta, c_shape, constant, seed):
    """constant: which of "a", "b" are initializers."""
    rng = np.random.default_rng(seed)
    shapes = {"a": (k, m) if trans_a else (m, k), "b": (n, k) if trans_b else (k, n)}
    if c_shape is not None:
        shapes["c"] = c_shape
    node = helper.make_node("Gemm", [name for name in ("a", "b", "c") if name in shapes], ["y"],
                            transA=trans_a, transB=trans_b, alpha=alpha, beta=beta)
    initializers = [(name, _values(rng, shapes[name])) for name in shapes if name in constant or name == "c"]
    inputs = {name: _values(rng, shapes[name]) for name in shapes if name not in dict(initializers)}
    return _model(node, [(name, shapes[name]) for name in inputs], (m, n), initializers), inputs


def conv(x_shape, out_channels, kernel, seed, bias=True, **attributes):
    rng = np.random.default_rng(seed)
    group = attributes.get("group", 1)
    w = _values(rng, (out_channels, x_shape[1] // group, *kernel))
    initializers = [("w", w)] + ([("bias", _values(rng, (out_channels,)))] if bias else [])
    node = helper.make_node("Conv", ["x", "w"] + (["bias"] if bias else []), ["y"],
                            kernel_shape=list(kernel), **attributes)
    # The output shape from the reference formula (auto_pad unused here).
    spatial = len(kernel)
    strides = attributes.get("strides", [1] * spatial)
    dilations = attributes.get("dilations", [1] * spatial)
    pads = attributes.get("pads", [0] * 2 * spatial)
    out = [x_shape[0], out_channels] + [
        (x_shape[2 + d] + pads[d] + pads[spatial + d] - ((kernel[d] - 1) * dilations[d] + 1)) // strides[d] + 1
        for d in range(spatial)]
    return _model(node, [("x", x_shape)], out, initializers), {"x": _values(rng, x_shape)}


CASES = {
    # MatMul: odd m, n, k; k over several KC blocks; B constant (packed at compile time) or not.
    "matmul_const_b_odd": lambda: matmul((37, 53), (53, 29), True, 1),
    "matmul_const_b_long_k": lambda: matmul((21, 700), (700, 45), True, 2),
    "matmul_runtime_b_odd": lambda: matmul((50, 19), (19, 71), False, 3),
    "matmul_batched_broadcast": lambda: matmul((3, 1, 20, 33), (4, 33, 18), False, 4),
    "matmul_batched_const_b": lambda: matmul((2, 40, 17), (2, 17, 50), True, 5),
    "matmul_const_b_broadcast": lambda: matmul((2, 3, 25, 31), (31, 300), True, 6),
    "matmul_narrow": lambda: matmul((8, 72), (72, 40), True, 8),
    "matmul_many_tiles": lambda: matmul((130, 96), (96, 300), True, 7),
    # Gemm: transposes, alpha/beta, C broadcast along rows, columns or as a scalar.
    "gemm_trans_b_row_bias": lambda: gemm(19, 23, 45, 0, 1, 1.0, 1.0, (23,), "b", 10),
    "gemm_trans_a_column_bias": lambda: gemm(33, 17, 29, 1, 0, 0.7, 1.3, (33, 1), "b", 11),
    "gemm_both_trans_full_c": lambda: gemm(18, 40, 64, 1, 1, -1.5, 0.5, (18, 40), "", 12),
    "gemm_const_a_scalar_c": lambda: gemm(26, 31, 20, 0, 0, 2.0, -0.25, (1,), "a", 13),
    "gemm_no_c": lambda: gemm(64, 64, 300, 0, 1, 1.0, 1.0, None, "b", 14),
    # Conv: implicit GEMM with the gather in the run-time packing.
    "conv_1x1": lambda: conv((2, 24, 9, 11), 20, (1, 1), 20),
    # Pointwise convolutions whose rhs the micro-kernel reads in place: one image with a partial
    # last panel, images of whole panels, several KC blocks, groups.
    "conv_1x1_in_place_tail": lambda: conv((1, 40, 9, 13), 24, (1, 1), 37),
    "conv_1x1_in_place_images": lambda: conv((3, 16, 8, 8), 20, (1, 1), 38),
    "conv_1x1_in_place_panels_across_images": lambda: conv((5, 24, 7, 7), 40, (1, 1), 41),
    "conv_1x1_in_place_images_of_odd_planes": lambda: conv((8, 16, 13, 11), 18, (1, 1), 42),
    "conv_1x1_in_place_long_reduction": lambda: conv((1, 520, 6, 7), 30, (1, 1), 39),
    "conv_1x1_in_place_grouped": lambda: conv((2, 32, 8, 4), 16, (1, 1), 40, group=2),
    # The panels not read in place are packed by row segments, per panel and KC block: a 7x7
    # plane's tail past several KC blocks, and panels across images of odd planes with one.
    "conv_1x1_in_place_7x7_tail_long_reduction": lambda: conv((1, 400, 7, 7), 26, (1, 1), 45),
    "conv_1x1_in_place_across_odd_images_long_reduction": lambda: conv((3, 390, 5, 9), 14, (1, 1), 46),
    # The three above (and conv_1x1_in_place_long_reduction) are computed transposed now
    # (TRANSPOSED below); these keep the usual form (test_pointwise_keeps_usual_form_where_it_wastes_less):
    # output channels that fill the 6-row panels but not a 16-column one.
    "conv_1x1_usual_7x7_tail_long_reduction": lambda: conv((1, 400, 7, 7), 12, (1, 1), 65),
    "conv_1x1_usual_across_odd_images_long_reduction": lambda: conv((3, 390, 5, 9), 12, (1, 1), 66),
    "conv_1x1_usual_long_reduction": lambda: conv((1, 520, 6, 7), 24, (1, 1), 67),
    # A last panel whose columns fit one vector runs the one-vector micro-kernel: 196 columns are
    # 4 past whole panels at every level.
    "conv_1x1_in_place_14x14_narrow_last_panel": lambda: conv((1, 40, 14, 14), 30, (1, 1), 47),
    "conv_3x3_stride2_pad1": lambda: conv((1, 16, 15, 13), 33, (3, 3), 21, strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv_dilated": lambda: conv((1, 18, 17, 19), 17, (3, 3), 22, dilations=[2, 2], pads=[2, 2, 2, 2]),
    "conv_grouped": lambda: conv((1, 32, 12, 12), 40, (3, 3), 23, group=2, pads=[1, 1, 1, 1]),
    "conv_asymmetric_pads_no_bias": lambda: conv((2, 16, 10, 9), 19, (3, 2), 24, bias=False, pads=[0, 1, 2, 0]),
    "conv_1d": lambda: conv((3, 20, 50), 21, (5,), 25, strides=[2], pads=[2, 1]),
    "conv_wide_output": lambda: conv((1, 16, 40, 40), 24, (3, 3), 26, pads=[1, 1, 1, 1]),
    "conv_many_channels": lambda: conv((1, 20, 8, 8), 200, (3, 3), 27, pads=[1, 1, 1, 1]),
    "conv_narrow_7x7_stride2": lambda: conv((1, 3, 30, 30), 8, (7, 7), 29, strides=[2, 2], pads=[3, 3, 3, 3]),
    "conv_narrow_small_image": lambda: conv((2, 12, 5, 5), 12, (3, 3), 30, pads=[1, 1, 1, 1]),
    # Depthwise convolutions have a direct kernel (test_cpu_plane_window.py) up to stride 4; past it,
    # the blocked one.
    "conv_depthwise_stride5": lambda: conv((1, 48, 60, 55), 48, (3, 3), 31, group=48, strides=[5, 5], pads=[1, 1, 1, 1]),
    "conv_two_outputs_per_group": lambda: conv((2, 8, 11, 11), 16, (3, 3), 32, group=8, pads=[1, 1, 1, 1]),
    "conv_long_reduction": lambda: conv((1, 64, 9, 9), 24, (3, 3), 28, strides=[2, 2]),
    # Below two windows an input element (2x2 at stride 2: one), the row packer.
    "conv_2x2_stride2": lambda: conv((2, 24, 18, 22), 20, (2, 2), 35, strides=[2, 2]),
    "conv_3d_padded": lambda: conv((2, 6, 5, 7, 6), 10, (3, 3, 2), 34, pads=[1, 1, 0, 1, 1, 1]),
    # Row-packed windows: output rows across panel ends, strided columns (a gather), windows
    # wholly in the padding.
    "conv_rows_across_panels_strided": lambda: conv((2, 5, 23, 75), 7, (3, 5), 43, strides=[1, 2], pads=[2, 3, 1, 4]),
    "conv_pads_past_the_kernel": lambda: conv((1, 4, 6, 6), 9, (2, 2), 44, pads=[3, 3, 3, 3]),
    "conv_batch4_stride3_dilated": lambda: conv((4, 9, 14, 13), 12, (3, 2), 35, strides=[3, 2], dilations=[1, 2],
                                                 pads=[2, 0, 1, 1]),
}

# 2-D windows read from padded rows in place (cpu_padded_window.h): the product's columns on the
# padded pitch, tiles that start and end mid-row and span rows, several images, dilations, pads
# on one side or none or past the kernel, odd channel counts (partial lhs panels), slabs too large
# for the stack at the first tile width, and strides (the slab split into phases) in either dim,
# with odd input sizes whose last row or column no window reaches.
PADDED_CASES = {
    "conv_padded_images_odd": lambda: conv((3, 24, 13, 41), 13, (3, 3), 50, pads=[1, 1, 1, 1]),
    "conv_padded_dilated_asymmetric": lambda: conv((2, 16, 15, 47), 19, (3, 3), 51, dilations=[2, 3],
                                                   pads=[1, 3, 2, 0]),
    "conv_padded_no_pads": lambda: conv((1, 8, 12, 30), 16, (3, 3), 52),
    "conv_padded_5x5_wide": lambda: conv((1, 12, 21, 45), 33, (5, 5), 53, pads=[2, 2, 2, 2]),
    "conv_padded_small_plane_two_images": lambda: conv((2, 32, 7, 7), 40, (3, 3), 54, pads=[1, 1, 1, 1]),
    "conv_padded_narrowed_tiles": lambda: conv((4, 300, 16, 16), 8, (3, 3), 55, pads=[1, 1, 1, 1]),
    "conv_padded_grouped_images": lambda: conv((2, 48, 9, 30), 36, (3, 3), 56, group=3, pads=[1, 1, 1, 1]),
    "conv_padded_2x3_window": lambda: conv((2, 20, 11, 23), 24, (2, 3), 57, pads=[0, 2, 1, 0]),
    "conv_padded_stride2_images_odd": lambda: conv((3, 16, 17, 71), 21, (5, 5), 58, strides=[2, 2],
                                                   pads=[2, 2, 2, 2]),
    "conv_padded_stride2_even_no_pads": lambda: conv((1, 24, 16, 20), 16, (5, 4), 59, strides=[2, 2]),
    "conv_padded_stride2_1": lambda: conv((2, 8, 19, 21), 12, (3, 3), 60, strides=[2, 1], pads=[0, 1, 2, 1]),
    "conv_padded_stride1_3_dilated": lambda: conv((1, 16, 13, 40), 10, (5, 5), 61, strides=[1, 3],
                                                  dilations=[2, 2], pads=[2, 1, 2, 2]),
    "conv_padded_stem_7x7_stride2": lambda: conv((2, 3, 37, 75), 16, (7, 7), 62, strides=[2, 2],
                                                 pads=[3, 3, 3, 3]),
    # 3x3 windows at stride 2 (2.25 windows an input element): odd and even planes, groups of
    # a few channels (RegNet's), images past the first.
    "conv_padded_3x3_stride2_grouped_images": lambda: conv((2, 24, 30, 41), 24, (3, 3), 68, group=3,
                                                           strides=[2, 2], pads=[1, 1, 1, 1]),
    "conv_padded_3x3_stride2_odd_pads": lambda: conv((1, 20, 37, 45), 28, (3, 3), 69, strides=[2, 2],
                                                     pads=[0, 1, 1, 0]),
    # 15 rows at a pitch of 22: a last slice of at most one vector at AVX-512.
    "conv_padded_narrow_last_slice": lambda: conv((1, 16, 15, 20), 20, (3, 3), 64, pads=[1, 1, 1, 1]),
}
# 7x7 planes of eight images: the packed window's panels run across images, and waste less.
CASES["conv_small_planes_many_images"] = lambda: conv((8, 32, 7, 7), 24, (3, 3), 63, pads=[1, 1, 1, 1])
CASES.update(PADDED_CASES)


def compile_for_cpu(name, model, inputs, tmp_path, cpu=None):
    """Saves `model` as NAME.onnx and compiles it for the CPU (at `cpu`, else the default levels);
    returns the model's path, the artifact's and its kernels' generators."""
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", *(["--cpu", cpu] if cpu else []), *st.shape_flags(inputs),
                "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    return path, library, [kernel["generator"] for kernel in info["kernels"]]


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_blocked_contraction_matches_reference(case, cpu, tmp_path):
    model, inputs = CASES[case]()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path, cpu)
    assert generators == ["llvm-x86-blocked"], generators
    actual = st.run_artifact(library, inputs, tmp_path)
    (tmp_path / "reference").mkdir()
    reference = st.run_reference(path, inputs, tmp_path / "reference")
    st.assert_outputs_match(actual, reference, context=f"{case} ({cpu}) against the reference evaluator")
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{case} ({cpu}) against onnxruntime")


def _uses_padded_rows(name, model, inputs, tmp_path):
    """Whether the artifact's kernel reads its rhs from padded rows: its micro-kernel takes the
    per-r offsets (sinter.microkernel.*.taps in the generated LLVM IR)."""
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    source = tmp_path / "source"
    st.run_cli(["compile", path, "--target", "cpu", "--cpu", "x86-64-v4", "--cache-dir", tmp_path / "cache",
                "--emit-source", source, *st.shape_flags(inputs), "-o", tmp_path / "source.so"])
    return ".taps" in (source / "module.unoptimized.ll").read_text()


@pytest.mark.parametrize("case", sorted(PADDED_CASES) + ["conv_wide_output", "conv_narrow_7x7_stride2",
                                                         "conv_rows_across_panels_strided",
                                                         "conv_3x3_stride2_pad1"])
def test_windows_read_padded_rows(case, tmp_path):
    """The padded-row cases above go through that path (a fallback to the packed window would pass
    the comparisons too), and pointwise windows, 1-D and 3-D ones, strides of more than 16
    phases, windows where an input element is in fewer than two (2x2 at stride 2) and small planes
    (of one image or several) where the padded pitch would cost too many columns do not."""
    model, inputs = CASES[case]()
    assert _uses_padded_rows(case, model, inputs, tmp_path)


@pytest.mark.parametrize("case", ["conv_1x1_in_place_images", "conv_narrow_small_image", "conv_long_reduction",
                                  "conv_depthwise_stride5", "conv_1d", "conv_3d_padded", "conv_2x2_stride2",
                                  "conv_small_planes_many_images"])
def test_other_windows_do_not_read_padded_rows(case, tmp_path):
    model, inputs = CASES[case]()
    assert not _uses_padded_rows(case, model, inputs, tmp_path)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_thread_counts_give_the_reference_result(threads, tmp_path):
    """`sinter run --threads N`: tiles spread over any number of threads, same result."""
    model, inputs = CASES["conv_wide_output"]()
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", *st.shape_flags(inputs), "-o", library])
    np.save(tmp_path / "x.npy", inputs["x"])
    out = tmp_path / "outputs.npz"
    st.run_cli(["run", library, "--threads", threads, "--input", f"x={tmp_path / 'x.npy'}", "-o", out])
    with np.load(out) as archive:
        actual = {name: archive[name] for name in archive.files}
    (tmp_path / "reference").mkdir()
    st.assert_outputs_match(actual, st.run_reference(path, inputs, tmp_path / "reference"),
                            context=f"--threads {threads}")


def assert_weights_stored_once(model, inputs, tmp_path):
    """Compiles `model` for the CPU and checks its weights blob holds at most 1.1x the
    initializers' bytes; returns the model's and the artifact's paths."""
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    parameters = sum(numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", *st.shape_flags(inputs), "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    assert info["weight_bytes"] <= 1.1 * parameters, (info["weight_bytes"], parameters)
    return path, library


@pytest.mark.parametrize("batch", [1, 8])
def test_weights_are_stored_once_and_windows_need_no_large_tables(batch, tmp_path):
    """A convolution's packed weights replace the originals in the artifact, and its window
    tables grow with k + positions, not with k x positions x batch: the weights blob stays within
    a few percent of the parameters' bytes at batch 1 and 8 (before, it held both copies and an
    offset per im2col element)."""
    model, inputs = conv((batch, 128, 28, 28), 128, (3, 3), 36, pads=[1, 1, 1, 1])
    path, library = assert_weights_stored_once(model, inputs, tmp_path)
    np.save(tmp_path / "x.npy", inputs["x"])
    out = tmp_path / "outputs.npz"
    st.run_cli(["run", library, "--input", f"x={tmp_path / 'x.npy'}", "-o", out])
    with np.load(out) as archive:
        actual = {name: archive[name] for name in archive.files}
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"batch {batch}")


def gated_conv(x_shape, out_channels, kernel, seed, group=1, pads=(1, 1, 1, 1)):
    """Conv then SiLU (x * sigmoid(x)): one kernel, the gate in the convolution's epilogue."""
    model, inputs = conv(x_shape, out_channels, kernel, seed, pads=list(pads), group=group)
    graph = model.graph
    graph.output[0].name = "c"
    graph.node[0].output[0] = "c"
    graph.node.extend([helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])])
    graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    del graph.output[0]
    inferred = onnx.shape_inference.infer_shapes(model)
    graph.output[0].CopyFrom(inferred.graph.output[0])
    return model, inputs


GATED = {
    # Several images per tile: the epilogue walks them image by image.
    "blocked_3x3_batch3": (lambda: gated_conv((3, 8, 9, 7), 20, (3, 3), 50), "llvm-x86-blocked"),
    "blocked_1x1_batch5_odd_plane": (lambda: gated_conv((5, 16, 7, 9), 24, (1, 1), 51, pads=(0, 0, 0, 0)),
                                     "llvm-x86-blocked"),
    "depthwise_batch2": (lambda: gated_conv((2, 12, 10, 11), 12, (3, 3), 52, group=12), "llvm-x86-depthwise"),
}


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(GATED))
def test_gated_epilogues_over_several_images(case, cpu, tmp_path):
    make, generator = GATED[case]
    model, inputs = make()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path, cpu)
    assert generators == [generator], generators
    actual = st.run_artifact(library, inputs, tmp_path)
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{case} ({cpu}) against onnxruntime")


def pointwise_block(x_shape, out_channels, seed, tail):
    """A 1x1 convolution with bias, then `tail`: "none", "relu6" (Clip 0..6), "silu" (x *
    sigmoid(x)), "residual" (+ a second input of the output's shape) or "residual_relu" (+ it,
    then Relu). Every tail is fused into the convolution's epilogue (one kernel)."""
    rng = np.random.default_rng(seed)
    batch, channels, height, width = x_shape
    out_shape = [batch, out_channels, height, width]
    initializers = [numpy_helper.from_array(_values(rng, (out_channels, channels, 1, 1)), "w"),
                    numpy_helper.from_array(_values(rng, (out_channels,)), "bias")]
    nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["c"], kernel_shape=[1, 1])]
    inputs = {"x": _values(rng, x_shape)}
    if tail == "relu6":
        initializers += [numpy_helper.from_array(np.float32(0), "low"), numpy_helper.from_array(np.float32(6), "high")]
        nodes.append(helper.make_node("Clip", ["c", "low", "high"], ["y"]))
    elif tail == "silu":
        nodes += [helper.make_node("Sigmoid", ["c"], ["s"]), helper.make_node("Mul", ["c", "s"], ["y"])]
    elif tail in ("residual", "residual_relu"):
        inputs["skip"] = _values(rng, out_shape)
        nodes.append(helper.make_node("Add", ["c", "skip"], ["y" if tail == "residual" else "sum"]))
        if tail == "residual_relu":
            nodes.append(helper.make_node("Relu", ["sum"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    graph = helper.make_graph(
        nodes, "pointwise",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, value.shape) for name, value in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, inputs


# Pointwise convolutions of small planes computed transposed (positions as rows, channels as
# columns; BlockedContraction::transposed): 7x7 and 14x14 planes, one image or three (row panels
# across images' ends), channel counts that fill whole 32-column panels or leave a one-vector or
# a partial slice, reductions of one KC block or several, and every kind of fused epilogue.
TRANSPOSED = {
    "7x7_bias": lambda: pointwise_block((1, 40, 7, 7), 48, 70, "none"),
    "7x7_relu6_batch3": lambda: pointwise_block((3, 40, 7, 7), 64, 71, "relu6"),
    "7x7_residual_relu_partial_panel": lambda: pointwise_block((1, 72, 7, 7), 88, 72, "residual_relu"),
    "7x7_residual_batch3_long_reduction": lambda: pointwise_block((3, 600, 7, 7), 128, 73, "residual"),
    "7x7_silu": lambda: pointwise_block((1, 24, 7, 7), 160, 74, "silu"),
    "14x14_residual": lambda: pointwise_block((1, 96, 14, 14), 80, 76, "residual"),
    "14x14_relu6": lambda: pointwise_block((1, 24, 14, 14), 160, 77, "relu6"),
    # Two groups of 32 channels: the weights packed per group, X's channels a group apart.
    "7x7_grouped_batch3": lambda: conv((3, 64, 7, 7), 64, (1, 1), 79, group=2),
}
# Where the usual form wastes no more lanes, it stays: a 28x28 plane of 96 output channels (784
# columns of 32-column panels and 16-column slices, all full), 14x14 planes of three images (588
# columns run across the images: 1 of 32-column panels is partial per tile), a plane of 8 images of
# 7x7, and channel counts no 32- or 16-column panel fits (a 7x7 plane of 12 output channels: 16
# columns computed for 12).
NOT_TRANSPOSED = {
    "28x28_residual": lambda: pointwise_block((1, 32, 28, 28), 96, 80, "residual"),
    "14x14_bias_batch3": lambda: pointwise_block((3, 48, 14, 14), 32, 75, "none"),
    "14x14_residual_relu_batch3": lambda: pointwise_block((3, 40, 14, 14), 64, 78, "residual_relu"),
    "7x7_batch8": lambda: pointwise_block((8, 32, 7, 7), 64, 81, "relu6"),
    "7x7_few_channels": lambda: pointwise_block((1, 64, 7, 7), 12, 82, "none"),
}


def _compile_with_source(name, model, inputs, tmp_path, cpu):
    """Compiles `model` at `cpu` with --emit-source; returns the model's path, the artifact's,
    its kernels' generators and the unoptimised LLVM IR."""
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    source, library = tmp_path / "source", tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", "--cpu", cpu, "--cache-dir", tmp_path / "cache",
                "--emit-source", source, *st.shape_flags(inputs), "-o", library])
    info = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    return path, library, [kernel["generator"] for kernel in info["kernels"]], \
        (source / "module.unoptimized.ll").read_text()


def _reads_transposed(ir):
    """Whether the kernel computes the product transposed: its micro-kernel takes the lhs rows'
    stride (sinter.microkernel.*.lda), which only the transposed product's in-place lhs needs."""
    return ".lda" in ir


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(TRANSPOSED) + ["conv_1x1_in_place_7x7_tail_long_reduction",
                                                     "conv_1x1_in_place_across_odd_images_long_reduction"])
def test_small_plane_pointwise_transposed(case, cpu, tmp_path):
    model, inputs = (TRANSPOSED[case] if case in TRANSPOSED else CASES[case])()
    path, library, generators, ir = _compile_with_source(case, model, inputs, tmp_path, cpu)
    assert generators == ["llvm-x86-blocked"], generators
    assert _reads_transposed(ir), f"{case} was not computed transposed"
    actual = st.run_artifact(library, inputs, tmp_path)
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{case} ({cpu}) against onnxruntime")


@pytest.mark.parametrize("case", sorted(NOT_TRANSPOSED) + ["conv_1x1_usual_7x7_tail_long_reduction",
                                                          "conv_1x1_usual_across_odd_images_long_reduction",
                                                          "conv_1x1_usual_long_reduction", "conv_1x1_in_place_tail"])
def test_pointwise_keeps_usual_form_where_it_wastes_less(case, tmp_path):
    model, inputs = (NOT_TRANSPOSED[case] if case in NOT_TRANSPOSED else CASES[case])()
    path, library, generators, ir = _compile_with_source(case, model, inputs, tmp_path, "x86-64-v4")
    assert generators == ["llvm-x86-blocked"], generators
    assert not _reads_transposed(ir), f"{case} was computed transposed"
    actual = st.run_artifact(library, inputs, tmp_path)
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=f"{case} against onnxruntime")


def test_transposed_pointwise_in_one_artifact_of_every_level(tmp_path):
    """The default artifact (kernels for v2, v3 and v4 over one packed copy of the weights, the
    best level run at load) stores the transposed weights once and gives onnxruntime's result."""
    model, inputs = TRANSPOSED["7x7_residual_batch3_long_reduction"]()
    path, library = assert_weights_stored_once(model, inputs, tmp_path)
    st.assert_outputs_match(st.run_artifact(library, inputs, tmp_path), st.run_onnxruntime(path, inputs),
                            context="the default levels")
