#!/usr/bin/env python3
"""Requests/s and latency of a sinter artifact served by Triton Inference Server (the sinter
backend, docs/serving.md), with every response checked against onnxruntime.

    .venv/bin/python bench/triton_load.py [--model models/resnet_narrow.onnx] [--requests 2000]
        [--concurrency 1,8,32] [--protocol grpc|http|raw-http] [--instances 2] [--threads 1]
        [--target cpu|cuda] [--kind KIND_CPU|KIND_GPU] [--compile-flag=--dim ...] [--rtol 1e-5]
        [--artifact model.so] [--tritonserver PATH] [--json OUT.json]
        [--python-runner torch|onnxruntime --suite-model NAME]

It compiles the model (`sinter compile --target T`, symbolic dims bound to 1 unless
--compile-flag says otherwise), lays out a model repository with one model served by the sinter
backend (max_batch_size 0, `--instances` instances of `--kind`, `--threads` CPU workers each),
starts the tritonserver of the nvidia-pytriton wheel on 127.0.0.1 (free ports; the build's
backends/ folder as --backend-directory), and for each concurrency C runs a fixed number of
requests from C client threads (each its own connection, requests back to back, cycling over 8
input sets with onnxruntime's outputs precomputed): 2*C untimed warm-up requests, then
`--requests` timed. A response is wrong when an output is missing, has another dtype or shape, or
differs from onnxruntime by more than --rtol (max|a-b| / max|b|). It prints one row per C:
requests, wrong, requests/s (requests over the wall time of the timed phase), p50 and p99 latency
(each request's round trip through the client library). The server is stopped by its PID.

Protocols: gRPC and HTTP through tritonclient; `raw-http` is the same binary HTTP request built
with the standard library (http.client, one kept-alive connection per thread), for a machine
without tritonclient, such as the GPU machine. `--artifact` serves an artifact compiled elsewhere
instead of compiling (the model file is still needed, for onnxruntime); `--tritonserver` names the
server binary when the nvidia-pytriton wheel is not installed.

`--python-runner` serves the baseline instead of sinter: Triton's own Python backend (the
`python` folder in --backend-dir, with the stub for the Python that runs it) running
bench/triton_python/model.py: `torch` runs the GPU suite's model `--suite-model` (the same seeded
weights the ONNX export came from) in fp16 on the instance's GPU; `onnxruntime` runs the ONNX
file on the CPU (for checking the set-up without a GPU). Same instances, same requests, same checks.

The clients run on the same machine as the server (on the 2-core CPU machine they compete for
the cores: read the CPU numbers as the whole system's, client included). For the GPU: run it on
the device with --target cuda --kind KIND_GPU and the model's own flags (e.g. --compile-flag=--precision --compile-flag=fp16).
"""
import argparse
import concurrent.futures
import http.client
import importlib.util
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import onnxruntime

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "models"))
import make_input  # noqa: E402

# The inference protocol's names of numpy's dtypes (raw-http).
PROTOCOL_TYPES = {np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "UINT8", np.dtype(np.int8): "INT8",
                  np.dtype(np.int16): "INT16", np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64",
                  np.dtype(np.float16): "FP16", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64"}
NUMPY_TYPES = {name: dtype for dtype, name in PROTOCOL_TYPES.items()}


class RawHttpClient:
    """The binary tensor extension of the v2 HTTP protocol over one http.client connection."""

    def __init__(self, url):
        host, port = url.split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=60)

    def infer(self, model, inputs, output_names):
        header = {"inputs": [{"name": name, "shape": list(array.shape), "datatype": PROTOCOL_TYPES[array.dtype],
                              "parameters": {"binary_data_size": array.nbytes}} for name, array in inputs.items()],
                  "outputs": [{"name": name, "parameters": {"binary_data": True}} for name in output_names]}
        head = json.dumps(header).encode()
        body = head + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs.values())
        try:
            self.connection.request("POST", f"/v2/models/{model}/infer", body,
                                    {"Inference-Header-Content-Length": str(len(head)),
                                     "Content-Type": "application/octet-stream"})
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()  # the next request opens a new connection
            raise
        if response.status != 200:
            raise RuntimeError(data[:300].decode(errors="replace"))
        length = int(response.getheader("Inference-Header-Content-Length", len(data)))
        outputs, at = {}, length
        for output in json.loads(data[:length])["outputs"]:
            size = output["parameters"]["binary_data_size"]
            outputs[output["name"]] = np.frombuffer(data[at:at + size], NUMPY_TYPES[output["datatype"]]).reshape(
                output["shape"])
            at += size
        return outputs


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tritonserver(explicit=None):
    if explicit:
        return Path(explicit)
    spec = importlib.util.find_spec("pytriton")
    if spec is None:
        sys.exit("nvidia-pytriton is not installed (scripts/setup.sh installs it)")
    return Path(spec.submodule_search_locations[0]) / "tritonserver" / "bin" / "tritonserver"


