#!/usr/bin/env python3
"""One compile flag's effect on sinter's own latency: each model compiled with and without it,
timed in interleaved rounds in the same process run (a benchmark, not a test). Or a change's
effect: with --baseline-sinter OLD, the ablation column is compiled (and timed) by another build
of sinter, such as the commit before the change, with the same flags.

    python3 bench/flag_ablation.py --sinter BIN --work DIR --flags '--depthwise-kernel generic'
        [--base '--target cuda --arch sm_90'] [--precisions fp32 fp16] [--rounds 3]
        [--iterations 100] MODEL.onnx ...
    python3 bench/flag_ablation.py --sinter BIN --baseline-sinter OLD --work DIR MODEL.onnx ...

For each model and precision, compiles `sinter compile MODEL --precision P BASE` (the "default"
column) and the same with FLAGS added (the "ablation" column), then runs `sinter bench ARTIFACT
--warmup 10 --iterations N --json` on the two in turn, ROUNDS times, and prints the median of
each column's p50s and ablation / default (above 1: the flag makes it slower). A model that fails
to compile or run either way is a row with the error. Works on either target: on the GPU machine
with the portable binaries (docs/gpu-testing.md), or here for --target cpu.
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path


def compile_artifact(sinter, model, artifact, flags):
    result = subprocess.run([sinter, "compile", str(model), "-o", str(artifact), "--force", *flags],
                            capture_output=True, text=True)
    if result.returncode != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()] or [f"exit {result.returncode}"]
        raise RuntimeError(lines[-1][:200])


def p50(sinter, artifact, iterations):
    result = subprocess.run([sinter, "bench", str(artifact), "--warmup", "10", "--iterations", str(iterations),
                             "--json"], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError((result.stderr.strip().splitlines() or [f"exit {result.returncode}"])[-1][:200])
    return json.loads(result.stdout)["latency_ms"]["p50"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--sinter", required=True)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--flags", default="", help="the flags under test, one string")
    parser.add_argument("--baseline-sinter", default=None,
                        help="compile and time the ablation column with this sinter instead (the flags apply to both)")
    parser.add_argument("--base", default="--target cuda --arch sm_90", help="flags of both columns")
    parser.add_argument("--precisions", nargs="+", default=["fp32"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    if not args.flags and not args.baseline_sinter:
        parser.error("give --flags, --baseline-sinter or both")
    args.work.mkdir(parents=True, exist_ok=True)
    # The ablation column's sinter and its extra flags.
    ablation_sinter = args.baseline_sinter or args.sinter
    ablation_flags = [] if args.baseline_sinter else shlex.split(args.flags)
    if args.baseline_sinter:
        args.base += " " + args.flags
        print(f"ablation: {ablation_sinter} against {args.sinter}; ", end="")
    else:
        print(f"flags under test: {args.flags}; ", end="")
    print(f"base: {args.base}; median of {args.rounds} rounds' p50s (ms)")
    print(f"{'model':<40} {'prec':<5} {'default':>9} {'ablation':>9} {'ablation/default':>17}")
    for model in args.models:
        for precision in args.precisions:
            stem = f"{model.stem}.{precision}"
            base = shlex.split(args.base) + ["--precision", precision]
            try:
                artifacts = [args.work / f"{stem}.default.so", args.work / f"{stem}.ablation.so"]
                compile_artifact(args.sinter, model, artifacts[0], base)
                compile_artifact(ablation_sinter, model, artifacts[1], base + ablation_flags)
                times = [[], []]
                for _ in range(args.rounds):
                    for column, (sinter, artifact) in enumerate(zip([args.sinter, ablation_sinter], artifacts)):
                        times[column].append(p50(sinter, artifact, args.iterations))
                default, ablation = (statistics.median(column) for column in times)
                print(f"{model.stem:<40} {precision:<5} {default:>9.4f} {ablation:>9.4f} {ablation / default:>17.2f}",
                      flush=True)
            except RuntimeError as error:
                print(f"{model.stem:<40} {precision:<5} failed: {error}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
