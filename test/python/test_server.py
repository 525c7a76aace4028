"""The example server (examples/server: sinter_server and sinter_loadgen) over the KServe v2
protocol, on a CPU artifact of models/tiny_mlp.onnx: health and metadata; an inference checked
against onnxruntime; every class of bad request (malformed JSON, a missing, unknown or repeated
input, a wrong datatype, shape or element count, a value that is not a number, an
oversized body, an unknown model or path) gets a 4xx with a message that names the problem; bad
requests sent while good ones run from many threads disturb none of them (every good response is
bit-identical to the same request's answer on an idle server); and the load generator's own
check of every response passes at 8 clients (and fails against another model's weights); a model
the machine cannot run stops the server at start. The server runs on 127.0.0.1 on a port it picks
(it prints it), each test bounded in time, and is killed by its PID at the end.

Batching (examples/server/batcher.h), on models/tiny_dynamic.onnx compiled with
`--dim batch=1,2,4,8` (its batch proved independent, so padded): concurrent requests of 1 to 3 rows
are answered as onnxruntime answers each request alone, bit-identical to the same request on an
idle server, while the stats endpoint shows that runs of several requests were formed; mixed-shape
and bad requests among them get their own 400 and disturb none; the load generator's check
(against a local batch-1 run of each request) passes. A model whose batch is not independent
(a Softmax along it) takes exact bucket sizes only, each request run alone."""
import concurrent.futures
import http.client
import json
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import sinter_testing as st

MODEL = st.MODELS_DIR / "tiny_mlp.onnx"  # features f32[1,64] -> scores f32[1,8]
NAME = "tiny_mlp"
STARTUP_SECONDS = 30


def server_bin(name):
    path = st.BUILD / "bin" / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"{path} not found: the example server is built when libcpp-httplib-dev is "
                    "installed (scripts/setup.sh installs it)")
    return path


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    folder = tmp_path_factory.mktemp("server")
    library = folder / f"{NAME}.so"
    st.run_cli(["compile", MODEL, "--target", "cpu", "-o", library])
    return library


