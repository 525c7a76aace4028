"""The CUDA depthwise kernel's choice, without a GPU: every case of test/gpu/check_depthwise.py
compiles for `--target cuda --arch sm_90` (NVRTC and ptxas accept the kernel) and `sinter inspect`
names the direct kernel the case expects ("cuda-c depthwise" or "cuda-c grouped-window"), and
neither for the cases it must not take, at every precision;
`--depthwise-kernel generic` leaves every case to the generic kernel. What the kernel computes
needs a GPU: check_depthwise.py runs the same cases there against onnxruntime
(docs/gpu-testing.md).
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import sinter_testing as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
import check_depthwise  # noqa: E402  (the cases)


def generators(artifact):
    return [kernel["generator"] for kernel in json.loads(st.sinter("inspect", artifact, "--json").stdout)["kernels"]]


@pytest.mark.parametrize("case", check_depthwise.CASES, ids=[case[0] for case in check_depthwise.CASES])
def test_the_direct_kernel_takes_the_cases_it_covers(case, tmp_path):
    name, x_shape, kernel, attributes, after, expected = case
    model = tmp_path / "model.onnx"
    check_depthwise.build(model, x_shape, kernel, attributes, after, np.random.default_rng(0))
    for precision in check_depthwise.PRECISIONS:
        artifact = tmp_path / f"{precision}.so"
        st.sinter("compile", model, "-o", artifact, "--force", "--target", "cuda", "--arch", "sm_90",
                  "--precision", precision)
        kinds = generators(artifact)
        assert [kind for kind in check_depthwise.DIRECT if kind in kinds] == ([expected] if expected else []), \
            (precision, kinds)
    generic = tmp_path / "generic.so"
    st.sinter("compile", model, "-o", generic, "--force", "--target", "cuda", "--arch", "sm_90",
              "--depthwise-kernel", "generic")
    assert not set(check_depthwise.DIRECT) & set(generators(generic))
