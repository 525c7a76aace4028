"""The suite's truth is the same on every x86-64 machine CI can land on.

CI lands on AMD CPUs without AVX-512 and on Intel CPUs with it. numpy picks SIMD code paths at
run time, and where the result of an operation is undefined (a float cast into an integer type
it does not fit) or only close (transcendental functions), its paths differ. These tests check,
on whatever machine runs them:

- the ONNX node tests' expected data, materialised again with numpy held to its portable baseline
  (NPY_DISABLE_CPU_FEATURES: no AVX, AVX2, FMA or AVX-512 paths), agrees with the data the
  conformance run uses, within each test's tolerance, everywhere the ONNX spec defines the
  value (test/conformance/spec_undefined.py masks the rest): the node tests' truth does not
  depend on the CPU's SIMD level;
- the guards in conftest.py hold: an expected value from the reference evaluator's cast of an
  out-of-range float into an integer, or numpy's own warning for one, fails the test.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import sinter_testing as st

CONFORMANCE = st.ROOT / "test" / "conformance"
sys.path.insert(0, str(CONFORMANCE))
import node_tests  # noqa: E402
import spec_undefined  # noqa: E402


def _dispatched_features():
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    return [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]


def _tensor(path):
    tensor = onnx.TensorProto()
    tensor.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(tensor)


def test_node_test_data_does_not_depend_on_numpy_simd_paths(tmp_path):
    features = _dispatched_features()
    assert features, "numpy found no SIMD features to turn off: nothing would be compared"
    ours = node_tests.node_test_root(st.BUILD / "conformance")
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(features)}
    probe = subprocess.run(
        [sys.executable, "-c", "from numpy._core._multiarray_umath import __cpu_features__ as f;"
         f"print(sum(bool(f.get(x)) for x in {features!r}))"], env=env, capture_output=True,
        text=True, check=True)
    assert probe.stdout.strip() == "0", f"NPY_DISABLE_CPU_FEATURES did not take: {probe.stderr}"
    subprocess.run([sys.executable, str(CONFORMANCE / "node_tests.py"), str(tmp_path)], env=env,
                   check=True, capture_output=True, timeout=600)
    portable = tmp_path / f"onnx-{onnx.__version__}" / "node"
    differing, compared, other_inputs = [], 0, 0
    for test_dir in node_tests.list_tests(ours):
        rtol, atol = node_tests.tolerances(test_dir)
        for data_set in sorted(test_dir.glob("test_data_set_*")):
            other = portable / test_dir.name / data_set.name
            inputs = sorted(data_set.glob("input_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
            if any(p.read_bytes() != (other / p.name).read_bytes() for p in inputs):
                # Some cases make their inputs with numpy functions too (test_log: the log's
                # argument); on other inputs the outputs are another question.
                other_inputs += 1
                continue
            outputs = sorted(data_set.glob("output_*.pb"), key=lambda p: int(p.stem.split("_")[1]))
            if all(p.read_bytes() == (other / p.name).read_bytes() for p in outputs):
                compared += 1
                continue
            try:
                expected = [_tensor(p) for p in outputs]
                alternative = [_tensor(other / p.name) for p in outputs]
            except Exception:  # noqa: BLE001  (sequences and maps: compare bytes only)
                differing.append(f"{test_dir.name}/{data_set.name}: outputs differ")
                continue
            undefined = spec_undefined.undefined_elements(test_dir / "model.onnx", inputs,
                                                          [e.shape for e in expected])
            if undefined.whole_test:
                continue
            expected, alternative = spec_undefined.defined_parts(expected, alternative, undefined.masks)
            for index, (a, b) in enumerate(zip(expected, alternative)):
                a, b = np.asarray(a), np.asarray(b)
                if a.dtype.kind in "fc":
                    same = np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
                else:
                    same = np.array_equal(a, b)
                if not same:
                    differing.append(f"{test_dir.name}/{data_set.name}/output_{index}")
            compared += 1
    print(f"{compared} data sets compared, {other_inputs} with inputs that numpy computed differently")
    assert compared > 1000 and other_inputs < compared / 10, (compared, other_inputs)
    assert not differing, (f"{len(differing)} node-test outputs differ beyond tolerance between "
                           f"numpy's {features[-1]} and baseline code paths: {differing[:10]}")


def _cast_model(to):
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=to)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", to, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("to", [TensorProto.INT4, TensorProto.UINT8, TensorProto.INT16])
def test_reference_truth_from_an_undefined_cast_fails(to):
    low, high = spec_undefined.INTEGER_RANGES[to]
    evaluator = ReferenceEvaluator(_cast_model(to))
    evaluator.run(None, {"x": np.array([low, high, high + 0.5], np.float32)})  # defined: fine
    for bad in (high + 1.0, low - 1.0, np.nan):
        with pytest.raises(AssertionError, match="outside its range"):
            evaluator.run(None, {"x": np.array([0, bad, 1], np.float32)})


def test_numpy_undefined_cast_warning_fails():
    with pytest.raises(RuntimeWarning, match="invalid value encountered in cast"):
        np.array([np.nan, 1.0]).astype(np.int32)


def test_the_guard_is_lifted_on_the_masking_thread_only():
    # spec_undefined's own evaluation (which masks the undefined casts it finds) lifts the guard
    # for its thread; a test evaluating on another thread meanwhile is still checked.
    evaluator = ReferenceEvaluator(_cast_model(TensorProto.UINT8))
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def masking_thread():
        spec_undefined._state.depth = 1
        seen["inside"] = spec_undefined.evaluating()
        entered.set()
        release.wait(30)
        spec_undefined._state.depth = 0

    thread = threading.Thread(target=masking_thread)
    thread.start()
    try:
        assert entered.wait(30)
        assert seen["inside"] and not spec_undefined.evaluating()
        with pytest.raises(AssertionError, match="outside its range"):
            evaluator.run(None, {"x": np.array([0, 300, 1], np.float32)})
    finally:
        release.set()
        thread.join()
