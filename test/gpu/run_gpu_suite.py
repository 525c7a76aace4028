#!/usr/bin/env python3
"""The GPU suite: sinter's CUDA target end to end on a GPU machine, with prebuilt binaries.

    python3 test/gpu/run_gpu_suite.py --bin DIR --out DIR [--budget SECONDS] [--no-gpu]

DIR holds the portable binaries (`sinter`, `libsinter_rt.so`, `run_model`) that
scripts/device/build-portable.sh packs; nothing is built here. docs/gpu-testing.md says how to run
it through the device tool (scripts/device/gpu-suite.sh unpacks the binaries and calls this).

Steps, each failing soft (a failing model is a row of the table, never the end of the script):
  a. every models/*.onnx: `sinter compile --target cuda` (default archs), `sinter run`, compared
     with onnxruntime on the CPU (max|a-b|/max|b| <= 1e-4 for floats, integers exact), compile
     time, and `sinter bench`; once per GPU code generator that --gpu-codegen names (cuda-c,
     llvm or both: the NVPTX route's rows are "MODEL [llvm]" and say how many kernels it built);
  b. torchvision resnet50, mobilenet_v2, vit_b_16 and transformers' BertModel and GPT2Model
     (built from a config at random init, seed 0; batch 1, images 224x224, 128 tokens), exported
     with torch.onnx.export(dynamo=True, opset 20, weights external) in parallel worker
     processes, compiled with `--target cuda --arch sm_90`, run and compared with torch's own
     output on the GPU (fp32, TF32 off), then `sinter bench` against torch eager (median of 100
     runs timed with CUDA events after 10 warm-up runs), one after the other with nothing else
     running; with --gpu-codegen cuda-c or both these use CUDA C, with llvm the NVPTX route;
  c. the C++ example `run_model` (it links only libsinter_rt) on one compiled model;
  d. a log and a JSON of the results under --out, and last a table on stdout.

With --precision fp16|bf16 every compile stores float32 weights and activations in 16 bits
(docs/precision.md) and float outputs are compared by relative L2 error, ||a-b|| / ||b|| <= 1e-2,
instead of the max relative error.

A time budget (--budget, default 480 s) bounds the whole run: steps that would start too late are
reported as skipped. With --no-gpu (for machines without a GPU) the CUDA compiles still run, and
the run/compare/bench logic is exercised on CPU-target artifacts instead of the GPU; torch models
are exported and compiled but not run.
"""
import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = ROOT / "models"
sys.path.insert(0, str(MODELS_DIR))

FLOAT_TOLERANCE = 1e-4
PRECISION_L2_TOLERANCE = 1e-2  # --precision fp16|bf16: relative L2 error per float output
TORCH_MODELS = ["resnet50", "mobilenet_v2", "vit_b_16", "bert", "gpt2"]
SEQUENCE = 128
IMAGE = 224
WARMUP = 10
ITERATIONS = 100
SEED = 0


# ---------------------------------------------------------------------------------------------
# Torch models (used by the export workers and, on the GPU, by the main process).

def build_torch_model(name):
    """(model in eval mode, example input) for a suite model, at random init with seed 0. The same
    call gives the same weights in every process (CPU initialisation is deterministic)."""
    import torch

    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED + 1)
    if name in ("resnet50", "mobilenet_v2", "vit_b_16"):
        import torchvision

        model = getattr(torchvision.models, name)(weights=None)
        if name == "mobilenet_v2":
            # torchvision draws every convolution's weights with fan_out scaling, which for a
            # depthwise one (9 inputs per output, fan_out 9 * channels) shrinks the activations
            # by about sqrt(2 / channels) per block: the logits end near 1e-9, which float16
            # flushes to zero (torch's own fp16 output then differs from fp32 by 100%). Draw
            # depthwise weights with fan_in scaling instead, so activations stay near 1.
            for module in model.modules():
                if isinstance(module, torch.nn.Conv2d) and module.groups > 1:
                    fan_in = module.weight[0].numel()
                    torch.nn.init.normal_(module.weight, std=(2.0 / fan_in) ** 0.5,
                                          generator=generator)
        if name == "vit_b_16":
            # torchvision zero-initialises ViT's head, which would make every logit 0 and the
            # comparison vacuous; draw it like the other linear layers.
            for parameter in model.heads.parameters():
                torch.nn.init.normal_(parameter, std=0.02, generator=generator)
        example = torch.randn(1, 3, IMAGE, IMAGE, generator=generator)
    elif name in ("bert", "gpt2"):
        import transformers

        class LastHiddenState(torch.nn.Module):
            """forward(ids) -> last_hidden_state."""

            def __init__(self, inner, **options):
                super().__init__()
                self.inner = inner
                self.options = options

            def forward(self, ids):
                return self.inner(input_ids=ids, **self.options).last_hidden_state

        if name == "bert":
            config = transformers.BertConfig()
            inner = transformers.BertModel(config)
            model = LastHiddenState(inner)
        else:
            config = transformers.GPT2Config(use_cache=False)
            inner = transformers.GPT2Model(config)
            model = LastHiddenState(inner, use_cache=False)
        example = torch.randint(0, config.vocab_size, (1, SEQUENCE), generator=generator)
    else:
        raise ValueError(f"unknown torch model {name!r}")
    return model.eval(), example


