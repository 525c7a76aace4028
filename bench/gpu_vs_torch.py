#!/usr/bin/env python3
"""sinter against torch eager and torch.compile on one GPU, in the same run.

    python3 bench/gpu_vs_torch.py --bin DIR --out DIR [--rows resnet50:1:fp32 ...] [--budget S]

Runs on the GPU machine (scripts/device/bench.sh unpacks the portable binaries and calls this;
docs/performance.md has the last table). For each row (model, batch, precision):

  1. builds the torch model at random init (test/gpu/run_gpu_suite.py's definitions: torchvision
     ResNet-50, MobileNetV2, ViT-B/16; transformers' BERT-base and GPT-2, 128 tokens), draws a
     random non-zero input of the row's batch, and exports it with torch.onnx.export(dynamo=True,
     opset 20); `sinter compile --target cuda --arch sm_90` runs in the background meanwhile;
  2. times torch eager, torch.compile(mode="default") and torch.compile(mode="reduce-overhead"),
     both dynamic=False: median of --iterations runs between CUDA events after --warmup runs,
     compile time (the first call), peak GPU memory (torch.cuda.max_memory_allocated);
  3. runs the sinter artifact on the same input and checks it against torch eager's output
     (max |a-b| / max |b| <= 1e-4 at fp32) before timing it with `sinter bench` (CUDA graph
     replay, the same event method), then `sinter bench --per-step` for the slowest kernels;
  4. computes the hardware floor of the row: max(FLOP / measured matmul rate, bytes / measured
     copy bandwidth), FLOP counted by torch's FlopCounterMode, bytes the weights plus the input
     and output (the least any system must move); the rates are measured at the start (an 8192^3
     matmul in the row's precision, TF32 off at fp32, and a 1 GiB device copy).

fp32 means fp32 everywhere: TF32 is off for torch (matmul and cuDNN), and sinter runs fp32
kernels. fp16 rows time torch in half precision; sinter has no fp16 mode yet, so its cells are
empty with the reason. Results go to OUT/bench.json (after every row) and a table to stdout;
`--markdown` prints the table as docs/performance.md has it.
"""
import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "gpu"))
import run_gpu_suite as suite  # noqa: E402  (model definitions, output comparison, timing)

DEFAULT_ROWS = [f"{m}:1:fp32" for m in suite.TORCH_MODELS] + \
    [f"{m}:32:fp32" for m in ("resnet50", "vit_b_16", "bert")]


def parse_row(text):
    model, batch, precision = text.split(":")
    if model not in suite.TORCH_MODELS or precision not in ("fp32", "fp16"):
        raise argparse.ArgumentTypeError(f"bad row {text!r}: MODEL:BATCH:fp32|fp16 with MODEL "
                                         f"one of {', '.join(suite.TORCH_MODELS)}")
    return model, int(batch), precision


def example_input(name, batch):
    import torch

    generator = torch.Generator().manual_seed(suite.SEED + 7)
    if name in ("bert", "gpt2"):
        # Token ids from 1: no padding token, every id a real row of the embedding.
        return torch.randint(1, 30000, (batch, suite.SEQUENCE), generator=generator)
    return torch.randn(batch, 3, suite.IMAGE, suite.IMAGE, generator=generator)


def measure_rates(log):
    """Measured device rates: matmul TFLOP/s per precision (TF32 off for fp32) and copy GB/s."""
    import torch

    rates = {}
    n = 8192
    for precision, dtype in (("fp32", torch.float32), ("fp16", torch.float16)):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        milliseconds = suite.time_cuda_calls(lambda _: torch.matmul(a, b), None, 3, 20)
        rates[f"{precision}_tflops"] = 2 * n ** 3 / (milliseconds * 1e-3) / 1e12
        del a, b
    source = torch.empty(1 << 28, device="cuda", dtype=torch.float32)  # 1 GiB
    target = torch.empty_like(source)
    milliseconds = suite.time_cuda_calls(lambda _: target.copy_(source), None, 3, 20)
    rates["copy_gbps"] = 2 * source.numel() * 4 / (milliseconds * 1e-3) / 1e9
    del source, target
    torch.cuda.empty_cache()
    log(f"rates: fp32 matmul {rates['fp32_tflops']:.1f} TFLOP/s (TF32 off), fp16 matmul "
        f"{rates['fp16_tflops']:.1f} TFLOP/s, copy {rates['copy_gbps']:.0f} GB/s")
    return rates


