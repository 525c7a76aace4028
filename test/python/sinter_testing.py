"""Shared helpers for the Python-driven tests: finding and running the sinter CLI, making model
inputs, running onnxruntime as the independent truth, and comparing outputs with a report that
says which output differs, where, and by how much.

CTest sets SINTER_BIN (the CLI), SINTER_ROOT (the source tree) and SINTER_BUILD (the build
tree); outside CTest they default to the checkout containing this file and its build/ folder.

Targets: a target turns (model, inputs) into outputs through the CLI. "reference" runs the
reference evaluator; "cpu" compiles a shared library and runs that. SINTER_TARGETS (comma-
separated, default "reference") picks which ones the model tests parametrise over.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(os.environ.get("SINTER_ROOT", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("SINTER_BUILD", ROOT / "build"))
MODELS_DIR = ROOT / "models"

sys.path.insert(0, str(MODELS_DIR))
import make_input  # noqa: E402  (models/make_input.py: the one input generator)

# Relative tolerance per float dtype, on max|actual - expected| / max|expected|.
FLOAT_TOLERANCE = {np.dtype(np.float16): 1e-3, np.dtype(np.float32): 1e-5,
                   np.dtype(np.float64): 1e-10}


def sinter_bin():
    """The CLI's path; fails the calling test (never skips it) when the binary is missing."""
    path = Path(os.environ.get("SINTER_BIN", BUILD / "bin" / "sinter"))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"sinter CLI not found at {path} (build it, or set SINTER_BIN)")
    return path


def sinter(*args, expect=0, timeout=300):
    """Runs `sinter ARGS...`; fails with the command, exit code and output unless it exits with
    `expect` within `timeout` seconds."""
    command = [str(sinter_bin())] + [str(a) for a in args]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out after {timeout} s: {' '.join(command)}")
    if result.returncode != expect:
        pytest.fail(f"expected exit {expect}, got {result.returncode}: {' '.join(command)}\n"
                    f"--- stderr ---\n{result.stderr}\n--- stdout ---\n{result.stdout}")
    return result


def run_cli(args, timeout=300):
    """Runs `sinter ARGS...` and fails unless it exits 0."""
    return sinter(*args, timeout=timeout)


def error_line(result):
    """The last `sinter: error: ` line of a failed command's stderr."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("sinter: error: ")]
    assert lines, result.stderr
    return lines[-1]


def model_files():
    return sorted(MODELS_DIR.glob("*.onnx"))


def has_symbolic_dims(model_path):
    model = onnx.load(str(model_path), load_external_data=False)
    return any(not d.HasField("dim_value")
               for i in make_input.graph_inputs(model) for d in i.type.tensor_type.shape.dim)


def make_inputs(model_path, symbolic_dim=1):
    return make_input.make_inputs(str(model_path), symbolic_dim=symbolic_dim)


def run_onnxruntime(model_path, inputs):
    """The independent truth: onnxruntime on the CPU with every graph optimisation off."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(str(model_path), options,
                                           providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def _input_flags(inputs, workdir):
    flags = []
    for index, (name, array) in enumerate(inputs.items()):
        path = workdir / f"input_{index}_{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.npy"
        np.save(path, array)
        flags += ["--input", f"{name}={path}"]
    return flags


def _load_npz(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def run_reference(model_path, inputs, workdir):
    out = workdir / "outputs.npz"
    run_cli(["run", model_path, "--reference", *_input_flags(inputs, workdir), "-o", out])
    return _load_npz(out)


def shape_flags(inputs):
    """--shape NAME=AxB for each input: artifacts are compiled for the inputs' exact shapes."""
    flags = []
    for name, array in inputs.items():
        flags += ["--shape", f"{name}={'x'.join(str(d) for d in array.shape)}"]
    return flags


def run_artifact(library, inputs, workdir):
    """`sinter run` on a compiled artifact: its outputs by name."""
    out = workdir / "outputs.npz"
    run_cli(["run", library, *_input_flags(inputs, workdir), "-o", out])
    return _load_npz(out)


def run_cpu(model_path, inputs, workdir):
    library = workdir / "model.so"
    run_cli(["compile", model_path, "--target", "cpu", *shape_flags(inputs), "-o", library])
    return run_artifact(library, inputs, workdir)


TARGETS = {"reference": run_reference, "cpu": run_cpu}


def enabled_targets():
    names = [t.strip() for t in os.environ.get("SINTER_TARGETS", "reference,cpu").split(",") if t.strip()]
    unknown = [t for t in names if t not in TARGETS]
    if unknown:
        raise ValueError(f"SINTER_TARGETS names unknown targets {unknown}; known: {sorted(TARGETS)}")
    return names


def _where(array, flat_index):
    """'[i, j, ...]' for a flat index into the array."""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat_index, array.shape)) + "]"


def compare_arrays(name, actual, expected):
    """One line describing how `actual` differs from `expected`, or None when it matches:
    floats within FLOAT_TOLERANCE (relative to max|expected|, NaNs in the same places),
    everything else exactly, and dtype and shape always exactly."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return (f"{name}: got {actual.dtype}{list(actual.shape)}, "
                f"expected {expected.dtype}{list(expected.shape)}")
    if actual.size == 0:
        return None
    if expected.dtype in FLOAT_TOLERANCE:
        a, b = actual.astype(np.float64), expected.astype(np.float64)
        if not np.array_equal(np.isnan(a), np.isnan(b)):
            index = int(np.argmax(np.isnan(a) != np.isnan(b)))
            return (f"{name}: NaN mismatch at {_where(a, index)}: got {a.flat[index]:.9g}, "
                    f"expected {b.flat[index]:.9g}")
        a, b = np.nan_to_num(a, nan=0.0), np.nan_to_num(b, nan=0.0)
        error = np.abs(a - b)
        error[a == b] = 0.0  # equal infinities
        scale = np.max(np.abs(b[np.isfinite(b)]), initial=0.0)
        relative = np.max(error) / scale if scale > 0 else np.max(error)
        tolerance = FLOAT_TOLERANCE[expected.dtype]
        if not relative <= tolerance:
            index = int(np.argmax(error))
            return (f"{name}: max|a-b|/max|b| = {relative:.3g} > {tolerance:g}; worst at "
                    f"{_where(a, index)}: got {a.flat[index]:.9g}, expected {b.flat[index]:.9g} "
                    f"(max|b| = {scale:.6g})")
        return None
    mismatches = actual != expected
    if np.any(mismatches):
        index = int(np.argmax(mismatches))
        return (f"{name}: {np.count_nonzero(mismatches)} of {actual.size} elements differ; "
                f"first at {_where(actual, index)}: got {actual.flat[index].item()!r}, "
                f"expected {expected.flat[index].item()!r}")
    return None


def compare_outputs(actual, expected):
    """Every problem found comparing two name -> array dicts (missing, extra, different)."""
    problems = [f"{name}: missing from sinter's outputs" for name in expected if name not in actual]
    problems += [f"{name}: not an output of the model" for name in actual if name not in expected]
    for name in expected:
        if name in actual:
            problem = compare_arrays(name, np.asarray(actual[name]), np.asarray(expected[name]))
            if problem:
                problems.append(problem)
    return problems


def assert_outputs_match(actual, expected, context=""):
    problems = compare_outputs(actual, expected)
    if problems:
        header = f"{context}: " if context else ""
        pytest.fail(header + f"{len(problems)} output(s) differ from onnxruntime:\n  "
                    + "\n  ".join(problems), pytrace=False)
