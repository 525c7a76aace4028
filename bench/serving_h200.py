#!/usr/bin/env python3
"""The serving measurements of docs/performance.md on one GPU, in one bounded run:

  memory   device memory for 1, 4 and 16 sessions of BERT-base (fp32 weights counted once):
           test/gpu/check_serving.py on a BERT-base artifact beside its export;
  bench    `sinter bench --concurrency 1/4/16` for ResNet-50 and BERT-base fp16 at batch 1 and 8,
           from one artifact per model with batch buckets 1 and 8 (`--dim batch=1,8`, `--batch`
           picks the plan) when the model exports with a dynamic batch, else one artifact per batch;
  torch    the same rows for torch eager and torch.compile (mode="default"), one CUDA stream per
           thread, the same model object shared by the threads, end to end like sinter's (host
           input in, host output out), in the same run;
  triton   Triton with KIND_GPU instances serving the batch-1 fp16 artifacts at 1, 8 and 32 clients
           (bench/triton_load.py: every response checked against onnxruntime), then the same
           models in torch fp16 inside Triton's Python backend, the baseline, when the bundle
           holds it (bench/triton_python/model.py).

    python3 bench/serving_h200.py --bin DIR --out DIR [--stages memory bench torch triton]
        [--budget 500] [--tritonserver PATH --backend-dir DIR]

scripts/device/serving.sh unpacks the portable binaries and the Triton bundle and calls this.
Models are built at random init (test/gpu/run_gpu_suite.py) and exported with
torch.onnx.export(dynamo=True). Every stage and every sub-step has a timeout and the whole run a
budget (no stage starts after it); a failure is recorded in its row and the run goes on. The table
is printed last; OUT/serving.json has every number."""
import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test" / "gpu"))
sys.path.insert(0, str(ROOT / "bench"))
import run_gpu_suite as suite  # noqa: E402  (model definitions)
from gpu_vs_torch import example_input  # noqa: E402

MODELS = ("resnet50", "bert")
BATCHES = (1, 8)
CONCURRENCY = (1, 4, 16)
CLIENTS = "1,8,32"