def ready(url, model):
    try:
        host, port = url.split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        connection.request("GET", f"/v2/models/{model}/ready")
        return connection.getresponse().status == 200
    except OSError:
        return False


def start_server(repository, backend_dir, log_path, server_binary=None):
    http_port, grpc_port = free_port(), free_port()
    command = [str(tritonserver(server_binary)), "--model-repository", str(repository), "--backend-directory",
               str(backend_dir), "--http-address", "127.0.0.1", "--http-port", str(http_port),
               "--grpc-address", "127.0.0.1", "--grpc-port", str(grpc_port), "--allow-metrics=false",
               "--allow-sagemaker=false", "--pinned-memory-pool-byte-size=0"]
    log = open(log_path, "w")
    # The Python backend's models (--python-runner) import numpy and their runner from this
    # interpreter's packages (bench/triton_python/model.py).
    import site
    environment = dict(os.environ, SINTER_BASELINE_SITE=os.pathsep.join(site.getsitepackages()))
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            log.flush()
            tail = "\n".join(line for line in Path(log_path).read_text(errors="replace").splitlines() if line[:1] in "EW")[-3000:]
            sys.exit(f"tritonserver exited with {process.returncode}; the end of its log:\n{tail}")
        if ready(f"127.0.0.1:{http_port}", "model"):
            break
        if time.monotonic() > deadline:
            process.kill()
            sys.exit(f"tritonserver not ready after 120 s; see {log_path}")
        time.sleep(0.2)
    return process, {"http": f"127.0.0.1:{http_port}", "grpc": f"127.0.0.1:{grpc_port}"}


def truth(model_path, inputs):
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def wrong(outputs, expected, rtol):
    for name, want in expected.items():
        got = outputs.get(name)
        if got is None or got.dtype != want.dtype or got.shape != want.shape:
            return True
        if np.issubdtype(want.dtype, np.floating):
            scale = float(np.max(np.abs(want))) or 1.0
            if not float(np.max(np.abs(got.astype(np.float64) - want))) / scale <= rtol:
                return True
        elif not np.array_equal(got, want):
            return True
    return False


# config.pbtxt's names of numpy's dtypes.
CONFIG_TYPES = {np.dtype(np.bool_): "TYPE_BOOL", np.dtype(np.int32): "TYPE_INT32",
                np.dtype(np.int64): "TYPE_INT64", np.dtype(np.float16): "TYPE_FP16",
                np.dtype(np.float32): "TYPE_FP32"}


