"""QLinearMatMul, MatMulInteger, DFT, Col2Im, DeformConv, TfIdfVectorizer and Unique against
onnxruntime, for the forms the ONNX node tests leave out or give only as runtime inputs: per-row
and per-column quantisation parameters, DFT lengths that pad or cut, complex inputs, inverse
one-sided transforms, Col2Im and DFT with constant shapes (so the CPU target compiles them),
DeformConv with strides, dilations, groups and masks, TF-IDF weights. Each case is a one-node
model run on every enabled target and compared with onnxruntime, or, for the ops that accumulate
integer products, with exact int64 arithmetic (INTEGER_OPS says why). Unique's output shapes depend
on the data: the reference evaluator runs it, the CPU target must refuse it with a clear message
unless its input is a constant (then it is folded away).
"""
import subprocess
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

ONNX_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int8): TensorProto.INT8,
              np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int32): TensorProto.INT32,
              np.dtype(np.int64): TensorProto.INT64}


def _model(op, inputs, constants, outputs, opset, **attributes):
    """A one-node model: `inputs` and `constants` are name -> array (constants become
    initializers); `outputs` are names whose types onnxruntime's inference will fill in."""
    names = list(inputs) + list(constants)
    order = attributes.pop("order", names)
    node = helper.make_node(op, order, outputs, **attributes)
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(k, ONNX_TYPES[v.dtype], list(v.shape)) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        [numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def qlinear_matmul(name, a_shape, b_shape, per_row, per_column, dtype):
    rng = _rng(name)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, a_shape, endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, b_shape, endpoint=True).astype(dtype)
    # Per row: [M, 1]; per column: [1, N] (the N-D forms, which ONNX's reference evaluator reads
    # as the spec says; it broadcasts the 1-D forms numpy's way instead).
    a_shape_q = [a_shape[-2], 1] if per_row else [1]
    b_shape_q = [1, b_shape[-1]] if per_column else [1]
    zero = (lambda shape: rng.integers(-5, 5, shape).astype(dtype)) if dtype == np.int8 else \
        (lambda shape: rng.integers(120, 135, shape).astype(dtype))
    constants = {
        "a_scale": rng.uniform(0.01, 0.05, a_shape_q).astype(np.float32),
        "a_zero_point": zero(a_shape_q),
        "b_scale": rng.uniform(0.01, 0.05, b_shape_q).astype(np.float32),
        "b_zero_point": zero(b_shape_q),
        "y_scale": np.array([0.7], np.float32),
        "y_zero_point": np.array([3 if dtype == np.int8 else 128], dtype),
    }
    inputs = {"a": a, "b": b}
    order = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
    return _model("QLinearMatMul", inputs, constants, ["y"], 21, order=order), inputs


def matmul_integer(name, a_shape, b_shape, per_row):
    rng = _rng(name)
    a = rng.integers(0, 255, a_shape).astype(np.uint8)
    b = rng.integers(-128, 127, b_shape).astype(np.int8)
    a_zero = rng.integers(100, 150, [a_shape[-2], 1] if per_row else []).astype(np.uint8)
    b_zero = np.array(3, np.int8)
    inputs = {"A": a, "B": b}
    return _model("MatMulInteger", inputs, {"a_zero_point": a_zero, "b_zero_point": b_zero}, ["Y"], 10), inputs


def dft(name, shape, axis, length=None, inverse=0, onesided=0):
    x = _rng(name).uniform(-1, 1, shape).astype(np.float32)
    constants = {"dft_length": np.array(length, np.int64)} if length else {}
    constants["axis"] = np.array(axis, np.int64)
    order = ["x", "dft_length" if length else "", "axis"]
    return _model("DFT", {"x": x}, constants, ["y"], 20, order=order, inverse=inverse, onesided=onesided), {"x": x}


