#!/usr/bin/env python3
"""What the graph passes buy on the CPU target: kernels, arena and latency per model, compiled
with the default pipeline and with some passes disabled (by default the canonicalisation and
pattern passes, i.e. the pipeline as it was before them).

    .venv/bin/python bench/pass_effects.py [--disable PASS ...] [--iterations 100]
        [--repeats 3] [--threads 2] [--models a.onnx ...]

Every models/*.onnx is compiled at its input shapes (symbolic dims 1) twice with the same sinter,
`sinter inspect --json` gives kernel count, source node count, arena and activation bytes, and
`sinter bench` the p50 latency (the two artifacts benched back to back, --repeats rounds
interleaved, median of the p50s). The machine is shared: read latencies with the load printed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_vs_onnxruntime as common  # noqa: E402  (shape flags and inputs, as the CPU bench does)

DEFAULT_DISABLED = ["canonicalize", "eliminate-common-subexpressions", "fold-batch-norm",
                    "recognize-layer-normalization", "recognize-gelu"]


def known_passes(sinter):
    text = subprocess.run([str(sinter), "compile", "--print-pipeline"], check=True,
                          capture_output=True, text=True).stdout
    return [line.split(". ", 1)[1].split(" ")[0].rstrip(":") for line in text.splitlines() if ". " in line]


def compile_and_inspect(sinter, model, inputs, artifact, disabled):
    flags = []
    for name in disabled:
        flags += ["--disable-pass", name]
    subprocess.run([str(sinter), "-q", "compile", str(model), "--target", "cpu", "--force", "-o",
                    str(artifact)] + common.shape_flags(inputs) + flags, check=True,
                   capture_output=True, text=True)
    return json.loads(subprocess.run([str(sinter), "-q", "inspect", str(artifact), "--json"],
                                     check=True, capture_output=True, text=True).stdout)


def bench(sinter, artifact, args):
    out = subprocess.run([str(sinter), "-q", "bench", str(artifact), "--iterations",
                          str(args.iterations), "--warmup", "10", "--threads", str(args.threads),
                          "--json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["p50"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN", common.ROOT / "build/bin/sinter"))
    parser.add_argument("--disable", nargs="*", help="passes disabled in the 'before' column")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", nargs="*", type=Path)
    args = parser.parse_args()
    present = known_passes(args.sinter)
    disabled = [p for p in (args.disable if args.disable is not None else DEFAULT_DISABLED) if p in present]
    models = args.models or sorted(common.MODELS_DIR.glob("*.onnx"))
    print(f"# before: --disable-pass {' '.join(disabled)}; after: the default pipeline")
    print(f"# threads {args.threads}; median of {args.repeats} rounds of p50 over {args.iterations} runs;"
          f" load before: {common.load_average()[0]}")
    print()
    print("| model | source nodes | kernels before | kernels after | arena before | arena after |"
          " activations after | ms before | ms after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="sinter-passes-") as work:
        for model in models:
            inputs = common.onnxruntime_inputs(model, 2)
            before, after = Path(work) / f"{model.stem}.before.so", Path(work) / f"{model.stem}.after.so"
            mb = compile_and_inspect(args.sinter, model, inputs, before, disabled)
            ma = compile_and_inspect(args.sinter, model, inputs, after, [])
            times = {"before": [], "after": []}
            for _ in range(args.repeats):
                times["before"].append(bench(args.sinter, before, args))
                times["after"].append(bench(args.sinter, after, args))
            print(f"| {model.stem} | {ma['source_node_count']} | {mb['kernel_count']} | {ma['kernel_count']} |"
                  f" {mb['arena_bytes']} | {ma['arena_bytes']} | {ma['activation_bytes']} |"
                  f" {statistics.median(times['before']):.4f} | {statistics.median(times['after']):.4f} |")
    print()
    print(f"# load after: {common.load_average()[0]}")


if __name__ == "__main__":
    main()
