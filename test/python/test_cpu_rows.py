"""The CPU target's row-split elementwise kernels (lib/codegen/cpu/cpu_rows.cpp), end to end: channel
shuffles, slices of concatenations, gates broadcast over planes, broadcasts over rows, transposes
and strided slices whose indices are not one more per column, compiled with `sinter compile
--target cpu` at every x86-64 level and checked against onnxruntime and the reference evaluator
(`sinter run --reference`). The cases the split is meant for check that a kernel went through it
(generator "llvm-x86-rows"), so the flat kernel cannot pass for them.
"""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st
from test_cpu_contraction import CPU_LEVELS, compile_for_cpu


def _model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "rows", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    # The outputs' shapes, from shape inference.
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output}
    for output in model.graph.output:
        output.CopyFrom(inferred[output.name])
    onnx.checker.check_model(model)
    return model


def _array(rng, shape, dtype=np.float32):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, size=shape).astype(dtype)
    return rng.uniform(-3, 3, size=shape).astype(dtype)


def shuffle(channels, size, groups=2, dtype=np.float32, elem=TensorProto.FLOAT):
    """ShuffleNet's channel shuffle: reshape into groups, swap the group axes, flatten back."""
    shape = [1, channels, *size]
    nodes = [helper.make_node("Reshape", ["x", "grouped"], ["g"]),
             helper.make_node("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "flat"], ["y"])]
    model = _model(nodes, [("x", elem, shape)], [("y", elem)],
                   [("grouped", np.array([1, groups, channels // groups, *size], np.int64)),
                    ("flat", np.array(shape, np.int64))])
    return model, {"x": _array(np.random.default_rng(channels), shape, dtype)}


def shuffle_unit(channels, size, batch=1):
    """ShuffleNetV2's unit tail: concatenate two branches, shuffle, split the result in halves."""
    half = [batch, channels // 2, *size]
    nodes = [helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
             helper.make_node("Reshape", ["c", "grouped"], ["g"]),
             helper.make_node("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "flat"], ["s"]),
             helper.make_node("Slice", ["s", "start0", "end0", "axis"], ["y0"]),
             helper.make_node("Slice", ["s", "start1", "end1", "axis"], ["y1"]),
             helper.make_node("Relu", ["y1"], ["y1r"])]
    rng = np.random.default_rng(size[0])
    model = _model(nodes, [("a", TensorProto.FLOAT, half), ("b", TensorProto.FLOAT, half)],
                   [("y0", TensorProto.FLOAT), ("y1r", TensorProto.FLOAT)],
                   [("grouped", np.array([batch, 2, channels // 2, *size], np.int64)),
                    ("flat", np.array([batch, channels, *size], np.int64)),
                    ("start0", np.array([0], np.int64)), ("end0", np.array([channels // 2], np.int64)),
                    ("start1", np.array([channels // 2], np.int64)), ("end1", np.array([channels], np.int64)),
                    ("axis", np.array([1], np.int64))])
    return model, {"a": _array(rng, half), "b": _array(rng, half)}


def shuffle_slice_concat(channels, size, batch=1):
    """ShuffleNetV2's unit head on the previous unit's output: shuffle it, keep its first half, and
    concatenate that with the unit's branch."""
    whole, half = [batch, channels, *size], [batch, channels // 2, *size]
    nodes = [helper.make_node("Reshape", ["c", "grouped"], ["g"]),
             helper.make_node("Transpose", ["g"], ["t"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t", "flat"], ["s"]),
             helper.make_node("Slice", ["s", "start", "end", "axis"], ["kept"]),
             helper.make_node("Concat", ["kept", "branch"], ["y"], axis=1)]
    rng = np.random.default_rng(channels)
    model = _model(nodes, [("c", TensorProto.FLOAT, whole), ("branch", TensorProto.FLOAT, half)],
                   [("y", TensorProto.FLOAT)],
                   [("grouped", np.array([batch, 2, channels // 2, *size], np.int64)),
                    ("flat", np.array(whole, np.int64)), ("start", np.array([0], np.int64)),
                    ("end", np.array([channels // 2], np.int64)), ("axis", np.array([1], np.int64))])
    return model, {"c": _array(rng, whole), "branch": _array(rng, half)}


def resize(batch, channels, size, scale, mode="linear", transform="half_pixel"):
    """A Resize by `scale` on both spatial axes (LR-ASPP's last node: linear, 28x28 -> 224x224):
    each output column's source columns and weights are the same in every row (column tables)."""
    shape = [batch, channels, *size]
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode=mode,
                              coordinate_transformation_mode=transform)]
    model = _model(nodes, [("x", TensorProto.FLOAT, shape)], [("y", TensorProto.FLOAT)],
                   [("scales", np.array([1, 1, scale, scale], np.float32))])
    return model, {"x": _array(np.random.default_rng(channels), shape)}


def gate(batch, channels, size):
    """A squeeze-excitation gate: x * sigmoid(s), s one value per (image, channel)."""
    nodes = [helper.make_node("Sigmoid", ["s"], ["g"]), helper.make_node("Mul", ["x", "g"], ["y"])]
    rng = np.random.default_rng(channels)
    model = _model(nodes, [("x", TensorProto.FLOAT, [batch, channels, *size]),
                           ("s", TensorProto.FLOAT, [batch, channels, 1, 1])], [("y", TensorProto.FLOAT)])
    return model, {"x": _array(rng, (batch, channels, *size)), "s": _array(rng, (batch, channels, 1, 1))}


def broadcast_rows():
    """x + y with y broadcast over the first axis and over the third."""
    nodes = [helper.make_node("Add", ["x", "y"], ["z"])]
    rng = np.random.default_rng(5)
    model = _model(nodes, [("x", TensorProto.FLOAT, [2, 3, 5, 7]), ("y", TensorProto.FLOAT, [3, 1, 7])],
                   [("z", TensorProto.FLOAT)])
    return model, {"x": _array(rng, (2, 3, 5, 7)), "y": _array(rng, (3, 1, 7))}


def transpose_last(shape):
    """A transpose of the last two axes: along a row the input index steps by a row, not by 1."""
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 1, 3, 2]), helper.make_node("Neg", ["t"], ["y"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, list(shape))], [("y", TensorProto.FLOAT)])
    return model, {"x": _array(np.random.default_rng(6), shape)}


def strided_slice():
    """Every other column of a plane, times two, plus a row-broadcast constant."""
    nodes = [helper.make_node("Slice", ["x", "start", "end", "axes", "steps"], ["s"]),
             helper.make_node("Mul", ["s", "two"], ["m"]),
             helper.make_node("Add", ["m", "row"], ["y"])]
    rng = np.random.default_rng(7)
    model = _model(nodes, [("x", TensorProto.FLOAT, [1, 6, 9, 26])], [("y", TensorProto.FLOAT)],
                   [("start", np.array([1, 0], np.int64)), ("end", np.array([8, 26], np.int64)),
                    ("axes", np.array([2, 3], np.int64)), ("steps", np.array([1, 2], np.int64)),
                    ("two", np.array(2.0, np.float32)), ("row", rng.uniform(-1, 1, (1, 6, 7, 1)).astype(np.float32))])
    return model, {"x": _array(rng, (1, 6, 9, 26))}


# name -> (model and inputs, whether the split must be taken)
CASES = {
    "shuffle_28x28": (lambda: shuffle(116, (28, 28)), True),
    "shuffle_7x7_four_groups": (lambda: shuffle(464, (7, 7), groups=4), True),
    "shuffle_odd_plane": (lambda: shuffle(30, (5, 13), groups=3), True),
    "shuffle_int64": (lambda: shuffle(12, (4, 6), dtype=np.int64, elem=TensorProto.INT64), True),
    "shuffle_unit_with_slices": (lambda: shuffle_unit(48, (14, 14)), True),
    # ShuffleNetV2's stage-3 unit at batch 8: 363776 points whose indices have a few hundred
    # nodes, which the check must afford (it once charged every candidate all points up front).
    "shuffle_unit_batch8": (lambda: shuffle_unit(232, (14, 14), batch=8), True),
    "shuffle_slice_concat_batch8": (lambda: shuffle_slice_concat(232, (14, 14), batch=8), True),
    "gate_over_planes": (lambda: gate(2, 40, (9, 11)), True),
    "resize_linear_up8": (lambda: resize(2, 5, (28, 28), 8.0), True),
    "resize_linear_up8_batch8": (lambda: resize(8, 21, (28, 28), 8.0), True),
    "resize_linear_down_align_corners": (lambda: resize(1, 3, (30, 36), 0.5, transform="align_corners"), True),
    "resize_nearest_up2_asymmetric": (lambda: resize(2, 3, (9, 7), 2.0, mode="nearest", transform="asymmetric"),
                                      True),
    "broadcast_rows": (broadcast_rows, False),
    "transpose_last_axes": (lambda: transpose_last((2, 3, 17, 6)), False),
    "strided_slice": (strided_slice, False),
}


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_row_kernels_match_onnxruntime(case, cpu, tmp_path):
    make, split = CASES[case]
    model, inputs = make()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path, cpu)
    if split:
        assert "llvm-x86-rows" in generators, generators
    outputs = st.run_artifact(library, inputs, tmp_path)
    truths = {"onnxruntime": st.run_onnxruntime(path, inputs)}
    (tmp_path / "reference").mkdir()
    truths["the reference evaluator"] = st.run_reference(path, inputs, tmp_path / "reference")
    for output in model.graph.output:
        actual = outputs[output.name]
        for who, truth in truths.items():
            expected = truth[output.name]
            assert actual.dtype == expected.dtype and actual.shape == expected.shape, (who, output.name)
            if case.startswith("gate"):  # a sigmoid: within a few ulp of each truth
                np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=1e-7, err_msg=f"{case} vs {who}")
            elif case.startswith("resize"):  # weighted sums of four inputs in [-3, 3], weights rounded
                np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=2e-5, err_msg=f"{case} vs {who}")
            else:
                np.testing.assert_array_equal(actual, expected, err_msg=f"{case} against {who}")
