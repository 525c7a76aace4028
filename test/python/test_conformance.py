"""Op conformance: the ONNX backend node tests through the sinter CLI (test/conformance/).

test_target_meets_ratchet runs every node test on the reference target and on the compiled cpu
target (about 1.5 minutes each with 2 jobs) and fails when fewer pass than
test/conformance/ratchet.json records for that target, when a test crashed sinter, or when the
harness itself failed on a test.
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
    totals = json.loads(results.read_text())["totals"]
    summary = ", ".join(f"{c} {n}" for c, n in totals.items() if n)
    assert totals["harness-error"] == 0, f"the conformance harness failed on some tests: {summary}"
    assert totals["crash"] == 0, f"a node test crashed sinter on the {target} target: {summary}; see {results}"
    assert totals["pass"] >= ratchet, (
        f"{totals['pass']} node tests pass on the {target} target, fewer than the ratchet's "
        f"{ratchet} ({summary}); see {results}")
    if totals["pass"] > ratchet:
        print(f"{totals['pass']} passes > ratchet {ratchet}: raise it with scoreboard.py --ratchet")


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
