#!/usr/bin/env python3
"""sinter against torch eager and torch.compile on one GPU, in the same run.

    python3 bench/gpu_vs_torch.py --bin DIR --out DIR [--rows MODEL:BATCH:PREC[,PREC] ...]
        [--batches N ...] [--precisions fp32|fp16|bf16 ...] [--budget S] [--skip-default] [--list]

MODEL is one of the suite's five (resnet50, mobilenet_v2, vit_b_16, bert, gpt2) or a model of the
zoo (bench/zoo/README.md: convnext_tiny, efficientnet_b0, swin_t, llama_gqa, ...).

Runs on the GPU machine (scripts/device/bench.sh unpacks the portable binaries and calls this;
docs/performance.md has the method and the last table). Rows run in the order given (the default
order puts the batch-1 rows first, each model's fp32 row before its fp16 row). For each row
(model, batch, precision):

  1. builds the torch model at random init (test/gpu/run_gpu_suite.py's definitions: torchvision
     ResNet-50, MobileNetV2, ViT-B/16; transformers' BERT-base and GPT-2, 128 tokens), draws a
     random non-zero input of the row's batch, and exports it with torch.onnx.export(dynamo=True,
     opset 20), once per model and batch: the fp16 row compiles the fp32 row's export. Right after
     the export, `sinter compile --target cuda --arch sm_90` starts in the background for every
     precision of that model and batch still to run (`--precision fp16` for fp16 rows);
  2. computes torch's fp32 eager output (TF32 off): the reference for every row. fp16 rows then
     convert the model with model.half() and floating inputs to half (token ids stay integers);
  3. times torch eager, torch.compile(mode="default") and torch.compile(mode="reduce-overhead"),
     both dynamic=False, in the row's precision: median of --iterations runs between CUDA events
     after --warmup runs, compile time (the first call), peak GPU memory
     (torch.cuda.max_memory_allocated);
  4. runs the sinter artifact on the same input (float32 in and out at both precisions: fp16
     changes how the artifact stores values, not its signature) and checks it against the fp32
     reference: max |a-b| / max |b| <= 1e-4 and ||a-b|| / ||b|| <= 1e-4 at fp32, relative L2
     <= 1e-2 at fp16 (max rel err is then reported, not required). Only an artifact that passes
     is timed, with `sinter bench` (CUDA graph replay, the same event method), then
     `sinter bench --per-step` for each kernel alone (all of them in bench.json);
  5. computes the hardware floor of the row: max(FLOP / measured matmul rate, bytes / measured
     copy bandwidth), FLOP counted by torch's FlopCounterMode, bytes the weights plus the input
     and output (the least any system must move), 2 bytes per weight at fp16; the rates are
     measured at the start (an 8192^3 matmul in each precision, TF32 off at fp32, and a 1 GiB
     device copy).

fp32 means fp32 accuracy everywhere: TF32 is off for torch (matmul and cuDNN), and sinter runs
its default fp32 contractions (on sm_80+ tensor cores as tf32 pairs, as accurate as its f32 FMA
kernel: docs/precision.md; `--sinter-flags '--fp32-contractions simt'` is the ablation). Every failure (export, compile, run, check, a torch mode) is recorded in its row and the
log, and the other rows go on. --budget bounds the run: no row or stage starts after it, and every
wait on sinter ends by budget + 60 s; a SIGTERM (bench.sh's hard limit) marks the rows not
finished, writes the JSON and prints the table. Results go to OUT/bench.json (after every stage)
and the log to OUT/bench.log; the table goes to stdout; `--markdown BENCH_JSON` prints an earlier
run's table as docs/performance.md has it, and `--steps BENCH_JSON [BASELINE_JSON]` its kernels'
time family by family (bench/steps.py), beside a baseline's.
"""
import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "gpu"))
import run_gpu_suite as suite  # noqa: E402  (model definitions, output comparison, timing)
sys.path.insert(0, str(ROOT / "bench" / "zoo"))
import export as zoo  # noqa: E402  (the model zoo's definitions: bench/zoo/README.md)
from steps import steps_report  # noqa: E402  (per-step time by kernel family)

