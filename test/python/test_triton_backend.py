"""The sinter backend inside a real Triton Inference Server (docs/serving.md).

One tritonserver (2.51.0, from the nvidia-pytriton wheel scripts/setup.sh installs) is started for
the module, bound to 127.0.0.1 on free ports, with a model repository of CPU artifacts compiled
from models/ and --backend-directory pointing at the build's backends/ folder. Requests go over
HTTP and gRPC with tritonclient, one at a time and from many threads at once (dynamic batching
on), and every output is compared with onnxruntime on the same model. Bad requests must get an
error that says what is wrong; models whose artifact is missing, corrupt or disagrees with the
configuration must fail to load with a message that says so, and the server must stay up. The
server is stopped by its PID at the end, and every wait is bounded.
"""
import concurrent.futures
import os
import shutil
import socket
import subprocess
import threading
import time
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import sinter_testing as st

import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

BACKEND_DIR = st.BUILD / "backends"
BACKEND = BACKEND_DIR / "sinter" / "libtriton_sinter.so"
START_TIMEOUT_S = 60
ENTRY_POINTS = {"TRITONBACKEND_Initialize", "TRITONBACKEND_ModelInitialize", "TRITONBACKEND_ModelFinalize",
                "TRITONBACKEND_ModelInstanceInitialize", "TRITONBACKEND_ModelInstanceFinalize",
                "TRITONBACKEND_ModelInstanceExecute"}


def tritonserver_path():
    spec = importlib.util.find_spec("pytriton")
    if spec is None:
        pytest.fail("nvidia-pytriton is not installed in the venv (scripts/setup.sh installs it)")
    path = Path(spec.submodule_search_locations[0]) / "tritonserver" / "bin" / "tritonserver"
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing or not executable (scripts/setup.sh installs it)")
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the model repository ---

# name -> (model file, compile flags, config.pbtxt body after name and backend)
MODELS = {
    # Batch-1 artifact served with max_batch_size 8: a request of n rows runs n times. The
    # configuration leaves the tensors out: the backend fills them in from the signature.
    "mlp": ("tiny_mlp.onnx", [], """
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 2000 }
instance_group [ { count: 2, kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
"""),
    # The same artifact with a batcher that waits for 4 requests: one execute call gets several.
    "mlp_grouped": ("tiny_mlp.onnx", [], """
max_batch_size: 8
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 3000000 }
instance_group [ { count: 1, kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
"""),
    # Not batching, tensors spelled out in the configuration (float and bool inputs); the file
    # has another name, given by a parameter.
    "attention": ("tiny_attention.onnx", [], """
max_batch_size: 0
input [ { name: "x" data_type: TYPE_FP32 dims: [ 1, 8, 16 ] },
        { name: "key_mask" data_type: TYPE_BOOL dims: [ 1, 8 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1, 8, 16 ] } ]
instance_group [ { count: 1, kind: KIND_CPU } ]
parameters { key: "artifact" value { string_value: "attention.so" } }
"""),
    # An artifact compiled for batch 2, served with max_batch_size 4: batches 2 and 4 run, 1 and 3
    # are refused (no padding). int64 inputs, two outputs.
    "bert": ("bert_tiny.onnx", ["--dim", "batch=2", "--dim", "seq=8"], """
max_batch_size: 4
dynamic_batching { }
instance_group [ { count: 1, kind: KIND_CPU } ]
"""),
    # Batch buckets 1, 2 and 4 in one artifact; max_batch_size left to auto-complete (the largest
    # bucket). The batch is proved independent, so the backend gathers the rows of several
    # requests into one run and the runtime pads a run of 3 rows into the bucket of 4.
    "bert_buckets": ("bert_tiny.onnx", ["--dim", "batch=1,2,4", "--dim", "seq=8"], """
dynamic_batching { max_queue_delay_microseconds: 20000 }
instance_group [ { count: 2, kind: KIND_CPU } ]
parameters { key: "threads" value { string_value: "1" } }
"""),
    # A small CNN, its configuration left to auto-complete entirely.
    "resnet": ("resnet_narrow.onnx", [], """
instance_group [ { count: 1, kind: KIND_CPU } ]
"""),
    # A 1 MiB input.
    "wide": ("tiny_dynamic.onnx", ["--dim", "batch=16384"], """
instance_group [ { count: 1, kind: KIND_CPU } ]
"""),
}

