"""Serving on the GPU: a model's weights go to the device once, however many sessions, and a pool
runs from many threads. For each CUDA artifact in --work (ARTIFACT.so beside its ARTIFACT.onnx):

1. 1, 4 and 16 sessions of one model: sinter_model_device_usage must say one upload and the
   weights' bytes once, and the device's free memory (cuMemGetInfo) must fall by the weights once
   plus the arenas (printed: weights, arenas, and what the driver counts besides);
2. every session's outputs on one input are bit-identical to the first session's, which match
   onnxruntime (relative error printed and bounded);
3. a pool of 8 run from 1, 4, 16 and 64 Python threads (ctypes lets go of the GIL in each call):
   every output bit-identical to one session's run of the same input; runs/s and p50/p99 latency
   printed;
4. after the sessions are gone the weights are freed (usage 0).

   python3 test/gpu/check_serving.py --lib DIR/libsinter_rt.so --work DIR [--out OUT]
Exits 1 on any failed check."""
import argparse
import ctypes
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

NUMPY = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64, 9: np.bool_}

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from sinter_ctypes import DeviceUsage, Tensor, TensorInfo, load_runtime, tensor  # noqa: E402


class Runtime:
    def __init__(self, library):
        self.rt = load_runtime(library)

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {self.rt.sinter_last_error().decode()}")

    def infos(self, model, count_function, info_function):
        out = []
        for i in range(count_function(model)):
            info = TensorInfo()
            self.check(info_function(model, i, ctypes.byref(info)), "info")
            out.append((info.name.decode(), info.dtype, tuple(info.dims[:info.rank])))
        return out

    def usage(self, model):
        usage = DeviceUsage()
        self.check(self.rt.sinter_model_device_usage(model, 0, ctypes.byref(usage)), "usage")
        return usage


class Device:
    """cuMemGetInfo on device 0's primary context (the one the runtime uses)."""

    def __init__(self):
        self.cuda = ctypes.CDLL("libcuda.so.1")
        assert self.cuda.cuInit(0) == 0
        device, self.context = ctypes.c_int(), ctypes.c_void_p()
        assert self.cuda.cuDeviceGet(ctypes.byref(device), 0) == 0
        assert self.cuda.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), device) == 0
        assert self.cuda.cuCtxPushCurrent_v2(self.context) == 0

    def free(self):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert self.cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)) == 0
        return free.value


def run_once(runtime, function, handle, inputs, input_infos, output_infos):
    outs = [np.zeros(shape, NUMPY[dtype]) for _, dtype, shape in output_infos]
    ins = (Tensor * len(inputs))(*[tensor(a, info[1]) for a, info in zip(inputs, input_infos)])
    outs_t = (Tensor * len(outs))(*[tensor(o, info[1]) for o, info in zip(outs, output_infos)])
    runtime.check(function(handle, ins, len(inputs), outs_t, len(outs)), "run")
    return outs


