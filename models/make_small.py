#!/usr/bin/env python3
"""Writes the small hand-built test models of models/ with onnx.helper.

Run with the project's venv: `.venv/bin/python models/make_small.py [OUT_DIR]` (default: the
folder of this script). Weights come from fixed seeds, so every run writes identical files.
Weights are scaled by 1/sqrt(fan_in) so activations stay finite and spread out.

  tiny_cnn.onnx        Conv+BatchNorm+Relu, MaxPool, a residual block, GlobalAveragePool,
                       Flatten, Gemm, Softmax (the README's demo model)
  tiny_mlp.onnx        MatMul+Add, Gemm with transB / alpha / beta, Relu, Sigmoid, Tanh
  tiny_attention.onnx  one transformer encoder block: multi-head attention with a padding mask
                       (Where), Softmax, LayerNormalization, Gelu
  tiny_shapes.onnx     shape arithmetic, data movement, comparisons, reductions and
                       element-wise math; float, int64 and bool outputs
  tiny_dynamic.onnx    a symbolic `batch` dim carried through Shape-based reshapes
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 20  # Gelu needs 20
IR_VERSION = 9  # the IR version that goes with opset 20


class GraphBuilder:
    """Collects nodes and initializers; each node's outputs get fresh, readable names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.counter = 0

    def const(self, value, name=None, dtype=None):
        array = np.asarray(value, dtype=dtype)
        if name is None:
            self.counter += 1
            name = f"const_{self.counter}"
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name, shape, fan_in=None, scale=1.0):
        fan_in = fan_in or shape[-1]
        values = self.rng.standard_normal(shape) * (scale / np.sqrt(fan_in))
        return self.const(values.astype(np.float32), name)

    def op(self, op_type, inputs, outputs=1, **attributes):
        self.counter += 1
        if isinstance(outputs, int):
            outputs = [f"{op_type.lower()}_{self.counter}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), list(outputs),
                                           name=f"{op_type}_{self.counter}", **attributes))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="sinter models/make_small.py")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model, full_check=True)
        return model


def tensor(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def conv_bn_relu(g, x, cin, cout, tag, relu=True):
    w = g.weight(f"{tag}.weight", [cout, cin, 3, 3], fan_in=cin * 9, scale=1.4)
    b = g.const(g.rng.uniform(-0.1, 0.1, cout).astype(np.float32), f"{tag}.bias")
    y = g.op("Conv", [x, w, b], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    scale = g.const(g.rng.uniform(0.5, 1.5, cout).astype(np.float32), f"{tag}.bn.scale")
    shift = g.const(g.rng.uniform(-0.2, 0.2, cout).astype(np.float32), f"{tag}.bn.shift")
    mean = g.const(g.rng.uniform(-0.2, 0.2, cout).astype(np.float32), f"{tag}.bn.mean")
    var = g.const(g.rng.uniform(0.5, 2.0, cout).astype(np.float32), f"{tag}.bn.var")
    y = g.op("BatchNormalization", [y, scale, shift, mean, var], epsilon=1e-5)
    return g.op("Relu", [y]) if relu else y


def make_tiny_cnn():
    g = GraphBuilder(seed=1)
    y = conv_bn_relu(g, "input", 3, 8, "stem")
    y = g.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])
    skip = y
    y = conv_bn_relu(g, y, 8, 8, "block.conv1")
    y = conv_bn_relu(g, y, 8, 8, "block.conv2", relu=False)
    y = g.op("Relu", [g.op("Add", [y, skip])])
    y = g.op("Flatten", [g.op("GlobalAveragePool", [y])], axis=1)
    w = g.weight("fc.weight", [10, 8], scale=3.0)
    b = g.const(g.rng.uniform(-0.1, 0.1, 10).astype(np.float32), "fc.bias")
    logits = g.op("Gemm", [y, w, b], transB=1)
    g.op("Softmax", [logits], outputs=["probabilities"], axis=-1)
    return g.model("tiny_cnn", [tensor("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                   [tensor("probabilities", TensorProto.FLOAT, [1, 10])])


def make_tiny_mlp():
    g = GraphBuilder(seed=2)
    h = g.op("MatMul", ["features", g.weight("w1", [64, 32], fan_in=64)])
    h = g.op("Relu", [g.op("Add", [h, g.const(g.rng.uniform(-0.1, 0.1, 32).astype(np.float32))])])
    h = g.op("Gemm", [h, g.weight("w2", [16, 32], scale=2.0), g.const(np.zeros(16, np.float32) + 0.05)],
             transB=1)
    h = g.op("Sigmoid", [h])
    bias = g.const(g.rng.uniform(-0.5, 0.5, [1, 8]).astype(np.float32))
    h = g.op("Gemm", [h, g.weight("w3", [16, 8], scale=2.0), bias], alpha=0.5, beta=2.0)
    g.op("Tanh", [h], outputs=["scores"])
    return g.model("tiny_mlp", [tensor("features", TensorProto.FLOAT, [1, 64])],
                   [tensor("scores", TensorProto.FLOAT, [1, 8])])


def make_tiny_attention(seq=8, hidden=16, heads=2):
    g = GraphBuilder(seed=3)
    head_dim = hidden // heads
    split_heads = g.const([1, seq, heads, head_dim], "split_heads_shape", np.int64)

    def project(x, name, transpose):
        y = g.op("Reshape", [g.op("MatMul", [x, g.weight(name, [hidden, hidden], fan_in=hidden)]),
                             split_heads])
        return g.op("Transpose", [y], perm=transpose)

    q = project("x", "wq", [0, 2, 1, 3])  # [1, heads, seq, head_dim]
    k = project("x", "wk", [0, 2, 3, 1])  # [1, heads, head_dim, seq]
    v = project("x", "wv", [0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.float32(1 / np.sqrt(head_dim)))])
    mask = g.op("Unsqueeze", ["key_mask", g.const([1, 2], dtype=np.int64)])  # [1, 1, 1, seq]
    scores = g.op("Where", [mask, scores, g.const(np.float32(-1e4))])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]),
                               g.const([1, seq, hidden], dtype=np.int64)])
    attended = g.op("Add", ["x", g.op("MatMul", [context, g.weight("wo", [hidden, hidden])])])

    def layer_norm(x, tag):
        gamma = g.const(g.rng.uniform(0.8, 1.2, hidden).astype(np.float32), f"{tag}.gamma")
        beta = g.const(g.rng.uniform(-0.1, 0.1, hidden).astype(np.float32), f"{tag}.beta")
        return g.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)

    h = layer_norm(attended, "ln1")
    ffn = g.op("Gelu", [g.op("MatMul", [h, g.weight("ffn.w1", [hidden, 2 * hidden], fan_in=hidden)])])
    ffn = g.op("MatMul", [ffn, g.weight("ffn.w2", [2 * hidden, hidden], fan_in=2 * hidden)])
    y = layer_norm(g.op("Add", [h, ffn]), "ln2")
    g.op("Identity", [y], outputs=["y"])
    return g.model("tiny_attention",
                   [tensor("x", TensorProto.FLOAT, [1, seq, hidden]),
                    tensor("key_mask", TensorProto.BOOL, [1, seq])],
                   [tensor("y", TensorProto.FLOAT, [1, seq, hidden])])


