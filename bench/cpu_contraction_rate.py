#!/usr/bin/env python3
"""GFLOP/s of sinter's blocked CPU kernels on single contractions, against onnxruntime and the
machine's peak: how close the kernels themselves come, apart from the suite models' per-kernel
overheads.

    /work/main/.venv/bin/python bench/cpu_contraction_rate.py [--threads 2] [--cpu x86-64-v4]
        [--iterations 100] [--peak-gflops G]

Each case is a one-node ONNX model (MatMul with an initializer B, or Conv with weights and bias)
written to a temporary folder, compiled with `sinter compile --target cpu --cpu LEVEL`, timed with
`sinter bench --threads T` (p50), and timed in onnxruntime's CPUExecutionProvider with the same
threads (median of the same number of runs, inputs bound once). --peak-gflops (bench/peak_fma.c
at the same threads) adds sinter's fraction of peak.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]


def matmul_model(m, k, n):
    rng = np.random.default_rng(0)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
        [numpy_helper.from_array(b, "b")])
    return graph, {"a": rng.uniform(-1, 1, (m, k)).astype(np.float32)}, 2 * m * n * k


def conv_model(channels_in, channels_out, size, kernel, stride=1, group=1):
    rng = np.random.default_rng(0)
    pad = kernel // 2
    w = rng.uniform(-1, 1, (channels_out, channels_in // group, kernel, kernel)).astype(np.float32)
    bias = rng.uniform(-1, 1, (channels_out,)).astype(np.float32)
    out = (size + 2 * pad - kernel) // stride + 1
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "bias"], ["y"], kernel_shape=[kernel, kernel],
                          pads=[pad] * 4, strides=[stride, stride], group=group)], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels_in, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, channels_out, out, out])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    inputs = {"x": rng.uniform(-1, 1, (1, channels_in, size, size)).astype(np.float32)}
    return graph, inputs, 2 * channels_out * out * out * (channels_in // group) * kernel * kernel


def onnxruntime_ms(path, inputs, threads, iterations):
    """onnxruntime's median ms for a one-output model (output "y"), inputs bound once through an
    IOBinding, after 10 warm-up runs."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    for name, array in inputs.items():
        binding.bind_cpu_input(name, array)
    binding.bind_output("y", "cpu")
    for _ in range(10):
        session.run_with_iobinding(binding)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run_with_iobinding(binding)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


CASES = [
    ("MatMul 64x256 . 256x256", lambda: matmul_model(64, 256, 256)),
    ("MatMul 256x256 . 256x256", lambda: matmul_model(256, 256, 256)),
    ("MatMul 512x512 . 512x512", lambda: matmul_model(512, 512, 512)),
    ("MatMul 197x192 . 192x768", lambda: matmul_model(197, 192, 768)),
    ("Conv 3x3 64->64 @56x56", lambda: conv_model(64, 64, 56, 3)),
    ("Conv 1x1 128->128 @28x28", lambda: conv_model(128, 128, 28, 1)),
    ("Conv 3x3 256->256 @14x14", lambda: conv_model(256, 256, 14, 3)),
    ("Conv 3x3 512->512 @7x7", lambda: conv_model(512, 512, 7, 3)),
    ("Conv 7x7/2 3->64 @224x224", lambda: conv_model(3, 64, 224, 7, stride=2)),
    ("Conv 1x1 32->16 @112x112", lambda: conv_model(32, 16, 112, 1)),
    ("Conv 1x1 96->24 @56x56", lambda: conv_model(96, 24, 56, 1)),
    ("Conv 1x1 24->144 @56x56", lambda: conv_model(24, 144, 56, 1)),
    ("Depthwise 3x3 32 @112x112", lambda: conv_model(32, 32, 112, 3, group=32)),
    ("Depthwise 3x3/2 96 @112x112", lambda: conv_model(96, 96, 112, 3, stride=2, group=96)),
    ("Depthwise 7x7 384 @14x14", lambda: conv_model(384, 384, 14, 7, group=384)),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cpu", default="x86-64-v4")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--peak-gflops", type=float)
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN", ROOT / "build/bin/sinter"))
    args = parser.parse_args()
    print(f"# sinter --cpu {args.cpu} vs onnxruntime {onnxruntime.__version__}, {args.threads} "
          f"threads, p50 of {args.iterations} runs; load: {os.getloadavg()[0]:.2f}")
    header = "| case | MFLOP | sinter ms | sinter GFLOP/s | onnxruntime ms | onnxruntime GFLOP/s |"
    if args.peak_gflops:
        header += " sinter % of peak |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    with tempfile.TemporaryDirectory(prefix="sinter-rate-") as workdir:
        for name, make in CASES:
            graph, inputs, flops = make()
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
            model.ir_version = 8
            path = Path(workdir) / "case.onnx"
            onnx.save(model, str(path))
            artifact = Path(workdir) / "case.so"
            subprocess.run([str(args.sinter), "-q", "compile", str(path), "--target", "cpu",
                            "--cpu", args.cpu, "--force", "-o", str(artifact)], check=True)
            report = json.loads(subprocess.run(
                [str(args.sinter), "-q", "bench", str(artifact), "--threads", str(args.threads),
                 "--iterations", str(args.iterations), "--json"],
                check=True, capture_output=True, text=True).stdout)
            sinter_ms = report["latency_ms"]["p50"]
            ort_ms = onnxruntime_ms(path, inputs, args.threads, args.iterations)
            row = (f"| {name} | {flops / 1e6:.1f} | {sinter_ms:.4f} | {flops / sinter_ms / 1e6:.1f} | "
                   f"{ort_ms:.4f} | {flops / ort_ms / 1e6:.1f} |")
            if args.peak_gflops:
                row += f" {100 * flops / sinter_ms / 1e6 / args.peak_gflops:.0f}% |"
            print(row, flush=True)


if __name__ == "__main__":
    sys.exit(main())
