"""Op conformance: the ONNX backend node tests through the sinter CLI (test/conformance/).

test_target_meets_ratchet runs every node test on the reference target and on the compiled cpu
target (about 1.5 minutes each with 2 jobs) and fails when a test that test/conformance/ratchet.json
records as passing on that target no longer passes, when a test crashed sinter, or when the
harness itself failed on a test. Tests whose expected data the ONNX spec leaves undefined
(test/conformance/spec_undefined.py) are `spec-undefined`, neither passes nor failures, so the
ratchet means the same on every CPU.
test_runner_classifies_failures checks the runner against a stub CLI that fails on purpose in
each way the runner must tell apart, so the categories in docs/op-coverage.md can be trusted.
"""
import json
import os
import sys

import pytest

import sinter_testing as st

CONFORMANCE = st.ROOT / "test" / "conformance"
sys.path.insert(0, str(CONFORMANCE))
import run_node_tests  # noqa: E402


@pytest.mark.parametrize("target", ["reference", "cpu"])
def test_target_meets_ratchet(target):
    ratchet = json.loads((CONFORMANCE / "ratchet.json").read_text())[target]
    results = st.BUILD / "conformance" / f"results-{target}.json"
    run_node_tests.main(["--target", target, "--sinter", str(st.sinter_bin()),
                         "--jobs", "2", "--json", str(results)])
    report = json.loads(results.read_text())
    totals, tests = report["totals"], report["tests"]
    summary = ", ".join(f"{c} {n}" for c, n in totals.items() if n)
    assert totals["harness-error"] == 0, f"the conformance harness failed on some tests: {summary}"
    assert totals["crash"] == 0, f"a node test crashed sinter on the {target} target: {summary}; see {results}"
    # Which tests pass, not only how many: a new pass must not hide a lost one.
    lost = [name for name in ratchet["passing"] if tests.get(name, {}).get("category") != "pass"]
    assert not lost, (
        f"{len(lost)} node tests that passed on the {target} target no longer do ({summary}):\n  "
        + "\n  ".join(f"{name}: {tests.get(name, {}).get('category', 'missing')}: "
                       f"{tests.get(name, {}).get('reason', '')}"[:300] for name in lost[:20])
        + f"\nsee {results}")
    assert totals["pass"] >= ratchet["count"]
    gained = sorted(name for name, r in tests.items()
                    if r["category"] == "pass" and name not in set(ratchet["passing"]))
    if gained:
        print(f"{len(gained)} new passes ({', '.join(gained[:10])}...): record them with "
              "scoreboard.py --ratchet")


