#!/usr/bin/env python3
"""Stream-K GEMMs on the GPU, against float64 numpy (docs/gpu-testing.md).

    python3 test/gpu/check_stream_k.py --bin DIR --work DIR

DIR holds the portable `sinter` and `libsinter_rt.so` (scripts/device/build-portable.sh). Each
case is a GEMM with a long reduction whose 128x128 (or 128x64) tiles leave part of a round of wgmma blocks, so that
`--precision fp16` compiles it as a stream-K kernel (whole rounds of tiles, then the tiles left
over split into parts of their reductions, the last part to arrive adding the partial sums):
ViT-B/16 b32's MLP-out, a tile split eight ways, two ResNet-50 layer4-like products on 128x64
tiles, a batched product with ragged rows and a
reduction that is not whole slices, and a GELU epilogue. For each case:
  - `sinter inspect --json` must name a stream-K kernel (and none with --stream-k off), so a
    change in the choice cannot make the case test nothing;
  - one session runs inputs A, then B, then A again (the first run direct, the second captured as
    a CUDA graph, the third a replay): every output matches float64 numpy on the f16-rounded
    operands (relative L2 <= 2e-3), and the third equals the first bit for bit, so the tiles'
    arrival counters were reset and the partial sums are added in a fixed order;
  - four sessions of the auto artifact on four threads run input A 25 times each at once: every
    output equals the first run's bit for bit (each session counts arrivals in its own copy of
    the kernel's module; with one module shared by the sessions they raced);
  - the --stream-k off artifact matches the same reference.
Exits 1 when any check fails; prints one line per case.
"""
import argparse
import ctypes
import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

TOLERANCE = 2e-3
SINTER_FLOAT32 = 1
MAX_RANK = 8


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("byte_size", ctypes.c_size_t), ("dtype", ctypes.c_int),
                ("rank", ctypes.c_int32), ("dims", ctypes.c_int64 * MAX_RANK)]


def tensor(array):
    t = Tensor()
    t.data = array.ctypes.data
    t.byte_size = array.nbytes
    t.dtype = SINTER_FLOAT32
    t.rank = array.ndim
    for i, d in enumerate(array.shape):
        t.dims[i] = d
    return t


def f16(a):
    return a.astype(np.float16).astype(np.float64)


