"""float16 conversions on the CPU target, with and without F16C.

x86-64-v2 has no instruction for f16 <-> f32, where LLVM would call compiler-rt
(__extendhfsf2, __truncsfhf2) that an artifact cannot link; sinter's kernel emitter then converts
with integer arithmetic on the bit patterns. x86-64-v3 and up have F16C. Both must give the same
bits as numpy's conversions (round to nearest even; subnormals; overflow to infinity; NaN stays
NaN), checked on every f16 bit pattern, on random f32 and f64 bit patterns and on the rounding
edge cases. f64 -> f16 must round once, not through f32.
"""
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sinter_testing as st

COUNT = 65536


def host_has(level):
    flags = set(re.findall(r"^flags\s*:\s*(.*)$", open("/proc/cpuinfo").read(), re.M)[0].split())
    needs = {"x86-64-v2": {"sse4_2", "popcnt", "ssse3"},
             "x86-64-v3": {"avx2", "f16c", "fma", "bmi2"},
             "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}[level]
    return needs <= flags


def edge_floats():
    """f32 values where f16 rounding is delicate."""
    unit = 2.0 ** -24  # the f16 subnormal step
    values = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 65536.0, 1e30,
              unit, unit / 2, unit / 2 * 1.0000001, unit * 1.5, unit * 2.5, unit * 1023.5,
              2.0 ** -14, 2.0 ** -14 - unit / 2, 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11,
              1 + 2.0 ** -11 + 2.0 ** -20, 2049.0, 2051.0, 4097.0, 1e-8, 3.14159265, 1e-40]
    values += [-v for v in values]
    return np.array(values, np.float32)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("half")
    graph = helper.make_graph(
        [helper.make_node("Cast", ["h"], ["h_to_f32"], to=TensorProto.FLOAT),
         helper.make_node("Cast", ["f"], ["f32_to_h"], to=TensorProto.FLOAT16),
         helper.make_node("Cast", ["d"], ["f64_to_h"], to=TensorProto.FLOAT16),
         helper.make_node("Mul", ["h", "h"], ["h_squared"])],
        "half",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT16, [COUNT]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [COUNT]),
         helper.make_tensor_value_info("d", TensorProto.DOUBLE, [COUNT])],
        [helper.make_tensor_value_info(name, kind, [COUNT]) for name, kind in
         [("h_to_f32", TensorProto.FLOAT), ("f32_to_h", TensorProto.FLOAT16),
          ("f64_to_h", TensorProto.FLOAT16), ("h_squared", TensorProto.FLOAT16)]])
    path = folder / "half.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)

    rng = np.random.default_rng(11)
    h = np.arange(COUNT, dtype=np.uint32).astype(np.uint16).view(np.float16)  # every pattern
    edges = edge_floats()
    f = np.concatenate([
        edges,
        rng.integers(0, 2 ** 32, 30000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        # Around the f16 range, where most bits matter.
        (rng.standard_normal(COUNT) * 2.0 ** rng.integers(-26, 17, COUNT)).astype(np.float32),
    ])[:COUNT]
    d = np.concatenate([
        edges.astype(np.float64),
        # Just off an f16 tie by less than f32 can hold: through f32 these would round twice.
        np.array([1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -11 - 2.0 ** -40,
                  2.0 ** -24 * (1.5 + 2.0 ** -35), 2.0 ** -24 * (0.5 + 2.0 ** -40),
                  65520.0 - 2.0 ** -30]),
        rng.integers(0, 2 ** 63, 20000, dtype=np.uint64).view(np.float64),
        rng.standard_normal(COUNT) * 2.0 ** rng.integers(-26, 17, COUNT),
    ])[:COUNT]
    with np.errstate(over="ignore", invalid="ignore"):
        expected = {"h_to_f32": h.astype(np.float32), "f32_to_h": f.astype(np.float16),
                    "f64_to_h": d.astype(np.float16),
                    "h_squared": (h.astype(np.float32) * h.astype(np.float32)).astype(np.float16)}
    files = []
    for name, value in (("h", h), ("f", f), ("d", d)):
        files.append(folder / f"{name}.npy")
        np.save(files[-1], value)
    return {"path": path, "files": files, "expected": expected}


def same_bits(actual, expected):
    """Bitwise equality, except that any NaN matches any NaN (payloads may differ)."""
    nan = np.isnan(expected.astype(np.float32))
    bits = actual.view(np.uint16 if actual.itemsize == 2 else np.uint32)
    want = expected.view(bits.dtype)
    return np.isnan(actual.astype(np.float32)) == nan, (bits == want) | nan


@pytest.mark.parametrize("level", ["x86-64-v2", "x86-64-v3", "x86-64-v4"])
def test_cpu_half_conversions_match_numpy(model, tmp_path, level):
    artifact = tmp_path / "half.so"
    # Compiling for every level checks that each links (no compiler-rt calls) ...
    st.run_cli(["compile", model["path"], "--target", "cpu", "--cpu", level, "-o", artifact])
    symbols = subprocess.run(["readelf", "--dyn-syms", "-W", str(artifact)], capture_output=True,
                             text=True, check=True).stdout
    assert "hf2" not in symbols, symbols
    if not host_has(level):
        pytest.skip(f"compiled for {level}, which this CPU lacks, so it cannot run here")
    # ... and running checks the bits.
    st.run_cli(["run", artifact, *model["files"], "-o", tmp_path / "out.npz"])
    with np.load(tmp_path / "out.npz") as archive:
        for name, expected in model["expected"].items():
            actual = archive[name]
            assert actual.dtype == expected.dtype, name
            nan_agrees, bits_agree = same_bits(actual, expected)
            wrong = np.flatnonzero(~(nan_agrees & bits_agree))
            assert wrong.size == 0, (
                f"{name} on {level}: {wrong.size} of {expected.size} differ, e.g. index "
                f"{wrong[:5].tolist()}: got {actual[wrong[:5]].tolist()}, "
                f"want {expected[wrong[:5]].tolist()}")