PRECISIONS = ("fp32", "fp16", "bf16")
# 16-bit rows: the torch model converted with .to(dtype), sinter's --precision of the same name.
HALF_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
# The check of sinter's output against torch's fp32 eager output, per row precision.
MAX_REL_TOLERANCE = {"fp32": suite.FLOAT_TOLERANCE, "fp16": None, "bf16": None}  # None: reported
L2_TOLERANCE = {"fp32": 1e-4, "fp16": suite.PRECISION_L2_TOLERANCE, "bf16": suite.PRECISION_L2_TOLERANCE}
# Models: the suite's five, then the zoo's (bench/zoo/export.py), by zoo name.
ZOO_MODELS = [name for name in list(zoo.VISION) + list(zoo.SEGMENTATION) + zoo.TEXT
              if name not in suite.TORCH_MODELS and name != "bert_base"]  # bert_base is "bert"
ALL_MODELS = list(suite.TORCH_MODELS) + ZOO_MODELS


def build_model(name):
    """(model in eval mode, example input) for a suite or zoo model, at random init."""
    if name in suite.TORCH_MODELS:
        return suite.build_torch_model(name)
    import torch

    torch.manual_seed(suite.SEED)
    model, args, _, _ = zoo.build(name)
    return model, args[0]
# What every artifact here is compiled for: the H200.
CUDA_TARGET = ("--target", "cuda", "--arch", "sm_90")
# Seconds past --budget that a wait on sinter (compile, run, bench) may still take.
GRACE_S = 60
# A torch.compile mode is not started with less of the budget left than this.
TORCH_COMPILE_MIN_S = 30

# The full set, most important first: batch 1 before batch 32, fp32 before fp16 of the
# same model and batch (the pair shares one export and compiles side by side).
DEFAULT_ROWS = [f"{model}:{batch}:{precision}"
                for model, batch in [(m, 1) for m in suite.TORCH_MODELS] +
                [(m, 32) for m in ("resnet50", "vit_b_16", "bert")]
                for precision in PRECISIONS]


class Terminated(BaseException):
    """SIGTERM arrived (bench.sh's hard time limit): not an Exception, so that the per-stage
    handlers let it through to the code that saves the results."""


def raise_terminated(signum, frame):
    raise Terminated()


def parse_rows(text):
    """MODEL:BATCH:PREC[,PREC...] -> [(model, batch, precision), ...]."""
    try:
        model, batch, precisions = text.split(":")
        batch = int(batch)
    except ValueError:
        batch, model, precisions = 0, None, ""
    precisions = precisions.split(",")
    if model not in ALL_MODELS or batch < 1 or not all(p in PRECISIONS for p in precisions):
        raise argparse.ArgumentTypeError(
            f"bad row {text!r}: MODEL:BATCH:PREC[,PREC] with MODEL one of "
            f"{', '.join(ALL_MODELS)}, BATCH >= 1, PREC one of {', '.join(PRECISIONS)}")
    return [(model, batch, precision) for precision in precisions]


def short(error, limit=400):
    """The last `limit` characters of an exception's text (or of a traceback string)."""
    text = (error if isinstance(error, str) else f"{type(error).__name__}: {error}").strip()
    if len(text) <= limit:
        return text
    text = text[-limit:]
    return "..." + (text.split("\n", 1)[1] if "\n" in text else text)


# ---------------------------------------------------------------------------------------------
# sinter on the command line (bench/gpu_contraction_rate.py uses these too).

