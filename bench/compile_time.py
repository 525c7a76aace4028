#!/usr/bin/env python3
"""How long `sinter compile` takes on a zoo of real exports (bench/zoo, /work/zoo/README), at
both targets, with a cold and a warm kernel cache: per-phase seconds, CPU seconds and peak RSS.

    bench/compile_time.py --zoo /work/zoo --out compile_time.json [--markdown table.md]
        [--targets cuda,cpu] [--models resnet50,bert_base] [--exporters ts] [--timeout 300]

For each model and target: a compile into a fresh cache folder (cold), then the same compile
again (warm), at both targets (the CPU target's objects are cache entries too, one per module).
The CUDA target uses the default architectures (sm_80 + sm_90 SASS + PTX). Phases come from the compile's own log lines (import, passes, codegen, plan,
the toolchain's runs, backend, write); wall seconds, CPU seconds (sinter and the ptxas processes it ran)
and sinter's peak RSS from wait4. Symbolic dims are bound as the zoo's README says: batch 1,
every other symbol (the sequence) 128.

This measures, it does not assert: the numbers go to docs/performance.md ("Compile time") with
the machine's load (`uptime`) at the start and the end, since other work on the machine changes
the wall times.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PHASES = re.compile(r"time: import ([\d.]+) s, passes ([\d.]+) s, codegen ([\d.]+) s, plan ([\d.]+) s, "
                    r"backend ([\d.]+) s, write ([\d.]+) s, total ([\d.]+) s")
# The backend's toolchain phase: CUDA's NVRTC and ptxas runs share one pool (one line since
# 2026-12-03; NVRTC and ptxas lines before), the CPU target's LLVM modules.
TOOL = re.compile(r"info: (NVRTC and ptxas|NVRTC|ptxas|LLVM O3 and object): (\d+) \w+ in ([\d.]+) s")
WROTE = re.compile(r"wrote .*: (\d+) kernels \((\d+) distinct\)")
CACHE = re.compile(r"kernel cache .*: (\d+) of (\d+) toolchain units from the cache")


def uptime():
    try:
        return Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return []


def symbolic_dims(model):
    """--dim flags for the model's symbolic input dims: batch 1, others 128."""
    import onnx
    graph = onnx.load(str(model), load_external_data=False).graph
    initializers = {init.name for init in graph.initializer}
    symbols = sorted({d.dim_param for i in graph.input if i.name not in initializers
                      for d in i.type.tensor_type.shape.dim if d.dim_param})
    flags = []
    for symbol in symbols:
        flags += ["--dim", f"{symbol}={1 if 'batch' in symbol.lower() else 128}"]
    return flags


def run_compile(command, timeout):
    """Runs one compile; returns its exit status, wall seconds and log."""
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        return {"status": "timeout", "wall_s": round(time.monotonic() - start, 2), "log": stderr}
    wall = time.monotonic() - start
    return {"status": "ok" if process.returncode == 0 else f"exit {process.returncode}",
            "wall_s": round(wall, 2), "log": stderr}


def measure(command, timeout):
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_compile(command, timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu_s"] = round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2)
    # This runs in a Python process of its own per compile (measure_one), so the children's
    # largest RSS (KiB) is this compile's: sinter's, or a ptxas it ran if that was larger.
    result["peak_rss_mib"] = round(after.ru_maxrss / 1024, 1)
    log = result.pop("log")
    if (match := PHASES.search(log)):
        names = ["import", "passes", "codegen", "plan", "backend", "write", "total"]
        result["phases_s"] = {name: float(value) for name, value in zip(names, match.groups())}
    for tool, units, seconds in TOOL.findall(log):
        result.setdefault("toolchain", {})[tool] = {"units": int(units), "s": float(seconds)}
    if (match := WROTE.search(log)):
        result["kernels"], result["distinct_kernels"] = int(match[1]), int(match[2])
    if (match := CACHE.search(log)):
        result["cache_hits"], result["cache_units"] = int(match[1]), int(match[2])
    if result["status"] != "ok":
        result["error"] = "\n".join(line for line in log.splitlines() if "error" in line)[-2000:]
    return result


def measure_one(sinter, model, target, timeout, work):
    """A cold then a warm compile, each in its own process so peak RSS is per compile."""
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=work))
    output = Path(work) / f"{model.stem}.{target}.so"
    command = [str(sinter), "compile", str(model), "-o", str(output), "--force", "--target", target,
               "--cache-dir", str(cache), *symbolic_dims(model)]
    row = {"model": model.stem, "target": target, "load_before": uptime()}
    # Each run in a fresh Python child, so RUSAGE_CHILDREN's peak belongs to that compile alone.
    for label in ("cold", "warm"):
        probe = subprocess.run([sys.executable, __file__, "--one", json.dumps([command, timeout])],
                               capture_output=True, text=True)
        try:
            row[label] = json.loads(probe.stdout)
        except json.JSONDecodeError:
            row[label] = {"status": "bench error", "error": probe.stderr[-2000:]}
        if row[label].get("status") != "ok":
            break
    output.unlink(missing_ok=True)
    subprocess.run(["rm", "-rf", str(cache)])
    row["load_after"] = uptime()
    return row


