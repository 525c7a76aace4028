#!/usr/bin/env python3
"""Warp-per-row kernels on the GPU, against onnxruntime on the CPU (docs/gpu-testing.md).

    python3 test/gpu/check_row_kernels.py --bin DIR --work DIR [--no-gpu]

DIR holds the portable `sinter` (scripts/device/build-portable.sh). Each case is a small model
whose CUDA kernel gives each row to a warp: LayerNormalization and Softmax over the last axis,
at row lengths that take each form of the row plan (cuda_warp_kernel.cpp):
  - lengths a multiple of 32 up to 1024 hold the row in registers, loaded once, with runs of
    V elements a lane: 16 bytes (768, 1024 in f32: V = 4; 768 in f16: V = 8), shorter where the
    length does not split into whole 16-byte runs of 32 lanes (64: V = 2; 96: V = 1);
  - other lengths (1000, 197) and long rows (2048) keep the lane-strided loops.
For each case and compilation (fp32; fp16 with the rows in f16, and with them pinned to f32):
  - the emitted CUDA C must hold a row in registers exactly when the plan says it should (so a
    change in the plan cannot make a case test nothing);
  - `sinter run` on the GPU must match onnxruntime: max|a-b|/max|b| <= 1e-4 at fp32, relative L2
    <= 1e-2 at fp16.
With --no-gpu the artifacts are compiled for the CPU to exercise the comparison (the CUDA C is
still emitted and checked). Exits 1 when any check fails; prints one line per case.
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import kernel_cases

INNER = 64  # the product's reduction

# Compilations of each case: at fp16 the LayerNorm reads the product's rows as stored, f16 (the
# default, --norm-inputs auto), or as f32 (--norm-inputs f32 pins its input to f32).
CONFIGS = [("fp32", ["--precision", "fp32"]), ("fp16", ["--precision", "fp16"]),
           ("fp16-f32-rows", ["--precision", "fp16", "--norm-inputs", "f32"])]

# (name, op, rows, row length, whether the row is held in registers)
CASES = [
    ("layernorm 768", "layernorm", 197, 768, True),
    ("layernorm 1024", "layernorm", 64, 1024, True),
    ("layernorm 64", "layernorm", 300, 64, True),
    ("layernorm 96", "layernorm", 300, 96, True),
    ("layernorm 1000", "layernorm", 50, 1000, False),
    ("layernorm 2048", "layernorm", 40, 2048, False),
    ("layernorm of a sum 768", "layernorm_sum", 197, 768, True),
    ("softmax 768", "softmax", 128, 768, True),
    ("softmax 197", "softmax", 128, 197, False),
]


def build(path, op, rows, length, rng):
    """The op on the rows of a product (x @ w + offset, an activation the compiler may store in 16 bits)."""
    shape = [rows, length]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, INNER])]
    # Rows with a large common offset: a one-pass variance would lose them.
    initializers = [numpy_helper.from_array((rng.standard_normal((INNER, length)) / np.sqrt(INNER)).astype(np.float32), "w"),
                    numpy_helper.from_array(np.full(length, 3.0, np.float32), "offset")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "offset"], ["p"])]
    if op == "softmax":
        nodes.append(helper.make_node("Softmax", ["p"], ["y"], axis=-1))
    else:
        scale = (1.0 + 0.5 * rng.standard_normal(length)).astype(np.float32)
        bias = (0.5 * rng.standard_normal(length)).astype(np.float32)
        initializers += [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(bias, "bias")]
        source = "p"
        if op == "layernorm_sum":
            inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, shape))
            nodes.append(helper.make_node("Add", ["p", "r"], ["s"]))
            source = "s"
        nodes.append(helper.make_node("LayerNormalization", [source, "scale", "bias"], ["y"], axis=-1, epsilon=1e-5))
    graph = helper.make_graph(nodes, "rows", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in inputs}


def holds_rows(source_dir):
    return any("sn_row" in p.read_text() for p in Path(source_dir).glob("*.cu") if not p.name.startswith("module"))


def main():
    args, sinter = kernel_cases.arguments(__doc__)
    rng = np.random.default_rng(0)
    failures = 0
    for name, op, rows, length, held in CASES:
        case = kernel_cases.case_folder(args.work, name)
        model = case / "model.onnx"
        feeds = build(model, op, rows, length, rng)
        want = kernel_cases.onnxruntime_output(model, feeds)
        files = kernel_cases.save_inputs(case, feeds)
        for config, flags in CONFIGS:
            precision = flags[1]
            problems = []
            source = case / f"src_{config}"
            cuda = case / f"cuda_{config}.so"
            subprocess.run([sinter, "compile", str(model), "-o", str(cuda), "--force", "--target", "cuda", "--arch",
                            "sm_90", *flags, "--emit-source", str(source)], check=True, capture_output=True)
            if holds_rows(source) != held:
                problems.append(f"rows held in registers: {not held}, expected {held}")
            got = kernel_cases.output_of(sinter, model, cuda, case, config, flags, files, args.no_gpu)
            error, what, problem = kernel_cases.compare(got, want, precision)
            problems += [problem] if problem else []
            failures += kernel_cases.report(name, config, what, error, problems, f", rows held {held}")
    print(f"check_row_kernels: {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