def parameter_checksum(model):
    """Sum of every parameter and buffer in float64: shows that two processes built the same
    weights."""
    import torch

    with torch.no_grad():
        return float(sum(t.double().sum().item() for t in list(model.parameters()) +
                         list(model.buffers()) if t.is_floating_point()))


def export_worker(name, work):
    """--export NAME: builds the model, exports it to WORK/NAME/NAME.onnx (weights external),
    saves the example input and writes WORK/NAME/export.json."""
    import torch

    torch.set_num_threads(2)
    folder = Path(work) / name
    folder.mkdir(parents=True, exist_ok=True)
    start = time.time()
    model, example = build_torch_model(name)
    checksum = parameter_checksum(model)  # before the export, which must not matter
    input_name = "ids" if name in ("bert", "gpt2") else "x"
    output_name = "last_hidden_state" if name in ("bert", "gpt2") else "logits"
    path = folder / f"{name}.onnx"
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    with torch.no_grad():
        if (major, minor) >= (2, 5):
            torch.onnx.export(model, (example,), str(path), dynamo=True, opset_version=20,
                              external_data=True, input_names=[input_name],
                              output_names=[output_name])
            exporter = "dynamo, opset 20"
        else:  # an old torch (local checks only): the TorchScript exporter
            torch.onnx.export(model, (example,), str(path), opset_version=17,
                              input_names=[input_name], output_names=[output_name])
            exporter = "torchscript, opset 17"
    try:  # the names the exporter actually gave (it may not honour input_names/output_names)
        import onnx

        graph = onnx.load(str(path), load_external_data=False).graph
        initializers = {t.name for t in graph.initializer}
        input_name = [i.name for i in graph.input if i.name not in initializers][0]
        output_name = graph.output[0].name
    except ImportError:
        pass
    np.save(folder / "input.npy", example.numpy())
    info = {"model": name, "onnx": str(path), "exporter": exporter, "torch": torch.__version__,
            "seconds": time.time() - start, "checksum": checksum, "input": input_name,
            "output": output_name}
    (folder / "export.json").write_text(json.dumps(info, indent=2))


# ---------------------------------------------------------------------------------------------
# Comparison.

def relative_errors(got, want):
    """(max|a-b| / max|b|, ||a-b|| / ||b||) of two float arrays of one shape, in float64. NaNs in
    the same places and equal infinities count as equal (NaNs elsewhere give (inf, inf)); the max
    is over the finite elements of `want` for the scale, the L2 norms over them for both."""
    a, b = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf"), float("inf")
    a, b = np.nan_to_num(a, nan=0.0), np.nan_to_num(b, nan=0.0)
    error = np.abs(a - b)
    error[a == b] = 0.0
    finite = np.isfinite(b)
    scale = float(np.max(np.abs(b[finite]), initial=0.0))
    largest = float(np.max(error, initial=0.0))
    maximum = largest / scale if scale > 0 else largest
    norm = float(np.linalg.norm(b[finite]))
    difference = float(np.linalg.norm(error[finite]))
    return maximum, (difference / norm if norm > 0 else difference)