def markdown(rows):
    lines = ["| model | target | kernels (distinct) | cold s (CPU s) | toolchain s (runs) | import / passes / plan / write s | warm s (cache hits) | peak RSS MiB |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        cold, warm = row.get("cold", {}), row.get("warm", {})
        if cold.get("status") != "ok":
            lines.append(f"| {row['model']} | {row['target']} | | {cold.get('status')} after {cold.get('wall_s')} s | | | | |")
            continue
        phases = cold.get("phases_s", {})
        tools = cold.get("toolchain", {})
        toolchain = " + ".join(f"{tool['s']} ({tool['units']})" for tool in tools.values())
        warm_text = (f"{warm.get('wall_s')} ({warm.get('cache_hits', '-')}/{warm.get('cache_units', '-')})"
                     if warm.get("status") == "ok" else str(warm.get("status", "-")))
        lines.append(
            f"| {row['model']} | {row['target']} | {cold.get('kernels')} ({cold.get('distinct_kernels')}) | "
            f"{cold['wall_s']} ({cold['cpu_s']}) | {toolchain} | {phases.get('import')} / {phases.get('passes')} / "
            f"{phases.get('plan')} / {phases.get('write')} | {warm_text} | {max(cold.get('peak_rss_mib', 0), warm.get('peak_rss_mib', 0))} |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        command, timeout = json.loads(sys.argv[2])
        print(json.dumps(measure(command, timeout)))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", default="/work/zoo")
    parser.add_argument("--sinter", default=os.environ.get("SINTER_BIN", ROOT / "build" / "bin" / "sinter"))
    parser.add_argument("--targets", default="cuda,cpu")
    parser.add_argument("--models", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--exporters", default="ts,dynamo",
                        help="which exports: ts, dynamo or both; with --one-export, the first that exists")
    parser.add_argument("--one-export", action="store_true", help="one export a model (the first of --exporters)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a compile may take")
    parser.add_argument("--out", default="compile_time.json")
    parser.add_argument("--markdown", default="")
    args = parser.parse_args()

    exporters = args.exporters.split(",")
    wanted = set(filter(None, args.models.split(",")))
    models = {}
    for path in sorted(Path(args.zoo).glob("*.onnx")):
        name, _, exporter = path.stem.rpartition(".")
        if exporter not in exporters or (wanted and name not in wanted):
            continue
        models.setdefault(name, []).append(path)
    chosen = []
    for name, paths in models.items():
        paths.sort(key=lambda p: exporters.index(p.stem.rpartition(".")[2]))
        chosen += paths[:1] if args.one_export else paths
    rows = []
    report = {"machine": {"cores": os.cpu_count(), "load_start": uptime()}, "rows": rows}
    with tempfile.TemporaryDirectory(prefix="sinter-compile-time-") as work:
        for model in chosen:
            for target in args.targets.split(","):
                row = measure_one(args.sinter, model, target, args.timeout, work)
                rows.append(row)
                cold = row.get("cold", {})
                print(f"{model.stem:32} {target:5} cold {cold.get('status')} {cold.get('wall_s')} s "
                      f"(cpu {cold.get('cpu_s')}), warm {row.get('warm', {}).get('wall_s')} s, "
                      f"load {' '.join(row['load_after'])}", flush=True)
                report["machine"]["load_end"] = uptime()
                Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
