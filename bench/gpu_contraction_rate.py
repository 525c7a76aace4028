#!/usr/bin/env python3
"""Single contractions on one GPU: sinter's kernels against torch (cuBLAS, cuDNN) at fp32, fp16
and bf16, with the models' per-kernel overheads out of the picture.

    python3 bench/gpu_contraction_rate.py --bin DIR --out DIR [--cases REGEX]
        [--precisions fp32 fp32-simt fp16 bf16 fp32@96x128 ...] [--budget S] [--list] [--no-gpu]

Runs on the GPU machine (scripts/device/contraction.sh unpacks the portable binaries and calls
this; docs/performance.md has the method). Each case is a one-contraction ONNX model with the
shapes of a ResNet-50, ViT-B/16 or BERT-base layer at batch 1 or 32, or odd sizes that leave a
partial tile on every edge:

  MatMul MxKxN                A[M,K] (input) x B[K,N] (initializer) + bias[N] (an Add)
  Transpose+MatMul LxBxKxN    X[L,B,K] (input) -> Transpose(perm 1,0,2) -> [B,L,K] x W[K,N] + bias
  BatchMatMul BxMxKxN         A[B,M,K] x B[B,K,N], both inputs (attention's two products)
  Conv KxK CIN->COUT HxW bN   X[N,CIN,H,W] (input) * W (initializer) + bias, padding K/2

For each case and precision (sinter compile --precision; torch in that dtype, TF32 off at fp32;
a precision with a tile, such as fp32@96x128, adds `--tensor-core-tile 96x128`, for sweeping
the tensor-core tiles; its reference and torch's time are those of its precision):

  1. every artifact is compiled first (`sinter compile --target cuda --arch sm_90`, --jobs at a
     time), so no compile competes with a timing;
  2. inputs and weights are uniform in [-1, 1) (seeded per case); at fp16 and bf16 both are
     rounded to the storage type (round to nearest even) before anything uses them, so sinter,
     torch and the reference see the same values;
  3. `sinter run` on those inputs is checked against a float64 numpy reference computed from the
     same (rounded) values: relative L2 error ||a-b|| / ||b|| <= 1e-5 at fp32, 1e-3 at fp16 and
     1e-2 at bf16 (at 16 bits the error is mostly the output's single rounding). Only an artifact
     that passes is timed;
  4. sinter: `sinter bench` p50 (CUDA graph replay between two CUDA events, inputs random);
     torch: F.linear (cuBLAS with the bias fused, nn.Linear's path) for MatMul + bias and
     Transpose + MatMul + bias (on the transposed view), torch.matmul for BatchMatMul, F.conv2d
     for Conv, each call between two CUDA events and waited for (the same method); both the median
     of --iterations (>= 100) runs after --warmup. torch's output is checked against the same
     reference and its error reported.

GFLOP counts multiply-adds as two and ignores the bias. Every failure is recorded in the case's
row and the log, and the other cases go on. --budget bounds the run like bench/gpu_vs_torch.py's.
Results go to OUT/contraction.json (after every row) and OUT/contraction.log; the table goes to
stdout. --no-gpu (for a machine without one) still writes the models, compiles them for CUDA and
computes the references, and runs, checks and benches CPU-target artifacts instead.
"""
import argparse
import concurrent.futures
import json
import os
import re
import signal
import sys
import time
import traceback
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "test" / "gpu"))
import gpu_vs_torch as bench  # noqa: E402  (sinter on the command line, budget, SIGTERM)
import run_gpu_suite as suite  # noqa: E402  (CUDA-event timing, relative errors)

# The precisions a case can run at, with their `sinter compile` flags. fp32-simt: fp32 with
# --fp32-contractions simt (the f32 FMA kernel instead of tf32 pairs on the tensor cores), for
# the two side by side; it stores, rounds and checks like fp32.
SINTER_FLAGS = {"fp32": [], "fp32-simt": ["--fp32-contractions", "simt"],
                "fp16": ["--precision", "fp16"], "bf16": ["--precision", "bf16"]}
