#!/usr/bin/env python3
"""The CUDA tensor-core kernels' window gather (lib/codegen/cuda/cuda_mma_staging.cpp) on the GPU,
against onnxruntime on the CPU (docs/gpu-testing.md): convolutions whose rhs reads the input
window directly, as implicit GEMMs.

    python3 test/gpu/check_convolution.py --bin DIR --work DIR [--no-gpu]

DIR holds the portable `sinter` (scripts/device/build-portable.sh). Each case is a small model
of one Conv (group 1 unless given) and the nodes around it, chosen to take every path of the
gather: both reduction orders (channels innermost, a run of steps one tap of consecutive
planes; the window innermost, each step its own channel and tap), the graph's f32 input rounded
to 16 bits on its way in and a stored 16-bit activation read as bits, strides, dilations,
asymmetric padding, 1-d windows, columns that end inside a tile, and a grouped convolution
whose groups are a GEMM's batch. Each case is compiled at each precision with tensor-core tiles
forced (`--tensor-core-tile`: the cases are too small to choose them), so that both instruction
families and several tile widths gather: fp32 as tf32 pairs on mma.sync; fp16 and bf16 on
mma.sync (`--wgmma off`) and on wgmma (128x128 and 128x64, the H200 runs the sm_90a body). For
each:
  - the generated source (`--emit-source`) of its contraction must say `rhs window gather` in
    every tensor-core body, so a fallback to another staging cannot pass for it;
  - `sinter run` on the GPU must match onnxruntime: max|a-b|/max|b| <= 1e-4 at fp32, relative L2
    <= 1e-2 at fp16 and bf16.
With --no-gpu the outputs come from CPU-target artifacts (the CUDA sources are still generated
and checked). Exits 1 when any check fails; prints one line per case.
"""
import subprocess
import sys

import numpy as np

import kernel_cases
from check_depthwise import build

# (precision, tile, other flags)
VARIANTS = [("fp32", "64x64", []), ("fp16", "64x64", ["--wgmma", "off"]), ("fp16", "128x128", []),
            ("bf16", "32x64", ["--wgmma", "off"]), ("bf16", "128x64", [])]

# (name, x shape, kernel, Conv attributes ("outputs": output channels; group 1 unless given),
#  nodes after or before, as check_depthwise.py's cases)
CASES = [
    ("7x7 stride 2 stem on the graph input", [2, 3, 64, 64], [7, 7],
     {"pads": [3, 3, 3, 3], "strides": [2, 2], "outputs": 32}, ["relu"]),
    ("3x3 after a relu, channels innermost, residual", [2, 32, 20, 20], [3, 3], {"pads": [1, 1, 1, 1]},
     ["relu before", "residual"]),
    ("3x3 stride 2 asymmetric pads, ragged columns", [3, 16, 17, 19], [3, 3],
     {"pads": [0, 1, 1, 0], "strides": [2, 2], "outputs": 24}, ["relu before"]),
    ("5x5 dilation 2 on 3 channels", [2, 3, 30, 30], [5, 5], {"pads": [4, 4, 4, 4], "dilations": [2, 2],
                                                             "outputs": 16}, []),
    ("1-d k7 on 4 channels + silu", [2, 4, 100], [7], {"pads": [3, 3], "outputs": 32}, ["silu"]),
    ("3x3 on 12 channels", [2, 12, 15, 15], [3, 3], {"pads": [1, 1, 1, 1], "outputs": 20}, ["neg before"]),
    ("1x7 kernel, stride 1x2", [2, 16, 16, 16], [1, 7], {"pads": [0, 3, 0, 3], "strides": [1, 2], "outputs": 32},
     ["clip"]),
    ("two groups of 32 channels", [2, 64, 12, 12], [3, 3], {"pads": [1, 1, 1, 1], "group": 2}, ["relu before"]),
    ("3x3 no padding on the graph input", [1, 16, 23, 23], [3, 3], {"outputs": 48}, []),
]


def window_gathers(source_dir):
    """(tensor-core bodies, those whose rhs is a window gather) in the generated sources."""
    bodies = gathers = 0
    for path in source_dir.glob("*.cu"):
        if path.name == "module.cu":
            continue
        for line in path.read_text().splitlines():
            if "// contraction on tensor cores" in line:
                bodies += 1
                gathers += "rhs window gather" in line
    return bodies, gathers


def compile_variant(sinter, model, case, precision, tile, flags):
    """Compiles `model` for the GPU at one variant, its sources kept; (label, artifact, problem or None)."""
    label = f"{precision}_{tile}{'_mma_sync' if flags else ''}"
    cuda, sources = case / f"cuda_{label}.so", case / f"source_{label}"
    subprocess.run([sinter, "compile", str(model), "-o", str(cuda), "--force", "--target", "cuda", "--arch", "sm_90",
                    "--precision", precision, "--tensor-core-tile", tile, *flags, "--emit-source", str(sources)],
                   check=True, capture_output=True)
    bodies, gathers = window_gathers(sources)
    problem = None if bodies and gathers == bodies else f"{gathers} of {bodies} tensor-core bodies gather the window"
    return label, cuda, problem


def main():
    args, sinter = kernel_cases.arguments(__doc__)
    rng = np.random.default_rng(1)
    failures = 0
    for name, x_shape, kernel, attributes, around in CASES:
        case = kernel_cases.case_folder(args.work, name)
        model = case / "model.onnx"
        feeds = build(model, x_shape, kernel, {"group": 1, **attributes}, around, rng)
        want = kernel_cases.onnxruntime_output(model, feeds)
        files = kernel_cases.save_inputs(case, feeds)
        for precision, tile, flags in VARIANTS:
            label, cuda, problem = compile_variant(sinter, model, case, precision, tile, flags)
            problems = [problem] if problem else []
            got = kernel_cases.output_of(sinter, model, cuda, case, label, ["--precision", precision], files,
                                         args.no_gpu)
            error, what, problem = kernel_cases.compare(got, want, precision)
            problems += [problem] if problem else []
            failures += kernel_cases.report(name, label, what, error, problems)
    print(f"check_convolution: {failures} failing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
