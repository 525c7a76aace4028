"""One kernel per distinct body at the CPU target: layers whose kernels differ only in their
weights (a model's repeated blocks) are built once and launched under one entry point, and the
artifact still computes what onnxruntime computes."""
import re

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from sinter_testing import assert_outputs_match, run_cli, run_cpu, run_onnxruntime


def repeated_layers_model(path, layers=4, width=128):
    """x [8, width] through `layers` MatMul + Add + Relu blocks of one shape (each its own
    weights), then a head MatMul to 10; and two Add + Sigmoid + Mul chains of one shape on inputs
    y and z."""
    rng = np.random.default_rng(7)
    nodes, initializers = [], []
    current = "x"
    for i in range(layers):
        weight = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        bias = (rng.standard_normal(width) * 0.1).astype(np.float32)
        initializers += [numpy_helper.from_array(weight, f"w{i}"), numpy_helper.from_array(bias, f"b{i}")]
        nodes += [helper.make_node("MatMul", [current, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
        current = f"h{i}"
    head = (rng.standard_normal((width, 10)) / np.sqrt(width)).astype(np.float32)
    initializers.append(numpy_helper.from_array(head, "head"))
    nodes.append(helper.make_node("MatMul", [current, "head"], ["logits"]))
    shift = rng.standard_normal(64).astype(np.float32)
    initializers.append(numpy_helper.from_array(shift, "shift"))
    for name in ("y", "z"):
        nodes += [helper.make_node("Add", [name, "shift"], [f"{name}_add"]),
                  helper.make_node("Sigmoid", [f"{name}_add"], [f"{name}_gate"]),
                  helper.make_node("Mul", [f"{name}_gate", name], [f"{name}_out"])]
    graph = helper.make_graph(
        nodes, "repeated_layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, width]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, 10]),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [4, 64]),
         helper.make_tensor_value_info("z_out", TensorProto.FLOAT, [4, 64])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def test_repeated_layers_share_one_kernel_and_match_onnxruntime(tmp_path):
    model = tmp_path / "repeated.onnx"
    repeated_layers_model(model)
    rng = np.random.default_rng(3)
    inputs = {"x": rng.standard_normal((8, 128)).astype(np.float32),
              "y": rng.standard_normal((4, 64)).astype(np.float32),
              "z": rng.standard_normal((4, 64)).astype(np.float32)}
    actual = run_cpu(model, inputs, tmp_path)
    assert_outputs_match(actual, run_onnxruntime(model, inputs), "repeated layers at the CPU target")

    summary = run_cli(["inspect", "--plan", tmp_path / "model.so"]).stdout
    match = re.search(r"-> (\d+) kernels(?: \([^)]*\))?, (\d+) distinct", summary)
    assert match, f"inspect does not report distinct kernels:\n{summary}"
    launched, distinct = int(match.group(1)), int(match.group(2))
    # Four blocks of one shape (the first may differ: it reads a graph input where the others
    # read the arena, which is no difference in code), the head, and two chains of one shape.
    assert launched >= 7, summary
    assert distinct <= launched - 4, summary