# Models that must fail to load, and a phrase their failure must contain.
BROKEN = {
    "no_artifact": "cannot load the sinter artifact",
    "truncated_artifact": "the file is truncated",
    "garbage_artifact": "is not a sinter artifact",
    "wrong_dims": "dims [32] but the artifact",
}

INTEGER_RANGES = {(model, name): bounds for model in ("bert", "bert_buckets")
                  for name, bounds in (("input_ids", (0, 256)), ("token_type_ids", (0, 2)),
                                       ("attention_mask", (0, 2)))}


def write_model(repository, name, body, artifact=None, file_name="model.so"):
    folder = repository / name
    (folder / "1").mkdir(parents=True)
    (folder / "config.pbtxt").write_text(f'name: "{name}"\nbackend: "sinter"\n{body}')
    if artifact is not None:
        shutil.copyfile(artifact, folder / "1" / file_name)


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("triton")
    repository = root / "models"
    artifacts = {}
    for model_file, flags in {(m[0], tuple(m[1])) for m in MODELS.values()}:
        out = root / (Path(model_file).stem + "_" + str(len(artifacts)) + ".so")
        st.run_cli(["compile", st.MODELS_DIR / model_file, "--target", "cpu", *flags, "-o", out])
        artifacts[(model_file, flags)] = out
    for name, (model_file, flags, body) in MODELS.items():
        file_name = "attention.so" if name == "attention" else "model.so"
        write_model(repository, name, body, artifacts[(model_file, tuple(flags))], file_name)
    mlp = artifacts[("tiny_mlp.onnx", ())]
    write_model(repository, "no_artifact", "max_batch_size: 0\n")
    truncated = root / "truncated.so"
    truncated.write_bytes(mlp.read_bytes()[: mlp.stat().st_size // 2])
    write_model(repository, "truncated_artifact", "max_batch_size: 0\n", truncated)
    garbage = root / "garbage.so"
    garbage.write_bytes(bytes(range(256)) * 64)
    write_model(repository, "garbage_artifact", "max_batch_size: 0\n", garbage)
    write_model(repository, "wrong_dims", """
max_batch_size: 8
input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]
output [ { name: "scores" data_type: TYPE_FP32 dims: [ 8 ] } ]
""", mlp)
    return repository


@pytest.fixture(scope="module")
def server(repository, tmp_path_factory):
    if not BACKEND.is_file():
        pytest.fail(f"{BACKEND} is missing (build the triton_sinter target)")
    http_port, grpc_port = free_port(), free_port()
    log = tmp_path_factory.mktemp("triton_log") / "tritonserver.log"
    command = [str(tritonserver_path()), "--model-repository", str(repository),
               "--backend-directory", str(BACKEND_DIR), "--http-address", "127.0.0.1",
               "--http-port", str(http_port), "--grpc-address", "127.0.0.1",
               "--grpc-port", str(grpc_port), "--allow-metrics=false", "--allow-sagemaker=false",
               "--exit-on-error=false", "--strict-readiness=false", "--pinned-memory-pool-byte-size=0"]
    with open(log, "w") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        http = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}", concurrency=32)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"tritonserver exited with {process.returncode}:\n{log.read_text()[-4000:]}")
            try:
                if http.is_server_ready() and all(http.is_model_ready(m) for m in MODELS):
                    break
            except Exception:  # not listening yet
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"tritonserver not ready after {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        yield {"http": http, "grpc": grpc, "process": process, "log": log,
               "urls": {"http": f"127.0.0.1:{http_port}", "grpc": f"127.0.0.1:{grpc_port}"}}
        assert process.poll() is None, f"tritonserver died during the tests:\n{log.read_text()[-4000:]}"
        assert http.is_server_live()
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --- inputs and the truth ---