def erf(x):
    """Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


# Cases: (name, x shape, weight shape, epilogue); y = x @ w + bias, then + residual or GELU.
# Of T tiles of 128x128, 264 * floor(T / 264) are whole; the rest are split into parts of their
# slices, at most eight. A grid of 128x128 tiles short of the SMs takes 128x64 tiles (396 places).
CASES = [
    ("6304x768x3072 + residual (ViT-B/16 MLP-out): 36 tiles in 7 parts", (32, 197, 3072), (3072, 768), "residual"),
    ("4096x1152x2048: 24 tiles in 8 parts", (16, 256, 2048), (2048, 1152), "bias"),
    ("49x512x4608 + residual (ResNet-50 b1 layer4-like): 8 tiles of 128x64 in 8 parts", (1, 49, 4608),
     (4608, 512), "residual"),
    ("1568x512x4608 (ResNet-50 b32 layer4-like): 104 tiles of 128x64 in 3 parts", (32, 49, 4608), (4608, 512),
     "bias"),
    ("128x768x768 + residual (BERT-base b1 output projection): 12 tiles of 128x64 in 6 parts", (1, 128, 768),
     (768, 768), "residual"),
    ("8 x 1000x640x1100 batched, ragged rows and reduction: 56 tiles in 4 parts", (8, 1000, 1100), (8, 1100, 640),
     "residual"),
    ("1576x3072x1536 + GELU: 48 tiles in 5 parts", (8, 197, 1536), (1536, 3072), "gelu"),
]


def build(path, x_shape, w_shape, epilogue, rng):
    w = (rng.standard_normal(w_shape) / np.sqrt(w_shape[-2])).astype(np.float32)
    bias = rng.standard_normal(w_shape[-1]).astype(np.float32)
    y_shape = list(x_shape[:-1]) + [w_shape[-1]]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "bias"], ["a"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))]
    if epilogue == "residual":
        nodes.append(helper.make_node("Add", ["a", "r"], ["y"]))
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, y_shape))
    elif epilogue == "gelu":
        nodes.append(helper.make_node("Gelu", ["a"], ["y"]))
    else:
        nodes.append(helper.make_node("Identity", ["a"], ["y"]))
    graph = helper.make_graph(nodes, "stream_k", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9), path)
    return w, bias, y_shape


def reference(x, r, w, bias, epilogue):
    y = np.matmul(f16(x), f16(w)) + f16(bias)
    if epilogue == "residual":
        return y + f16(r)
    return gelu(y) if epilogue == "gelu" else y


def relative_l2(got, want):
    return float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))


class Runtime:
    def __init__(self, library):
        self.rt = ctypes.CDLL(str(library))
        self.rt.sinter_last_error.restype = ctypes.c_char_p

    def check(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what}: {self.rt.sinter_last_error().decode()}")

    def runs(self, artifact, input_sets, y_shape):
        """The outputs of one session's runs, one per input set, in order."""
        model, session = ctypes.c_void_p(), ctypes.c_void_p()
        self.check(self.rt.sinter_model_load(str(artifact).encode(), ctypes.byref(model)), "load")
        try:
            self.check(self.rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
            outputs = [self.run(session, inputs, y_shape) for inputs in input_sets]
            self.rt.sinter_session_destroy(session)
            return outputs
        finally:
            self.rt.sinter_model_free(model)

    def run(self, session, inputs, y_shape):
        """One run of `inputs` on `session`: its output."""
        y = np.zeros(y_shape, np.float32)
        ins = (Tensor * len(inputs))(*[tensor(a) for a in inputs])
        outs = (Tensor * 1)(tensor(y))
        self.check(self.rt.sinter_session_run_host(session, ins, len(inputs), outs, 1), "run")
        return y

    def concurrent_runs(self, artifact, inputs, y_shape, threads=4, runs=25):
        """The outputs of `runs` runs of `inputs` on each of `threads` sessions running at once."""
        model = ctypes.c_void_p()
        self.check(self.rt.sinter_model_load(str(artifact).encode(), ctypes.byref(model)), "load")
        sessions = []
        try:
            for _ in range(threads):
                session = ctypes.c_void_p()
                self.check(self.rt.sinter_session_create(model, None, ctypes.byref(session)), "session")
                sessions.append(session)
            results, errors = [[] for _ in range(threads)], []

            def work(t):
                try:
                    for _ in range(runs):
                        results[t].append(self.run(sessions[t], inputs, y_shape))
                except RuntimeError as error:
                    errors.append(str(error))
            workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if errors:
                raise RuntimeError(errors[0])
            return [y for r in results for y in r]
        finally:
            for session in sessions:
                self.rt.sinter_session_destroy(session)
            self.rt.sinter_model_free(model)


def generators(sinter, artifact):
    info = json.loads(subprocess.run([sinter, "inspect", artifact, "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    return [k["generator"] for k in info["kernels"]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, type=Path)
    parser.add_argument("--work", required=True, type=Path)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    sinter = str(args.bin / "sinter")
    runtime = Runtime(args.bin / "libsinter_rt.so")
    rng = np.random.default_rng(0)
    failures = 0
    for index, (name, x_shape, w_shape, epilogue) in enumerate(CASES):
        problems = []
        model = args.work / f"case{index}.onnx"
        w, bias, y_shape = build(model, x_shape, w_shape, epilogue, rng)
        sets = []
        for _ in range(2):
            x = rng.standard_normal(x_shape).astype(np.float32)
            r = rng.standard_normal(y_shape).astype(np.float32)
            sets.append([x, r] if epilogue == "residual" else [x])
        wants = [reference(s[0], s[1] if len(s) > 1 else None, w, bias, epilogue) for s in sets]
        errors = {}
        for mode in ("auto", "off"):
            artifact = args.work / f"case{index}-{mode}.so"
            subprocess.run([sinter, "compile", model, "-o", artifact, "--force", "--target", "cuda", "--arch", "sm_90",
                            "--precision", "fp16", "--stream-k", mode], check=True, capture_output=True)
            streamed = sum("stream-k" in g for g in generators(sinter, artifact))
            if (streamed > 0) != (mode == "auto"):
                problems.append(f"--stream-k {mode}: {streamed} stream-K kernels")
            outputs = runtime.runs(artifact, [sets[0], sets[1], sets[0]] if mode == "auto" else [sets[0]], y_shape)
            for run, y in enumerate(outputs):
                error = relative_l2(y, wants[run % 2])
                errors[f"{mode} run {run + 1}"] = error
                if not error <= TOLERANCE:
                    problems.append(f"--stream-k {mode} run {run + 1}: relative L2 {error:.2e}")
            if mode == "auto" and not np.array_equal(outputs[0], outputs[2]):
                problems.append("runs 1 and 3 of the same inputs differ")
            if mode == "auto":
                together = runtime.concurrent_runs(artifact, sets[0], y_shape)
                differ = sum(not np.array_equal(y, outputs[0]) for y in together)
                if differ:
                    problems.append(f"{differ} of {len(together)} runs from 4 sessions at once differ from run 1")
        failures += bool(problems)
        worst = max(errors.values())
        print(f"{'FAIL' if problems else 'ok  '} {name}: worst relative L2 {worst:.2e}"
              + (" — " + "; ".join(problems) if problems else ""), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
