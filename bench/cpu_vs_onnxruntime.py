#!/usr/bin/env python3
"""CPU latency of sinter's compiled artifacts against onnxruntime's CPU provider.

    /work/main/.venv/bin/python bench/cpu_vs_onnxruntime.py [--iterations 100] [--warmup 10]
                                                             [--threads 2] [--models a.onnx ...]

For every models/*.onnx (symbolic dims bound to 1) it:
  1. compiles the model with `sinter compile --target cpu --shape NAME=DIMS ...` at its input
     shapes (the default --cpu x86-64-v2; see --cpu),
  2. runs `sinter bench --threads T --warmup W --iterations N --json` and takes the p50,
  3. times onnxruntime's CPUExecutionProvider (intra_op_num_threads=T, inter_op_num_threads=1,
     default graph optimisations, sequential execution) on inputs of the same shapes, dtypes and
     value distributions: W untimed runs, then the median of N timed runs.

Inputs: `sinter bench` draws its own deterministic values (floats |v| in [0.1, 1] with a random
sign, integers in [0, --int-high), default 2). onnxruntime gets models/make_input.py's inputs
(same float distribution) with integer inputs redrawn from the same [0, int_high) range, so
neither side indexes differently (Gather over token ids). None of these models has
data-dependent control flow, so the values do not change the work done.

Timing: onnxruntime runs through an IOBinding with the inputs bound once and the outputs
pre-bound on the CPU, with time.perf_counter around `run_with_iobinding`; this is the closest
match to `sinter bench`, which times only the plan (inputs staged before, outside the clock).
The ORT number still includes a little Python/binding overhead (a few microseconds per run).

The machine is shared: other processes' load moves the absolute numbers (and the ratio less
so, since both sides run back to back). The script prints `uptime`'s load averages before and
after; read the table with them.
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

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "models"
sys.path.insert(0, str(MODELS_DIR))
import make_input  # noqa: E402  (models/make_input.py: the suite's input generator)


def load_average():
    """`uptime`'s text and the three load averages (1, 5, 15 minutes)."""
    text = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    return text, os.getloadavg()


def shape_flags(inputs):
    """`--shape NAME=AxB` for each input (a 0-d input has no dims to fix and is skipped)."""
    flags = []
    for name, array in inputs.items():
        if array.ndim:
            flags += ["--shape", f"{name}=" + "x".join(str(d) for d in array.shape)]
    return flags


def onnxruntime_inputs(model_path, int_high):
    """make_input's inputs with integer ones redrawn from [0, int_high), as `sinter bench` does."""
    inputs = make_input.make_inputs(str(model_path), symbolic_dim=1)
    rng = np.random.default_rng(1)
    for name, array in inputs.items():
        if np.issubdtype(array.dtype, np.integer):
            inputs[name] = rng.integers(0, int_high, array.shape).astype(array.dtype)
    return inputs


def run_sinter(sinter, model_path, inputs, workdir, args):
    """Compiles and benches one model; returns (p50 ms, the kernels' FLOPs from the manifest)."""
    artifact = Path(workdir) / (model_path.stem + ".so")
    compile_cmd = [str(sinter), "-q", "compile", str(model_path), "--target", "cpu",
                   "--cpu", args.cpu, "--force", "-o", str(artifact)] + shape_flags(inputs)
    subprocess.run(compile_cmd, check=True, capture_output=True, text=True)
    bench_cmd = [str(sinter), "-q", "bench", str(artifact), "--iterations", str(args.iterations),
                 "--warmup", str(args.warmup), "--threads", str(args.threads),
                 "--int-high", str(args.int_high), "--json"]
    result = subprocess.run(bench_cmd, check=True, capture_output=True, text=True)
    report = json.loads(result.stdout)
    inspect_cmd = [str(sinter), "-q", "inspect", str(artifact), "--json"]
    manifest = json.loads(subprocess.run(inspect_cmd, check=True, capture_output=True,
                                         text=True).stdout)
    flops = sum(kernel.get("flops", 0) for kernel in manifest.get("kernels", []))
    return report["latency_ms"]["p50"], flops