def model_inputs(server_name, rows, seed):
    """Inputs for `rows` batch rows of a served model (rows None: the model does not batch)."""
    shapes = {"mlp": {"features": ((64,), np.float32)},
              "mlp_grouped": {"features": ((64,), np.float32)},
              "attention": {"x": ((1, 8, 16), np.float32), "key_mask": ((1, 8), np.bool_)},
              "bert": {n: ((8,), np.int64) for n in ("input_ids", "token_type_ids", "attention_mask")},
              "bert_buckets": {n: ((8,), np.int64)
                               for n in ("input_ids", "token_type_ids", "attention_mask")},
              "resnet": {"input": ((1, 3, 64, 64), np.float32)},
              "wide": {"x": ((16384, 16), np.float32)}}[server_name]
    rng = np.random.default_rng(seed)
    inputs = {}
    for name, (dims, dtype) in shapes.items():
        shape = ((rows,) if rows is not None else ()) + dims
        if dtype == np.bool_:
            inputs[name] = rng.random(shape) < 0.7
        elif np.issubdtype(dtype, np.integer):
            low, high = INTEGER_RANGES.get((server_name, name), (0, 10))
            inputs[name] = rng.integers(low, high, shape).astype(dtype)
        else:
            inputs[name] = (rng.uniform(0.1, 1.0, shape) * rng.choice([-1.0, 1.0], shape)).astype(dtype)
    return inputs


ONNX_FILE = {name: spec[0] for name, spec in MODELS.items()}


def truth(server_name, inputs, artifact_batch=None):
    """onnxruntime's outputs. A model with a fixed batch of `artifact_batch` runs on each group of
    that many rows and the results are stacked (what the backend does); bert takes any batch."""
    path = st.MODELS_DIR / ONNX_FILE[server_name]
    if artifact_batch is None:
        return st.run_onnxruntime(path, inputs)
    rows = next(iter(inputs.values())).shape[0]
    parts = [st.run_onnxruntime(path, {k: v[i:i + artifact_batch] for k, v in inputs.items()})
             for i in range(0, rows, artifact_batch)]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


_thread_clients = threading.local()


def thread_client(server, protocol):
    """A client of this thread's own: tritonclient's HTTP client must stay on the thread that made it."""
    clients = getattr(_thread_clients, "clients", None)
    if clients is None:
        clients = _thread_clients.clients = {}
    key = (protocol, server["urls"][protocol])
    if key not in clients:
        module = httpclient if protocol == "http" else grpcclient
        clients[key] = module.InferenceServerClient(server["urls"][protocol])
    return clients[key]


def infer(client, protocol, model, inputs, outputs=None):
    module = httpclient if protocol == "http" else grpcclient
    request = []
    for name, array in inputs.items():
        tensor = module.InferInput(name, list(array.shape), np_to_triton_dtype(array.dtype))
        if protocol == "http":
            tensor.set_data_from_numpy(array, binary_data=True)
        else:
            tensor.set_data_from_numpy(array)
        request.append(tensor)
    requested = None
    if outputs is not None:
        requested = [module.InferRequestedOutput(n) for n in outputs]
    result = client.infer(model, request, outputs=requested)
    names = outputs if outputs is not None else [o["name"] for o in (
        result.get_response()["outputs"] if protocol == "http"
        else result.get_response(as_json=True)["outputs"])]
    return {name: result.as_numpy(name) for name in names}


def expect_match(actual, expected, context):
    st.assert_outputs_match(actual, expected, context)


# --- the library itself ---