class Server:
    def __init__(self, artifact, *flags, name=NAME):
        self.name = name
        self.process = subprocess.Popen(
            [str(server_bin("sinter_server")), str(artifact), "--port", "0", *flags],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = []
        reader = threading.Thread(target=lambda: line.append(self.process.stdout.readline()))
        reader.start()
        reader.join(STARTUP_SECONDS)
        if not line or not line[0].startswith("listening on "):
            self.stop()
            pytest.fail(f"the server did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(line[0].split()[2].rsplit(":", 1)[1])

    def request(self, method, path, body=None, timeout=30):
        """(status, parsed JSON body or None, raw body)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            payload = body if isinstance(body, (bytes, type(None))) else body.encode()
            headers = {"Content-Type": "application/json"} if payload is not None else {}
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            raw = response.read()
            parsed = json.loads(raw) if raw else None
            return response.status, parsed, raw
        finally:
            connection.close()

    def infer(self, body):
        return self.request("POST", f"/v2/models/{self.name}/infer",
                            body if isinstance(body, (str, bytes)) else json.dumps(body))

    def stop(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(artifact):
    running = Server(artifact, "--sessions", "4")
    yield running
    running.stop()


def features(seed):
    return np.random.default_rng(seed).uniform(-1, 1, size=(1, 64)).astype(np.float32)


def request_for(x, **extra):
    body = {"inputs": [{"name": "features", "datatype": "FP32", "shape": list(x.shape),
                        "data": [float(v) for v in x.ravel()]}]}
    body.update(extra)
    return body


def scores(reply):
    (output,) = reply["outputs"]
    assert output["name"] == "scores" and output["datatype"] == "FP32" and output["shape"] == [1, 8]
    return np.array(output["data"], dtype=np.float32).reshape(1, 8)


def test_health_and_metadata(server):
    for path in ("/v2/health/live", "/v2/health/ready", f"/v2/models/{NAME}/ready"):
        status, _, raw = server.request("GET", path)
        assert status == 200 and raw == b"", path
    status, metadata, _ = server.request("GET", f"/v2/models/{NAME}")
    assert status == 200
    assert metadata["name"] == NAME and metadata["platform"] == "sinter"
    assert metadata["inputs"] == [{"name": "features", "datatype": "FP32", "shape": [1, 64]}]
    assert metadata["outputs"] == [{"name": "scores", "datatype": "FP32", "shape": [1, 8]}]


def test_inference_matches_onnxruntime(server):
    x = features(1)
    status, reply, raw = server.infer(request_for(x, id="req-1"))
    assert status == 200, raw
    assert reply["model_name"] == NAME and reply["id"] == "req-1"
    expected = st.run_onnxruntime(MODEL, {"features": x})
    st.assert_outputs_match({"scores": scores(reply)}, expected, "server")
    # Nested data (row-major) is the same request.
    nested = request_for(x)
    nested["inputs"][0]["data"] = x.tolist()
    status, again, _ = server.infer(nested)
    assert status == 200 and again["outputs"] == reply["outputs"]


def test_floats_beyond_float32s_range_read_as_the_nearest_float32(server):
    # 1e-50 and -1e-60 are below the smallest float32 (about 1.4e-45): they round to +0 and -0,
    # as numpy's float32 conversion rounds them; 1e-400 is below even double's range.
    x = features(3)
    body = request_for(x)
    data = body["inputs"][0]["data"]
    data[0], data[1], data[2] = 1e-50, -1e-60, 12345.0
    text = json.dumps(body).replace("12345.0", "1e-400")
    status, reply, raw = server.infer(text)
    assert status == 200, raw
    x[0, :3] = np.float32(1e-50), np.float32(-1e-60), np.float32(0.0)
    assert x[0, 0] == 0 and x[0, 1] == 0
    expected = st.run_onnxruntime(MODEL, {"features": x})
    st.assert_outputs_match({"scores": scores(reply)}, expected, "server, underflowing inputs")


def bad_requests():
    """(what, body, expected status, a part of the expected message)."""
    x = features(2)
    good = request_for(x)

    def edited(edit):
        body = json.loads(json.dumps(good))
        edit(body["inputs"][0], body)
        return json.dumps(body)

    return [
        ("malformed JSON", '{"inputs": [', 400, "malformed JSON"),
        ("not an object", "[1, 2]", 400, "must be a JSON object"),
        ("no inputs", "{}", 400, "has no 'inputs'"),
        ("missing input", json.dumps({"inputs": []}), 400, "input 'features' is missing"),
        ("unknown input", edited(lambda t, b: t.update(name="pixels")), 400,
         "input 'pixels': the model has no such input"),
        ("repeated input", edited(lambda t, b: b["inputs"].append(dict(t))), 400, "given twice"),
        ("wrong datatype", edited(lambda t, b: t.update(datatype="FP64")), 400,
         "datatype is FP64 but the model expects FP32"),
        ("wrong shape", edited(lambda t, b: t.update(shape=[1, 63])), 400,
         "shape is [1,63] but the model expects [1,64]"),
        ("wrong rank", edited(lambda t, b: t.update(shape=[64])), 400, "shape is [64]"),
        ("too few elements", edited(lambda t, b: t.update(data=t["data"][:60])), 400,
         "'data' has 60 elements but shape [1,64] holds 64"),
        ("too many elements", edited(lambda t, b: t.update(data=t["data"] + [1.0])), 400,
         "more elements than the shape holds"),
        ("not a number", edited(lambda t, b: t["data"].__setitem__(5, "x")), 400,
         "element 5 is not a number"),
        ("no data", edited(lambda t, b: t.pop("data")), 400, "has no 'data'"),
        ("unknown output", edited(lambda t, b: b.update(outputs=[{"name": "logits"}])), 400,
         "output 'logits': the model has no such output"),
        ("oversized body", json.dumps({"inputs": [], "pad": "x" * 200_000}), 413,
         "larger than this server's limit"),
        ("nested too deep", '{"inputs": ' + "[" * 100 + "]" * 100 + "}", 400, "nested deeper"),
    ]


@pytest.mark.parametrize("what,body,status,message", bad_requests(),
                         ids=[case[0] for case in bad_requests()])
def test_bad_request_gets_4xx_with_a_message(server, what, body, status, message):
    got, reply, raw = server.infer(body)
    assert got == status, (what, raw[:300])
    assert message in reply["error"], (what, reply["error"])
    # The server goes on serving.
    assert server.infer(request_for(features(3)))[0] == 200


def test_unknown_model_and_path_are_404(server):
    status, reply, _ = server.request("POST", "/v2/models/resnet/infer", "{}")
    assert status == 404 and "unknown model 'resnet'" in reply["error"]
    status, reply, _ = server.request("GET", "/v1/models")
    assert status == 404 and "no such endpoint" in reply["error"]


def test_bad_requests_never_disturb_concurrent_good_ones(server):
    inputs = [features(100 + k) for k in range(16)]
    # The truth: each request's answer on an otherwise idle server (checked against onnxruntime
    # for the first), then the same requests from many threads with bad ones in between.
    truth = []
    for x in inputs:
        status, reply, raw = server.infer(request_for(x))
        assert status == 200, raw
        truth.append(reply["outputs"])
    st.assert_outputs_match({"scores": scores({"outputs": truth[0]})},
                            st.run_onnxruntime(MODEL, {"features": inputs[0]}), "idle server")
    bad = [(body, status) for _, body, status, _ in bad_requests()]

    def good(k):
        status, reply, raw = server.infer(request_for(inputs[k % 16]))
        return status == 200 and reply["outputs"] == truth[k % 16]

    def refused(k):
        body, status = bad[k % len(bad)]
        return server.infer(body)[0] == status

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as executor:
        goods = [executor.submit(good, k) for k in range(400)]
        bads = [executor.submit(refused, k) for k in range(120)]
        good_results = [f.result(timeout=120) for f in goods]
        bad_results = [f.result(timeout=120) for f in bads]
    assert good_results.count(False) == 0, f"{good_results.count(False)} wrong good responses"
    assert bad_results.count(False) == 0, f"{bad_results.count(False)} bad requests not refused"


def test_load_generator_checks_every_response(server, artifact):
    result = subprocess.run(
        [str(server_bin("sinter_loadgen")), str(artifact), "--port", str(server.port),
         "--concurrency", "8", "--requests", "400", "--inputs", "16", "--warmup", "2", "--json"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["requests"] == 400 and report["right"] == 400
    assert report["wrong"] == 0 and report["lost"] == 0


def test_load_generator_notices_a_wrong_model(server, tmp_path):
    """The check can fail: a server of another model answers with other numbers."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(MODEL))
    weight = next(w for w in model.graph.initializer
                  if w.data_type == onnx.TensorProto.FLOAT and np.prod(w.dims) > 1)
    array = numpy_helper.to_array(weight).copy()
    array.flat[0] += 1.0
    weight.CopyFrom(numpy_helper.from_array(array, weight.name))
    changed = tmp_path / "changed.onnx"
    onnx.save(model, str(changed))
    other = tmp_path / f"{NAME}.so"  # the same name, so it asks for the server's model
    st.run_cli(["compile", changed, "--target", "cpu", "-o", other])
    result = subprocess.run(
        [str(server_bin("sinter_loadgen")), str(other), "--port", str(server.port),
         "--concurrency", "2", "--requests", "8", "--inputs", "4", "--warmup", "0", "--json"],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert json.loads(result.stdout)["wrong"] > 0
    assert "differs from the local run" in result.stderr


def test_a_model_the_machine_cannot_run_fails_at_start(tmp_path):
    """The server runs the model once before it listens: without a CUDA driver a CUDA artifact
    is an error at start (exit 1 with the runtime's message), not a 500 on every request; with
    one, the server starts."""
    library = tmp_path / f"{NAME}.so"
    st.run_cli(["compile", MODEL, "--target", "cuda", "-o", library])
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        has_driver = True
    except OSError:
        has_driver = False
    if has_driver:
        Server(library).stop()
        return
    result = subprocess.run([str(server_bin("sinter_server")), str(library), "--port", "0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no CUDA driver" in result.stderr
    assert "listening" not in result.stdout


# --- batching ---

BUCKETED_MODEL = st.MODELS_DIR / "tiny_dynamic.onnx"  # x f32[batch,16] -> y f32[batch,4]
BUCKETED = "tiny_dynamic"


@pytest.fixture(scope="module")
def bucketed_server(tmp_path_factory):
    library = tmp_path_factory.mktemp("bucketed") / f"{BUCKETED}.so"
    st.run_cli(["compile", BUCKETED_MODEL, "--target", "cpu", "--dim", "batch=1,2,4,8",
                "-o", library])
    # A long delay (20 ms), so concurrent requests surely meet in one run on a loaded machine.
    running = Server(library, "--sessions", "2", "--max-queue-delay-us", "20000",
                     name=BUCKETED)
    running.library = library
    yield running
    running.stop()


def rows_request(x):
    return {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape),
                        "data": [float(v) for v in x.ravel()]}]}


def rows_of(x):
    return np.random.default_rng(int(x)).uniform(-1, 1, size=(1 + int(x) % 3, 16)).astype(
        np.float32)


def y_of(reply, rows):
    (output,) = reply["outputs"]
    assert output["name"] == "y" and output["shape"] == [rows, 4], output["shape"]
    return np.array(output["data"], dtype=np.float32).reshape(rows, 4)


def stats(server):
    status, reply, raw = server.request("GET", f"/v2/models/{server.name}/stats")
    assert status == 200, raw
    return reply


def test_bucketed_metadata_and_stats(bucketed_server):
    status, metadata, _ = bucketed_server.request("GET", f"/v2/models/{BUCKETED}")
    assert status == 200
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 16]}]
    assert metadata["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 4]}]
    report = stats(bucketed_server)
    assert report["batching"] is True and report["buckets"] == [1, 2, 4, 8]
    assert report["paddable"] is True and report["max_batch_rows"] == 8


def test_concurrent_requests_are_batched_and_answered_as_alone(bucketed_server):
    inputs = [rows_of(k) for k in range(24)]
    # Each request alone on the idle server: checked against onnxruntime.
    alone = []
    for x in inputs:
        status, reply, raw = bucketed_server.infer(rows_request(x))
        assert status == 200, raw
        got = y_of(reply, x.shape[0])
        st.assert_outputs_match({"y": got}, st.run_onnxruntime(BUCKETED_MODEL, {"x": x}),
                                f"{x.shape[0]} rows alone")
        alone.append(got)
    before = stats(bucketed_server)

    def one(k):
        x = inputs[k % len(inputs)]
        status, reply, raw = bucketed_server.infer(rows_request(x))
        assert status == 200, raw
        return k, y_of(reply, x.shape[0])

    with concurrent.futures.ThreadPoolExecutor(max_workers=24) as executor:
        results = [f.result(timeout=120) for f in
                   [executor.submit(one, k) for k in range(240)]]
    for k, got in results:
        x = inputs[k % len(inputs)]
        st.assert_outputs_match({"y": got}, st.run_onnxruntime(BUCKETED_MODEL, {"x": x}),
                                f"request {k} in a batch")
        assert np.array_equal(got, alone[k % len(inputs)]), f"request {k}: not as alone"
    after = stats(bucketed_server)
    assert after["batched_requests"] - before["batched_requests"] == 240
    shared = after["requests_in_shared_runs"] - before["requests_in_shared_runs"]
    assert shared > 0, after
    assert any(int(count) > 1 for count in after["runs_by_requests"]), after
    assert all(1 <= int(rows) <= 8 for rows in after["runs_by_rows"]), after
    # Fewer runs than requests: requests shared runs.
    assert after["runs"] - before["runs"] < 240, after


def bucketed_bad_requests():
    good = rows_request(rows_of(4))  # 2 rows

    def edited(edit):
        body = json.loads(json.dumps(good))
        edit(body["inputs"][0])
        return json.dumps(body)

    return [
        ("other non-batch dim", edited(lambda t: t.update(shape=[2, 15], data=t["data"][:30])),
         "shape is [2,15] but the model expects [-1,16]"),
        ("batch over the largest bucket", edited(lambda t: t.update(shape=[9, 16],
                                                                    data=[0.5] * 144)),
         "the batch dim is 9 but the artifact's largest batch is 8"),
        ("batch 0", edited(lambda t: t.update(shape=[0, 16], data=[])),
         "the batch dim is 0; it must be >= 1"),
        ("elements of another batch", edited(lambda t: t.update(shape=[3, 16])),
         "'data' has 32 elements but shape [3,16] holds 48"),
        ("malformed JSON", '{"inputs": [', "malformed JSON"),
    ]


@pytest.mark.parametrize("what,body,message", bucketed_bad_requests(),
                         ids=[case[0] for case in bucketed_bad_requests()])
def test_bucketed_bad_request_gets_400(bucketed_server, what, body, message):
    status, reply, raw = bucketed_server.infer(body)
    assert status == 400, (what, raw[:300])
    assert message in reply["error"], (what, reply["error"])


def test_bad_and_mixed_shape_requests_among_a_batch_disturb_none(bucketed_server):
    inputs = [rows_of(k) for k in range(12)]
    truth = [st.run_onnxruntime(BUCKETED_MODEL, {"x": x})["y"] for x in inputs]
    bad = bucketed_bad_requests()
    before = stats(bucketed_server)

    def good(k):
        x = inputs[k % len(inputs)]
        status, reply, raw = bucketed_server.infer(rows_request(x))
        if status != 200:
            return f"good request {k}: HTTP {status} {raw[:200]}"
        problems = st.compare_outputs({"y": y_of(reply, x.shape[0])}, {"y": truth[k % 12]})
        return f"good request {k}: {problems}" if problems else ""

    def refused(k):
        what, body, message = bad[k % len(bad)]
        status, reply, _ = bucketed_server.infer(body)
        ok = status == 400 and message in reply["error"]
        return "" if ok else f"bad request {what}: HTTP {status} {reply}"

    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as executor:
        futures = []
        for k in range(300):  # a bad request between every few good ones
            futures.append(executor.submit(good, k))
            if k % 3 == 0:
                futures.append(executor.submit(refused, k // 3))
        problems = [p for p in (f.result(timeout=120) for f in futures) if p]
    assert not problems, problems[:5]
    after = stats(bucketed_server)
    # The good ones went through the batcher, together; the bad ones never reached it.
    assert after["batched_requests"] - before["batched_requests"] == 300
    assert after["requests_in_shared_runs"] > before["requests_in_shared_runs"]


def test_load_generator_passes_against_a_batching_server(bucketed_server):
    """The load generator's truth is a local batch-1 run of each request alone (plan 0 of the
    artifact on its own session); the batched answers must equal it bit for bit."""
    before = stats(bucketed_server)
    result = subprocess.run(
        [str(server_bin("sinter_loadgen")), str(bucketed_server.library), "--port",
         str(bucketed_server.port), "--concurrency", "16", "--requests", "400", "--inputs", "16",
         "--warmup", "2", "--json"],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["right"] == 400 and report["wrong"] == 0 and report["lost"] == 0
    assert stats(bucketed_server)["requests_in_shared_runs"] > before["requests_in_shared_runs"]


def test_exact_buckets_only_and_no_batching_where_rows_mix(tmp_path):
    """y = Softmax(x @ w, axis=0): rows mix, so the server neither pads nor batches."""
    from test_shape_buckets import softmax_over_batch_model
    model = tmp_path / "softmax_over_batch.onnx"
    softmax_over_batch_model(model)
    library = tmp_path / "softmax_over_batch.so"
    st.run_cli(["compile", model, "--target", "cpu", "--dim", "batch=2,4", "-o", library])
    server = Server(library, "--sessions", "2", name="softmax_over_batch")
    try:
        report = stats(server)
        assert report["batching"] is False and report["paddable"] is False
        rng = np.random.default_rng(5)

        def one(rows):
            x = rng.standard_normal((rows, 4)).astype(np.float32)
            body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [rows, 4],
                                "data": [float(v) for v in x.ravel()]}]}
            return x, server.infer(body)

        for rows in (2, 4):
            x, (status, reply, raw) = one(rows)
            assert status == 200, raw
            (output,) = reply["outputs"]
            got = np.array(output["data"], dtype=np.float32).reshape(rows, 3)
            st.assert_outputs_match({"y": got}, st.run_onnxruntime(model, {"x": x}), f"{rows}")
        _, (status, reply, _) = one(3)
        assert status == 400
        assert "batch dim is 3 but the artifact runs batches of exactly 2, 4" in reply["error"]
        # Concurrent requests of bucket sizes each run alone, and are right.
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as executor:
            xs = [rng.standard_normal((2, 4)).astype(np.float32) for _ in range(32)]
            replies = list(executor.map(
                lambda x: server.infer({"inputs": [{"name": "x", "datatype": "FP32",
                                                    "shape": [2, 4],
                                                    "data": [float(v) for v in x.ravel()]}]}),
                xs))
        for x, (status, reply, raw) in zip(xs, replies):
            assert status == 200, raw
            got = np.array(reply["outputs"][0]["data"], dtype=np.float32).reshape(2, 3)
            st.assert_outputs_match({"y": got}, st.run_onnxruntime(model, {"x": x}), "alone")
    finally:
        server.stop()