def make_inputs(input_infos, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for _, dtype, shape in input_infos:
        if dtype in (6, 7):
            arrays.append(rng.integers(0, 2, size=shape).astype(NUMPY[dtype]))
        else:
            arrays.append(rng.uniform(-1, 1, size=shape).astype(NUMPY[dtype]))
    return arrays


def check_model(runtime, device, artifact, onnx_path, report):
    problems = []
    rt = runtime.rt
    model = ctypes.c_void_p()
    runtime.check(rt.sinter_model_load(str(artifact).encode(), ctypes.byref(model)), "load")
    input_infos = runtime.infos(model, rt.sinter_model_input_count, rt.sinter_model_input_info)
    output_infos = runtime.infos(model, rt.sinter_model_output_count, rt.sinter_model_output_info)
    inputs = make_inputs(input_infos, 0)
    row = {"model": artifact.stem, "sessions": {}}

    free_before = device.free()
    sessions = []
    for count in (1, 4, 16):
        while len(sessions) < count:
            session = ctypes.c_void_p()
            start = time.perf_counter()
            runtime.check(rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
            row.setdefault("create_ms", []).append((time.perf_counter() - start) * 1000)
            sessions.append(session)
        usage = runtime.usage(model)
        used = free_before - device.free()
        row["sessions"][count] = {"weight_bytes": usage.weight_bytes, "arena_bytes": usage.arena_bytes,
                                  "uploads": usage.weight_uploads, "device_bytes_used": used}
        if usage.sessions != count or usage.weight_uploads != 1:
            problems.append(f"{count} sessions: usage says {usage.sessions} sessions, "
                            f"{usage.weight_uploads} uploads")
    weights = row["sessions"][1]["weight_bytes"]
    if row["sessions"][16]["weight_bytes"] != weights:
        problems.append("the weights' bytes changed with the session count")

    first = None
    for index, session in enumerate(sessions):
        outs = run_once(runtime, rt.sinter_session_run_host, session, inputs, input_infos, output_infos)
        outs = run_once(runtime, rt.sinter_session_run_host, session, inputs, input_infos, output_infos)
        if first is None:
            first = outs
        elif not all(np.array_equal(a, b) for a, b in zip(outs, first)):
            problems.append(f"session {index}'s outputs differ from session 0's")
    if onnx_path.exists():
        import onnxruntime
        ort = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
        feeds = {name: array for (name, _, _), array in zip(input_infos, inputs)}
        expected = ort.run([name for name, _, _ in output_infos], feeds)
        errors = [float(np.abs(a.astype(np.float64) - e).max() / max(np.abs(e).max(), 1e-12))
                  for a, e in zip(first, expected)]
        row["relative_error_vs_onnxruntime"] = max(errors)
        if max(errors) > 1e-3:
            problems.append(f"outputs differ from onnxruntime by {max(errors):.2e}")
    for session in sessions:
        rt.sinter_session_destroy(session)
    if runtime.usage(model).weight_bytes != 0:
        problems.append("the weights stayed after the last session")

    # The pool from threads: bit-identical to one session's runs of the same inputs.
    cases = [make_inputs(input_infos, 100 + k) for k in range(16)]
    session = ctypes.c_void_p()
    runtime.check(rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
    truth = [run_once(runtime, rt.sinter_session_run_host, session, c, input_infos, output_infos)
             for c in cases]
    rt.sinter_session_destroy(session)
    pool = ctypes.c_void_p()
    runtime.check(rt.sinter_pool_create(model, None, 8, ctypes.byref(pool)), "pool")
    row["pool"] = {}
    for threads in (1, 4, 16, 64):
        runs = 20
        latencies, wrong, failures = [], [0], []
        lock = threading.Lock()
        barrier = threading.Barrier(threads + 1)

        def worker(t):
            barrier.wait()
            mine = []
            for r in range(runs):
                k = (t * runs + r) % len(cases)
                start = time.perf_counter()
                try:
                    outs = run_once(runtime, rt.sinter_pool_run_host, pool, cases[k], input_infos,
                                    output_infos)
                except RuntimeError as error:
                    failures.append(str(error))
                    return
                mine.append((time.perf_counter() - start) * 1000)
                if not all(np.array_equal(a, b) for a, b in zip(outs, truth[k])):
                    with lock:
                        wrong[0] += 1
            with lock:
                latencies.extend(mine)

        workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        barrier.wait()
        start = time.perf_counter()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
        row["pool"][threads] = {"runs_per_s": threads * runs / seconds,
                                "p50_ms": float(np.percentile(latencies, 50)) if latencies else None,
                                "p99_ms": float(np.percentile(latencies, 99)) if latencies else None,
                                "wrong": wrong[0], "failures": len(failures),
                                "sessions": rt.sinter_pool_session_count(pool)}
        if wrong[0] or failures:
            problems.append(f"pool from {threads} threads: {wrong[0]} wrong, {failures[:2]}")
    usage = runtime.usage(model)
    if usage.weight_uploads != 3 or usage.sessions > 8:  # 16 sessions, 1 session, then the pool
        problems.append(f"pool: {usage.weight_uploads} uploads in all, {usage.sessions} sessions")
    rt.sinter_pool_free(pool)
    rt.sinter_model_free(model)
    row["problems"] = problems
    report.append(row)
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", required=True, type=Path)
    parser.add_argument("--work", required=True, type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    runtime, device = Runtime(args.lib), Device()
    report, failed = [], 0
    for artifact in sorted(args.work.glob("*.so")):
        if artifact.name == args.lib.name:
            continue
        problems = check_model(runtime, device, artifact, artifact.with_suffix(".onnx"), report)
        row = report[-1]
        print(f"== {artifact.stem}: {'ok' if not problems else 'FAILED'}")
        for count, s in row["sessions"].items():
            print(f"  {count:2d} sessions: weights {s['weight_bytes'] / 2**20:8.2f} MiB "
                  f"(uploads {s['uploads']}), arenas {s['arena_bytes'] / 2**20:8.2f} MiB, "
                  f"device memory used {s['device_bytes_used'] / 2**20:8.2f} MiB")
        created = row["create_ms"]
        print(f"  session creation: first {created[0]:.3f} ms, later mean "
              f"{sum(created[1:]) / len(created[1:]):.3f} ms")
        if "relative_error_vs_onnxruntime" in row:
            print(f"  max relative error vs onnxruntime: {row['relative_error_vs_onnxruntime']:.2e}")
        for threads, p in row["pool"].items():
            print(f"  pool of 8, {threads:2d} threads: {p['runs_per_s']:9.1f} runs/s, p50 "
                  f"{p['p50_ms']:.3f} ms, p99 {p['p99_ms']:.3f} ms, {p['sessions']} sessions, "
                  f"{p['wrong']} wrong")
        for problem in problems:
            print(f"  PROBLEM: {problem}")
        failed += bool(problems)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "check_serving.json").write_text(json.dumps(report, indent=1))
    return 1 if failed or not report else 0


if __name__ == "__main__":
    sys.exit(main())
