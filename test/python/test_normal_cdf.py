"""The CUDA prelude's sn_normal_cdf (GELU's gate when its result is stored in 16 bits) against
the standard normal CDF: its formula, evaluated in float32 with the constants read from
lib/codegen/cuda/cuda_source.cpp, stays within 3e-7 of 0.5 * erfc(-x / sqrt 2) (float64) on a
fine grid over [-12, 12]; GELU through it, within 3.5e-7 * max(1, |x|)."""
import math
import re
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parents[2] / "lib" / "codegen" / "cuda" / "cuda_source.cpp"


def prelude_constants():
    """The function's text and its float literals with digits after the point, in order (1.f
    and 0.f have none): p / sqrt 2, the halves of a1 .. a5, and -log2(e) / 2."""
    text = SOURCE.read_text()
    body = text[text.index("__device__ __forceinline__ float sn_normal_cdf(float x) {"):]
    body = body[:body.index("\n}\n")]
    return body, [float(n) for n in re.findall(r"-?\d+\.\d+(?=f)", body)]


def test_formula_matches_the_normal_cdf():
    body, numbers = prelude_constants()
    assert "sn_rcp(fmaf(fabsf(x), " in body and "sn_ex2(x * x * " in body
    p, a1, a2, a3, a4, a5, exponent = numbers
    # The constants fold A&S 7.1.26's p / sqrt 2, a_i / 2 and -log2(e) / 2; checked against the
    # textbook values so that a slip in one is caught even where the error bound would pass it.
    assert abs(p - 0.3275911 / math.sqrt(2)) <= 1e-8
    for got, textbook in zip([a1, a2, a3, a4, a5],
                             [0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429]):
        assert abs(got - textbook / 2) <= 1e-9
    assert abs(exponent + 0.5 / math.log(2)) <= 1e-8
    f = np.float32
    x = np.linspace(-12, 12, 400_001).astype(np.float32)
    t = f(1) / (np.abs(x) * f(p) + f(1))
    poly = t * (f(a1) + t * (f(a2) + t * (f(a3) + t * (f(a4) + t * f(a5)))))
    tail = poly * np.exp2(x * x * f(exponent)).astype(np.float32)
    got = np.where(x >= 0, f(1) - tail, tail).astype(np.float64)
    want = np.array([0.5 * math.erfc(-float(v) / math.sqrt(2)) for v in x])
    error = np.abs(got - want)
    assert error.max() <= 3e-7, (error.max(), x[error.argmax()])
    gelu_error = np.abs(x.astype(np.float64) * (got - want))
    assert np.all(gelu_error <= 3.5e-7 * np.maximum(1.0, np.abs(x))), gelu_error.max()
