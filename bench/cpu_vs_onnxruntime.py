#!/usr/bin/env python3
"""CPU latency of sinter's compiled artifacts against onnxruntime's CPU provider.

    /work/main/.venv/bin/python bench/cpu_vs_onnxruntime.py [--iterations 100] [--warmup 10]
        [--threads 2] [--cpu default --cpu x86-64-v2] [--baseline OLD_SINTER] [--repeats 5]
        [--peak-gflops G] [--batch N] [--models a.onnx ...]

For every models/*.onnx (symbolic dims bound to 1, or to --batch N) it:
  1. compiles the model with `sinter compile --target cpu --shape NAME=DIMS ...` at its input
     shapes (each --cpu given is a column: `default` is the compiler's default, kernels for
     every x86-64 level of which the runtime runs the best this machine has; any other value is
     passed as `--cpu VALUE`),
  2. runs `sinter bench --threads T --warmup W --iterations N --json` and takes the p50,
     for each --cpu level (a column each) and, with --baseline, the same with another sinter
     CLI (the code before a change) in the same rounds,
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
so, since both sides run back to back; --repeats interleaves several rounds and takes the
median of their p50s). The script prints `uptime`'s load averages before and
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


def onnxruntime_inputs(model_path, int_high, symbolic_dim=1):
    """make_input's inputs with integer ones redrawn from [0, int_high), as `sinter bench` does."""
    inputs = make_input.make_inputs(str(model_path), symbolic_dim=symbolic_dim)
    rng = np.random.default_rng(1)
    for name, array in inputs.items():
        if np.issubdtype(array.dtype, np.integer):
            inputs[name] = rng.integers(0, int_high, array.shape).astype(array.dtype)
    return inputs


def parameter_bytes(model_path):
    """Bytes of the model's initializers (its parameters), external data included."""
    model = onnx.load(str(model_path))
    return sum(onnx.numpy_helper.to_array(t).nbytes for t in model.graph.initializer)


COMPILE_SECONDS = {}


def compile_artifact(sinter, cpu, model_path, inputs, artifact):
    """Compiles one model; returns one run's FLOPs from the manifest (and records the
    compile's wall time in COMPILE_SECONDS[artifact])."""
    compile_cmd = [str(sinter), "-q", "compile", str(model_path), "--target", "cpu",
                   "--force", "-o", str(artifact)] + shape_flags(inputs)
    if cpu != "default":
        compile_cmd += ["--cpu", cpu]
    start = time.perf_counter()
    subprocess.run(compile_cmd, check=True, capture_output=True, text=True)
    COMPILE_SECONDS[str(artifact)] = time.perf_counter() - start
    inspect_cmd = [str(sinter), "-q", "inspect", str(artifact), "--json"]
    manifest = json.loads(subprocess.run(inspect_cmd, check=True, capture_output=True,
                                         text=True).stdout)
    plans = manifest.get("plans") or [{}]
    if "flops" in plans[0]:  # one run's work, a kernel counted at each of its launches
        return plans[0]["flops"]
    # An older CLI: distinct kernels only, an undercount where layers repeat.
    return sum(kernel.get("flops", 0) for kernel in manifest.get("kernels", []))


def bench_artifact(sinter, artifact, args):
    """p50 latency (ms) of `sinter bench` on a compiled artifact."""
    bench_cmd = [str(sinter), "-q", "bench", str(artifact), "--iterations", str(args.iterations),
                 "--warmup", str(args.warmup), "--threads", str(args.threads),
                 "--int-high", str(args.int_high), "--json"]
    result = subprocess.run(bench_cmd, check=True, capture_output=True, text=True)
    return json.loads(result.stdout)["latency_ms"]["p50"]


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


