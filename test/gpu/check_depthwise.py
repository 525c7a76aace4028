#!/usr/bin/env python3
"""The CUDA window kernel (lib/codegen/cuda/cuda_window.cpp) on the GPU, against
onnxruntime on the CPU (docs/gpu-testing.md), for depthwise and grouped convolutions and pooling.

    python3 test/gpu/check_depthwise.py --bin DIR --work DIR [--no-gpu]

DIR holds the portable `sinter` (scripts/device/build-portable.sh). Each case is a small model
of a depthwise Conv (group = channels) or a grouped one (a few channels a group, both reduction
orders of conv_layout.h, a channel multiplier) and the nodes fused after it, chosen to take
every path of the kernel's plan: planes cut into bands (tall planes, or few planes at batch 1),
several small planes to a block, strides 1-4, dilations, asymmetric and zero padding, 1-d
windows, odd extents that leave a partial run at a band's end, up to 11x11 taps, shorter runs
for wide planes of many channels, fused bias, activations and a residual. For each case and
precision (fp32; fp16 and bf16 storage):
  - the artifact's kernel generators must name the direct kernel the case expects (`cuda-c
    depthwise` or `cuda-c grouped-window`), and neither where it must not take the case (a 13x13
    window, past its 121 taps; 40 outputs or 32 channels a group; an ungrouped convolution, a
    GEMM for the tensor cores), so a fallback to the generic kernel cannot pass for it; MaxPool and
    AveragePool cases (ceil mode, padding the maximum must not see, counts with and without the
    padding, dilations, 1-d) expect `cuda-c pooling-window`;
  - `sinter run` on the GPU must match onnxruntime: max|a-b|/max|b| <= 1e-4 at fp32, relative L2
    <= 1e-2 at fp16 and bf16.
With --no-gpu the outputs come from CPU-target artifacts (the CUDA artifacts are still compiled
and their generators checked). Exits 1 when any check fails; prints one line per case.
"""
import json
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kernel_cases

PRECISIONS = ["fp32", "fp16", "bf16"]

DEPTHWISE, GROUPED, POOLING = "cuda-c depthwise", "cuda-c grouped-window", "cuda-c pooling-window"
DIRECT = (DEPTHWISE, GROUPED, POOLING)