def test_backend_exports_only_its_entry_points_and_links_no_server():
    if not BACKEND.is_file():
        pytest.fail(f"{BACKEND} is missing (build the triton_sinter target)")
    dynamic = subprocess.run(["readelf", "-d", str(BACKEND)], capture_output=True, text=True, check=True).stdout
    needed = {line.split("[")[1].rstrip("]") for line in dynamic.splitlines() if "(NEEDED)" in line}
    assert needed <= {"libsinter_rt.so", "libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2"}, needed
    assert "libsinter_rt.so" in needed
    assert "$ORIGIN" in dynamic  # finds the libsinter_rt.so placed beside it
    symbols = subprocess.run(["nm", "-D", str(BACKEND)], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWDdBbRrVv":
            defined.add(parts[2].split("@")[0])
        elif len(parts) == 2 and parts[0] in "Uw":
            undefined.add(parts[1].split("@")[0])
    assert defined == ENTRY_POINTS, defined ^ ENTRY_POINTS
    # The server's API stays undefined, to be bound when the server loads the backend.
    for name in ("TRITONBACKEND_ApiVersion", "TRITONBACKEND_ModelSetConfig", "TRITONSERVER_ErrorNew",
                 "TRITONBACKEND_InputBuffer", "TRITONBACKEND_ResponseSend"):
        assert name in undefined, name
    assert not any(s.startswith(("_Z", "std")) for s in defined)
    (BACKEND_DIR / "sinter" / "libsinter_rt.so").resolve(strict=True)


# --- serving ---

def test_configuration_is_completed_from_the_artifact(server):
    config = server["http"].get_model_config("mlp")
    assert [(t["name"], t["data_type"], [int(d) for d in t["dims"]]) for t in config["input"]] == \
        [("features", "TYPE_FP32", [64])]
    assert [(t["name"], t["data_type"], [int(d) for d in t["dims"]]) for t in config["output"]] == \
        [("scores", "TYPE_FP32", [8])]
    bert = server["grpc"].get_model_config("bert", as_json=True)["config"]
    assert {t["name"] for t in bert["input"]} == {"input_ids", "token_type_ids", "attention_mask"}
    assert {t["name"]: [int(d) for d in t["dims"]] for t in bert["output"]} == \
        {"last_hidden_state": [8, 64], "pooled": [64]}


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_single_requests_match_onnxruntime(server, protocol):
    client = server[protocol]
    cases = [("mlp", 1, 1), ("mlp", 5, 1), ("mlp", 8, 1), ("attention", None, None),
             ("bert", 2, 2), ("bert", 4, 2), ("resnet", None, None), ("wide", None, None)]
    for seed, (model, rows, artifact_batch) in enumerate(cases):
        inputs = model_inputs(model, rows, seed)
        expect_match(infer(client, protocol, model, inputs), truth(model, inputs, artifact_batch),
                     f"{protocol} {model} rows={rows}")


def test_requested_output_subset(server):
    inputs = model_inputs("bert", 2, 7)
    expected = truth("bert", inputs, 2)
    for protocol in ("http", "grpc"):
        actual = infer(server[protocol], protocol, "bert", inputs, outputs=["pooled"])
        expect_match(actual, {"pooled": expected["pooled"]}, f"{protocol} bert pooled only")


def test_concurrent_clients_every_response_right(server):
    """32 clients at once over both protocols, batches of 1 to 8 rows: every response is checked."""
    jobs = []
    for i in range(96):
        protocol = "http" if i % 2 else "grpc"
        rows = 1 + i % 8
        jobs.append((protocol, rows, 1000 + i))

    def one(job):
        protocol, rows, seed = job
        inputs = model_inputs("mlp", rows, seed)
        return job, infer(thread_client(server, protocol), protocol, "mlp", inputs), truth("mlp", inputs, 1)

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        results = list(pool.map(one, jobs, timeout=120))
    for job, actual, expected in results:
        expect_match(actual, expected, f"concurrent {job}")


def test_dynamic_batcher_hands_several_requests_to_one_execute(server):
    before = server["http"].get_inference_statistics("mlp_grouped")["model_stats"][0]
    jobs = [model_inputs("mlp_grouped", 1 + i % 2, 2000 + i) for i in range(4)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda x: (x, infer(thread_client(server, "http"), "http", "mlp_grouped", x)),
                                jobs, timeout=60))
    for inputs, actual in results:
        expect_match(actual, truth("mlp_grouped", inputs, 1), "grouped")
    after = server["http"].get_inference_statistics("mlp_grouped")["model_stats"][0]
    executions = int(after["execution_count"]) - int(before["execution_count"])
    rows = int(after["inference_count"]) - int(before["inference_count"])
    assert rows == 6
    assert executions < 4, f"4 requests took {executions} execute calls: never batched together"