def configurations(args):
    """(label, sinter binary, --cpu level) for each column group: every --cpu level with
    --sinter, then (labelled "before") every level with --baseline when it is given."""
    levels = args.cpu or ["default"]
    short = lambda level: level.replace("x86-64-", "")
    configs = [(short(level), args.sinter, level) for level in levels]
    if args.baseline:
        configs = [(f"before {short(level)}", args.baseline, level) for level in levels] + configs
    return configs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=100, help="timed runs (at least 50)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed runs first")
    parser.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    parser.add_argument("--cpu", action="append",
                        help="a column: `default` (the compiler's default, every level, the best "
                             "chosen at load) or a sinter compile --cpu value; give it again for "
                             "more columns (default: default)")
    parser.add_argument("--baseline", type=Path,
                        help="a second sinter CLI (the code before a change), benched in the same "
                             "rounds for a before/after table")
    parser.add_argument("--repeats", type=int, default=1,
                        help="measure every configuration this many times, interleaved, and take "
                             "the median of the p50s (default 1)")
    parser.add_argument("--peak-gflops", type=float,
                        help="the machine's peak f32 GFLOP/s at --threads (bench/peak_fma.c): "
                             "adds the fraction of peak the fastest configuration reaches")
    parser.add_argument("--int-high", type=int, default=2,
                        help="integer inputs drawn from [0, N) on both sides (default 2)")
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN", ROOT / "build/bin/sinter"))
    parser.add_argument("--models", nargs="*", type=Path, help="default: models/*.onnx")
    parser.add_argument("--batch", type=int, default=1, help="value of every symbolic dim (default 1)")
    parser.add_argument("--sizes", action="store_true",
                        help="add columns: parameter MB (the ONNX initializers), the last column's "
                             "artifact MB and its ratio to the parameters, and its compile seconds")
    args = parser.parse_args()
    if args.iterations < 50:
        parser.error("--iterations must be at least 50")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    models = args.models or sorted(MODELS_DIR.glob("*.onnx"))
    configs = configurations(args)
    uptime_before, load_before = load_average()
    print(f"# sinter {Path(args.sinter)} (--target cpu, --cpu columns: {', '.join(args.cpu or ['default'])})"
          + (f", baseline {args.baseline}" if args.baseline else "")
          + f" vs onnxruntime {onnxruntime.__version__} CPUExecutionProvider")
    print(f"# threads {args.threads} (ORT intra_op {args.threads}, inter_op 1, default graph "
          f"optimisations); warm-up {args.warmup}, median of {args.iterations} runs each; "
          f"{args.repeats} interleaved round(s), median of their p50s")
    print(f"# cores: {os.cpu_count()}; load before: {uptime_before}")
    print("# MFLOP: the artifact's kernels' FLOP count (sinter inspect --json); GFLOP/s: the "
          "fastest sinter column's rate at its p50")
    print("# the machine is shared: other load moves the absolute numbers; ratio > 1 means "
          "sinter is faster")
    print()
    columns = [("model", 20), ("onnxruntime ms", 14)]
    for label, _, _ in configs:
        columns += [(f"{label} ms", max(9, len(label) + 3)), (f"{label} ratio", max(9, len(label) + 6))]
    columns += [("MFLOP", 7), ("GFLOP/s", 7)]
    if args.peak_gflops:
        columns.append(("% peak", 6))
    if args.sizes:
        columns += [("param MB", 8), ("artifact MB", 11), ("size ratio", 10), ("compile s", 9)]
    print("| " + " | ".join(f"{name:>{width}}" if i else f"{name:<{width}}"
                             for i, (name, width) in enumerate(columns)) + " |")
    print("|" + "|".join("-" * (width + 2) for _, width in columns) + "|")

    ratios = {label: [] for label, _, _ in configs}
    with tempfile.TemporaryDirectory(prefix="sinter-bench-") as workdir:
        for model_path in models:
            inputs = onnxruntime_inputs(model_path, args.int_high, args.batch)
            artifacts, flops, failure = [], 0, None
            for index, (label, sinter, cpu) in enumerate(configs):
                artifact = Path(workdir) / f"{model_path.stem}.{index}.so"
                try:
                    flops = compile_artifact(sinter, cpu, model_path, inputs, artifact)
                except subprocess.CalledProcessError as error:
                    message = (error.stderr or "").strip().splitlines()
                    failure = f"{label}: {message[-1] if message else error}"
                    break
                artifacts.append(artifact)
            if failure:
                print(f"| {model_path.name:<20} | failed: {failure}")
                continue
            sinter_runs = [[] for _ in configs]
            ort_runs = []
            for _ in range(args.repeats):
                ort_runs.append(run_onnxruntime(model_path, inputs, args))
                for index, (_, sinter, _) in enumerate(configs):
                    sinter_runs[index].append(bench_artifact(sinter, artifacts[index], args))
            ort_ms = statistics.median(ort_runs)
            sinter_ms = [statistics.median(runs) for runs in sinter_runs]
            cells = [f"{model_path.name:<20}", f"{ort_ms:>14.4f}"]
            for (label, _, _), ms in zip(configs, sinter_ms):
                ratios[label].append(ort_ms / ms)
                cells += [f"{ms:>{max(9, len(label) + 3)}.4f}", f"{ort_ms / ms:>{max(9, len(label) + 6)}.2f}"]
            best = min(sinter_ms)
            gflops = flops / best / 1e6
            cells += [f"{flops / 1e6:>7.2f}", f"{gflops:>7.2f}"]
            if args.peak_gflops:
                cells.append(f"{100 * gflops / args.peak_gflops:>5.1f}%")
            if args.sizes:
                parameters = parameter_bytes(model_path) / 1e6
                size = os.path.getsize(artifacts[-1]) / 1e6
                cells += [f"{parameters:>8.1f}", f"{size:>11.1f}", f"{size / parameters:>10.2f}",
                          f"{COMPILE_SECONDS[str(artifacts[-1])]:>9.1f}"]
            print("| " + " | ".join(cells) + " |", flush=True)

    uptime_after, load_after = load_average()
    print()
    print(f"# load after: {uptime_after}")
    for label, values in ratios.items():
        if values:
            geomean = float(np.exp(np.mean(np.log(values))))
            print(f"# geometric mean of ratios ({label}): {geomean:.2f}")
    if max(load_before[0], load_after[0]) > 0.5 * (os.cpu_count() or 1):
        print(f"# warning: 1-minute load reached {max(load_before[0], load_after[0]):.2f} on "
              f"{os.cpu_count()} cores; the numbers are noisy, rerun on a quiet machine")


if __name__ == "__main__":
    main()