# (name, x shape, kernel, Conv attributes (group: the channels unless given; "outputs": output
#  channels, the input's unless given; "pool": "MaxPool" or "AveragePool" instead of a Conv),
#  nodes after ("relu", "silu", "residual", "clip"; "relu before" or "neg before": a Relu or Neg
#  before the Conv, so that at fp16 and bf16 the Conv reads a stored 16-bit activation, not the
#  graph's f32 input), the direct kernel that takes it, or None)
CASES = [
    ("7x7 convnext stage 1", [2, 96, 56, 56], [7, 7], {"pads": [3, 3, 3, 3]}, [], DEPTHWISE),
    ("7x7 on 7x7 planes + residual", [4, 384, 7, 7], [7, 7], {"pads": [3, 3, 3, 3]}, ["residual"], DEPTHWISE),
    ("3x3 tall planes batch 1 + clip", [1, 32, 112, 112], [3, 3], {"pads": [1, 1, 1, 1]}, ["clip"], DEPTHWISE),
    ("3x3 stride 2 odd + relu", [3, 24, 57, 45], [3, 3], {"pads": [1, 1, 1, 1], "strides": [2, 2]}, ["relu"], DEPTHWISE),
    ("5x5 stride 2 + silu", [2, 40, 28, 28], [5, 5], {"pads": [2, 2, 2, 2], "strides": [2, 2]}, ["silu"], DEPTHWISE),
    ("3x3 dilation 2", [2, 16, 30, 30], [3, 3], {"pads": [2, 2, 2, 2], "dilations": [2, 2]}, [], DEPTHWISE),
    ("asymmetric pads, strides 3x1", [1, 8, 20, 23], [3, 4], {"pads": [0, 1, 2, 0], "strides": [3, 1]}, [], DEPTHWISE),
    ("no padding stride 4", [2, 12, 33, 33], [4, 4], {"strides": [4, 4]}, ["relu"], DEPTHWISE),
    ("1-d k4 causal pad", [2, 64, 100], [4], {"pads": [3, 0]}, ["silu"], DEPTHWISE),
    ("11x11 taps", [1, 8, 40, 40], [11, 11], {"pads": [5, 5, 5, 5]}, [], DEPTHWISE),
    ("13x13 past the taps", [1, 4, 20, 20], [13, 13], {"pads": [6, 6, 6, 6]}, [], None),
    ("7x7 after a relu", [2, 48, 28, 28], [7, 7], {"pads": [3, 3, 3, 3]}, ["relu before", "residual"], DEPTHWISE),
    ("3x3 stride 2 after a relu, right pad", [2, 32, 56, 56], [3, 3], {"pads": [0, 0, 1, 1], "strides": [2, 2]},
     ["relu before", "clip"], DEPTHWISE),
    ("5x5 after a relu, rows of 6", [3, 8, 10, 6], [5, 5], {"pads": [2, 2, 2, 2]}, ["relu before"], DEPTHWISE),
    ("1-d after a relu", [2, 16, 64], [3], {"pads": [1, 1]}, ["relu before"], DEPTHWISE),
    # Grouped: 8 channels a group reduce channels innermost (conv_layout.h), 4 window innermost.
    ("groups of 8 stride 2 odd + relu", [2, 48, 29, 31], [3, 3], {"pads": [1, 1, 1, 1], "strides": [2, 2], "group": 6},
     ["relu"], GROUPED),
    ("groups of 8 on 7x7 planes + residual", [3, 64, 7, 7], [3, 3], {"pads": [1, 1, 1, 1], "group": 8},
     ["relu before", "residual"], GROUPED),
    ("groups of 4, 4 outputs", [2, 32, 14, 14], [3, 3], {"pads": [1, 1, 1, 1], "group": 8}, ["silu"], GROUPED),
    ("groups of 16, 16 outputs, shorter runs", [2, 64, 15, 15], [3, 3], {"pads": [1, 1, 1, 1], "group": 4},
     ["relu before"], GROUPED),
    ("groups of 8, wide rows halve the run", [1, 16, 9, 121], [3, 3], {"pads": [1, 1, 1, 1], "strides": [2, 2],
                                                                      "group": 2}, [], GROUPED),
    ("channel multiplier 2, 5x5", [2, 12, 20, 20], [5, 5], {"pads": [2, 2, 2, 2], "outputs": 24}, ["clip"], GROUPED),
    ("groups of 3, 6 outputs, dilation 2", [2, 12, 18, 18], [3, 3], {"pads": [2, 2, 2, 2], "dilations": [2, 2],
                                                                      "group": 4, "outputs": 24}, [], GROUPED),
    ("1-d groups of 8", [2, 32, 50], [3], {"pads": [1, 1], "group": 4}, ["relu"], GROUPED),
    # Pooling. Inputs are half negative: a maximum that saw the padding as 0 would be wrong.
    ("maxpool 3x3 stride 2 ceil, odd rows", [2, 16, 57, 57], [3, 3], {"pool": "MaxPool", "strides": [2, 2],
                                                                       "ceil_mode": 1}, [], POOLING),
    ("maxpool 3x3 pad 1 stored", [2, 24, 28, 28], [3, 3], {"pool": "MaxPool", "pads": [1, 1, 1, 1]},
     ["neg before"], POOLING),
    ("maxpool 3x3 stride 2 pad 1 graph input", [2, 8, 56, 56], [3, 3], {"pool": "MaxPool", "pads": [1, 1, 1, 1],
                                                                         "strides": [2, 2]}, ["relu"], POOLING),
    ("maxpool 2x2 dilation 2 asymmetric pads", [1, 6, 21, 30], [2, 2], {"pool": "MaxPool", "pads": [0, 1, 1, 0],
                                                                         "dilations": [2, 2]}, [], POOLING),
    ("averagepool 3x3 pad 1 excluding pads", [2, 8, 14, 15], [3, 3], {"pool": "AveragePool", "pads": [1, 1, 1, 1]},
     ["neg before"], POOLING),
    ("averagepool 2x2 stride 2 counting pads", [1, 8, 15, 15], [2, 2], {"pool": "AveragePool", "pads": [1, 1, 1, 1],
                                                                         "strides": [2, 2], "count_include_pad": 1},
     [], POOLING),
    ("maxpool 1-d k3 stride 2", [2, 16, 50], [3], {"pool": "MaxPool", "strides": [2], "pads": [1, 1]}, [], POOLING),
    ("40 outputs a group", [1, 8, 10, 10], [3, 3], {"pads": [1, 1, 1, 1], "group": 2, "outputs": 80}, [], None),
    ("32 channels a group", [1, 64, 10, 10], [3, 3], {"pads": [1, 1, 1, 1], "group": 2}, [], None),
    ("one group of 3 channels", [2, 3, 20, 20], [3, 3], {"pads": [1, 1, 1, 1], "group": 1, "outputs": 16}, ["relu"],
     None),
]


