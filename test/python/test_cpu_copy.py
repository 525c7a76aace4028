"""The CPU target's block-copy Concat (lib/codegen/cpu/cpu_copy.cpp), end to end: one-node Concat
models over every axis, many inputs, an input given twice, one input, several dtypes and rows of
the outer dims, compiled with `sinter compile --target cpu` and checked element for element against
onnxruntime and the reference evaluator (`sinter run --reference`). Each case checks that the
Concat went through the copy kernel (generator "llvm-x86-copy"), so the naive per-element
selection cannot pass for it.
"""

import numpy as np
import onnx
import pytest
from onnx import helper

import sinter_testing as st
from test_cpu_contraction import compile_for_cpu

TYPES = {np.float32: onnx.TensorProto.FLOAT, np.int64: onnx.TensorProto.INT64, np.float16: onnx.TensorProto.FLOAT16,
         np.bool_: onnx.TensorProto.BOOL, np.int8: onnx.TensorProto.INT8}


def concat(shapes, axis, dtype=np.float32, names=None, seed=0):
    rng = np.random.default_rng(seed)
    names = names or [f"x{k}" for k in range(len(shapes))]
    unique = dict(zip(names, shapes))
    out = list(shapes[0])
    out[axis] = sum(shape[axis] for shape in shapes)
    graph = helper.make_graph(
        [helper.make_node("Concat", names, ["y"], axis=axis)], "concat",
        [helper.make_tensor_value_info(name, TYPES[dtype], shape) for name, shape in unique.items()],
        [helper.make_tensor_value_info("y", TYPES[dtype], out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    if dtype == np.bool_:
        inputs = {name: rng.integers(0, 2, size=shape).astype(np.bool_) for name, shape in unique.items()}
    elif np.issubdtype(dtype, np.integer):
        inputs = {name: rng.integers(-100, 100, size=shape).astype(dtype) for name, shape in unique.items()}
    else:
        inputs = {name: rng.uniform(-1, 1, size=shape).astype(dtype) for name, shape in unique.items()}
    return model, inputs


CASES = {
    "channels_of_one_image": lambda: concat([(1, 3, 5, 7), (1, 8, 5, 7), (1, 1, 5, 7)], 1),
    "channels_of_three_images": lambda: concat([(3, 4, 6, 2), (3, 2, 6, 2)], 1),
    "first_axis": lambda: concat([(2, 5), (3, 5), (1, 5)], 0),
    "last_axis": lambda: concat([(4, 3, 2), (4, 3, 5)], -1),
    "many_inputs": lambda: concat([(1, 2 + k % 3, 4, 4) for k in range(24)], 1),
    "one_input_twice": lambda: concat([(2, 3, 4), (2, 3, 4)], 1, names=["a", "a"]),
    "int64": lambda: concat([(2, 3), (2, 4)], 1, np.int64),
    "float16": lambda: concat([(3, 2, 5), (3, 1, 5)], 1, np.float16),
    "bool": lambda: concat([(2, 7), (2, 9)], 1, np.bool_),
    "int8_middle_axis": lambda: concat([(2, 3, 5, 2), (2, 3, 4, 2)], 2, np.int8),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_concat_copies_match_onnxruntime(case, tmp_path):
    model, inputs = CASES[case]()
    path, library, generators = compile_for_cpu(case, model, inputs, tmp_path)
    assert generators == ["llvm-x86-copy"], generators
    actual = st.run_artifact(library, inputs, tmp_path)["y"]
    (tmp_path / "reference").mkdir()
    for name, truth in (("onnxruntime", st.run_onnxruntime(path, inputs)["y"]),
                        ("the reference evaluator", st.run_reference(path, inputs, tmp_path / "reference")["y"])):
        assert actual.dtype == truth.dtype and actual.shape == truth.shape, (name, actual.dtype, actual.shape)
        np.testing.assert_array_equal(actual, truth, err_msg=f"{case} against {name}")
