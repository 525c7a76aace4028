#!/usr/bin/env python3
"""Single pointwise (1x1) convolutions with bias: sinter CLIs against onnxruntime, interleaved.

    /work/main/.venv/bin/python bench/cpu_pointwise_layers.py NAME=SINTER[:VAR=VALUE,...] ...
        [--rounds 5] [--iterations 100] [--threads 2] [--batch 1] [--cpu LEVEL]
        [--cases CIN-COUT-SIZE,...]

Each case (the mobile models' and ResNet-50's pointwise shapes at 7x7 to 56x56) is a one-node
model, compiled by every CLI given (`:VAR=VALUE,...` sets environment variables for that compile
only, to compare variants of one build). Then, per round, `sinter bench --json` of every
artifact (p50 of --iterations runs after 10 warm-up runs) and onnxruntime's median of as many
runs through an IOBinding (intra_op threads = --threads); the table gives the median of the
rounds, the ratios to onnxruntime and the GFLOP/s. The machine's load before and after is
printed: on a shared machine only columns measured in the same rounds compare.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from cpu_contraction_rate import onnxruntime_ms

CASES = [(160, 960, 7), (960, 160, 7), (960, 320, 7), (320, 1280, 7), (1152, 320, 7), (2048, 512, 7),
         (512, 2048, 7), (576, 96, 14), (96, 576, 14), (960, 160, 14), (480, 80, 14), (1024, 256, 14),
         (192, 32, 28), (144, 24, 56)]


def pointwise_model(channels_in, channels_out, size, batch):
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (channels_out, channels_in, 1, 1)).astype(np.float32)
    bias = rng.uniform(-1, 1, (channels_out,)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "bias"], ["y"], kernel_shape=[1, 1])], "pointwise",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels_in, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, channels_out, size, size])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inputs = {"x": rng.uniform(-1, 1, (batch, channels_in, size, size)).astype(np.float32)}
    return model, inputs, 2 * batch * channels_out * channels_in * size * size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("clis", nargs="+", help="NAME=SINTER[:VAR=VALUE,...]")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--cpu", default="", help="--cpu for every compile (default: the default levels)")
    parser.add_argument("--cases", default="", help="CIN-COUT-SIZE,... (default: all)")
    args = parser.parse_args()
    clis = []
    for text in args.clis:
        name, rest = text.split("=", 1)
        binary, _, variables = rest.partition(":")
        clis.append((name, binary, dict(v.split("=", 1) for v in variables.split(",") if v)))
    chosen = set(args.cases.split(",")) if args.cases else None
    cases = [c for c in CASES if chosen is None or "-".join(map(str, c)) in chosen]
    work = Path(tempfile.mkdtemp())
    print("load before:", " ".join(open("/proc/loadavg").read().split()[:3]), flush=True)
    print(f"{'layer':22}" + "".join(f"{name:>10}" for name, _, _ in clis) + f"{'ort':>10}"
          + "".join(f"{name + '/ort':>11}" for name, _, _ in clis) + "   GFLOP/s", flush=True)
    for channels_in, channels_out, size in cases:
        model, inputs, flops = pointwise_model(channels_in, channels_out, size, args.batch)
        path = work / f"pointwise_{channels_in}_{channels_out}_{size}.onnx"
        onnx.save(model, str(path))
        artifacts = []
        for name, binary, variables in clis:
            artifact = work / f"{path.stem}_{name}.so"
            subprocess.run([binary, "-q", "compile", str(path), "--target", "cpu",
                            *(["--cpu", args.cpu] if args.cpu else []), "-o", str(artifact)],
                           check=True, env={**os.environ, **variables})
            artifacts.append(artifact)
        times = [[] for _ in clis]
        reference = []
        for _ in range(args.rounds):
            for x, (_, binary, _) in enumerate(clis):
                result = subprocess.run([binary, "-q", "bench", str(artifacts[x]), "--iterations", str(args.iterations),
                                         "--warmup", "10", "--threads", str(args.threads), "--json"],
                                        check=True, capture_output=True, text=True)
                times[x].append(json.loads(result.stdout)["latency_ms"]["p50"])
            reference.append(onnxruntime_ms(path, inputs, args.threads, args.iterations))
        medians = [statistics.median(t) for t in times]
        ort = statistics.median(reference)
        print(f"{f'{channels_in}->{channels_out} @{size}x{size}':22}" + "".join(f"{m:10.4f}" for m in medians)
              + f"{ort:10.4f}" + "".join(f"{m / ort:11.2f}" for m in medians) + "   "
              + " ".join(f"{flops / m / 1e6:.0f}" for m in medians) + f" ort {flops / ort / 1e6:.0f}", flush=True)
    print("load after:", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