def col2im(name, channels, image, block, **attributes):
    n = len(image)
    dilations = attributes.get("dilations", [1] * n)
    strides = attributes.get("strides", [1] * n)
    pads = attributes.get("pads", [0] * 2 * n)
    positions = 1
    for d in range(n):
        positions *= (image[d] + pads[d] + pads[d + n] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1
    x = _rng(name).uniform(-1, 1, [2, channels * int(np.prod(block)), positions]).astype(np.float32)
    constants = {"image_shape": np.array(image, np.int64), "block_shape": np.array(block, np.int64)}
    return _model("Col2Im", {"input": x}, constants, ["output"], 18, **attributes), {"input": x}


def deform_conv(name, channels, out_channels, size, kernel, group=1, offset_group=1, mask=True, bias=True,
                strides=(1, 1), dilations=(1, 1), pads=(0, 0, 0, 0)):
    rng = _rng(name)
    out = [(size[d] + pads[d] + pads[d + 2] - dilations[d] * (kernel[d] - 1) - 1) // strides[d] + 1 for d in (0, 1)]
    taps = kernel[0] * kernel[1]
    inputs = {"X": rng.uniform(-1, 1, [2, channels] + list(size)).astype(np.float32),
              "W": rng.uniform(-1, 1, [out_channels, channels // group] + list(kernel)).astype(np.float32),
              "offset": rng.uniform(-1.5, 1.5, [2, offset_group * taps * 2] + out).astype(np.float32)}
    order = ["X", "W", "offset"]
    if bias:
        inputs["B"] = rng.uniform(-1, 1, [out_channels]).astype(np.float32)
    order.append("B" if bias else "")
    if mask:
        inputs["mask"] = rng.uniform(0, 1, [2, offset_group * taps] + out).astype(np.float32)
        order.append("mask")
    return _model("DeformConv", inputs, {}, ["Y"], 19, order=order, kernel_shape=list(kernel), group=group,
                  offset_group=offset_group, strides=list(strides), dilations=list(dilations), pads=list(pads)), inputs


def tfidf(name, shape, mode, weights=None, min_gram=1, max_gram=2, skip=2):
    x = _rng(name).integers(1, 6, shape).astype(np.int64)
    attributes = dict(mode=mode, min_gram_length=min_gram, max_gram_length=max_gram, max_skip_count=skip,
                      ngram_counts=[0, 3], ngram_indexes=[2, 0, 4, 1, 3, 5], pool_int64s=[1, 2, 5, 2, 3, 4, 4, 1, 1])
    if weights:
        attributes["weights"] = weights
    return _model("TfIdfVectorizer", {"X": x}, {}, ["Y"], 9, **attributes), {"X": x}


# MaxUnpool with an
# output_shape: onnxruntime reads the indices as flat indices into output_shape, while the ONNX
# node test data (and its reference) read them in the unpooled shape, padded at the end.
REFERENCE_TRUTH = {"max_unpool_padded_output"}


# The ops that accumulate integer products. Their truth is exact int64 arithmetic in numpy (below),
# not onnxruntime: on CPUs without VNNI its u8 x s8 kernels add pairs of products in saturating
# 16-bit lanes (vpmaddubsw), so its results differ between CPUs (seen on an AVX2 machine:
# MatMulInteger 29735 where the exact sum is 31186, QLinearConv 124 for 126). Requantisation
# follows the spec: round(acc * (a_scale * b_scale / y_scale)) to nearest even, in float32, plus
# the output zero point, saturated to the output type.
INTEGER_OPS = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"}


def _conv_int64(x, w, pads, strides, dilations, group):
    """Plain 2-D convolution of int64 x [N, C, H, W] by w [M, C / group, kh, kw] (zero padding)."""
    n, _, height, width = x.shape
    m, group_channels, kh, kw = w.shape
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    out_h = (height + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    out_w = (width + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    y = np.zeros((n, m, out_h, out_w), np.int64)
    for o in range(m):
        g = o // (m // group)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilations[0], i * dilations[0] + strides[0] * (out_h - 1) + 1, strides[0])
                columns = slice(j * dilations[1], j * dilations[1] + strides[1] * (out_w - 1) + 1, strides[1])
                patch = x[:, g * group_channels:(g + 1) * group_channels, rows, columns]
                y[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    return y


def _requantize(acc, multiplier, zero_point):
    info = np.iinfo(zero_point.dtype)
    scaled = np.rint(acc.astype(np.float32) * multiplier.astype(np.float32))
    return np.clip(scaled + zero_point.astype(np.float32), info.min, info.max).astype(zero_point.dtype)


def _integer_truth(model, inputs):
    """{output name: array} of a one-node integer model, in exact int64 arithmetic."""
    node = model.graph.node[0]
    values = {**{t.name: numpy_helper.to_array(t) for t in model.graph.initializer}, **inputs}
    operand = [values[name] if name else None for name in node.input]
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    wide = lambda a: None if a is None else a.astype(np.int64)  # noqa: E731

    def conv(x, w):
        ranks = len(x.shape) - 2
        return _conv_int64(x, w, attributes.get("pads", [0] * 2 * ranks),
                           attributes.get("strides", [1] * ranks),
                           attributes.get("dilations", [1] * ranks), attributes.get("group", 1))

    if node.op_type == "MatMulInteger":
        a, b, a_zero, b_zero = (operand + [None, None])[:4]
        y = np.matmul(wide(a) - (0 if a_zero is None else wide(a_zero)),
                      wide(b) - (0 if b_zero is None else wide(b_zero)))
        return {node.output[0]: y.astype(np.int32)}
    if node.op_type == "ConvInteger":
        x, w, x_zero, w_zero = (operand + [None, None])[:4]
        y = conv(wide(x) - (0 if x_zero is None else wide(x_zero)),
                 wide(w) - (0 if w_zero is None else wide(w_zero)))
        return {node.output[0]: y.astype(np.int32)}
    if node.op_type == "QLinearMatMul":
        a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero = operand
        acc = np.matmul(wide(a) - wide(a_zero), wide(b) - wide(b_zero))
        multiplier = (a_scale.astype(np.float32) * b_scale.astype(np.float32)) / y_scale.astype(np.float32)
        return {node.output[0]: _requantize(acc, multiplier, y_zero)}
    x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, *bias = operand  # QLinearConv
    per_channel = (-1,) + (1,) * (len(w.shape) - 1)
    acc = conv(wide(x) - wide(x_zero), wide(w) - wide(w_zero).reshape(per_channel if w_zero.size > 1 else ()))
    if bias and bias[0] is not None:
        acc = acc + wide(bias[0]).reshape(1, -1, *(1,) * (len(w.shape) - 2))
    multiplier = (x_scale.astype(np.float32) * w_scale.astype(np.float32)) / y_scale.astype(np.float32)
    if multiplier.size > 1:
        multiplier = multiplier.reshape(1, -1, *(1,) * (len(w.shape) - 2))
    return {node.output[0]: _requantize(acc, multiplier, y_zero)}


def _truth(case, model, path, inputs):
    if model.graph.node[0].op_type in INTEGER_OPS:
        return _integer_truth(model, inputs)
    if case in REFERENCE_TRUTH:
        from onnx.reference import ReferenceEvaluator
        outputs = ReferenceEvaluator(model).run(None, inputs)
        return dict(zip([o.name for o in model.graph.output], outputs))
    return st.run_onnxruntime(path, inputs)


def roi_align(name, mode, ratio, opset=16, transform=None):
    rng = _rng(name)
    x = rng.uniform(-1, 1, [2, 3, 7, 8]).astype(np.float32)
    rois = np.array([[0.5, 1.0, 6.0, 5.5], [-2.0, -1.0, 3.0, 9.0], [2.2, 0.3, 2.9, 1.1], [7.5, 6.5, 9.0, 8.0]], np.float32)
    constants = {"rois": rois, "batch_indices": np.array([0, 1, 1, 0], np.int64)}
    attributes = dict(mode=mode, output_height=3, output_width=2, sampling_ratio=ratio, spatial_scale=0.9)
    if transform:
        attributes["coordinate_transformation_mode"] = transform
    return _model("RoiAlign", {"X": x}, constants, ["Y"], opset, **attributes), {"X": x}


def max_unpool(name, output_shape=None):
    rng = _rng(name)
    x = rng.uniform(-1, 1, [1, 2, 3, 3]).astype(np.float32)
    # Indices as MaxPool (kernel 2, stride 2) would give them for a 6 x 6 input.
    rows, columns = rng.integers(0, 2, [1, 2, 3, 3]), rng.integers(0, 2, [1, 2, 3, 3])
    channel = np.arange(2).reshape(1, 2, 1, 1)
    i, j = np.arange(3).reshape(1, 1, 3, 1), np.arange(3).reshape(1, 1, 1, 3)
    indices = (channel * 36 + (2 * i + rows) * 6 + 2 * j + columns).astype(np.int64)
    constants = {"I": indices}
    if output_shape:
        constants["output_shape"] = np.array(output_shape, np.int64)
    return _model("MaxUnpool", {"X": x}, constants, ["Y"], 11, kernel_shape=[2, 2], strides=[2, 2]), {"X": x}


def dynamic_quantize(name, low, high):
    x = _rng(name).uniform(low, high, [3, 5]).astype(np.float32)
    return _model("DynamicQuantizeLinear", {"x": x}, {}, ["y", "y_scale", "y_zero_point"], 11), {"x": x}


def conv_integer(name):
    rng = _rng(name)
    x = rng.integers(0, 255, [1, 4, 7, 6]).astype(np.uint8)
    w = rng.integers(0, 255, [6, 2, 3, 2]).astype(np.uint8)
    constants = {"w": w, "x_zero_point": np.array(131, np.uint8), "w_zero_point": np.array(120, np.uint8)}
    return _model("ConvInteger", {"x": x}, constants, ["y"], 10, group=2, strides=[2, 1], pads=[1, 0, 1, 1],
                  dilations=[1, 2]), {"x": x}


def qlinear_conv(name):
    rng = _rng(name)
    x = rng.integers(0, 255, [2, 3, 6, 5]).astype(np.uint8)
    constants = {
        "x_scale": np.array(0.02, np.float32), "x_zero_point": np.array(128, np.uint8),
        "w": rng.integers(-100, 100, [4, 3, 3, 3]).astype(np.int8),
        "w_scale": rng.uniform(0.005, 0.02, [4]).astype(np.float32), "w_zero_point": np.zeros([4], np.int8),
        "y_scale": np.array(0.1, np.float32), "y_zero_point": np.array(100, np.uint8),
        "B": rng.integers(-500, 500, [4]).astype(np.int32)}
    return _model("QLinearConv", {"x": x}, constants, ["y"], 10, pads=[1, 1, 1, 1], strides=[1, 2]), {"x": x}


def stft(name, window, onesided):
    rng = _rng(name)
    signal = rng.uniform(-1, 1, [2, 40, 1]).astype(np.float32)
    constants = {"frame_step": np.array(6, np.int64)}
    order = ["signal", "frame_step"]
    if window:
        constants["window"] = np.hanning(10).astype(np.float32)
        order += ["window", ""]
    else:
        constants["frame_length"] = np.array(10, np.int64)
        order += ["", "frame_length"]
    return _model("STFT", {"signal": signal}, constants, ["y"], 17, order=order, onesided=onesided), {"signal": signal}


CASES = {
    "qlinear_per_tensor_u8": lambda n: qlinear_matmul(n, [5, 7], [7, 4], False, False, np.uint8),
    "qlinear_per_row_column_i8": lambda n: qlinear_matmul(n, [5, 7], [7, 4], True, True, np.int8),
    "qlinear_batched_per_column_u8": lambda n: qlinear_matmul(n, [3, 5, 7], [7, 4], False, True, np.uint8),
    "matmul_integer_per_row": lambda n: matmul_integer(n, [2, 5, 6], [6, 3], True),
    "matmul_integer_broadcast": lambda n: matmul_integer(n, [5, 6], [2, 6, 3], False),
    "dft_complex_axis2": lambda n: dft(n, [2, 4, 6, 2], 2),
    "dft_pad_length": lambda n: dft(n, [2, 5, 1], 1, length=8),
    "dft_cut_length_onesided": lambda n: dft(n, [3, 9, 1], -2, length=6, onesided=1),
    "dft_inverse_complex": lambda n: dft(n, [2, 7, 2], 1, inverse=1),
    "dft_irfft_odd": lambda n: dft(n, [2, 5, 2], 1, length=9, inverse=1, onesided=1),
    "col2im_2d_all": lambda n: col2im(n, 2, [5, 6], [2, 3], dilations=[2, 1], strides=[1, 2], pads=[1, 0, 0, 1]),
    "col2im_1d": lambda n: col2im(n, 3, [9], [3], strides=[2]),
    "deform_conv_groups": lambda n: deform_conv(n, 4, 4, [5, 6], [3, 2], group=2, offset_group=2),
    "deform_conv_stride_dilation_pad": lambda n: deform_conv(n, 2, 3, [6, 6], [2, 2], strides=(2, 1), dilations=(2, 1),
                                                             pads=(1, 0, 1, 1), mask=False),
    "tfidf_tfidf_weights_2d": lambda n: tfidf(n, [3, 8], "TFIDF", weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.0]),
    "tfidf_idf_1d": lambda n: tfidf(n, [10], "IDF"),
    "tfidf_tf_bigrams_only": lambda n: tfidf(n, [2, 9], "TF", min_gram=2, skip=3),
    "roi_align_avg_adaptive": lambda n: roi_align(n, "avg", 0),
    "roi_align_max_ratio2": lambda n: roi_align(n, "max", 2),
    "roi_align_opset10_output_half_pixel": lambda n: roi_align(n, "avg", 0, opset=10),
    "max_unpool_padded_output": lambda n: max_unpool(n, [1, 2, 7, 8]),
    "max_unpool_plain": lambda n: max_unpool(n),
    "dynamic_quantize_mixed_signs": lambda n: dynamic_quantize(n, -3.0, 2.0),
    "dynamic_quantize_positive": lambda n: dynamic_quantize(n, 0.5, 4.0),
    "conv_integer_group_stride_pad_dilation": conv_integer,
    "stft_window_onesided": lambda n: stft(n, True, 1),
    "stft_frame_length_twosided": lambda n: stft(n, False, 0),
    "qlinear_conv_per_channel_bias": qlinear_conv,
}


def _save(model, tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("target", st.enabled_targets())
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnxruntime(case, target, tmp_path):
    model, inputs = CASES[case](case)
    path = _save(model, tmp_path)
    expected = _truth(case, model, path, inputs)
    actual = st.TARGETS[target](path, inputs, tmp_path)
    # Scalars as 1-element vectors, for the comparison helper.
    expected = {k: np.atleast_1d(v) for k, v in expected.items()}
    actual = {k: np.atleast_1d(v) for k, v in actual.items()}
    st.assert_outputs_match(actual, expected, f"{case} on {target}")


def _unique_model(x, axis, sorted_flag, constant=False):
    attributes = {"sorted": sorted_flag}
    if axis is not None:
        attributes["axis"] = axis
    outputs = ["Y", "indices", "inverse_indices", "counts"]
    if constant:
        return _model("Unique", {}, {"X": x}, outputs, 11, **attributes)
    return _model("Unique", {"X": x}, {}, outputs, 11, **attributes)


@pytest.mark.parametrize("axis,sorted_flag", [(None, 1), (None, 0), (0, 1), (1, 0), (-1, 1)])
def test_unique_reference_matches_onnxruntime(axis, sorted_flag, tmp_path):
    x = np.array([[3, 1, 3, 2], [0, 1, 0, 2], [3, 1, 3, 2]], np.int64)
    path = _save(_unique_model(x, axis, sorted_flag), tmp_path)
    inputs = {"X": x}
    st.assert_outputs_match(st.run_reference(path, inputs, tmp_path), st.run_onnxruntime(path, inputs))


def test_unique_compiles_only_with_a_constant_input(tmp_path):
    x = np.array([4.0, 1.0, 4.0, 2.5], np.float32)
    path = _save(_unique_model(x, None, 1), tmp_path)
    result = subprocess.run([str(st.sinter_bin()), "compile", str(path), "--target", "cpu", "-o",
                             str(tmp_path / "model.so")], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "Unique" in result.stderr and "depends on data" in result.stderr, result.stderr
    folded = tmp_path / "folded"
    folded.mkdir()
    path = _save(_unique_model(x, None, 1, constant=True), folded)
    expected = st.run_onnxruntime(path, {})
    st.assert_outputs_match(st.run_cpu(path, {}, folded), expected)
