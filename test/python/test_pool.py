"""sinter_pool through the shared library (ctypes, which lets go of the GIL in each call, so the
64 Python threads below really call the runtime at once) on a compiled models/tiny_cnn.onnx: a
pool of 8 sessions run from 64 threads gives every thread's outputs bit-identical to one
session's runs of the same inputs on one thread, which match onnxruntime; no more than 8
sessions are made, sinter_model_device_usage counts them, and each frees with the pool."""
import ctypes
import threading

import numpy as np

import sinter_ctypes
import sinter_testing as st
from sinter_ctypes import DeviceUsage, Tensor

MODEL = st.MODELS_DIR / "tiny_cnn.onnx"  # input f32[1,3,32,32] -> probabilities f32[1,10]
FLOAT32 = 1


def load_runtime():
    return sinter_ctypes.load_runtime(st.BUILD / "lib" / "libsinter_rt.so")


def check(rt, status, what):
    assert status == 0, f"{what}: {rt.sinter_last_error().decode()}"


def run_with(rt, function, handle, x):
    y = np.full((1, 10), np.nan, np.float32)
    inputs = (Tensor * 1)(sinter_ctypes.tensor(x, FLOAT32))
    outputs = (Tensor * 1)(sinter_ctypes.tensor(y, FLOAT32))
    check(rt, function(handle, inputs, 1, outputs, 1), "run")
    return y


def test_pool_from_64_threads_is_bit_identical_to_one_session(tmp_path):
    library = tmp_path / "tiny_cnn.so"
    st.run_cli(["compile", MODEL, "--target", "cpu", "-o", library])
    rt = load_runtime()
    model, session, pool = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(rt, rt.sinter_model_load(str(library).encode(), ctypes.byref(model)), "load")
    threads, runs = 64, 4
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(threads * runs)]

    check(rt, rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
    single = [run_with(rt, rt.sinter_session_run_host, session, x) for x in inputs]
    rt.sinter_session_destroy(session)
    st.assert_outputs_match({"probabilities": single[0]},
                            st.run_onnxruntime(MODEL, {"input": inputs[0]}), "one session")

    check(rt, rt.sinter_pool_create(model, None, 8, ctypes.byref(pool)), "pool")
    results = [None] * len(inputs)
    failures = []
    barrier = threading.Barrier(threads)

    def worker(t):
        barrier.wait()
        try:
            for r in range(runs):
                k = t * runs + r
                results[k] = run_with(rt, rt.sinter_pool_run_host, pool, inputs[k])
        except AssertionError as error:
            failures.append(str(error))

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not failures, failures[:3]
    different = [k for k in range(len(inputs)) if not np.array_equal(results[k], single[k])]
    assert not different, f"{len(different)} runs differ from one session's, first {different[:5]}"

    made = rt.sinter_pool_session_count(pool)
    assert 1 <= made <= 8
    usage = DeviceUsage()
    check(rt, rt.sinter_model_device_usage(model, 0, ctypes.byref(usage)), "usage")
    assert usage.sessions == made and usage.weight_uploads == 0 and usage.weight_bytes == 0
    rt.sinter_pool_free(pool)
    check(rt, rt.sinter_model_device_usage(model, 0, ctypes.byref(usage)), "usage")
    assert usage.sessions == 0 and usage.arena_bytes == 0
    rt.sinter_model_free(model)