def test_undefined_expected_data_is_classified_not_compared(tmp_path):
    """A node test whose expected data holds casts of out-of-range floats into an integer type
    (undefined in the ONNX spec, and different between CPUs in numpy, which made the data) is
    `spec-undefined`, whatever those elements hold; a wrong defined element is still a
    wrong-result. Run on the reference target with expected outputs written here, so the truth
    is the spec's rule and not this machine's numpy."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = np.array([-9.5, -8.9, -8, 7.9, 8, 15, np.nan, np.inf, 0.5, -0.5], np.float32)
    defined = ~np.array([1, 0, 0, 0, 1, 1, 1, 1, 0, 0], bool)
    truth = np.where(defined, np.trunc(np.where(defined, x, 0)), 0).astype(np.int8)
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])],
                              [helper.make_tensor_value_info("y", TensorProto.INT4, [10])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    cases = {"test_undefined_garbage": (truth + 3 * ~defined, "spec-undefined"),
             "test_undefined_wrong_defined": (truth + (np.arange(10) == 3), "wrong-result")}
    for name, (expected, _) in cases.items():
        folder = tmp_path / name / "test_data_set_0"
        folder.mkdir(parents=True)
        onnx.save(model, str(folder.parent / "model.onnx"))
        (folder / "input_0.pb").write_bytes(numpy_helper.from_array(x, "x").SerializeToString())
        wrapped = (expected.astype(np.int64) + 8) % 16 - 8  # into INT4's range
        y = helper.make_tensor("y", TensorProto.INT4, [10], wrapped.tolist())
        (folder / "output_0.pb").write_bytes(y.SerializeToString())
    results = tmp_path / "results.json"
    run_node_tests.main(["--target", "reference", "--sinter", str(st.sinter_bin()),
                         "--data", str(tmp_path), "--jobs", "1", "--json", str(results)])
    tests = json.loads(results.read_text())["tests"]
    assert {name: tests[name]["category"] for name in cases} == {
        name: category for name, (_, category) in cases.items()}
    assert "5 of 10 elements" in tests["test_undefined_garbage"]["reason"]


STUB_FAULTS = {  # test name -> (fault injected by stub_sinter.py, category the runner must report)
    "test_abs": ("unsupported", "unsupported-op"),
    "test_acos": ("import", "import-error"),
    "test_acosh": ("runtime", "runtime-error"),
    "test_add": ("internal", "crash"),
    "test_add_bcast": ("abort", "crash"),
    "test_and2d": ("exit3", "crash"),
    "test_and3d": ("hang", "timeout"),
    "test_argmax_default_axis_example": ("wrong", "wrong-result"),
    "test_argmin_default_axis_example": ("missing", "wrong-result"),
    "test_atan": (None, "pass"),
    "test_sequence_insert_at_back": (None, "unsupported-type"),
}


def test_runner_classifies_failures(tmp_path, monkeypatch):
    faults = ";".join(f"/{name}/={fault}" for name, (fault, _) in STUB_FAULTS.items() if fault)
    monkeypatch.setenv("SINTER_STUB_FAULTS", faults)
    results = tmp_path / "results.json"
    stub = f"{sys.executable} {CONFORMANCE / 'stub_sinter.py'}"
    names = "|".join(STUB_FAULTS)
    run_node_tests.main(["--sinter", stub, "--filter", f"^({names})$", "--timeout", "5",
                         "--jobs", str(min(4, os.cpu_count() or 1)), "--json", str(results)])
    tests = json.loads(results.read_text())["tests"]
    got = {name: tests.get(name, {}).get("category") for name in STUB_FAULTS}
    assert got == {name: category for name, (_, category) in STUB_FAULTS.items()}
    assert "Abs" in tests["test_abs"]["reason"]
    assert "SIGABRT" in tests["test_add_bcast"]["reason"]


BIND_CASES = {  # test name -> (fault for stub_sinter.py, category, inputs the runner must bind)
    "test_reshape_reduced_dims": ("bind:shape", "pass", ["shape"]),
    "test_range_float_type_positive_delta": ("bind:limit+delta", "pass", ["limit", "delta"]),
    "test_reshape_extended_dims": ("bind:nothing", "compile-error", None),
    "test_abs": (None, "pass", None),
}


def test_runner_binds_exactly_the_inputs_compile_errors_name(tmp_path, monkeypatch):
    """A compiled target: when `sinter compile` names inputs a shape depends on, the runner binds
    exactly those (one more per attempt here), marks the pass with them, and stops when the error
    names nothing it can bind."""
    faults = ";".join(f"/{name}/={fault}" for name, (fault, _, _) in BIND_CASES.items() if fault)
    monkeypatch.setenv("SINTER_STUB_FAULTS", faults)
    results = tmp_path / "results.json"
    stub = f"{sys.executable} {CONFORMANCE / 'stub_sinter.py'}"
    run_node_tests.main(["--sinter", stub, "--target", "cpu", "--filter",
                         f"^({'|'.join(BIND_CASES)})$", "--timeout", "20",
                         "--jobs", str(min(4, os.cpu_count() or 1)), "--json", str(results)])
    report = json.loads(results.read_text())
    got = {name: (report["tests"][name]["category"], report["tests"][name].get("bound"))
           for name in BIND_CASES}
    assert got == {name: (category, bound) for name, (_, category, bound) in BIND_CASES.items()}
    assert "--bind-input nothing=FILE" in report["tests"]["test_reshape_extended_dims"]["reason"]
    assert report["passed_with_bound_inputs"] == 2
    # Range's start stays an input of the artifact.
    assert report["tests"]["test_range_float_type_positive_delta"]["all_inputs_bound"] is False