def compare_outputs(actual, expected, l2=False, tolerance=None):
    """(worst relative error over float outputs, problems). Floats: max|a-b| / max|b| per output
    <= `tolerance` (default FLOAT_TOLERANCE); with `l2`, ||a-b|| / ||b|| over the finite elements
    instead (default PRECISION_L2_TOLERANCE). Integers and booleans exactly; dtype, shape and
    names exactly."""
    if tolerance is None:
        tolerance = PRECISION_L2_TOLERANCE if l2 else FLOAT_TOLERANCE
    worst = 0.0
    problems = []
    for name, want in expected.items():
        if name not in actual:
            problems.append(f"{name}: missing")
            continue
        got = np.asarray(actual[name])
        want = np.asarray(want)
        if got.shape != want.shape or got.dtype != want.dtype:
            problems.append(f"{name}: got {got.dtype}{list(got.shape)}, "
                            f"expected {want.dtype}{list(want.shape)}")
            continue
        if got.size == 0:
            continue
        if np.issubdtype(want.dtype, np.floating):
            if not np.array_equal(np.isnan(got), np.isnan(want)):
                problems.append(f"{name}: NaNs in different places")
                worst = float("inf")
                continue
            maximum, norm = relative_errors(got, want)
            relative = norm if l2 else maximum
            worst = max(worst, relative)
            if relative <= tolerance:
                continue
            if l2:
                problems.append(f"{name}: relative L2 error {relative:.3g} > {tolerance:g}")
            else:
                a = np.nan_to_num(got.astype(np.float64), nan=0.0)
                b = np.nan_to_num(want.astype(np.float64), nan=0.0)
                error = np.abs(a - b)
                error[a == b] = 0.0
                index = int(np.argmax(error))
                where = [int(i) for i in np.unravel_index(index, got.shape)]
                problems.append(f"{name}: max rel err {relative:.3g} > {tolerance:g} "
                                f"(worst at {where}: {got.flat[index]:.7g} vs "
                                f"{want.flat[index]:.7g})")
        else:
            mismatches = int(np.count_nonzero(got != want))
            if mismatches:
                problems.append(f"{name}: {mismatches} of {got.size} elements differ")
    problems += [f"{name}: not expected" for name in actual if name not in expected]
    return worst, problems


def onnxruntime_outputs(model_path, inputs):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(model_path), options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def fmt(value, form="{:.2e}"):
    return form.format(value) if isinstance(value, (int, float)) else "-"