def build(path, x_shape, kernel, attributes, after, rng):
    attributes = dict(attributes)
    channels = x_shape[1]
    outputs = attributes.pop("outputs", channels)
    pool = attributes.pop("pool", None)
    initializers = []
    if pool:
        nodes = [helper.make_node(pool, ["x"], ["c"], kernel_shape=kernel, **attributes)]
    else:
        attributes.setdefault("group", channels)
        per_group = channels // attributes["group"]
        w = (rng.standard_normal((outputs, per_group, *kernel)) / np.sqrt(per_group * np.prod(kernel))).astype(np.float32)
        bias = (0.1 * rng.standard_normal(outputs)).astype(np.float32)
        initializers = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")]
        nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["c"], kernel_shape=kernel, **attributes)]
    if "clip" in after:
        initializers += [numpy_helper.from_array(np.array(0.0, np.float32), "low"),
                         numpy_helper.from_array(np.array(6.0, np.float32), "high")]
    for op, before in (("Relu", "relu before"), ("Neg", "neg before")):
        if before in after:
            nodes = [helper.make_node(op, ["x"], ["xb"])] + nodes
            nodes[1].input[0] = "xb"
            after = [a for a in after if a != before]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    # The output's shape, as ONNX defines it.
    spatial = len(kernel)
    pads = attributes.get("pads", [0] * 2 * spatial)
    strides = attributes.get("strides", [1] * spatial)
    dilations = attributes.get("dilations", [1] * spatial)
    ceil = attributes.get("ceil_mode", 0)
    out = [x_shape[0], outputs] + [-(-(x_shape[2 + d] + pads[d] + pads[spatial + d] - (kernel[d] - 1) * dilations[d] - 1)
                                     // strides[d]) + 1 if ceil else
                                   (x_shape[2 + d] + pads[d] + pads[spatial + d] - (kernel[d] - 1) * dilations[d] - 1)
                                   // strides[d] + 1 for d in range(spatial)]
    last = "c"
    for index, op in enumerate(after):
        name = f"a{index}"
        if op == "relu":
            nodes.append(helper.make_node("Relu", [last], [name]))
        elif op == "clip":
            nodes.append(helper.make_node("Clip", [last, "low", "high"], [name]))
        elif op == "silu":
            nodes += [helper.make_node("Sigmoid", [last], [name + "s"]), helper.make_node("Mul", [last, name + "s"], [name])]
        elif op == "residual":
            assert out == x_shape
            inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, out))
            nodes.append(helper.make_node("Add", [last, "r"], [name]))
        last = name
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "depthwise", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)],
                              initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in inputs}


def generators(sinter, artifact):
    info = json.loads(subprocess.run([sinter, "inspect", str(artifact), "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    return [kernel["generator"] for kernel in info["kernels"]]


def main():
    args, sinter = kernel_cases.arguments(__doc__)
    rng = np.random.default_rng(0)
    failures = 0
    for name, x_shape, kernel, attributes, after, expected in CASES:
        case = kernel_cases.case_folder(args.work, name)
        model = case / "model.onnx"
        feeds = build(model, x_shape, kernel, attributes, after, rng)
        want = kernel_cases.onnxruntime_output(model, feeds)
        files = kernel_cases.save_inputs(case, feeds)
        for precision in PRECISIONS:
            problems = []
            cuda = case / f"cuda_{precision}.so"
            subprocess.run([sinter, "compile", str(model), "-o", str(cuda), "--force", "--target", "cuda", "--arch",
                            "sm_90", "--precision", precision], check=True, capture_output=True)
            kinds = generators(sinter, cuda)
            if [kind for kind in DIRECT if kind in kinds] != ([expected] if expected else []):
                problems.append(f"generators {kinds}, expected the direct kernel: {expected}")
            got = kernel_cases.output_of(sinter, model, cuda, case, precision, ["--precision", precision], files,
                                         args.no_gpu)
            error, what, problem = kernel_cases.compare(got, want, precision)
            problems += [problem] if problem else []
            failures += kernel_cases.report(name, precision, what, error, problems)
    print(f"check_depthwise: {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
