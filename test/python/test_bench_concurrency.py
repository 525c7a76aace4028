"""`sinter bench --concurrency N` on a CPU artifact: N threads through a pool of at most N sessions,
its JSON and text reports (latency percentiles in order, throughput, session creation, memory
from sinter_model_device_usage); --batch refused until artifacts hold several shapes; bad
combinations refused with the flag named."""
import json

import pytest

import sinter_testing as st
from sinter_testing import error_line, sinter

MODEL = st.MODELS_DIR / "tiny_mlp.onnx"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    library = tmp_path_factory.mktemp("bench") / "tiny_mlp.so"
    st.run_cli(["compile", MODEL, "--target", "cpu", "-o", library])
    return library


def test_json_report(artifact):
    report = json.loads(sinter("bench", artifact, "--concurrency", 4, "--iterations", 10,
                               "--warmup", 2, "--json").stdout)
    assert report["concurrency"] == 4 and report["target"] == "cpu"
    assert 1 <= report["sessions"] <= 4
    assert report["threads_per_session"] >= 1
    assert report["iterations"] == 10 and report["batch"] == 1
    latency = report["latency_ms"]
    assert 0 < latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    assert report["wall_ms"] > 0
    # 4 threads x 10 runs x batch 1 over the wall time.
    assert report["throughput_per_s"] == pytest.approx(40 * 1000.0 / report["wall_ms"], rel=1e-6)
    memory = report["memory_bytes"]
    assert memory["weights"] == 0 and memory["weight_uploads"] == 0  # read in place on the CPU
    assert memory["arenas"] > 0
    assert report["session_create_ms"]["first"] > 0


def test_text_report(artifact):
    text = sinter("bench", artifact, "--concurrency", 2, "--iterations", 5, "--threads", 1).stdout
    assert "(cpu, 1 thread per session)" in text
    assert "concurrency: 2 threads through a pool of" in text
    assert "latency (ms): p50 " in text and "throughput: " in text
    assert "session creation: first " in text and "host memory: weights 0.00 MiB" in text


def test_batch_needs_buckets_and_bad_combinations_are_refused(artifact):
    # The artifact has one shape: --batch picks a bucket (test_shape_buckets.py runs one).
    assert "picks a shape bucket" in error_line(sinter("bench", artifact, "--batch", 8, expect=1))
    assert "--concurrency must be 1 or more" in error_line(
        sinter("bench", artifact, "--concurrency", -2, expect=1))
    assert "--per-step" in error_line(sinter("bench", artifact, "--concurrency", 2, "--per-step",
                                             expect=1))