class Run:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.work = self.out / "work"
        self.work.mkdir(exist_ok=True)
        self.sinter = str(Path(args.bin) / "sinter")
        self.start = time.time()
        self.results = {"memory": {}, "bench": [], "torch": [], "triton": [], "notes": []}
        self.artifacts = {}  # (model, precision, batch) -> (path, --batch flag or None)
        self.exports = {}    # (model, batch or "dynamic") -> onnx path

    def remaining(self):
        return self.args.budget - (time.time() - self.start)

    def log(self, message):
        print(f"[{time.time() - self.start:6.1f} s] {message}", flush=True)

    def save(self):
        (self.out / "serving.json").write_text(json.dumps(self.results, indent=2, default=str))

    def note(self, message):
        self.log(message)
        self.results["notes"].append(message)

    def command(self, argv, timeout, env=None):
        """Runs argv with a timeout cut to the budget; returns (returncode, stdout, stderr)."""
        limit = max(5, min(timeout, self.remaining() + 30))
        try:
            done = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                                  timeout=limit, env=env)
            return done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired:
            return 124, "", f"timed out after {limit:.0f} s"

    # --- models ---

    def export(self, name, batch, dynamic):
        import torch

        key = (name, "dynamic" if dynamic else batch)
        if key in self.exports:
            return self.exports[key]
        folder = self.work / f"{name}-{key[1]}"
        folder.mkdir(exist_ok=True)
        path = folder / f"{name}.onnx"
        model, _ = suite.build_torch_model(name)
        x = example_input(name, batch)
        options = {}
        if dynamic:
            options["dynamic_shapes"] = ({0: torch.export.Dim("batch", min=1, max=64)},)
        with torch.no_grad():
            torch.onnx.export(model, (x,), str(path), dynamo=True, opset_version=20,
                              external_data=True, **options)
        self.exports[key] = path
        return path

    def compile_artifacts(self):
        """fp16 artifacts of each model at batches 1 and 8 (bucketed when the export has a dynamic
        batch), and an fp32 BERT-base for the memory check; compiles run side by side."""
        jobs = []
        for name in MODELS:
            try:
                onnx_path = self.export(name, 1, dynamic=True)
                symbol = dynamic_batch_symbol(onnx_path)
                if symbol is None:
                    raise RuntimeError("the export has no symbolic batch")
                artifact = onnx_path.with_name(f"{name}-fp16-buckets.so")
                argv = [self.sinter, "compile", onnx_path, "--target", "cuda", "--arch", "sm_90",
                        "--precision", "fp16", "--dim", f"{symbol}=1,8", "-o", artifact, "--force"]
                jobs.append((argv, [((name, "fp16", b), (artifact, b)) for b in BATCHES]))
            except Exception as error:  # noqa: BLE001 (fall back to one export per batch)
                self.note(f"{name}: no dynamic-batch export ({str(error)[:200]}); one artifact "
                          "per batch instead")
                for batch in BATCHES:
                    onnx_path = self.export(name, batch, dynamic=False)
                    artifact = onnx_path.with_name(f"{name}-fp16.so")
                    argv = [self.sinter, "compile", onnx_path, "--target", "cuda", "--arch",
                            "sm_90", "--precision", "fp16", "-o", artifact, "--force"]
                    jobs.append((argv, [((name, "fp16", batch), (artifact, None))]))
        bert_b1 = self.export("bert", 1, dynamic=False)
        jobs.append(([self.sinter, "compile", bert_b1, "--target", "cuda", "--arch", "sm_90", "-o",
                      bert_b1.with_suffix(".so"), "--force"],
                     [(("bert", "fp32", 1), (bert_b1.with_suffix(".so"), None))]))
        limit = max(30, min(300, self.remaining()))
        running = [(subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True), argv, made)
                   for argv, made in jobs]
        deadline = time.time() + limit
        for process, argv, made in running:
            try:
                output, _ = process.communicate(timeout=max(1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                process.kill()
                output, _ = process.communicate()
                output += f"\ntimed out after {limit:.0f} s"
            if process.returncode == 0:
                for key, value in made:
                    self.artifacts[key] = value
                self.log(f"compiled {Path(str(argv[-2])).name}")
            else:
                self.note(f"compile failed: {' '.join(map(str, argv[2:]))}: {output[-600:]}")

    # --- stages ---

    def memory(self):
        artifact = self.artifacts.get(("bert", "fp32", 1))
        if not artifact:
            self.note("memory: no fp32 BERT-base artifact")
            return
        folder = artifact[0].parent  # bert.so beside bert.onnx (and its external data)
        library = self.args.lib or Path(self.args.bin) / "libsinter_rt.so"
        status, stdout, stderr = self.command(
            [sys.executable, ROOT / "test" / "gpu" / "check_serving.py", "--lib", library,
             "--work", folder, "--out", self.out / "check_serving"], 240)
        (self.out / "check_serving.log").write_text(stdout + stderr)
        self.results["memory"] = {"status": status, "log_tail": (stdout + stderr)[-3000:]}
        self.log(f"memory check exited {status}")
        # The device-memory run path the Triton backend uses for GPU buffers (KIND_GPU).
        status, stdout, stderr = self.command(
            [sys.executable, ROOT / "test" / "gpu" / "check_run_memory.py", "--lib", library,
             "--work", folder], 90)
        self.results["run_memory"] = {"status": status, "log": (stdout + stderr)[-1500:]}
        self.note(f"check_run_memory.py exited {status}: {(stdout + stderr).strip()[-300:]}")

    def bench(self):
        for name in MODELS:
            for batch in BATCHES:
                artifact = self.artifacts.get((name, "fp16", batch))
                for concurrency in CONCURRENCY:
                    row = {"system": "sinter", "model": name, "batch": batch,
                           "concurrency": concurrency}
                    if not artifact or self.remaining() < 10:
                        row["error"] = "no artifact" if not artifact else "budget spent"
                    else:
                        path, bucket = artifact
                        argv = [self.sinter, "bench", path, "--concurrency", concurrency,
                                "--warmup", 10, "--iterations", 100 if batch == 1 else 50, "--json"]
                        if bucket:
                            argv += ["--batch", bucket]
                        status, stdout, stderr = self.command(argv, 60)
                        if status == 0:
                            report = json.loads(stdout)
                            row.update(throughput=report["throughput_per_s"],
                                       p50=report["latency_ms"]["p50"],
                                       p99=report["latency_ms"]["p99"],
                                       bucketed=bool(bucket))
                        else:
                            row["error"] = stderr[-300:]
                    self.results["bench"].append(row)
                    self.save()

    def torch_rows(self):
        import torch

        for name in MODELS:
            model, _ = suite.build_torch_model(name)
            model = model.cuda().half().eval()
            for batch in BATCHES:
                x = example_input(name, batch)
                if x.is_floating_point():
                    x = x.half()
                for mode in ("eager", "compile"):
                    if self.remaining() < 20:
                        self.results["torch"].append({"system": f"torch-{mode}", "model": name,
                                                      "batch": batch, "error": "budget spent"})
                        continue
                    try:
                        function = model
                        if mode == "compile":
                            torch._dynamo.reset()
                            function = torch.compile(model, mode="default", dynamic=False)
                        with torch.no_grad():
                            function(x.cuda())  # compile, warm up
                            torch.cuda.synchronize()
                        for concurrency in CONCURRENCY:
                            row = torch_concurrent(function, x, concurrency,
                                                   runs=100 if batch == 1 else 50)
                            row.update(system=f"torch-{mode}", model=name, batch=batch,
                                       concurrency=concurrency)
                            self.results["torch"].append(row)
                            self.save()
                    except Exception as error:  # noqa: BLE001
                        self.results["torch"].append({"system": f"torch-{mode}", "model": name,
                                                      "batch": batch, "error": str(error)[:300]})
            del model
            torch.cuda.empty_cache()

    def triton(self):
        """Each model's batch-1 fp16 artifact served by the sinter backend, then (when the backend
        folder has Triton's Python backend: scripts/device/triton-bundle.sh) the same model in
        torch fp16 inside Triton's Python backend (bench/triton_python/model.py), the baseline."""
        if not self.args.tritonserver:
            self.note("triton: no --tritonserver (run scripts/device/triton-bundle.sh here first)")
            return
        systems = [("sinter", [], None)]
        backends = Path(self.args.backend_dir)
        if (backends / "python" / "libtriton_python.so").exists():
            # The Python backend and its stub find the wheel's libraries through this path (their
            # RPATH assumes the wheel's own layout).
            libraries = Path(self.args.tritonserver).resolve().parents[3] / "nvidia_pytriton.libs"
            env = dict(os.environ, LD_LIBRARY_PATH=f"{libraries}:{os.environ.get('LD_LIBRARY_PATH', '')}")
            systems.append(("python-torch", ["--python-runner", "torch"], env))
        else:
            self.note("triton: no Python backend in the backend folder; the torch baseline is skipped")
        for name in MODELS:
            artifact = self.artifacts.get((name, "fp16", 1))
            onnx_path = self.exports.get((name, 1)) or self.exports.get((name, "dynamic"))
            for system, extra, env in systems:
                row = {"model": name, "precision": "fp16", "system": system}
                if not artifact or self.remaining() < 30:
                    row["error"] = "no artifact" if not artifact else "budget spent"
                    self.results["triton"].append(row)
                    continue
                path, bucket = artifact
                report = self.out / f"triton_{system}_{name}.json"
                if extra:
                    extra = extra + ["--suite-model", name]
                status, stdout, stderr = self.command(
                    [sys.executable, ROOT / "bench" / "triton_load.py", "--artifact", path, "--model",
                     onnx_path, "--target", "cuda", "--kind", "KIND_GPU", "--protocol", "raw-http",
                     "--instances", 2, "--requests", 600, "--concurrency", CLIENTS, "--rtol", 3e-2,
                     "--tritonserver", self.args.tritonserver, "--backend-dir", self.args.backend_dir,
                     "--json", report, *extra], 200, env)
                row["status"] = status
                row["log_tail"] = (stdout + stderr)[-1500:]
                if report.exists():
                    row["report"] = json.loads(report.read_text())
                self.results["triton"].append(row)
                self.save()


def dynamic_batch_symbol(onnx_path):
    """The dim_param of the first input's first dim, or None when it is static."""
    import onnx

    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    first = [i for i in graph.input if i.name not in initializers][0]
    dim = first.type.tensor_type.shape.dim[0]
    return dim.dim_param if dim.dim_param else None


def torch_concurrent(function, x, threads, runs):
    """`threads` threads, each on its own CUDA stream, each running `runs` end-to-end calls (host
    input copied in, output copied back to the host, the stream synchronised)."""
    import torch

    latencies = [[] for _ in range(threads)]
    barrier = threading.Barrier(threads + 1)
    errors = []

    def worker(index):
        try:
            stream = torch.cuda.Stream()
            host = x.pin_memory() if not x.is_cuda else x.cpu().pin_memory()
            with torch.no_grad(), torch.cuda.stream(stream):
                barrier.wait()
                for _ in range(runs):
                    started = time.perf_counter()
                    y = function(host.cuda(non_blocking=True))
                    y.float().cpu()
                    stream.synchronize()
                    latencies[index].append((time.perf_counter() - started) * 1e3)
        except Exception as error:  # noqa: BLE001
            errors.append(str(error)[:300])
            try:
                barrier.abort()
            except threading.BrokenBarrierError:
                pass

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait(timeout=60)
    started = time.perf_counter()
    for thread in pool:
        thread.join(timeout=120)
    wall = time.perf_counter() - started
    if errors:
        return {"error": errors[0]}
    every = np.array([v for per in latencies for v in per])
    return {"throughput": threads * runs * x.shape[0] / wall, "p50": float(np.percentile(every, 50)),
            "p99": float(np.percentile(every, 99))}


def table(results):
    lines = ["", "system          model     batch  conc   throughput/s   p50 ms   p99 ms"]
    for row in results["bench"] + results["torch"]:
        if "error" in row:
            lines.append(f"{row['system']:15s} {row['model']:9s} {row['batch']:5} "
                         f"{row.get('concurrency', '-')!s:>5}  error: {row['error'][:60]}")
        else:
            lines.append(f"{row['system']:15s} {row['model']:9s} {row['batch']:5} "
                         f"{row['concurrency']:5}   {row['throughput']:12.1f} {row['p50']:8.2f} "
                         f"{row['p99']:8.2f}")
    for row in results["triton"]:
        report = row.get("report")
        lines.append(f"triton KIND_GPU {row.get('system', 'sinter')} {row['model']}: exit "
                     f"{row.get('status', '-')} {row.get('error', '')}")
        if report:
            lines.append("  " + json.dumps(report.get("rows", report))[:600])
        elif row.get("log_tail"):
            lines.append("  " + row["log_tail"][-900:].replace("\n", "\n  "))
    memory = results.get("memory", {})
    if memory:
        lines.append(f"memory (check_serving.py, exit {memory.get('status')}): see "
                     "check_serving.log; its last lines:")
        lines += ["  " + line for line in memory.get("log_tail", "").splitlines()[-12:]]
    for note in results["notes"]:
        lines.append(f"note: {note[:200]}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--lib", help="libsinter_rt.so (default: BIN/libsinter_rt.so)")
    parser.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "out" / "serving")))
    parser.add_argument("--stages", nargs="+", default=["memory", "bench", "torch", "triton"],
                        choices=["memory", "bench", "torch", "triton"])
    parser.add_argument("--budget", type=float, default=480,
                        help="seconds after which no stage starts (default 480)")
    parser.add_argument("--tritonserver")
    parser.add_argument("--backend-dir")
    args = parser.parse_args()
    run = Run(args)
    try:
        needs_artifacts = {"memory", "bench", "triton"} & set(args.stages)
        if needs_artifacts:
            run.compile_artifacts()
        for stage in ("memory", "bench", "torch", "triton"):
            if stage not in args.stages:
                continue
            if run.remaining() < 15:
                run.note(f"{stage}: not run, the budget is spent")
                continue
            run.log(f"stage {stage}")
            {"memory": run.memory, "bench": run.bench, "torch": run.torch_rows,
             "triton": run.triton}[stage]()
            run.save()
    finally:
        run.save()
        print(table(run.results), flush=True)


if __name__ == "__main__":
    main()