def test_buckets_under_concurrent_dynamic_batching_match_onnxruntime(server):
    """A bucketed artifact: max_batch_size comes from its largest bucket; 16 clients send 64
    requests of 1 to 3 rows, the batcher hands several to one execute, the backend gathers their
    rows into runs of up to 4 (a run of 3 padded to 4 by the runtime) and scatters the rows back;
    every response is compared with onnxruntime at that request's own batch."""
    config = server["http"].get_model_config("bert_buckets")
    assert int(config["max_batch_size"]) == 4, config
    before = server["http"].get_inference_statistics("bert_buckets")["model_stats"][0]
    jobs = [("http" if i % 2 else "grpc", 1 + i % 3, 3000 + i) for i in range(64)]

    def one(job):
        protocol, rows, seed = job
        inputs = model_inputs("bert_buckets", rows, seed)
        actual = infer(thread_client(server, protocol), protocol, "bert_buckets", inputs)
        return job, actual, truth("bert_buckets", inputs)

    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(one, jobs, timeout=120))
    for job, actual, expected in results:
        assert next(iter(actual.values())).shape[0] == job[1]
        expect_match(actual, expected, f"bucketed {job}")
    after = server["http"].get_inference_statistics("bert_buckets")["model_stats"][0]
    executions = int(after["execution_count"]) - int(before["execution_count"])
    assert int(after["inference_count"]) - int(before["inference_count"]) == sum(j[1] for j in jobs)
    assert executions < len(jobs), "the dynamic batcher never gave one execute several requests"
    # A batch above max_batch_size is refused by the server before the backend sees it.
    assert "batch" in error_of(server["http"], "http", "bert_buckets",
                               model_inputs("bert_buckets", 5, 1)).lower()


# --- bad requests ---

def error_of(client, protocol, model, inputs):
    with pytest.raises(InferenceServerException) as caught:
        infer(client, protocol, model, inputs)
    return str(caught.value)


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_bad_requests_get_clear_errors(server, protocol):
    client = server[protocol]
    good = model_inputs("mlp", 2, 3)
    wrong_shape = {"features": good["features"][:, :32].copy()}
    assert "[2,32]" in error_of(client, protocol, "mlp", wrong_shape).replace(" ", "")
    wrong_dtype = {"features": good["features"].astype(np.int32)}
    message = error_of(client, protocol, "mlp", wrong_dtype)
    assert "INT32" in message and "FP32" in message, message
    too_big = model_inputs("mlp", 9, 4)
    message = error_of(client, protocol, "mlp", too_big)
    assert "batch" in message and "8" in message, message
    attention = model_inputs("attention", None, 5)
    message = error_of(client, protocol, "attention", {"x": attention["x"]})
    assert "key_mask" in message or "expected 2 inputs" in message, message
    # The backend's own rule: batch 3 on a batch-2 artifact is refused, not padded.
    message = error_of(client, protocol, "bert", model_inputs("bert", 3, 6))
    assert "multiple of 2" in message, message
    # ... and the server goes on answering.
    expect_match(infer(client, protocol, "mlp", good), truth("mlp", good, 1), "after bad requests")


# --- models that fail to load ---

def test_load_failures_are_reported_and_the_server_stays_up(server):
    index = {m["name"]: m for m in server["http"].get_model_repository_index()}
    for name, phrase in BROKEN.items():
        assert not server["http"].is_model_ready(name), name
        entry = index[name]
        assert entry.get("state") == "UNAVAILABLE", entry
        assert phrase in entry.get("reason", ""), f"{name}: {entry}"
    assert "model.so" in index["no_artifact"]["reason"]
    for name in BROKEN:
        assert "cannot load the sinter artifact" in index[name]["reason"] or name == "wrong_dims", index[name]
    assert server["http"].is_server_live()
    inputs = model_inputs("mlp", 1, 9)
    expect_match(infer(server["grpc"], "grpc", "mlp", inputs), truth("mlp", inputs, 1), "after failures")