def run_onnxruntime(model_path, inputs, args):
    """Median latency (ms) of onnxruntime's CPU provider over args.iterations timed runs."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    # Graph optimisation level left at its default (ORT_ENABLE_ALL).
    session = onnxruntime.InferenceSession(str(model_path), options,
                                           providers=["CPUExecutionProvider"])
    binding = session.io_binding()
    for name, array in inputs.items():
        binding.bind_cpu_input(name, np.ascontiguousarray(array))
    for output in session.get_outputs():
        binding.bind_output(output.name, "cpu")
    for _ in range(args.warmup):
        session.run_with_iobinding(binding)
    times = []
    for _ in range(args.iterations):
        start = time.perf_counter()
        session.run_with_iobinding(binding)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=100, help="timed runs (at least 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first")
    parser.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    parser.add_argument("--cpu", default="x86-64-v2", help="sinter compile --cpu (default x86-64-v2)")
    parser.add_argument("--int-high", type=int, default=2,
                        help="integer inputs drawn from [0, N) on both sides (default 2)")
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN", ROOT / "build/bin/sinter"))
    parser.add_argument("--models", nargs="*", type=Path, help="default: models/*.onnx")
    args = parser.parse_args()
    if args.iterations < 50:
        parser.error("--iterations must be at least 50")

    models = args.models or sorted(MODELS_DIR.glob("*.onnx"))
    uptime_before, load_before = load_average()
    print(f"# sinter {Path(args.sinter)} (--target cpu --cpu {args.cpu}) vs onnxruntime "
          f"{onnxruntime.__version__} CPUExecutionProvider")
    print(f"# threads {args.threads} (ORT intra_op {args.threads}, inter_op 1, default graph "
          f"optimisations); warm-up {args.warmup}, median of {args.iterations} runs each")
    print(f"# cores: {os.cpu_count()}; load before: {uptime_before}")
    print("# MFLOP: the artifact's kernels' FLOP count (sinter inspect --json); GFLOP/s is "
          "sinter's rate at its p50")
    print("# the machine is shared: other load moves the absolute numbers; ratio > 1 means "
          "sinter is faster")
    print()
    header = f"| {'model':<20} | {'sinter p50 ms':>13} | {'onnxruntime p50 ms':>18} | " \
             f"{'ratio ort/sinter':>16} | {'MFLOP':>7} | {'sinter GFLOP/s':>14} |"
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")

    rows = []
    with tempfile.TemporaryDirectory(prefix="sinter-bench-") as workdir:
        for model_path in models:
            inputs = onnxruntime_inputs(model_path, args.int_high)
            try:
                sinter_ms, flops = run_sinter(args.sinter, model_path, inputs, workdir, args)
            except subprocess.CalledProcessError as error:
                message = (error.stderr or "").strip().splitlines()
                print(f"| {model_path.name:<20} | failed: {message[-1] if message else error}")
                rows.append((model_path.name, None, None))
                continue
            ort_ms = run_onnxruntime(model_path, inputs, args)
            ratio = ort_ms / sinter_ms
            rows.append((model_path.name, sinter_ms, ort_ms))
            print(f"| {model_path.name:<20} | {sinter_ms:>13.4f} | {ort_ms:>18.4f} | "
                  f"{ratio:>16.2f} | {flops / 1e6:>7.2f} | {flops / sinter_ms / 1e6:>14.2f} |",
                  flush=True)

    uptime_after, load_after = load_average()
    print()
    print(f"# load after: {uptime_after}")
    ratios = [o / s for _, s, o in rows if s]
    if ratios:
        geomean = float(np.exp(np.mean(np.log(ratios))))
        print(f"# geometric mean of ratios: {geomean:.2f}")
    if max(load_before[0], load_after[0]) > 0.5 * (os.cpu_count() or 1):
        print(f"# warning: 1-minute load reached {max(load_before[0], load_after[0]):.2f} on "
              f"{os.cpu_count()} cores; the numbers are noisy, rerun on a quiet machine")


if __name__ == "__main__":
    main()