def run_sinter(command, timeout):
    """Runs a sinter command; (stdout, seconds). Raises RuntimeError with the command and its last
    error line when it fails or outlives `timeout`."""
    command = [str(part) for part in command]
    started = time.time()
    try:
        process = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(command[:2])}: timed out after {timeout:.0f} s") from None
    if process.returncode != 0:
        lines = [line for line in (process.stderr + "\n" + process.stdout).splitlines()
                 if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        message = (errors or lines or [f"exit {process.returncode}"])[-1]
        raise RuntimeError(f"{' '.join(command[:2])}: {message[:300]}")
    return process.stdout, time.time() - started


def sinter_latency(sinter, artifact, warmup, iterations, timeout):
    """`sinter bench --json`'s latency summary (ms: p50, p90, mean, min, ...): CUDA graph replays
    between two CUDA events each, inputs uploaded once, random."""
    stdout, _ = run_sinter([sinter, "bench", artifact, "--warmup", warmup, "--iterations",
                            iterations, "--json"], timeout)
    return json.loads(stdout)["latency_ms"]


def sinter_steps(sinter, artifact, timeout):
    """Each step of the plan run alone (`sinter bench --per-step`, no graph), in plan order:
    [{"name", "ms"}]."""
    stdout, _ = run_sinter([sinter, "bench", artifact, "--warmup", 3, "--iterations", 20,
                            "--per-step", "--json"], timeout)
    return json.loads(stdout)["steps"]


def example_input(name, batch):
    import torch

    generator = torch.Generator().manual_seed(suite.SEED + 7)
    if name in ("bert", "gpt2") or name in zoo.TEXT:
        # Token ids from 1: no padding token, every id a real row of the embedding.
        return torch.randint(1, 30000, (batch, suite.SEQUENCE), generator=generator)
    return torch.randn(batch, 3, suite.IMAGE, suite.IMAGE, generator=generator)


def measure_rates(log):
    """Measured device rates: matmul TFLOP/s per precision (TF32 off for fp32) and copy GB/s."""
    import torch

    rates = {}
    n = 8192
    for precision, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
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


class CompileJob:
    """One `sinter compile` running in the background; its output goes to a log beside the
    artifact (a pipe could fill and stall the compiler)."""

    def __init__(self, sinter, onnx_path, artifact, precision, extra=()):
        self.artifact = artifact
        self.log_path = artifact.with_suffix(".log")
        command = [sinter, "compile", str(onnx_path), *CUDA_TARGET, "-o", str(artifact), "--force"]
        if precision != "fp32":
            command += ["--precision", precision]
        command += list(extra)
        self.command = " ".join(command)
        self.started = time.time()
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self.seconds = None

    def wait(self, timeout):
        """The artifact once the compile has finished; raises RuntimeError when it failed or
        outlives `timeout`."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"sinter compile: not done after {time.time() - self.started:.0f} "
                               f"s (the time budget)") from None
        if self.seconds is None:
            self.seconds = time.time() - self.started
        if code != 0:
            lines = [line for line in self.log_path.read_text(errors="replace").splitlines()
                     if line.strip()]
            errors = [line for line in lines if "error" in line.lower()]
            raise RuntimeError("sinter compile: " + (errors or lines or [f"exit {code}"])[-1][:300])
        return self.artifact

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def add_run_arguments(parser, name):
    """The options every BudgetedRun script takes: the portable sinter, the results folder
    (OUT/NAME by default), the scratch folder, and how many runs to warm up and time."""
    parser.add_argument("--bin", default=str(ROOT / ".device" / "bin"),
                        help="folder with the portable sinter")
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "out" / name)))
    parser.add_argument("--work", default=None, help="scratch folder (default OUT/work)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=100,
                        help="timed runs per system (the median is reported; default 100)")


class BudgetedRun:
    """What both GPU benchmarks share (bench/gpu_contraction_rate.py derives from it too): the
    portable sinter, the output and scratch folders, the --budget clock, a log on stdout and in
    OUT/NAME.log, OUT/NAME.json rewritten whole after every stage, failures recorded in rows."""

    def __init__(self, args, name):
        self.args = args
        self.name = name
        self.sinter = str(Path(args.bin) / "sinter")
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work or self.out / "work")
        self.work.mkdir(parents=True, exist_ok=True)
        self.start = time.time()
        self.environment = {}
        self.rows = []
        self.logfile = open(self.out / f"{name}.log", "a")

    def elapsed(self):
        return time.time() - self.start

    def remaining(self):
        return self.args.budget - self.elapsed()

    def wait_limit(self, seconds):
        """`seconds`, cut so that the wait ends by budget + GRACE_S; raises when that has passed."""
        limit = min(seconds, self.remaining() + GRACE_S)
        if limit < 1:
            raise RuntimeError("not run: the time budget is spent")
        return limit

    def log(self, message):
        line = f"[{self.elapsed():6.1f} s] {message}"
        print(line, flush=True)
        self.logfile.write(line + "\n")
        self.logfile.flush()

    def document(self):
        """The JSON's contents besides the common fields."""
        return {}

    def save(self):
        document = {"environment": self.environment, "budget_s": self.args.budget,
                    "elapsed_s": round(self.elapsed(), 1), "warmup": self.args.warmup,
                    "iterations": self.args.iterations, **self.document(), "rows": self.rows}
        temporary = self.out / f"{self.name}.json.tmp"
        temporary.write_text(json.dumps(document, indent=2, default=str))
        temporary.replace(self.out / f"{self.name}.json")

    def label(self, row):
        raise NotImplementedError

    def fail(self, row, key, error):
        """Records a failure in `row[key]` and the log; the row's status becomes fail."""
        row[key] = short(error)
        row["status"] = "fail"
        self.log(f"{self.label(row)}: {key}: {row[key]}")


class Bench(BudgetedRun):
    def __init__(self, args):
        super().__init__(args, "bench")
        self.rows = [{"model": m, "batch": b, "precision": p, "status": "not run"}
                     for m, b, p in args.rows]
        self.rates = {}
        self.exports = {}   # (model, batch) -> export info, or the exception the export raised
        self.compiles = {}  # (model, batch, precision) -> CompileJob

    def document(self):
        return {"rates": self.rates, "sinter_flags": self.args.sinter_flags,
                "tolerances": {"max_rel_err": MAX_REL_TOLERANCE, "rel_l2_err": L2_TOLERANCE}}

    def label(self, row):
        return label(row)

    # Exports and compiles, shared by the rows of one model and batch.

    def export(self, name, batch, model, x):
        """The ONNX export of (model, batch), made once: {path, input, output, seconds}. A
        failed export raises the same error for every row that needs it."""
        key = (name, batch)
        if key not in self.exports:
            try:
                self.exports[key] = self.export_once(name, batch, model, x)
            except Exception as error:  # noqa: BLE001 (remembered, raised for each row)
                self.exports[key] = error
        if isinstance(self.exports[key], Exception):
            raise self.exports[key]
        return self.exports[key]

    def export_once(self, name, batch, model, x):
        import onnx
        import torch

        folder = self.work / f"{name}-b{batch}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.onnx"
        started = time.time()
        with torch.no_grad():
            torch.onnx.export(model, (x,), str(path), dynamo=True, opset_version=20,
                              external_data=True)
        graph = onnx.load(str(path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        info = {"path": path, "folder": folder,
                "input": [i.name for i in graph.input if i.name not in initializers][0],
                "output": graph.output[0].name, "seconds": round(time.time() - started, 1)}
        self.log(f"{name} b{batch}: exported in {info['seconds']} s")
        return info

    def start_compiles(self, name, batch, export, pending):
        """Starts `sinter compile` for each precision of (name, batch) among `pending` rows that
        has none yet."""
        for model, rows_batch, precision in pending:
            key = (model, rows_batch, precision)
            if (model, rows_batch) != (name, batch) or key in self.compiles:
                continue
            artifact = export["folder"] / f"model-{precision}.so"
            self.compiles[key] = CompileJob(self.sinter, export["path"], artifact, precision,
                                            shlex.split(self.args.sinter_flags))

    # One row.

    def row(self, row, pending):
        import torch

        name, batch, precision = row["model"], row["batch"], row["precision"]
        row["status"] = "running"
        model, _ = build_model(name)
        x = example_input(name, batch)
        export = None
        try:
            shared = (name, batch) in self.exports
            export = self.export(name, batch, model, x)
            row["export_s"] = export["seconds"]
            row["export_shared"] = shared  # made for an earlier row of this model and batch
            self.start_compiles(name, batch, export, pending)
        except Exception as error:  # noqa: BLE001 (torch's side is still measured)
            self.fail(row, "sinter_error", f"export: {short(error)}")
        self.save()

        reference = self.torch_side(row, model, x)
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        if export is not None:
            try:
                self.sinter_side(row, export, x.numpy(), reference)
            except Exception as error:  # noqa: BLE001
                self.fail(row, "sinter_error", error)
        self.log(f"{label(row)} sinter: {row.get('sinter_ms', row.get('sinter_error'))}")
        if row["status"] == "running":
            row["status"] = "ok"

    def torch_side(self, row, model, x):
        """torch's fp32 eager output (the reference, numpy) and the row's torch timings."""
        import torch
        from torch.utils.flop_counter import FlopCounterMode

        precision = row["precision"]
        device = torch.device("cuda")
        model = model.to(device)
        xd = x.to(device)
        with torch.inference_mode():
            counter = FlopCounterMode(display=False)
            with counter:
                reference = model(xd).float().cpu().numpy()
        row["gflop"] = counter.get_total_flops() / 1e9
        if precision in HALF_DTYPES:
            dtype = getattr(torch, HALF_DTYPES[precision])
            model = model.to(dtype)
            if xd.is_floating_point():
                xd = xd.to(dtype)
            with torch.inference_mode():
                half_output = model(xd).float().cpu().numpy()
            row["torch_max_rel_err"], row["torch_rel_l2_err"] = suite.relative_errors(
                half_output, reference)
            del half_output
        element = 2 if precision in HALF_DTYPES else 4
        parameters = sum(p.numel() for p in model.parameters())
        row["min_mbytes"] = (parameters * element + xd.numel() * xd.element_size()
                             + reference.size * element) / 1e6
        if self.rates:
            rate = self.rates[f"{precision}_tflops"] * 1e12
            row["floor_ms"] = 1e3 * max(row["gflop"] * 1e9 / rate,
                                        row["min_mbytes"] * 1e6 / (self.rates["copy_gbps"] * 1e9))
        self.save()

        systems = [("eager", None), ("default", "default"), ("reduce-overhead", "reduce-overhead")]
        if self.args.eager_only:
            systems = systems[:1]
        elif self.args.skip_default:
            systems = [systems[0], systems[2]]
        for system, mode in systems:
            if self.remaining() < (TORCH_COMPILE_MIN_S if mode else 0):
                self.fail(row, f"{system}_error", "not run: the time budget is spent")
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
                    row[f"{system}_compile_s"] = round(time.time() - started, 1)
                row[f"{system}_ms"] = suite.time_cuda_calls(function, xd, self.args.warmup,
                                                            self.args.iterations)
                row[f"{system}_peak_mib"] = torch.cuda.max_memory_allocated() / 2 ** 20
                del function
            except Exception:  # noqa: BLE001
                self.fail(row, f"{system}_error", traceback.format_exc(limit=2))
            self.log(f"{label(row)} {system}: {row.get(f'{system}_ms', 'failed')}")
            self.save()
        del model, xd
        return reference

    def sinter_side(self, row, export, x, reference):
        """Waits for the row's artifact, checks it against `reference`, then times it."""
        job = self.compiles.get((row["model"], row["batch"], row["precision"]))
        if job is None:
            raise RuntimeError("sinter compile was not started")
        artifact = job.wait(self.wait_limit(900))
        row["sinter_compile_s"] = round(job.seconds, 1)
        self.save()

        folder = export["folder"]
        np.save(folder / "input.npy", x)
        outputs = folder / f"outputs-{row['precision']}.npz"
        run_sinter([self.sinter, "run", artifact, "--input",
                    f"{export['input']}={folder / 'input.npy'}", "-o", outputs, "--force"],
                   self.wait_limit(300))
        actual = suite.load_npz(outputs)
        # The exporter names the output; sinter keeps the name. One output either way.
        name = export["output"] if export["output"] in actual or len(actual) != 1 \
            else next(iter(actual))
        expected = {name: reference}
        precision = row["precision"]
        row["max_rel_err"], max_problems = suite.compare_outputs(
            actual, expected, tolerance=MAX_REL_TOLERANCE[precision] or float("inf"))
        # A 16-bit row passes at rel L2 1e-2, or no worse than torch's own output in the same
        # precision where the model itself is that unstable (#29: MobileNetV3-Large b1 bf16 is
        # 2.9e-2 off in torch).
        l2_tolerance = max(L2_TOLERANCE[precision], row.get("torch_rel_l2_err") or 0.0)
        row["rel_l2_err"], l2_problems = suite.compare_outputs(
            actual, expected, l2=True, tolerance=l2_tolerance)
        problems = list(dict.fromkeys(max_problems + l2_problems))
        row["check"] = "ok" if not problems else "fail: " + "; ".join(problems)[:300]
        self.save()
        if problems:
            raise RuntimeError("wrong result, not timed: " + "; ".join(problems)[:300])

        latency = sinter_latency(self.sinter, artifact, self.args.warmup, self.args.iterations,
                                 self.wait_limit(300))
        row["sinter_ms"] = latency["p50"]
        row["sinter_latency_ms"] = latency
        self.save()
        info = json.loads(run_sinter([self.sinter, "inspect", artifact, "--json"],
                                     self.wait_limit(60))[0])
        row["sinter_device_mib"] = (info["arena_bytes"] + info["weight_bytes"]) / 2 ** 20
        row["sinter_kernels"] = info["kernel_count"]
        row["onnx_nodes"] = info["source_node_count"]
        row["storage_precision"] = info.get("storage_precision")
        # The plan (fused ops per kernel, arena against the activations) beside the numbers.
        plans = self.out / "plans"
        plans.mkdir(exist_ok=True)
        plan = run_sinter([self.sinter, "inspect", artifact, "--plan"], self.wait_limit(60))[0]
        (plans / f"{row['model']}-b{row['batch']}-{row['precision']}.txt").write_text(plan)
        # Where sinter's time goes: each kernel run alone (no graph); all of them, and the ten
        # slowest for a quick look.
        if self.remaining() > 0:
            steps = sinter_steps(self.sinter, artifact, self.wait_limit(300))
            row["sinter_steps"] = steps
            row["sinter_steps_ms"] = sum(step["ms"] for step in steps)
            row["sinter_slowest_steps"] = sorted(steps, key=lambda step: -step["ms"])[:10]

    # The whole run.

    def run(self):
        signal.signal(signal.SIGTERM, raise_terminated)
        current = None
        try:
            import torch

            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
            self.environment = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
            try:
                self.environment["sinter"] = run_sinter([self.sinter, "--version"], 30)[0].strip()
            except Exception as error:  # noqa: BLE001 (every row will say why sinter failed)
                self.environment["sinter"] = f"failed: {short(error)}"
            self.log("environment: " + json.dumps(self.environment))
            try:
                self.rates = measure_rates(self.log)
            except Exception:  # noqa: BLE001 (no floors then)
                self.environment["rates_error"] = short(traceback.format_exc(limit=2))
                self.log("rates: " + self.environment["rates_error"])
            for index, current in enumerate(self.rows):
                if self.remaining() <= 0:
                    current.update(status="not run", error="not run: the time budget is spent")
                    continue
                try:
                    self.row(current, self.args.rows[index:])
                except Exception:  # noqa: BLE001
                    self.fail(current, "error", traceback.format_exc(limit=3))
                self.save()
            current = None
        except Terminated:
            self.log("SIGTERM (the hard time limit): stopping")
            if current is not None:
                self.fail(current, "error", "stopped by SIGTERM (the hard time limit) in this row")
            for row in self.rows:
                if row["status"] == "not run":
                    row["error"] = "not run: stopped by SIGTERM (the hard time limit)"
        except Exception:  # noqa: BLE001 (torch itself failed: the table still prints)
            self.log("stopped early:\n" + traceback.format_exc())
            self.environment["error"] = short(traceback.format_exc(limit=3))
            for row in self.rows:
                if row["status"] == "not run":
                    row["error"] = "not run: the benchmark stopped early (environment.error)"
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            for job in self.compiles.values():  # compiles of rows that did not run
                job.kill()
            self.save()
            print(table(self.rows, self.rates), flush=True)
        return 0 if all(row["status"] == "ok" for row in self.rows) else 1


def label(row):
    return f"{row['model']} b{row['batch']} {row['precision']}"


def row_errors(row):
    """The row's failures, one string each."""
    keys = ["error", "sinter_error", "eager_error", "default_error", "reduce-overhead_error"]
    return [f"{key}: {str(row[key]).strip().splitlines()[-1][:200]}" for key in keys
            if row.get(key)]


def table(rows, rates, markdown=False):
    def ms(value):
        return f"{value:.3f}" if isinstance(value, (int, float)) else "-"

    def ratio(a, b):
        return f"{a / b:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) else "-"

    def error(value):
        return f"{value:.1e}" if isinstance(value, (int, float)) else "-"

    header = ["model", "batch", "prec", "sinter ms", "eager ms", "compile ms", "compile-RO ms",
              "eager/sinter", "RO/sinter", "floor ms", "sinter % floor", "RO % floor",
              "compile s (sinter/default/RO)", "peak MiB (sinter/eager/RO)", "max rel err",
              "rel L2 err"]
    lines = []
    notes = []
    for r in rows:
        floor = r.get("floor_ms")
        check_failed = str(r.get("check", "")).startswith("fail")
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
                 error(r.get("max_rel_err")),
                 error(r.get("rel_l2_err")) + (" (fail)" if check_failed else "")]
        lines.append(cells)
        notes += [f"{label(r)}: {text}" for text in row_errors(r)]
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
    else:
        widths = [max(len(c[i]) for c in lines + [header]) for i in range(len(header))]
        out = ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in [header] + lines]
    out.append("")
    if rates:
        out.append(f"Rates measured in the run: fp32 matmul {rates['fp32_tflops']:.1f} TFLOP/s "
                   f"(TF32 off), fp16 matmul {rates['fp16_tflops']:.1f} TFLOP/s, device copy "
                   f"{rates['copy_gbps']:.0f} GB/s.")
    out.append("Ratios above 1: sinter is faster. RO: torch.compile mode=\"reduce-overhead\". "
               "Errors: sinter against torch's fp32 eager output (fp32 rows: max rel and rel L2 "
               f"<= {L2_TOLERANCE['fp32']:g}; fp16 and bf16 rows: rel L2 <= {L2_TOLERANCE['fp16']:g}, or no "
               "more than torch's own output in that precision).")
    if notes:
        out.append("")
        out += [("- " if markdown else "") + note for note in notes]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_run_arguments(parser, "bench")
    parser.add_argument("--rows", nargs="+", type=parse_rows, default=None,
                        help="MODEL:BATCH:PREC[,PREC], run in this order (default: the 16 rows "
                             "of the issue: fp32 and fp16 of every model at batch 1, then "
                             "resnet50, vit_b_16 and bert at batch 32)")
    parser.add_argument("--batches", nargs="+", type=int,
                        help="keep only the rows of these batch sizes")
    parser.add_argument("--precisions", nargs="+", choices=PRECISIONS,
                        help="keep only the rows of these precisions")
    parser.add_argument("--budget", type=float, default=480,
                        help="seconds: no row or stage starts after this, and waits on sinter end "
                             f"by budget + {GRACE_S} s (default 480; bench.sh kills at 570)")
    parser.add_argument("--sinter-flags", default="", metavar="FLAGS",
                        help="more `sinter compile` flags for every row, one string (an ablation: "
                             "--sinter-flags '--disable-pass merge-sibling-matmuls'); recorded in "
                             "bench.json")
    parser.add_argument("--eager-only", action="store_true",
                        help="time torch eager only, not torch.compile (a quicker check of "
                             "sinter's side; the table's torch.compile columns stay empty)")
    parser.add_argument("--skip-default", action="store_true",
                        help="time torch eager and reduce-overhead only, not torch.compile's "
                             "default mode (the zoo's rows: more of them fit one call)")
    parser.add_argument("--list", action="store_true", help="print the rows in order and stop")
    parser.add_argument("--markdown", metavar="BENCH_JSON",
                        help="print the table of an earlier run's bench.json as markdown and stop")
    parser.add_argument("--steps", nargs="+", metavar="BENCH_JSON",
                        help="print each row's per-step time by kernel family (bench/steps.py), "
                             "beside a second bench.json's as the baseline when given, and stop")
    args = parser.parse_args()
    if args.markdown:
        data = json.loads(Path(args.markdown).read_text())
        print(table(data["rows"], data["rates"], markdown=True))
        return 0
    if args.steps:
        if len(args.steps) > 2:
            parser.error("--steps takes a bench.json and at most one baseline")
        runs = [json.loads(Path(path).read_text())["rows"] for path in args.steps]
        print(steps_report(runs[0], runs[1] if len(runs) > 1 else None))
        return 0
    rows = [row for group in args.rows for row in group] if args.rows else \
        [row for text in DEFAULT_ROWS for row in parse_rows(text)]
    rows = list(dict.fromkeys(rows))  # each row once, first place kept
    rows = [(m, b, p) for m, b, p in rows
            if (not args.batches or b in args.batches) and
            (not args.precisions or p in args.precisions)]
    if not rows:
        parser.error("no rows left after --batches/--precisions")
    args.rows = rows
    if args.list:
        for index, row in enumerate(rows, 1):
            print(f"{index:2d}. {row[0]}:{row[1]}:{row[2]}")
        return 0
    return Bench(args).run()


if __name__ == "__main__":
    sys.exit(main())
