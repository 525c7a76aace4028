"""The tensor-core kernels' window gather, without a GPU: every case of
test/gpu/check_convolution.py compiles for `--target cuda --arch sm_90` at each of its variants
(NVRTC and ptxas accept the gather on both instruction families and several tiles), and every
tensor-core body of the generated source gathers the window (`rhs window gather` in its header).
What the kernels compute needs a GPU: check_convolution.py runs the same cases there against
onnxruntime (docs/gpu-testing.md).
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import sinter_testing as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
import check_convolution  # noqa: E402  (the cases)


@pytest.mark.parametrize("case", check_convolution.CASES, ids=[case[0] for case in check_convolution.CASES])
def test_convolutions_gather_their_windows(case, tmp_path):
    name, x_shape, kernel, attributes, around = case
    model = tmp_path / "model.onnx"
    check_convolution.build(model, x_shape, kernel, {"group": 1, **attributes}, around, np.random.default_rng(0))
    for precision, tile, flags in check_convolution.VARIANTS:
        label, _, problem = check_convolution.compile_variant(str(st.sinter_bin()), model, tmp_path, precision, tile, flags)
        assert problem is None, (label, problem)
