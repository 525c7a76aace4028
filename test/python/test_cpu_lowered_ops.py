"""Forms of the ops lowered in lib/codegen/lowering/lower_indexing_scatter.cpp and lower_contraction_linear_algebra.cpp that the
ONNX node tests leave out: scatters of bool and integer data, duplicate indices under a
reduction, negative indices, a scatter with a fused epilogue, Einsum diagonals and broadcasting,
Det of larger and singular matrices, and Gather by constant indices. Each one-node (or two-node) model is compiled with
`sinter compile --target cpu` and must match onnxruntime.
"""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sinter_testing as st

ONNX_TYPES = {np.float32: TensorProto.FLOAT, np.int32: TensorProto.INT32, np.int64: TensorProto.INT64,
              np.bool_: TensorProto.BOOL}


def _model(nodes, inputs, outputs, opset=18):
    graph = helper.make_graph(
        nodes, "lowered_ops",
        [helper.make_tensor_value_info(name, ONNX_TYPES[array.dtype.type], array.shape) for name, array in inputs.items()],
        [helper.make_tensor_value_info(name, ONNX_TYPES[dtype], None) for name, dtype in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def scatter_elements_bool():
    rng = np.random.default_rng(1)
    data = rng.integers(0, 2, size=(4, 6)).astype(np.bool_)
    indices = np.array([[3, 0, 2, 1, 0, 3], [1, 2, 0, 3, 2, 1]], np.int64)  # no duplicate per column
    updates = rng.integers(0, 2, size=(2, 6)).astype(np.bool_)
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=0)
    inputs = {"data": data, "indices": indices, "updates": updates}
    return _model([node], inputs, [("y", np.bool_)]), inputs


def scatter_elements_duplicates_mul():
    rng = np.random.default_rng(2)
    data = rng.integers(-3, 4, size=(3, 5)).astype(np.int32)
    indices = np.array([[4, -1, 0, 4], [1, 1, -5, 2], [0, 0, 0, 0]], np.int64)  # -1 is 4, -5 is 0
    updates = rng.integers(-3, 4, size=(3, 4)).astype(np.int32)
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["y"], axis=1, reduction="mul")
    inputs = {"data": data, "indices": indices, "updates": updates}
    return _model([node], inputs, [("y", np.int32)]), inputs


def scatter_elements_add_then_relu():
    rng = np.random.default_rng(3)
    data = rng.uniform(-1, 1, size=(2, 3, 4)).astype(np.float32)
    indices = rng.integers(-3, 3, size=(2, 5, 4)).astype(np.int64)
    updates = rng.uniform(-1, 1, size=(2, 5, 4)).astype(np.float32)
    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["s"], axis=1, reduction="add"),
             helper.make_node("Relu", ["s"], ["y"])]
    inputs = {"data": data, "indices": indices, "updates": updates}
    return _model(nodes, inputs, [("y", np.float32)]), inputs


def scatter_nd_duplicates_min():
    rng = np.random.default_rng(4)
    data = rng.uniform(-1, 1, size=(4, 3, 2)).astype(np.float32)
    indices = np.array([[[0, 1], [3, -1]], [[0, 1], [-4, 2]]], np.int64)  # [0, 1] twice; -1 is 2, -4 is 0
    updates = rng.uniform(-1, 1, size=(2, 2, 2)).astype(np.float32)
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="min")
    inputs = {"data": data, "indices": indices, "updates": updates}
    return _model([node], inputs, [("y", np.float32)]), inputs


def scatter_nd_int64_add():
    data = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    indices = np.array([[1], [0], [1]], np.int64)
    updates = np.arange(36, dtype=np.int64).reshape(3, 3, 4) * 7
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], reduction="add")
    inputs = {"data": data, "indices": indices, "updates": updates}
    return _model([node], inputs, [("y", np.int64)]), inputs


def einsum(equation, *shapes):
    rng = np.random.default_rng(5)
    inputs = {f"x{i}": rng.uniform(-1, 1, size=shape).astype(np.float32) for i, shape in enumerate(shapes)}
    node = helper.make_node("Einsum", list(inputs), ["y"], equation=equation)
    return _model([node], inputs, [("y", np.float32)]), inputs


def det(matrices):
    node = helper.make_node("Det", ["x"], ["y"])
    inputs = {"x": matrices.astype(np.float32)}
    return _model([node], inputs, [("y", np.float32)]), inputs


def _singular():
    rng = np.random.default_rng(6)
    a = rng.uniform(-1, 1, size=(3, 4, 4))
    a[1, 2] = 2 * a[1, 0]  # a repeated row: singular
    a[2, :, 1] = 0         # a zero column
    return a


def gather_constant_indices():
    # One constant index (scalar, negative, and a one-element list that keeps its axis) is a
    # constant of the kernel (lower_data_movement.cpp); a two-element list is still read.
    rng = np.random.default_rng(9)
    data = rng.standard_normal((3, 5, 4)).astype(np.float32)
    constants = {"two": np.array(2, np.int64), "last": np.array(-1, np.int64),
                 "one_of": np.array([3], np.int64), "pair": np.array([4, -5], np.int64)}
    nodes = [helper.make_node("Gather", ["data", name], [f"y_{name}"], axis=1) for name in constants]
    nodes.append(helper.make_node("Gather", ["data", "two"], ["y_axis2"], axis=2))
    graph = helper.make_graph(
        nodes, "gather_constants",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, data.shape)],
        [helper.make_tensor_value_info(f"y_{name}", TensorProto.FLOAT, None) for name in list(constants) + ["axis2"]],
        [onnx.numpy_helper.from_array(value, name) for name, value in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model, {"data": data}


CASES = {
    "scatter_elements_bool": scatter_elements_bool,
    "scatter_elements_duplicates_mul": scatter_elements_duplicates_mul,
    "scatter_elements_add_then_relu": scatter_elements_add_then_relu,
    "scatter_nd_duplicates_min": scatter_nd_duplicates_min,
    "scatter_nd_int64_add": scatter_nd_int64_add,
    "einsum_diagonal": lambda: einsum("bii->bi", (2, 3, 3)),
    "einsum_ellipsis_broadcast": lambda: einsum("...ij,...jk->...ik", (2, 1, 3, 4), (2, 5, 4, 2)),
    "einsum_three_inputs": lambda: einsum("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    "einsum_implicit_output": lambda: einsum("kj,ji", (3, 4), (4, 2)),
    "det_6x6": lambda: det(np.random.default_rng(7).uniform(-1, 1, size=(2, 3, 6, 6))),
    "det_singular": lambda: det(_singular()),
    "gather_constant_indices": gather_constant_indices,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_lowered_op_matches_onnxruntime(case, tmp_path):
    model, inputs = CASES[case]()
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    actual = st.run_cpu(path, inputs, tmp_path)
    st.assert_outputs_match(actual, st.run_onnxruntime(path, inputs), context=case)