class Bench:
    def __init__(self, args):
        self.args = args
        self.sinter = str(Path(args.bin) / "sinter")
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work or self.out / "work")
        self.work.mkdir(parents=True, exist_ok=True)
        self.start = time.time()
        self.rows = []
        self.logfile = open(self.out / "bench.log", "a")

    def log(self, message):
        line = f"[{time.time() - self.start:6.1f} s] {message}"
        print(line, flush=True)
        self.logfile.write(line + "\n")
        self.logfile.flush()

    def save(self):
        (self.out / "bench.json").write_text(json.dumps(
            {"rates": self.rates, "environment": self.environment, "rows": self.rows}, indent=2))

    def run_sinter(self, command, timeout):
        started = time.time()
        process = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if process.returncode != 0:
            message = (process.stderr or process.stdout).strip().splitlines()
            raise RuntimeError(f"{' '.join(map(str, command[:2]))}: "
                               f"{message[-1] if message else process.returncode}")
        return process.stdout, time.time() - started

    def export(self, name, model, x, folder):
        import torch

        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.onnx"
        with torch.no_grad():
            torch.onnx.export(model, (x,), str(path), dynamo=True, opset_version=20,
                              external_data=True)
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        input_name = [i.name for i in graph.input if i.name not in initializers][0]
        return path, input_name

    def row(self, name, batch, precision):
        import torch

        row = {"model": name, "batch": batch, "precision": precision}
        self.rows.append(row)
        folder = self.work / f"{name}-b{batch}-{precision}"
        model, _ = suite.build_torch_model(name)
        x = example_input(name, batch)
        compile_process = None
        if precision == "fp32":
            started = time.time()
            onnx_path, input_name = self.export(name, model, x, folder)
            row["export_s"] = round(time.time() - started, 1)
            artifact = folder / "model.so"
            compile_process = subprocess.Popen(
                [self.sinter, "compile", str(onnx_path), "--target", "cuda", "--arch", "sm_90",
                 "-o", str(artifact), "--force"], stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            compile_started = time.time()
        else:
            row["sinter_note"] = "sinter has no fp16 mode yet"

        device = torch.device("cuda")
        dtype = torch.float16 if precision == "fp16" else torch.float32
        model = model.to(device=device, dtype=dtype)
        xd = x.to(device)
        if xd.is_floating_point():
            xd = xd.to(dtype)
        with torch.inference_mode():
            from torch.utils.flop_counter import FlopCounterMode

            counter = FlopCounterMode(display=False)
            with counter:
                reference = model(xd)
            row["gflop"] = counter.get_total_flops() / 1e9
            reference = reference.float().cpu().numpy()
        element = 2 if precision == "fp16" else 4
        parameters = sum(p.numel() for p in model.parameters())
        row["min_mbytes"] = (parameters * element + xd.numel() * xd.element_size()
                             + reference.size * element) / 1e6
        rate = self.rates[f"{precision}_tflops"] * 1e12
        row["floor_ms"] = 1e3 * max(row["gflop"] * 1e9 / rate,
                                    row["min_mbytes"] * 1e6 / (self.rates["copy_gbps"] * 1e9))

        systems = [("eager", None), ("default", "default"), ("reduce-overhead", "reduce-overhead")]
        for label, mode in systems:
            if time.time() - self.start > self.args.budget:
                row[f"{label}_error"] = "time budget spent"
                continue
            try:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
                function = model
                if mode:
                    torch._dynamo.reset()
                    function = torch.compile(model, mode=mode, dynamic=False)
                    started = time.time()
                    with torch.inference_mode():
                        function(xd)
                    torch.cuda.synchronize()
                    row[f"{label}_compile_s"] = round(time.time() - started, 1)
                row[f"{label}_ms"] = suite.time_cuda_calls(function, xd, self.args.warmup,
                                                   self.args.iterations)
                row[f"{label}_peak_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20
                del function
            except Exception:  # noqa: BLE001
                row[f"{label}_error"] = traceback.format_exc(limit=2)[-400:]
            self.log(f"{name} b{batch} {precision} {label}: {row.get(f'{label}_ms', 'failed')}")
        del model, xd
        torch._dynamo.reset()
        torch.cuda.empty_cache()

        if compile_process is not None:
            try:
                remaining = max(30.0, self.args.budget + 60 - (time.time() - self.start))
                _, stderr = compile_process.communicate(timeout=remaining)
                if compile_process.returncode != 0:
                    raise RuntimeError("sinter compile: " + stderr.strip().splitlines()[-1])
                row["sinter_compile_s"] = round(time.time() - compile_started, 1)
                self.sinter_row(row, artifact, input_name, x.numpy(), reference, folder)
            except Exception as error:  # noqa: BLE001
                compile_process.kill()
                row["sinter_error"] = str(error)[-400:]
        self.log(f"{name} b{batch} {precision} sinter: {row.get('sinter_ms', row.get('sinter_error'))}")
        self.save()

    def sinter_row(self, row, artifact, input_name, x, reference, folder):
        np.save(folder / "input.npy", x)
        outputs = folder / "outputs.npz"
        self.run_sinter([self.sinter, "run", str(artifact), "--input",
                         f"{input_name}={folder / 'input.npy'}", "-o", str(outputs), "--force"], 300)
        actual = suite.load_npz(outputs)
        expected = {next(iter(actual)): reference} if len(actual) == 1 else {}
        worst, problems = suite.compare_outputs(actual, expected)
        row["max_rel_err"] = worst
        if problems:
            raise RuntimeError("wrong result: " + "; ".join(problems)[:300])
        stdout, _ = self.run_sinter([self.sinter, "bench", str(artifact), "--warmup",
                                     str(self.args.warmup), "--iterations",
                                     str(self.args.iterations), "--json"], 300)
        row["sinter_ms"] = json.loads(stdout)["latency_ms"]["p50"]
        # Where sinter's time goes: each kernel run alone (no graph), the ten slowest.
        stdout, _ = self.run_sinter([self.sinter, "bench", str(artifact), "--warmup", "3",
                                     "--iterations", "20", "--per-step", "--json"], 300)
        steps = json.loads(stdout)["steps"]
        row["sinter_steps_ms"] = sum(step["ms"] for step in steps)
        row["sinter_slowest_steps"] = sorted(steps, key=lambda step: -step["ms"])[:10]
        stdout, _ = self.run_sinter([self.sinter, "inspect", str(artifact), "--json"], 60)
        info = json.loads(stdout)
        row["sinter_device_mib"] = (info["arena_bytes"] + info["weight_bytes"]) / 2 ** 20
        row["sinter_kernels"] = info["kernel_count"]
        row["onnx_nodes"] = info["source_node_count"]

    def run(self):
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.environment = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                            "sinter": self.run_sinter([self.sinter, "--version"], 30)[0].strip()}
        self.log("environment: " + json.dumps(self.environment))
        self.rates = measure_rates(self.log)
        for name, batch, precision in self.args.rows:
            if time.time() - self.start > self.args.budget:
                self.rows.append({"model": name, "batch": batch, "precision": precision,
                                  "error": "not run: time budget spent"})
                continue
            try:
                self.row(name, batch, precision)
            except Exception:  # noqa: BLE001
                self.rows[-1]["error"] = traceback.format_exc(limit=3)[-600:]
                self.log(f"{name} b{batch} {precision}: {self.rows[-1]['error']}")
            self.save()
        print(table(self.rows, self.rates))


def table(rows, rates, markdown=False):
    def ms(value):
        return f"{value:.3f}" if isinstance(value, (int, float)) else "-"

    def ratio(a, b):
        return f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) else "-"

    header = ["model", "batch", "prec", "sinter ms", "eager ms", "compile ms", "compile-RO ms",
              "eager/sinter", "RO/sinter", "floor ms", "sinter % floor", "RO % floor",
              "compile s (sinter/default/RO)", "peak MiB (sinter/eager/RO)", "max rel err"]
    lines = []
    for r in rows:
        floor = r.get("floor_ms")
        cells = [r["model"], str(r["batch"]), r["precision"], ms(r.get("sinter_ms")),
                 ms(r.get("eager_ms")), ms(r.get("default_ms")), ms(r.get("reduce-overhead_ms")),
                 ratio(r.get("eager_ms"), r.get("sinter_ms")),
                 ratio(r.get("reduce-overhead_ms"), r.get("sinter_ms")), ms(floor),
                 f"{100 * floor / r['sinter_ms']:.1f}" if floor and r.get("sinter_ms") else "-",
                 f"{100 * floor / r['reduce-overhead_ms']:.1f}" if floor and r.get("reduce-overhead_ms") else "-",
                 "/".join(f"{r[k]:.0f}" if k in r else "-" for k in
                          ("sinter_compile_s", "default_compile_s", "reduce-overhead_compile_s")),
                 "/".join(f"{r[k]:.0f}" if k in r else "-" for k in
                          ("sinter_device_mib", "eager_peak_mib", "reduce-overhead_peak_mib")),
                 f"{r['max_rel_err']:.1e}" if "max_rel_err" in r else
                 (r.get("sinter_error") or r.get("sinter_note") or r.get("error") or "-")[:60]]
        lines.append(cells)
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
    else:
        widths = [max(len(c[i]) for c in lines + [header]) for i in range(len(header))]
        out = ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in [header] + lines]
    if rates:
        out.append("")
        out.append(f"Rates measured in the run: fp32 matmul {rates['fp32_tflops']:.1f} TFLOP/s "
                   f"(TF32 off), fp16 matmul {rates['fp16_tflops']:.1f} TFLOP/s, device copy "
                   f"{rates['copy_gbps']:.0f} GB/s. Ratios above 1: sinter is faster. RO: "
                   f"torch.compile mode=\"reduce-overhead\".")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=str(ROOT / ".device" / "bin"),
                        help="folder with the portable sinter")
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "out" / "bench")))
    parser.add_argument("--work", default=None, help="scratch folder (default OUT/work)")
    parser.add_argument("--rows", nargs="*", type=parse_row, default=None,
                        help="MODEL:BATCH:fp32|fp16 (default: the fp32 rows of issue #6)")
    parser.add_argument("--budget", type=float, default=480, help="seconds; later rows are skipped")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--markdown", metavar="BENCH_JSON",
                        help="print the table of an earlier run's bench.json as markdown and stop")
    args = parser.parse_args()
    if args.markdown:
        data = json.loads(Path(args.markdown).read_text())
        print(table(data["rows"], data["rates"], markdown=True))
        return 0
    args.rows = args.rows or [parse_row(r) for r in DEFAULT_ROWS]
    Bench(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