def write_python_model(folder, args, case):
    """The Python-backend baseline's model folder: model.py and a config declaring every input
    and output as the ONNX model has them (the Python backend completes nothing itself)."""
    shutil.copyfile(ROOT / "bench" / "triton_python" / "model.py", folder / "1" / "model.py")
    inputs, outputs = case

    def tensors(kind, arrays):
        entries = [f'  {{ name: "{name}" data_type: {CONFIG_TYPES[a.dtype]} dims: [ {", ".join(map(str, a.shape))} ] }}'
                   for name, a in arrays.items()]
        return f"{kind} [\n" + ",\n".join(entries) + "\n]\n"

    parameters = {"runner": args.python_runner, "suite_dir": str(ROOT / "test" / "gpu"),
                  "suite_model": args.suite_model or "", "onnx_path": str(Path(args.model).resolve())}
    (folder / "config.pbtxt").write_text(
        f'name: "model"\nbackend: "python"\nmax_batch_size: 0\n' + tensors("input", inputs) + tensors("output", outputs)
        + f'instance_group [ {{ count: {args.instances}, kind: {args.kind} }} ]\n'
        + "".join(f'parameters {{ key: "{k}" value {{ string_value: "{v}" }} }}\n' for k, v in parameters.items()))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(ROOT / "models" / "resnet_narrow.onnx"))
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--protocol", choices=["grpc", "http", "raw-http"], default="grpc")
    parser.add_argument("--instances", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="CPU worker threads per instance")
    parser.add_argument("--target", default="cpu")
    parser.add_argument("--kind", default="KIND_CPU")
    parser.add_argument("--compile-flag", action="append", default=[])
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--sinter", default=str(ROOT / "build" / "bin" / "sinter"))
    parser.add_argument("--backend-dir", default=str(ROOT / "build" / "backends"))
    parser.add_argument("--artifact", help="serve this model.so instead of compiling --model")
    parser.add_argument("--tritonserver", help="the server binary (default: the nvidia-pytriton wheel's)")
    parser.add_argument("--json")
    parser.add_argument("--python-runner", choices=["torch", "onnxruntime"])
    parser.add_argument("--suite-model", help="the GPU suite's name of --model (--python-runner torch)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="triton_load_"))
    server = None
    try:
        folder = work / "models" / "model"
        (folder / "1").mkdir(parents=True)
        cases = []
        for seed in range(8):
            inputs = make_input.make_inputs(args.model, seed=seed)
            cases.append((inputs, truth(args.model, inputs)))
        if args.python_runner:
            write_python_model(folder, args, cases[0])
        elif args.artifact:
            shutil.copyfile(args.artifact, folder / "1" / "model.so")
        else:
            subprocess.run([args.sinter, "compile", args.model, "--target", args.target, *args.compile_flag,
                            "-o", str(folder / "1" / "model.so")], check=True)
        if not args.python_runner:
            (folder / "config.pbtxt").write_text(
                f'name: "model"\nbackend: "sinter"\nmax_batch_size: 0\n'
                f'instance_group [ {{ count: {args.instances}, kind: {args.kind} }} ]\n'
                f'parameters {{ key: "threads" value {{ string_value: "{args.threads}" }} }}\n')
        server, urls = start_server(work / "models", args.backend_dir, work / "tritonserver.log",
                                    args.tritonserver)
        if args.protocol != "raw-http":
            import tritonclient.grpc as grpcclient
            import tritonclient.http as httpclient
            from tritonclient.utils import np_to_triton_dtype
            module = grpcclient if args.protocol == "grpc" else httpclient
        local = threading.local()

        def send(inputs, expected):
            if args.protocol == "raw-http":
                return local.client.infer("model", inputs, list(expected))
            tensors = []
            for name, array in inputs.items():
                tensor = module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
                if args.protocol == "http":
                    tensor.set_data_from_numpy(array, binary_data=True)
                else:
                    tensor.set_data_from_numpy(array)
                tensors.append(tensor)
            result = local.client.infer("model", tensors)
            return {name: result.as_numpy(name) for name in expected}

        def request(index):
            if not hasattr(local, "client"):
                local.client = (RawHttpClient(urls["http"]) if args.protocol == "raw-http"
                                else module.InferenceServerClient(urls[args.protocol]))
            inputs, expected = cases[index % len(cases)]
            start = time.perf_counter()
            try:
                bad = wrong(send(inputs, expected), expected, args.rtol)
            except Exception:  # an error response counts as wrong
                bad = True
            return time.perf_counter() - start, bad

        rows = []
        served = f"python backend ({args.python_runner})" if args.python_runner else f"target {args.target}"
        print(f"model {Path(args.model).name}, {served}, {args.instances} x {args.kind}, "
              f"{args.threads} thread(s) each, {args.protocol}, load {os.getloadavg()[0]:.2f}")
        print(f"{'clients':>7} {'requests':>8} {'wrong':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
        for clients in [int(c) for c in args.concurrency.split(",")]:
            with concurrent.futures.ThreadPoolExecutor(max_workers=clients) as pool:
                list(pool.map(request, range(2 * clients)))  # warm-up, connections made
                begin = time.perf_counter()
                results = list(pool.map(request, range(args.requests)))
                wall = time.perf_counter() - begin
            latencies = sorted(r[0] * 1000 for r in results)
            bad = sum(r[1] for r in results)
            row = {"clients": clients, "requests": args.requests, "wrong": bad,
                   "requests_per_s": args.requests / wall, "p50_ms": statistics.median(latencies),
                   "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]}
            rows.append(row)
            print(f"{clients:>7} {args.requests:>8} {bad:>5} {row['requests_per_s']:>9.1f} "
                  f"{row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f}")
        if args.json:
            Path(args.json).write_text(json.dumps({"model": args.model, "target": args.target, "served": served,
                                                   "protocol": args.protocol, "rows": rows}, indent=2))
        return 1 if any(r["wrong"] for r in rows) else 0
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