def make_tiny_shapes():
    """Many small ops on one input x: f32[2,3,4,6], each branch ending in a named output."""
    g = GraphBuilder(seed=4)
    i64 = lambda values: g.const(values, dtype=np.int64)  # noqa: E731
    f32 = lambda values: g.const(values, dtype=np.float32)  # noqa: E731

    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape: x as [batch, -1] = [2, 72].
    shape = g.op("Shape", ["x"])
    batch = g.op("Gather", [shape, i64(0)], axis=0)
    flat_shape = g.op("Concat", [g.op("Unsqueeze", [batch, i64([0])]), i64([-1])], axis=0)
    flat = g.op("Reshape", ["x", flat_shape])
    # Slice with a step, Split, Concat back in the other order, Clip and the hard activations.
    sliced = g.op("Slice", [flat, i64([1]), i64([49]), i64([1]), i64([2])])  # [2, 24]
    left, right = g.op("Split", [sliced, i64([8, 16])], outputs=2, axis=1)
    swapped = g.op("Concat", [right, left], axis=1)
    clipped = g.op("Clip", [g.op("Mul", [swapped, f32(4.0)]), f32(-3.5), f32(3.5)])
    g.op("Add", [g.op("HardSwish", [clipped]), g.op("HardSigmoid", [clipped], alpha=0.3, beta=0.4)],
         outputs=["activations"])

    # Transpose, Unsqueeze/Squeeze, Pad, Tile, ReduceMean.
    moved = g.op("Transpose", ["x"], perm=[0, 2, 1, 3])  # [2, 4, 3, 6]
    moved = g.op("Squeeze", [g.op("Unsqueeze", [moved, i64([1])]), i64([1])])
    padded = g.op("Pad", [moved, i64([0, 0, 1, 0, 0, 0, 0, 2]), f32(0.25)], mode="constant")
    tiled = g.op("Tile", [padded, i64([1, 2, 1, 1])])  # [2, 8, 4, 8]
    g.op("ReduceMean", [tiled, i64([3])], outputs=["reduced_mean"], keepdims=0)

    # Gather on a data axis, ReduceMax + Expand, Min/Max (variadic), Trilu.
    picked = g.op("Gather", ["x", i64([2, 0, 2])], axis=1)  # [2, 3, 4, 6]
    channel_max = g.op("ReduceMax", ["x", i64([1])], keepdims=1)  # [2, 1, 4, 6]
    expanded = g.op("Expand", [channel_max, shape])
    lowest = g.op("Min", [picked, expanded, f32(0.3)])
    g.op("Trilu", [g.op("Max", [lowest, "x"]), i64(1)], outputs=["triangular"], upper=0)

    # Range and ConstantOfShape from the input's shape, Cast, Where on a comparison.
    width = g.op("Gather", [shape, i64(3)], axis=0)
    ramp = g.op("Cast", [g.op("Range", [i64(0), width, i64(1)])], to=TensorProto.FLOAT)  # [6]
    ones = g.op("ConstantOfShape", [g.op("Slice", [shape, i64([2]), i64([4])])],
                value=numpy_helper.from_array(np.array([0.5], np.float32)))  # [4, 6]
    positive = g.op("Greater", ["x", f32(0.0)])
    g.op("Where", [positive, g.op("Mul", ["x", ramp]), g.op("Add", ["x", ones])],
         outputs=["selected"])
    g.op("Or", [g.op("Less", ["x", f32(-0.5)]), g.op("Equal", [ramp, f32(2.0)])],
         outputs=["flags"])
    g.op("ArgMax", ["x"], outputs=["argmax"], axis=3, keepdims=0)

    # Element-wise math on a positive value p = exp(-x^2) in (0, 1].
    p = g.op("Exp", [g.op("Neg", [g.op("Pow", ["x", f32(2.0)])])])
    math = g.op("Add", [g.op("Sqrt", [p]), g.op("Log", [p])])
    math = g.op("Add", [math, g.op("Reciprocal", [g.op("Add", [p, f32(1.0)])])])
    g.op("Add", [math, g.op("Erf", ["x"])], outputs=["math"])
    summed = g.op("ReduceSum", [g.op("Cast", [positive], to=TensorProto.FLOAT), i64([1, 3])],
                  keepdims=1)  # [2, 1, 4, 1]
    g.op("Resize", [g.op("Add", [channel_max, summed]), "", f32([1, 1, 2, 1.5])],
         outputs=["resized"], mode="linear")  # [2, 1, 8, 9]

    return g.model(
        "tiny_shapes", [tensor("x", TensorProto.FLOAT, [2, 3, 4, 6])],
        [tensor("activations", TensorProto.FLOAT, [2, 24]),
         tensor("reduced_mean", TensorProto.FLOAT, [2, 8, 4]),
         tensor("triangular", TensorProto.FLOAT, [2, 3, 4, 6]),
         tensor("selected", TensorProto.FLOAT, [2, 3, 4, 6]),
         tensor("flags", TensorProto.BOOL, [2, 3, 4, 6]),
         tensor("argmax", TensorProto.INT64, [2, 3, 4]),
         tensor("math", TensorProto.FLOAT, [2, 3, 4, 6]),
         tensor("resized", TensorProto.FLOAT, [2, 1, 8, 9])])


