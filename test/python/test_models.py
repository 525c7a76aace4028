"""Model tests, end to end: every models/*.onnx runs through the sinter CLI on each enabled
target (SINTER_TARGETS, default "reference,cpu") and must match onnxruntime: float32 outputs within
max|a-b|/max|b| <= 1e-5, integer and bool outputs exactly. Models with symbolic dims run twice:
with every symbolic dim 1 and with every symbolic dim 2.
"""
import numpy as np
import pytest

import sinter_testing as st


def cases():
    for model in st.model_files():
        dims = [1, 2] if st.has_symbolic_dims(model) else [1]
        for target in st.enabled_targets():
            for dim in dims:
                suffix = f"-dims{dim}" if len(dims) > 1 else ""
                yield pytest.param(model, target, dim, id=f"{model.stem}-{target}{suffix}")


def test_model_suite_present():
    assert st.model_files(), f"no models in {st.MODELS_DIR}: the model tests would test nothing"


def test_cli_present():
    st.sinter_bin()


@pytest.mark.parametrize("model,target,symbolic_dim", list(cases()))
def test_model_matches_onnxruntime(model, target, symbolic_dim, tmp_path):
    inputs = st.make_inputs(model, symbolic_dim)
    expected = st.run_onnxruntime(model, inputs)
    actual = st.TARGETS[target](model, inputs, tmp_path)
    st.assert_outputs_match(actual, expected, context=f"{model.name} on {target}")


def test_comparison_catches_differences():
    """The comparison itself must be able to fail."""
    expected = {"f": np.array([1.0, -2.0, 4.0], np.float32), "i": np.array([3, 4], np.int64)}
    assert st.compare_outputs(dict(expected), expected) == []
    close = {"f": expected["f"] + np.float32(4e-5 * 0.9), "i": expected["i"]}
    assert st.compare_outputs(close, expected) == []
    far = {"f": expected["f"] + np.float32(4e-5 * 1.5), "i": expected["i"]}
    assert "max|a-b|/max|b|" in st.compare_outputs(far, expected)[0]
    off_by_one = {"f": expected["f"], "i": expected["i"] + np.array([0, 1])}
    assert "1 of 2 elements differ" in st.compare_outputs(off_by_one, expected)[0]
    wrong_dtype = {"f": expected["f"].astype(np.float64), "i": expected["i"]}
    assert "expected float32[3]" in st.compare_outputs(wrong_dtype, expected)[0]
    nan = {"f": np.array([1.0, np.nan, 4.0], np.float32), "i": expected["i"]}
    assert "NaN mismatch" in st.compare_outputs(nan, expected)[0]
    assert "missing" in st.compare_outputs({"f": expected["f"]}, expected)[0]