PRECISIONS = tuple(SINTER_FLAGS)
STORAGE = {"fp32": "fp32", "fp32-simt": "fp32", "fp16": "fp16", "bf16": "bf16"}
L2_TOLERANCE = {"fp32": 1e-5, "fp16": 1e-3, "bf16": 1e-2}
OPSET = 17


def round_to_bf16(values):
    """float32 values rounded to the nearest bfloat16 (ties to even), kept in float32."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) \
        & np.uint32(0xFFFF0000)
    return rounded.view(np.float32)


def split_precision(precision):
    """'fp32@96x128' -> ('fp32', '96x128'); 'fp16' -> ('fp16', None)."""
    name, _, tile = precision.partition("@")
    return name, tile or None


def sinter_flags(precision):
    name, tile = split_precision(precision)
    return SINTER_FLAGS[name] + (["--tensor-core-tile", tile] if tile else [])


def storage(precision):
    return STORAGE[split_precision(precision)[0]]


def precision_argument(text):
    name, tile = split_precision(text)
    if name not in SINTER_FLAGS or (tile is not None and not re.fullmatch(r"\d+x\d+", tile)):
        raise argparse.ArgumentTypeError(
            f"{text!r}: use one of {', '.join(PRECISIONS)}, optionally with @ROWSxCOLUMNS")
    return text


def round_to(values, precision):
    """`values` (float32) as the storage type of `precision` holds them, in float32; values
    already in float16 (a case stored in 16 bits end to end) stay as they are."""
    if values.dtype == np.float16:
        return values
    if precision == "fp16":
        return values.astype(np.float16).astype(np.float32)
    if precision == "bf16":
        return round_to_bf16(values)
    return values


def conv2d_reference(x, w, bias, stride, pad, chunk=8):
    """NCHW convolution in float64 (windows times weights, `chunk` images at a time)."""
    kernel = w.shape[2]
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = w.astype(np.float64)
    outputs = []
    for start in range(0, x.shape[0], chunk):
        windows = np.lib.stride_tricks.sliding_window_view(
            x[start:start + chunk], (kernel, kernel), axis=(2, 3))[:, :, ::stride, ::stride]
        # windows: [n, cin, oh, ow, kh, kw]; w: [cout, cin, kh, kw] -> [n, oh, ow, cout]
        outputs.append(np.tensordot(windows, w, axes=([1, 4, 5], [1, 2, 3])))
    y = np.concatenate(outputs).transpose(0, 3, 1, 2)
    return y + bias.astype(np.float64)[None, :, None, None]


class Case:
    """One contraction: its ONNX model, its values, its float64 reference and its torch call.
    `inputs` and `constants` map names to float32 arrays; the model's output is `y`."""

    def __init__(self, name, origin, kind, half=False, transposed_b=False, **dims):
        self.name, self.origin, self.kind, self.dims = name, origin, kind, dims
        # half: the model itself is float16 (inputs, weights, output), as every MatMul inside a
        # model compiled with --precision fp16 is; so both operands reach the kernel as 16-bit
        # loads (a single-node float32 model narrows its input inside the kernel instead).
        # transposed_b: b is stored [n, k] (Gemm transB=1, or a Transpose of batched b).
        self.half, self.transposed_b = half, transposed_b
        self.slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()

    def precisions(self, requested):
        """The precisions this case runs at: a float16 model only at fp16."""
        return [p for p in requested if storage(p) == "fp16"] if self.half else list(requested)

    @property
    def flops(self):
        d = self.dims
        if self.kind == "matmul":
            return 2 * d["m"] * d["k"] * d["n"]
        if self.kind == "transposed":
            return 2 * d["length"] * d["batch"] * d["k"] * d["n"]
        if self.kind == "batched":
            return 2 * d["batch"] * d["m"] * d["k"] * d["n"]
        out = self.conv_output_size()
        return 2 * d["batch"] * d["cout"] * out * out * d["cin"] * d["kernel"] ** 2

    def conv_output_size(self):
        d = self.dims
        return (d["size"] + 2 * (d["kernel"] // 2) - d["kernel"]) // d["stride"] + 1

    def values(self):
        """(inputs, constants), uniform in [-1, 1), the same for every precision and process."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        d = self.dims

        def draw(*shape):
            values = rng.uniform(-1, 1, shape).astype(np.float32)
            return values.astype(np.float16) if self.half else values

        b_shape = (lambda k, n: (n, k)) if self.transposed_b else (lambda k, n: (k, n))
        if self.kind == "matmul":
            return {"a": draw(d["m"], d["k"])}, {"b": draw(*b_shape(d["k"], d["n"])), "bias": draw(d["n"])}
        if self.kind == "transposed":
            return ({"x": draw(d["length"], d["batch"], d["k"])},
                    {"w": draw(d["k"], d["n"]), "bias": draw(d["n"])})
        if self.kind == "batched":
            return {"a": draw(d["batch"], d["m"], d["k"]), "b": draw(d["batch"], *b_shape(d["k"], d["n"]))}, {}
        kernel = d["kernel"]
        return ({"x": draw(d["batch"], d["cin"], d["size"], d["size"])},
                {"w": draw(d["cout"], d["cin"], kernel, kernel), "bias": draw(d["cout"])})

    def model(self, inputs, constants):
        from onnx import TensorProto, helper, numpy_helper

        d = self.dims
        element = TensorProto.FLOAT16 if self.half else TensorProto.FLOAT
        if self.kind == "matmul" and self.transposed_b:
            nodes = [helper.make_node("Gemm", ["a", "b", "bias"], ["y"], transB=1)]
            shape = [d["m"], d["n"]]
        elif self.kind == "matmul":
            nodes = [helper.make_node("MatMul", ["a", "b"], ["product"]),
                     helper.make_node("Add", ["product", "bias"], ["y"])]
            shape = [d["m"], d["n"]]
        elif self.kind == "transposed":
            nodes = [helper.make_node("Transpose", ["x"], ["xt"], perm=[1, 0, 2]),
                     helper.make_node("MatMul", ["xt", "w"], ["product"]),
                     helper.make_node("Add", ["product", "bias"], ["y"])]
            shape = [d["batch"], d["length"], d["n"]]
        elif self.kind == "batched" and self.transposed_b:
            nodes = [helper.make_node("Transpose", ["b"], ["bt"], perm=[0, 2, 1]),
                     helper.make_node("MatMul", ["a", "bt"], ["y"])]
            shape = [d["batch"], d["m"], d["n"]]
        elif self.kind == "batched":
            nodes = [helper.make_node("MatMul", ["a", "b"], ["y"])]
            shape = [d["batch"], d["m"], d["n"]]
        else:
            kernel, pad = d["kernel"], d["kernel"] // 2
            nodes = [helper.make_node("Conv", ["x", "w", "bias"], ["y"],
                                      kernel_shape=[kernel, kernel], pads=[pad] * 4,
                                      strides=[d["stride"]] * 2)]
            out = self.conv_output_size()
            shape = [d["batch"], d["cout"], out, out]
        graph = helper.make_graph(
            nodes, self.slug,
            [helper.make_tensor_value_info(name, element, list(array.shape))
             for name, array in inputs.items()],
            [helper.make_tensor_value_info("y", element, shape)],
            [numpy_helper.from_array(array, name) for name, array in constants.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="sinter bench/gpu_contraction_rate.py")
        model.ir_version = 8
        return model

    def reference(self, inputs, constants):
        """The output in float64, from the values as given."""
        v = {name: array.astype(np.float64) for name, array in {**inputs, **constants}.items()}
        if self.transposed_b:
            v["b"] = np.swapaxes(v["b"], -1, -2)
        if self.kind == "matmul":
            return v["a"] @ v["b"] + v["bias"]
        if self.kind == "transposed":
            return np.matmul(v["x"].transpose(1, 0, 2), v["w"]) + v["bias"]
        if self.kind == "batched":
            return np.matmul(v["a"], v["b"])
        return conv2d_reference(inputs["x"], constants["w"], constants["bias"],
                                self.dims["stride"], self.dims["kernel"] // 2)

    def torch_call(self, tensors):
        """A function of no arguments running the case in torch on `tensors` (name -> CUDA
        tensor in the row's dtype)."""
        import torch
        import torch.nn.functional as F

        t = tensors
        if self.kind == "matmul" and self.transposed_b:
            return lambda: F.linear(t["a"], t["b"], t["bias"])
        if self.kind == "batched" and self.transposed_b:
            return lambda: torch.matmul(t["a"], t["b"].transpose(1, 2))
        if self.kind == "matmul":
            weight = t["b"].t().contiguous()  # nn.Linear's [out, in]
            return lambda: F.linear(t["a"], weight, t["bias"])
        if self.kind == "transposed":
            weight = t["w"].t().contiguous()
            return lambda: F.linear(t["x"].transpose(0, 1), weight, t["bias"])
        if self.kind == "batched":
            return lambda: torch.matmul(t["a"], t["b"])
        return lambda: F.conv2d(t["x"], t["w"], t["bias"], stride=self.dims["stride"],
                                padding=self.dims["kernel"] // 2)


def matmul(m, k, n, origin):
    return Case(f"MatMul {m}x{k}x{n}", origin, "matmul", m=m, k=k, n=n)


def half_matmul(m, k, n, origin, transposed_b=False):
    name = f"f16 {'Gemm transB' if transposed_b else 'MatMul'} {m}x{k}x{n}"
    return Case(name, origin, "matmul", half=True, transposed_b=transposed_b, m=m, k=k, n=n)


def half_batched(batch, m, k, n, origin, transposed_b=False):
    name = f"f16 BatchMatMul{' b^T' if transposed_b else ''} {batch}x{m}x{k}x{n}"
    return Case(name, origin, "batched", half=True, transposed_b=transposed_b,
                batch=batch, m=m, k=k, n=n)


def transposed(length, batch, k, n, origin):
    return Case(f"Transpose+MatMul {length}x{batch}x{k}x{n}", origin, "transposed",
                length=length, batch=batch, k=k, n=n)


def batched(batch, m, k, n, origin):
    return Case(f"BatchMatMul {batch}x{m}x{k}x{n}", origin, "batched", batch=batch, m=m, k=k, n=n)


def conv(kernel, cin, cout, size, batch, origin, stride=1):
    strided = f"/{stride}" if stride > 1 else ""
    return Case(f"Conv {kernel}x{kernel}{strided} {cin}->{cout} {size}x{size} b{batch}", origin,
                "conv", kernel=kernel, cin=cin, cout=cout, size=size, batch=batch, stride=stride)


# In run order: the batch-32 GEMMs that dominate the slow rows of bench/gpu_vs_torch.py first.
CASES = [
    matmul(4096, 768, 3072, "BERT-base b32: FFN in"),
    matmul(4096, 3072, 768, "BERT-base b32: FFN out"),
    matmul(4096, 768, 768, "BERT-base b32: attention output projection"),
    matmul(6304, 768, 2304, "ViT-B/16 b32: QKV projection"),
    matmul(6304, 768, 3072, "ViT-B/16 b32: MLP in"),
    matmul(6304, 3072, 768, "ViT-B/16 b32: MLP out"),
    matmul(6304, 768, 768, "ViT-B/16 b32: attention output projection"),
    transposed(197, 32, 768, 2304, "ViT-B/16 b32: QKV projection of the sequence-first input"),
    batched(384, 128, 64, 128, "BERT-base b32: attention scores Q.K^T (32 x 12 heads)"),
    batched(384, 128, 128, 64, "BERT-base b32: attention probabilities . V"),
    conv(3, 64, 64, 56, 32, "ResNet-50 b32: layer1 3x3"),
    conv(1, 256, 64, 56, 32, "ResNet-50 b32: layer1 1x1 reduce"),
    conv(3, 256, 256, 14, 32, "ResNet-50 b32: layer3 3x3"),
    conv(7, 3, 64, 224, 32, "ResNet-50 b32: stem", stride=2),
    conv(3, 512, 512, 7, 32, "ResNet-50 b32: layer4 3x3"),
    conv(1, 2048, 512, 7, 32, "ResNet-50 b32: layer4 1x1 reduce"),
    conv(1, 512, 2048, 7, 32, "ResNet-50 b32: layer4 1x1 expand"),
    matmul(197, 768, 3072, "ViT-B/16 b1: MLP in"),
    matmul(197, 3072, 768, "ViT-B/16 b1: MLP out"),
    transposed(197, 1, 768, 2304, "ViT-B/16 b1: QKV projection of the sequence-first input"),
    matmul(128, 768, 768, "BERT-base b1: attention output projection"),
    half_matmul(4096, 768, 3072, "BERT-base b32 FFN in, stored in f16 end to end"),
    half_matmul(4096, 768, 3072, "the same with nn.Linear's [out, in] weight", transposed_b=True),
    half_batched(384, 128, 64, 128, "BERT-base b32 Q.K^T in f16, K stored [seq, d]",
                 transposed_b=True),
    half_batched(384, 128, 128, 64, "BERT-base b32 probabilities . V in f16"),
    half_matmul(197, 768, 3072, "ViT-B/16 b1 MLP in, f16: a partial row tile"),
    half_matmul(1000, 1000, 1000, "f16, partial tiles on every edge with 16-byte runs"),
    half_matmul(1000, 999, 1001, "f16, odd sizes: element-wise staging"),
    matmul(1000, 999, 1001, "odd sizes: a partial tile on every edge"),
    matmul(33, 65, 17, "odd sizes, small"),
]


class ContractionBench(bench.BudgetedRun):
    def __init__(self, args, cases):
        super().__init__(args, "contraction")
        self.cases = cases
        self.pool = None
        self.rows = [{"case": case.name, "origin": case.origin, "kind": case.kind,
                      "dims": case.dims, "precision": precision, "gflop": case.flops / 1e9,
                      "status": "not run"}
                     for case in cases for precision in case.precisions(args.precisions)]

    def document(self):
        return {"no_gpu": self.args.no_gpu, "tolerances": {"rel_l2_err": L2_TOLERANCE}}

    def label(self, row):
        return f"{row['case']} {row['precision']}"

    # Steps.

    def compile_all(self):
        """Writes every case's model and compiles every (case, precision), --jobs at a time;
        {(case name, precision, target): future of (artifact path, compile seconds)}."""
        targets = [("cuda", bench.CUDA_TARGET)]
        if self.args.no_gpu:  # what runs here instead of the GPU
            targets.append(("cpu", ("--target", "cpu")))
        pool = self.pool = concurrent.futures.ThreadPoolExecutor(max(1, self.args.jobs))
        futures = {}
        for case in self.cases:
            folder = self.work / case.slug
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "model.onnx"
            try:
                import onnx

                onnx.save(case.model(*case.values()), str(path))
            except Exception as error:  # noqa: BLE001 (its rows say so)
                for row in self.rows:
                    if row["case"] == case.name:
                        self.fail(row, "error", f"model: {bench.short(error)}")
                continue
            for precision in case.precisions(self.args.precisions):
                for target, flags in targets:
                    artifact = folder / f"{precision}-{target}.so"
                    command = [self.sinter, "compile", path, *flags, "-o", artifact, "--force"]
                    command += sinter_flags(precision)
                    futures[(case.name, precision, target)] = pool.submit(
                        self.compile_one, command, artifact)
        return futures

    def compile_one(self, command, artifact):
        _, seconds = bench.run_sinter(command, self.wait_limit(300))
        return artifact, round(seconds, 2)

    def run_case(self, case, futures):
        inputs, constants = case.values()
        folder = self.work / case.slug
        shared = {}  # per storage type: the reference and torch's side, measured once
        for precision in case.precisions(self.args.precisions):
            row = next(r for r in self.rows if r["case"] == case.name and
                       r["precision"] == precision)
            if row["status"] != "not run":  # its model failed
                continue
            if self.remaining() <= 0:
                row["error"] = "not run: the time budget is spent"
                continue
            row["status"] = "running"
            try:
                self.run_row(case, row, folder, inputs, constants, futures,
                             shared.setdefault(storage(precision), {}))
            except Exception:  # noqa: BLE001
                self.fail(row, "error", traceback.format_exc(limit=3))
            if row["status"] == "running":
                row["status"] = "ok"
            self.log(f"{case.name} {precision}: rel L2 {fmt(row.get('rel_l2_err'), '{:.1e}')}, "
                     f"sinter {fmt(row.get('sinter_ms'), '{:.4f}')} ms, torch "
                     f"{fmt(row.get('torch_ms'), '{:.4f}')} ms, {row['status']}")
            self.save()

    def run_row(self, case, row, folder, inputs, constants, futures, shared):
        """`shared` holds what rows of one storage type have in common (the rounded values, the
        reference, torch's measurements), filled by the first of them."""
        kind = storage(row["precision"])
        if "reference" not in shared:
            shared["inputs"] = {name: round_to(a, kind) for name, a in inputs.items()}
            shared["constants"] = {name: round_to(a, kind) for name, a in constants.items()}
            started = time.time()
            shared["reference"] = case.reference(shared["inputs"], shared["constants"])
            shared["reference_s"] = round(time.time() - started, 2)
        row["reference_s"] = shared["reference_s"]
        reference = shared["reference"]
        self.sinter_side(case, row, folder, shared["inputs"], reference, futures)
        if self.args.no_gpu:
            row["torch_note"] = "not run: --no-gpu"
        elif "torch" in shared:
            row.update(shared["torch"])
        elif self.remaining() <= 0:
            self.fail(row, "torch_error", "not run: the time budget is spent")
        else:
            try:
                self.torch_side(case, row, shared["inputs"], shared["constants"], reference)
                shared["torch"] = {key: row[key] for key in row if key.startswith("torch_")}
            except Exception:  # noqa: BLE001
                self.fail(row, "torch_error", traceback.format_exc(limit=2))
        if row.get("sinter_ms") and row.get("torch_ms"):
            row["ratio"] = row["torch_ms"] / row["sinter_ms"]

    def sinter_side(self, case, row, folder, inputs, reference, futures):
        precision = row["precision"]
        try:
            cuda_artifact, row["sinter_compile_s"] = futures[(case.name, precision, "cuda")] \
                .result(timeout=self.wait_limit(600))
            artifact = cuda_artifact
            if self.args.no_gpu:
                artifact, _ = futures[(case.name, precision, "cpu")].result(
                    timeout=self.wait_limit(600))
            flags = []
            for name, array in inputs.items():
                path = folder / f"{precision}-{name}.npy"
                np.save(path, array)
                flags += ["--input", f"{name}={path}"]
            outputs = folder / f"{precision}-outputs.npz"
            bench.run_sinter([self.sinter, "run", artifact, *flags, "-o", outputs, "--force"],
                             self.wait_limit(300))
            actual = suite.load_npz(outputs).get("y")
            if actual is None or actual.shape != reference.shape:
                raise RuntimeError(f"sinter run: output y is "
                                   f"{None if actual is None else list(actual.shape)}, expected "
                                   f"{list(reference.shape)}")
            row["max_rel_err"], row["rel_l2_err"] = suite.relative_errors(actual, reference)
            tolerance = L2_TOLERANCE[storage(precision)]
            row["check"] = "ok" if row["rel_l2_err"] <= tolerance else \
                f"fail: relative L2 error {row['rel_l2_err']:.3g} > {tolerance:g}"
            if row["check"] != "ok":
                raise RuntimeError(f"wrong result, not timed: {row['check'][6:]}")
            latency = bench.sinter_latency(self.sinter, artifact, self.args.warmup,
                                           self.args.iterations, self.wait_limit(300))
            row["sinter_ms"] = latency["p50"]
            row["sinter_latency_ms"] = latency
            row["sinter_tflops"] = case.flops / (row["sinter_ms"] * 1e-3) / 1e12
        except concurrent.futures.TimeoutError:
            self.fail(row, "sinter_error", "sinter compile: not done within the time budget")
        except Exception as error:  # noqa: BLE001 (torch's side is still measured)
            self.fail(row, "sinter_error", error)

    def torch_side(self, case, row, inputs, constants, reference):
        import torch

        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[
            storage(row["precision"])]
        tensors = {name: torch.from_numpy(array).to("cuda", dtype)
                   for name, array in {**inputs, **constants}.items()}
        call = case.torch_call(tensors)
        with torch.inference_mode():
            output = call().float().cpu().numpy()
        row["torch_max_rel_err"], row["torch_rel_l2_err"] = suite.relative_errors(output, reference)
        del output
        row["torch_ms"] = suite.time_cuda_calls(lambda _: call(), None, self.args.warmup,
                                                self.args.iterations)
        row["torch_tflops"] = case.flops / (row["torch_ms"] * 1e-3) / 1e12
        del call, tensors
        torch.cuda.empty_cache()

    def describe_environment(self):
        try:
            self.environment["sinter"] = bench.run_sinter([self.sinter, "--version"],
                                                          30)[0].strip()
        except Exception as error:  # noqa: BLE001 (every row will say why sinter failed)
            self.environment["sinter"] = f"failed: {bench.short(error)}"
        self.environment["numpy"] = np.__version__
        if not self.args.no_gpu:
            import torch

            torch.backends.cuda.matmul.allow_tf32 = False  # fp32 as written: no TF32 anywhere
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
            self.environment["gpu"] = torch.cuda.get_device_name(0)
            self.environment["torch"] = torch.__version__
        self.log("environment: " + json.dumps(self.environment))

    def run(self):
        signal.signal(signal.SIGTERM, bench.raise_terminated)
        try:
            self.describe_environment()
            started = time.time()
            futures = self.compile_all()
            concurrent.futures.wait(list(futures.values()), timeout=self.wait_limit(900))
            self.log(f"compiled {len(futures)} artifacts in {time.time() - started:.1f} s "
                     f"({self.args.jobs} at a time)")
            for case in self.cases:
                self.run_case(case, futures)
        except bench.Terminated:
            self.log("SIGTERM (the hard time limit): stopping")
            for row in self.rows:
                if row["status"] == "running":
                    self.fail(row, "error", "stopped by SIGTERM (the hard time limit) here")
                elif row["status"] == "not run":
                    row["error"] = "not run: stopped by SIGTERM (the hard time limit)"
        except Exception:  # noqa: BLE001 (the table still prints)
            self.log("stopped early:\n" + traceback.format_exc())
            self.environment["error"] = bench.short(traceback.format_exc(limit=3))
            for row in self.rows:
                if row["status"] in ("not run", "running"):
                    row["status"] = "not run"
                    row.setdefault("error", "not run: the benchmark stopped early "
                                            "(environment.error)")
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if self.pool is not None:
                self.pool.shutdown(wait=False, cancel_futures=True)
            self.save()
            print(table(self.rows), flush=True)
        return 0 if all(row["status"] == "ok" for row in self.rows) else 1


def fmt(value, form):
    return form.format(value) if isinstance(value, (int, float)) else "-"


def table(rows, markdown=False):
    header = ["case", "precision", "GFLOP", "sinter ms", "torch ms", "sinter TFLOP/s",
              "torch TFLOP/s", "torch/sinter", "rel err", "ok"]
    lines = []
    notes = []
    for r in rows:
        check = r.get("check", "")
        lines.append([r["case"], r["precision"], fmt(r.get("gflop"), "{:.3f}"),
                      fmt(r.get("sinter_ms"), "{:.4f}"), fmt(r.get("torch_ms"), "{:.4f}"),
                      fmt(r.get("sinter_tflops"), "{:.2f}"), fmt(r.get("torch_tflops"), "{:.2f}"),
                      fmt(r.get("ratio"), "{:.2f}"), fmt(r.get("rel_l2_err"), "{:.1e}"),
                      "yes" if check == "ok" else "NO" if check else "-"])
        for key in ("error", "sinter_error", "torch_error"):
            if r.get(key):
                notes.append(f"{r['case']} {r['precision']}: {key}: "
                             f"{str(r[key]).strip().splitlines()[-1][:200]}")
    if markdown:
        out = ["| " + " | ".join(header) + " |",
               "|---|---|" + "---:|" * (len(header) - 3) + "---|"]
        out += ["| " + " | ".join(cells) + " |" for cells in lines]
    else:
        widths = [max(len(c[i]) for c in lines + [header]) for i in range(len(header))]
        out = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
               for cells in [header] + lines]
    out.append("")
    out.append("torch/sinter: torch ms over sinter ms (above 1: sinter is faster). rel err: "
               "sinter's ||a-b|| / ||b|| against a float64 reference of the same (rounded) "
               "values; ok: within " + ", ".join(f"{p} {t:g}" for p, t in L2_TOLERANCE.items())
               + ".")
    if notes:
        out.append("")
        out += [("- " if markdown else "") + note for note in notes]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench.add_run_arguments(parser, "contraction")
    parser.add_argument("--cases", default=None, metavar="REGEX",
                        help="run the cases whose 'name (origin)' this matches (case-insensitive)")
    parser.add_argument("--precisions", nargs="+", type=precision_argument,
                        default=list(PRECISIONS), metavar="PRECISION[@ROWSxCOLUMNS]",
                        help=f"{', '.join(PRECISIONS)} (default: all), each optionally with a "
                             "tensor-core tile")
    parser.add_argument("--budget", type=float, default=480,
                        help="seconds: no case starts after this, and waits on sinter end by "
                             f"budget + {bench.GRACE_S} s (default 480; contraction.sh kills at "
                             "570)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compiles at a time, before any timing (default: one per core)")
    parser.add_argument("--no-gpu", action="store_true",
                        help="no GPU here: compile for CUDA, run, check and bench CPU artifacts")
    parser.add_argument("--list", action="store_true", help="print the cases and stop")
    parser.add_argument("--markdown", metavar="CONTRACTION_JSON",
                        help="print an earlier run's table as markdown and stop")
    args = parser.parse_args()
    if args.markdown:
        print(table(json.loads(Path(args.markdown).read_text())["rows"], markdown=True))
        return 0
    try:
        pattern = re.compile(args.cases, re.IGNORECASE) if args.cases else None
    except re.error as error:
        parser.error(f"--cases {args.cases!r}: {error}")
    cases = [case for case in CASES if not pattern or pattern.search(f"{case.name} ({case.origin})")]
    if not cases:
        parser.error(f"no case matches {args.cases!r}")
    args.precisions = list(dict.fromkeys(args.precisions))
    if args.list:
        for case in cases:
            print(f"{case.name:34s} {case.flops / 1e9:9.3f} GFLOP  {case.origin}")
        return 0
    if args.iterations < 100 and not args.no_gpu:
        print(f"note: --iterations {args.iterations}: medians of fewer than 100 runs",
              file=sys.stderr)
    return ContractionBench(args, cases).run()


if __name__ == "__main__":
    sys.exit(main())
