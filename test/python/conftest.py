"""Guards for the whole Python suite: no expected value may come from behaviour that is undefined
and so differs between the machines CI lands on.

ONNX's reference evaluator (onnx.reference) is the truth of many tests. Its Cast and CastLike
convert with numpy's astype, and numpy's conversion of a NaN, an infinity or an out-of-range float
into an integer type is undefined (C's rule; its SIMD paths give different integers on CPUs with
and without AVX-512). The ONNX spec leaves those casts undefined too ("fixed point: undefined if
OOR"). So while a test runs, a reference-evaluator Cast of such a value into an integer type is an
error naming the values, and numpy's own "invalid value encountered in cast" warning is one too
(pytest.ini): a test must pick inputs the spec defines, or compute its truth with exact arithmetic.
"""
import sys

import numpy as np
import pytest

import sinter_testing as st

sys.path.insert(0, str(st.ROOT / "test" / "conformance"))
import spec_undefined  # noqa: E402


class UndefinedTruth(AssertionError):
    """An expected value would come from a float-to-integer cast the spec leaves undefined."""


def _checked(cast_to):
    def checked_cast_to(x, to, *args, **kwargs):
        values = np.asarray(x)
        if (to in spec_undefined.INTEGER_RANGES and spec_undefined.is_float(values)
                and not spec_undefined.evaluating()):
            bad = spec_undefined.out_of_range(values, to)
            if bad.any():
                raise UndefinedTruth(
                    f"the reference evaluator casts {int(bad.sum())} of {bad.size} floats "
                    f"(first {values.ravel()[np.flatnonzero(bad.ravel())[0]]!r}) into "
                    f"{spec_undefined.TensorProto.DataType.Name(to)}, outside its range: undefined "
                    "in the ONNX spec and different between CPUs; choose inputs in range or "
                    "compute the expected value with exact arithmetic")
        return cast_to(x, to, *args, **kwargs)
    checked_cast_to.sinter_checked = True
    return checked_cast_to


@pytest.fixture(autouse=True, scope="session")
def _no_undefined_casts_in_the_truth():
    from onnx.reference.ops import op_cast, op_cast_like
    patched = []
    for module in (op_cast, op_cast_like):
        if not getattr(module.cast_to, "sinter_checked", False):
            patched.append((module, module.cast_to))
            module.cast_to = _checked(module.cast_to)
    yield
    for module, original in patched:
        module.cast_to = original