def make_tiny_dynamic():
    """x: f32[batch, 16] -> [batch, 4, 4] through a Shape-built shape -> Softmax -> sum."""
    g = GraphBuilder(seed=5)
    h = g.op("Add", [g.op("MatMul", ["x", g.weight("w", [16, 16])]),
                     g.const(g.rng.uniform(-0.1, 0.1, 16).astype(np.float32), "b")])
    h = g.op("Relu", [h])
    batch = g.op("Slice", [g.op("Shape", ["x"]), g.const([0], dtype=np.int64),
                           g.const([1], dtype=np.int64)])
    grid = g.op("Reshape", [h, g.op("Concat", [batch, g.const([4, 4], dtype=np.int64)], axis=0)])
    weights = g.op("Softmax", [grid], axis=-1)
    g.op("ReduceSum", [g.op("Mul", [weights, grid]), g.const([2], dtype=np.int64)],
         outputs=["y"], keepdims=0)
    return g.model("tiny_dynamic", [tensor("x", TensorProto.FLOAT, ["batch", 16])],
                   [tensor("y", TensorProto.FLOAT, ["batch", 4])])


MODELS = {
    "tiny_cnn": make_tiny_cnn,
    "tiny_mlp": make_tiny_mlp,
    "tiny_attention": make_tiny_attention,
    "tiny_shapes": make_tiny_shapes,
    "tiny_dynamic": make_tiny_dynamic,
}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, make in MODELS.items():
        path = os.path.join(out_dir, f"{name}.onnx")
        onnx.save(make(), path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
