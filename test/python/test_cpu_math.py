"""The CPU target's f32 exp, tanh and erf, which kernels compute inline (lib/codegen/llvm/inline_math.cpp)
rather than through libm: Exp, Tanh, Sigmoid and Erf over the whole f32 range (the subnormal results,
the overflow to infinity, the points where the range reduction switches, infinities and NaN),
compiled at each x86-64 level this machine runs, against numpy's float64 results rounded to f32.
Within 4 ulp of the truth (plus the smallest subnormal's worth where the result is subnormal;
for Sigmoid, 1 / (1 + e^-x), the smallest normal's worth: e^-x overflows just before the result
leaves the normal range); the special values exactly.
"""
import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sinter_testing as st
from test_cpu_contraction import CPU_LEVELS


def _inputs():
    ln2 = np.log(2.0)
    dense = np.linspace(-110.0, 95.0, 200001)
    near_zero = np.concatenate([np.geomspace(1e-30, 1.0, 2000), -np.geomspace(1e-30, 1.0, 2000)])
    # The points where n = round(x / ln 2) changes, and either side of them.
    switches = (np.arange(-150, 129) + 0.5) * ln2
    switches = np.concatenate([switches, np.nextafter(switches.astype(np.float32), np.float32(np.inf)),
                               np.nextafter(switches.astype(np.float32), np.float32(-np.inf))])
    edges = np.array([88.72283, 88.72284, 88.7229, 89.0, 89.1, -87.33654, -87.3366, -103.97, -103.98, -104.0,
                      -104.5, 0.5, -0.5, 0.49999997, 0.50000006, 9.0, 20.0, -20.0, 0.0, -0.0, np.inf, -np.inf, np.nan])
    # erf's pieces meet at 1 and 4; it rounds to 1 from about 3.92 on.
    erf_edges = np.array([1.0, 0.99999994, 1.0000001, 3.9, 3.92, 3.93, 3.9999998, 4.0, 4.0000005, 2.5])
    erf_edges = np.concatenate([erf_edges, -erf_edges, np.linspace(-5, 5, 100001)])
    values = np.concatenate([dense, near_zero, switches, edges, erf_edges]).astype(np.float32)
    return values


def _truth(op, x):
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        x = x.astype(np.float64)
        if op == "Exp":
            return np.exp(x).astype(np.float32)
        if op == "Tanh":
            return np.tanh(x).astype(np.float32)
        if op == "Erf":
            return np.array([math.erf(v) if not np.isnan(v) else np.nan for v in x]).astype(np.float32)
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


@pytest.mark.parametrize("cpu", CPU_LEVELS)
@pytest.mark.parametrize("op", ["Exp", "Tanh", "Sigmoid", "Erf"])
def test_inline_math_matches_float64(op, cpu, tmp_path):
    x = _inputs()
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], "math",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [x.size])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [x.size])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    library = tmp_path / "model.so"
    st.run_cli(["compile", path, "--target", "cpu", "--cpu", cpu, "-o", library])
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "y.npz"
    st.run_cli(["run", library, "--input", f"x={tmp_path / 'x.npy'}", "-o", out])
    with np.load(out) as archive:
        actual = archive["y"]
    expected = _truth(op, x)
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=f"{op} NaN at {cpu}")
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)],
                                  err_msg=f"{op} infinities at {cpu}")
    ulp = np.spacing(np.abs(expected[finite]))
    error = np.abs(actual[finite].astype(np.float64) - expected[finite].astype(np.float64))
    bound = 4 * ulp.astype(np.float64) + (2.0 ** -126 if op == "Sigmoid" else 2.0 ** -149)
    worst = np.argmax(error / bound)
    assert np.all(error <= bound), (
        f"{op} at {cpu}: x = {x[finite][worst]!r} gives {actual[finite][worst]!r}, "
        f"expected {expected[finite][worst]!r} ({error[worst] / ulp[worst]:.1f} ulp)")