def load_npz(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def time_cuda_calls(function, argument, warmup, iterations):
    """Median milliseconds of `iterations` calls of function(argument), each between two CUDA
    events on the current stream and waited for, after `warmup` untimed calls, all inside
    torch.inference_mode(): sinter bench's method, so both sides are timed alike."""
    import torch

    times = []
    with torch.inference_mode():
        for _ in range(warmup):
            function(argument)
        torch.cuda.synchronize()
        for _ in range(iterations):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            function(argument)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    return float(np.median(times))


# ---------------------------------------------------------------------------------------------
# The suite.

class Suite:
    def __init__(self, args):
        self.args = args
        self.start = time.time()
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = Path(args.work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.bin = Path(args.bin)
        self.sinter = self.bin / "sinter"
        self.log_file = open(self.out / "gpu-suite.log", "w")
        self.lock = threading.Lock()
        self.results = []
        self.environment = {}
        self.run_model = {}

    # Logging and processes.

    def elapsed(self):
        return time.time() - self.start

    def remaining(self):
        return self.args.budget - self.elapsed()

    def log(self, message, echo=True):
        line = f"[{self.elapsed():6.1f} s] {message}"
        with self.lock:
            self.log_file.write(line + "\n")
            self.log_file.flush()
            if echo:
                print(line, flush=True)

    def execute(self, command, timeout, env=None, cwd=None):
        """Runs a command, bounded by `timeout` and the budget; returns (exit code, stdout,
        stderr, seconds). Exit code None: it could not start or ran out of time."""
        timeout = min(timeout, self.remaining())
        text = " ".join(str(c) for c in command)
        if timeout <= 1:
            self.log(f"skipped (no time left): {text}", echo=False)
            return None, "", "skipped: the time budget is spent", 0.0
        started = time.time()
        try:
            result = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                                    timeout=timeout, env=env, cwd=cwd)
            code, stdout, stderr = result.returncode, result.stdout, result.stderr
        except subprocess.TimeoutExpired as error:
            code = None
            stdout = error.stdout.decode(errors="replace") if isinstance(error.stdout, bytes) \
                else (error.stdout or "")
            stderr = f"timed out after {timeout:.0f} s"
        except OSError as error:
            code, stdout, stderr = None, "", f"could not run: {error}"
        seconds = time.time() - started
        with self.lock:
            self.log_file.write(f"$ {text}\n  -> exit {code} in {seconds:.2f} s\n")
            for name, stream in (("stdout", stdout), ("stderr", stderr)):
                if stream.strip():
                    tail = stream if len(stream) < 6000 else "...\n" + stream[-6000:]
                    self.log_file.write(f"  --- {name} ---\n" + "".join(
                        "  " + line + "\n" for line in tail.rstrip().splitlines()))
            self.log_file.flush()
        return code, stdout, stderr, seconds

    @staticmethod
    def last_line(stdout, stderr):
        lines = [l for l in (stderr + "\n" + stdout).strip().splitlines() if l.strip()]
        errors = [l for l in lines if "error" in l.lower()]
        line = (errors or lines or ["(no output)"])[-1]
        return line[:300]

    def save(self):
        document = {"environment": self.environment, "budget_s": self.args.budget,
                    "elapsed_s": round(self.elapsed(), 1), "no_gpu": self.args.no_gpu,
                    "tolerance": FLOAT_TOLERANCE if self.args.precision == "fp32" else
                    {"relative_l2": PRECISION_L2_TOLERANCE}, "precision": self.args.precision,
                    "warmup": WARMUP, "iterations": ITERATIONS,
                    "run_model": self.run_model, "results": self.results}
        temporary = self.out / "gpu-suite.json.tmp"
        temporary.write_text(json.dumps(document, indent=2, default=str))
        temporary.replace(self.out / "gpu-suite.json")

    # Steps.

    def describe_environment(self):
        env = {"python": sys.version.split()[0], "machine": platform.node(),
               "no_gpu": self.args.no_gpu}
        code, stdout, stderr, _ = self.execute([self.sinter, "--version"], 30)
        env["sinter"] = stdout.strip() if code == 0 else f"failed: {self.last_line(stdout, stderr)}"
        if shutil.which("nvidia-smi"):
            code, stdout, _, _ = self.execute(
                ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                 "--format=csv,noheader"], 30)
            env["gpu"] = stdout.strip() if code == 0 else "nvidia-smi failed"
        env["ptxas"] = shutil.which("ptxas") or (
            "/usr/local/cuda/bin/ptxas" if Path("/usr/local/cuda/bin/ptxas").exists() else None)
        env["SINTER_NVRTC"] = os.environ.get("SINTER_NVRTC")
        env["SINTER_LIBDEVICE"] = os.environ.get("SINTER_LIBDEVICE") or (
            "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
            if Path("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc").exists() else None)
        for module in ("numpy", "onnx", "onnxruntime"):
            try:
                env[module] = __import__(module).__version__
            except Exception as error:  # noqa: BLE001 (report, never stop)
                env[module] = f"missing: {error}"
        self.environment = env
        self.log("environment: " + ", ".join(f"{k}={v}" for k, v in env.items()))
        return env["sinter"].startswith("sinter")

    def compile(self, result, model, artifact, extra, timeout):
        """sinter compile; records compile_s (or the failure) in `result`; True when it worked."""
        command = [self.sinter, "compile", model, "-o", artifact, "--force"] + extra
        code, stdout, stderr, seconds = self.execute(command, timeout)
        if code != 0:
            result["status"] = "fail"
            result["stage"] = "compile"
            result["error"] = self.last_line(stdout, stderr)
            return False
        result["compile_s"] = round(seconds, 2)
        return True

    def inspect(self, result, artifact):
        code, stdout, stderr, _ = self.execute([self.sinter, "inspect", artifact, "--json"], 60)
        if code == 0:
            try:
                info = json.loads(stdout)
                result["kernels"] = info["kernel_count"]
                generators = {}
                for kernel in info["kernels"]:
                    generators[kernel["generator"]] = generators.get(kernel["generator"], 0) + 1
                result["generators"] = generators
                result["source_nodes"] = info["source_node_count"]
                result["arena_ratio"] = info["arena_ratio"]
                result["binaries"] = sorted({f"{b['kind']} {b['arch']}" for m in info["cuda_modules"]
                                             for b in m["binaries"]})
            except (ValueError, KeyError) as error:
                result["inspect_error"] = str(error)
        else:
            result["inspect_error"] = self.last_line(stdout, stderr)

    def run_artifact(self, result, artifact, inputs, folder):
        """sinter run on named inputs; returns the outputs or None (failure recorded)."""
        flags = []
        for index, (name, array) in enumerate(inputs.items()):
            path = folder / f"input_{index}.npy"
            np.save(path, array)
            flags += ["--input", f"{name}={path}"]
        out = folder / "outputs.npz"
        code, stdout, stderr, seconds = self.execute(
            [self.sinter, "run", artifact, *flags, "-o", out, "--force"], 300)
        if code != 0:
            result["status"] = "fail"
            result["stage"] = "run"
            result["error"] = self.last_line(stdout, stderr)
            return None
        result["run_s"] = round(seconds, 2)
        return load_npz(out)

    def precision_flags(self):
        """`sinter compile --precision P` unless P is fp32 (the default)."""
        return [] if self.args.precision == "fp32" else ["--precision", self.args.precision]

    def check(self, result, actual, expected):
        worst, problems = compare_outputs(actual, expected, l2=self.args.precision != "fp32")
        result["max_rel_err"] = worst
        if problems:
            result["status"] = "fail"
            result["stage"] = "compare"
            result["error"] = "; ".join(problems)[:600]
            return False
        return True

    def bench(self, result, artifact, extra=()):
        code, stdout, stderr, _ = self.execute(
            [self.sinter, "bench", artifact, "--warmup", WARMUP, "--iterations", ITERATIONS,
             "--json", *extra], 240)
        if code != 0:
            result["bench_error"] = self.last_line(stdout, stderr)
            return
        try:
            report = json.loads(stdout)
            result["sinter_p50_ms"] = report["latency_ms"]["p50"]
            result["sinter_latency_ms"] = report["latency_ms"]
            result["sinter_throughput_per_s"] = report["throughput_per_s"]
        except (ValueError, KeyError) as error:
            result["bench_error"] = f"unreadable bench output: {error}"

    # a. models/*.onnx

    def onnx_models(self):
        import make_input

        models = sorted(MODELS_DIR.glob("*.onnx"))
        if self.args.only:
            models = [m for m in models if m.stem in self.args.only]
        codegens = ["cuda-c", "llvm"] if self.args.gpu_codegen == "both" else [self.args.gpu_codegen]
        cases = []  # (model, GPU code generator, row)
        for model in models:
            for codegen in codegens:
                label = model.name + ("" if codegen == "cuda-c" else f" [{codegen}]")
                row = {"model": label, "source": "models", "status": "ok", "gpu_codegen": codegen}
                cases.append((model, codegen, row))
                self.results.append(row)

        inputs = {}

        def artifact_name(codegen):
            return "cuda.so" if codegen == "cuda-c" else f"cuda-{codegen}.so"

        def compile_one(case):
            model, codegen, row = case
            folder = self.work / "onnx" / model.stem
            folder.mkdir(parents=True, exist_ok=True)
            artifact = folder / artifact_name(codegen)
            try:
                # Symbolic dims are 1 (make_input's default); artifacts have static shapes.
                model_inputs = make_input.make_inputs(str(model))
                inputs[model] = model_inputs
                shapes = [f for name, array in model_inputs.items()
                          for f in ("--shape", f"{name}={'x'.join(map(str, array.shape))}")]
                if self.compile(row, model, artifact,
                                ["--target", "cuda", "--gpu-codegen", codegen, *shapes,
                                 *self.precision_flags()], 240):
                    self.inspect(row, artifact)
                    if codegen == "llvm":
                        generators = row.get("generators", {})
                        row["note"] = (f"llvm-nvptx {generators.get('llvm-nvptx', 0)} of "
                                       f"{sum(generators.values())} kernels")
                if self.args.no_gpu and row["status"] == "ok" and codegen == codegens[0]:
                    # The run/compare/bench logic, exercised on the CPU target.
                    cpu_row = {"status": "ok"}
                    if self.compile(cpu_row, model, folder / "cpu.so",
                                    ["--target", "cpu", *shapes, *self.precision_flags()], 240):
                        row["cpu_compile_s"] = cpu_row["compile_s"]
                    else:
                        row.update(status="fail", stage="compile (cpu)", error=cpu_row["error"])
            except Exception:  # noqa: BLE001
                row.update(status="fail", stage="compile", error=traceback.format_exc(limit=2))
            self.log(f"{row['model']}: compiled ({row.get('compile_s', '-')} s) {row['status']}"
                     + (f": {row.get('error')}" if row["status"] != "ok" else "")
                     + (f" ({row['note']})" if row.get("note") else ""))

        with concurrent.futures.ThreadPoolExecutor(self.args.jobs) as pool:
            list(pool.map(compile_one, cases))
        self.save()

        for model, codegen, row in cases:
            if row["status"] != "ok":
                continue
            if self.args.no_gpu and codegen != codegens[0]:
                row["note"] = (row.get("note", "") + "; not run: --no-gpu").lstrip("; ")
                continue  # the CPU artifact stands in for the GPU one: check it once
            folder = self.work / "onnx" / model.stem
            artifact = folder / ("cpu.so" if self.args.no_gpu else artifact_name(codegen))
            try:
                expected = onnxruntime_outputs(model, inputs[model])
                actual = self.run_artifact(row, artifact, inputs[model], folder)
                if actual is not None and self.check(row, actual, expected):
                    self.bench(row, artifact)
            except Exception:  # noqa: BLE001
                row.update(status="fail", stage="run", error=traceback.format_exc(limit=2))
            self.log(f"{row['model']}: {row['status']}, max rel err {fmt(row.get('max_rel_err'))}, "
                     f"p50 {fmt(row.get('sinter_p50_ms'), '{:.4f}')} ms"
                     + (f" ({row.get('stage')}: {row.get('error')})" if row["status"] != "ok"
                        else ""))
            self.save()

    # c. run_model

    def example(self):
        """bin/run_model on the first compiled model that ran, through libsinter_rt alone."""
        # The first GPU code generator's artifact (cuda.so for cuda-c, cuda-llvm.so for llvm).
        codegen = "llvm" if self.args.gpu_codegen == "llvm" else "cuda-c"
        target = "cpu.so" if self.args.no_gpu else \
            ("cuda.so" if codegen == "cuda-c" else f"cuda-{codegen}.so")
        # run_model feeds integers 1..5, out of range for some token-id inputs: float models only.
        float_models = ["tiny_cnn.onnx", "tiny_mlp.onnx", "resnet_narrow.onnx", "vit_tiny.onnx"]
        ok = {r["model"].split(" [")[0] for r in self.results if r["source"] == "models"
              and r["status"] == "ok" and r.get("gpu_codegen", "cuda-c") == codegen}
        preferred = [{"model": name} for name in float_models if name in ok]
        if not preferred:
            self.run_model = {"status": "skipped", "error": "no model compiled"}
            return
        artifact = self.work / "onnx" / Path(preferred[0]["model"]).stem / target
        env = dict(os.environ, LD_LIBRARY_PATH=str(self.bin) + ":" +
                   os.environ.get("LD_LIBRARY_PATH", ""))
        code, stdout, stderr, seconds = self.execute(
            [self.bin / "run_model", artifact, "--runs", "20"], 120, env=env)
        self.run_model = {"model": preferred[0]["model"], "artifact": target,
                          "status": "ok" if code == 0 else "fail", "seconds": round(seconds, 2),
                          "output": (stdout.strip().splitlines() or [""])[-3:],
                          "error": None if code == 0 else self.last_line(stdout, stderr)}
        self.log(f"run_model on {preferred[0]['model']} ({target}): {self.run_model['status']}"
                 + (f": {self.run_model['error']}" if code != 0 else ""))
        self.save()

    # b. torch models

    def start_exports(self):
        """Starts one export worker per torch model; returns {name: (process, row)}."""
        names = [n for n in TORCH_MODELS if not self.args.only or n in self.args.only]
        workers = {}
        if self.args.skip_torch or not names:
            return workers
        probe = subprocess.run([self.args.export_python, "-c", "import torch; print(torch.__version__)"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            for name in names:
                self.results.append({"model": name, "source": "torch", "status": "skipped",
                                     "error": f"no torch in {self.args.export_python}"})
            self.log(f"torch models skipped: no torch in {self.args.export_python}")
            return workers
        self.environment["torch"] = probe.stdout.strip()
        env = dict(os.environ, OMP_NUM_THREADS="2", MKL_NUM_THREADS="2",
                   CUDA_VISIBLE_DEVICES="")  # exports run on the CPU; the GPU stays free
        for name in names:
            row = {"model": name, "source": "torch", "status": "ok"}
            self.results.append(row)
            folder = self.work / "torch" / name
            folder.mkdir(parents=True, exist_ok=True)
            log = open(folder / "export.log", "w")
            process = subprocess.Popen(
                [self.args.export_python, __file__, "--export", name, "--work",
                 self.work / "torch"], stdout=log, stderr=subprocess.STDOUT, env=env)
            workers[name] = (process, row, log)
        self.log(f"exporting {', '.join(names)} in {len(names)} worker processes")
        return workers

    def finish_exports(self, workers):
        """Waits for the export workers (within the budget) and compiles each export."""
        def export_then_compile(name):
            process, row, log = workers[name]
            folder = self.work / "torch" / name
            try:
                process.wait(timeout=max(1.0, self.remaining() - self.args.reserve))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
            info_path = folder / "export.json"
            if process.returncode != 0 or not info_path.exists():
                tail = (folder / "export.log").read_text(errors="replace").strip().splitlines()
                errors = [l for l in tail if "Error" in l or "error" in l]
                row.update(status="fail", stage="export",
                           error=((errors or tail or ["killed: out of time"])[-1])[:300])
                self.log(f"{name}: export failed: {row['error']}")
                return
            info = json.loads(info_path.read_text())
            row["export_s"] = round(info["seconds"], 1)
            row["exporter"] = info["exporter"]
            row["info"] = info
            self.log(f"{name}: exported in {row['export_s']} s ({info['exporter']})")
            codegen = "llvm" if self.args.gpu_codegen == "llvm" else "cuda-c"
            row["gpu_codegen"] = codegen
            if self.compile(row, info["onnx"], folder / "model.so",
                            ["--target", "cuda", "--arch", "sm_90", "--gpu-codegen", codegen,
                             *self.precision_flags()], 420):
                self.inspect(row, folder / "model.so")
            self.log(f"{name}: compiled ({row.get('compile_s', '-')} s) {row['status']}"
                     + (f": {row.get('error')}" if row["status"] != "ok" else ""))

        with concurrent.futures.ThreadPoolExecutor(max(1, self.args.jobs)) as pool:
            list(pool.map(export_then_compile, list(workers)))
        self.save()

    def torch_models(self, workers):
        """Correctness and speed against torch on the GPU, one model at a time."""
        if not workers:
            return
        if self.args.no_gpu:
            for name in workers:
                row = workers[name][1]
                if row["status"] == "ok":
                    row["note"] = "not run: --no-gpu"
            return
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 as written: no TF32 anywhere
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        self.environment["torch_device"] = torch.cuda.get_device_name(0)
        device = torch.device("cuda")
        for name, (_, row, _) in workers.items():
            if row["status"] != "ok":
                continue
            if self.remaining() < 20:
                row.update(status="skipped", stage="run", error="the time budget is spent")
                continue
            folder = self.work / "torch" / name
            try:
                info = row["info"]
                model, _ = build_torch_model(name)
                checksum = parameter_checksum(model)
                if abs(checksum - info["checksum"]) > 1e-6 * max(1.0, abs(checksum)):
                    raise RuntimeError(f"weights differ from the export's (checksum {checksum} "
                                       f"vs {info['checksum']})")
                example = np.load(folder / "input.npy")
                model = model.to(device)
                x = torch.from_numpy(example).to(device)
                with torch.inference_mode():
                    expected = {info["output"]: model(x).float().cpu().numpy()}
                actual = self.run_artifact(row, folder / "model.so", {info["input"]: example},
                                           folder)
                if actual is not None:
                    self.check(row, actual, expected)  # the number is reported either way
                    self.bench(row, folder / "model.so")
                # torch's number is worth having even when sinter's run failed.
                row["torch_p50_ms"] = self.torch_eager_p50(model, x)
                if row.get("sinter_p50_ms"):
                    row["ratio"] = row["torch_p50_ms"] / row["sinter_p50_ms"]
                del model, x
                torch.cuda.empty_cache()
            except Exception:  # noqa: BLE001
                row.update(status="fail", stage=row.get("stage", "torch"),
                           error=traceback.format_exc(limit=3)[-600:])
            self.log(f"{name}: {row['status']}, max rel err {fmt(row.get('max_rel_err'))}, "
                     f"sinter p50 {fmt(row.get('sinter_p50_ms'), '{:.4f}')} ms, torch p50 "
                     f"{fmt(row.get('torch_p50_ms'), '{:.4f}')} ms"
                     + (f" ({row.get('stage')}: {row.get('error')})" if row["status"] != "ok"
                        else ""))
            self.save()

    @staticmethod
    def torch_eager_p50(model, x):
        """Median milliseconds of ITERATIONS eager forwards after WARMUP untimed ones."""
        return time_cuda_calls(model, x, WARMUP, ITERATIONS)

    # d. the table

    def table(self):
        error_column = "max rel err" if self.args.precision == "fp32" else "rel L2 err"
        header = ["model", "compile s", error_column, "sinter p50 ms", "torch eager p50 ms",
                  "ratio", "status"]
        rows = []
        ordered = sorted(self.results, key=lambda r: r["source"] != "models")  # models/ first
        for r in ordered:
            status = r["status"]
            if status != "ok":
                status += f" ({r.get('stage', '')}): {str(r.get('error', ''))[:90]}"
            elif r.get("note"):
                status += f" ({r['note']})"
            label = r["model"] + (" (torch)" if r["source"] == "torch" else "")
            rows.append([label, fmt(r.get("compile_s"), "{:.1f}"),
                         fmt(r.get("max_rel_err"), "{:.2e}"),
                         fmt(r.get("sinter_p50_ms"), "{:.3f}"),
                         fmt(r.get("torch_p50_ms"), "{:.3f}"),
                         fmt(r.get("ratio"), "{:.2f}"), status])
        widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header) - 1)]
        lines = ["  ".join(str(cell).ljust(width) if i == 0 else str(cell).rjust(width)
                           for i, (cell, width) in enumerate(zip(row[:-1], widths)))
                 + "  " + row[-1] for row in [header] + rows]
        example = self.run_model.get("status", "not run")
        passed = sum(r["status"] == "ok" for r in self.results)
        lines.append(f"run_model example: {example}"
                     + (f" ({self.run_model.get('model')})" if self.run_model.get("model") else ""))
        lines.append(f"{passed} of {len(self.results)} models ok; ratio = torch eager p50 / sinter "
                     f"p50 (above 1: sinter is faster); {self.elapsed():.0f} s"
                     + ("; --no-gpu: runs and benches used CPU artifacts" if self.args.no_gpu
                        else ""))
        return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default=str(ROOT / ".device" / "bin"),
                        help="folder with sinter, libsinter_rt.so and run_model")
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "out" / "gpu-suite")),
                        help="where the log and the JSON go (default $OUT)")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--budget", type=float, default=480,
                        help="seconds for the whole run (default 480)")
    parser.add_argument("--reserve", type=float, default=150,
                        help="seconds kept for the GPU runs when waiting for exports")
    parser.add_argument("--jobs", type=int, default=3, help="compiles at a time")
    parser.add_argument("--no-gpu", action="store_true",
                        help="no GPU here: compile for CUDA, run and bench CPU artifacts")
    parser.add_argument("--skip-torch", action="store_true", help="only the models/ suite")
    parser.add_argument("--export-python", default=sys.executable,
                        help="the Python that exports the torch models (default: this one)")
    parser.add_argument("--only", nargs="*", help="model names (stem) to run")
    parser.add_argument("--gpu-codegen", choices=["cuda-c", "llvm", "both"], default="cuda-c",
                        help="GPU code generator for the models/ suite: cuda-c (default), llvm "
                             "(the NVPTX route) or both (each model twice); the torch models use "
                             "llvm only when this is llvm")
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32",
                        help="sinter compile --precision for every model; fp16/bf16 compare by "
                             "relative L2 <= 1e-2 (docs/precision.md)")
    parser.add_argument("--export", help=argparse.SUPPRESS)  # worker mode
    args = parser.parse_args()

    if args.export:
        export_worker(args.export, args.work)
        return 0

    import tempfile

    temporary = None
    if args.work is None:
        temporary = tempfile.TemporaryDirectory(prefix="sinter-gpu-suite-")
        args.work = temporary.name
    suite = Suite(args)
    workers = {}
    try:
        if not suite.describe_environment():
            suite.log(f"{suite.sinter} does not run; nothing else can")
            suite.save()
            return 1
        workers = suite.start_exports()
        suite.onnx_models()
        suite.finish_exports(workers)
        suite.example()
        suite.torch_models(workers)
    except Exception:  # noqa: BLE001 (the table still prints)
        suite.log("the suite stopped early:\n" + traceback.format_exc())
    finally:
        for process, _, _ in workers.values():  # workers left by an early stop
            if process.poll() is None:
                process.kill()
                process.wait()
        suite.save()
        table = suite.table()
        suite.log("results:\n" + table, echo=False)
        print(f"\nlog: {suite.out / 'gpu-suite.log'}, results: {suite.out / 'gpu-suite.json'}\n"
              + table, flush=True)
        if temporary:
            temporary.cleanup()
    failed = [r for r in suite.results if r["status"] == "fail"]
    return 1 if failed or suite.run_model.get("status") == "fail" else 0


if __name__ == "__main__":
    sys.exit(main())
