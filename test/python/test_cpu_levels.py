"""One CPU artifact with kernels for several x86-64 levels (the default --cpu: x86-64-v2, -v3 and
-v4): the runtime runs the highest level the CPU has, SINTER_MAX_CPU_LEVEL caps it, and every
level's kernels compute what onnxruntime computes from one shared set of packed weights. Under
qemu-user as a CPU without AVX (Nehalem) the same artifact loads its x86-64-v2 kernels, and as a
Haswell its x86-64-v3 ones, so the choice is checked against CPUs this machine is not."""
import json
import os
import shutil
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

LEVELS = ["x86-64-v2", "x86-64-v3", "x86-64-v4"]


def host_levels():
    """The levels this machine has, from the kernel's view of cpuid (/proc/cpuinfo)."""
    flags = set(open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split())
    levels = ["x86-64-v2"] if {"sse4_2", "popcnt", "ssse3"} <= flags else []
    if levels and {"avx2", "fma", "bmi2", "f16c", "movbe"} <= flags:
        levels.append("x86-64-v3")
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            levels.append("x86-64-v4")
    return levels


def conv_model(path):
    """A 3x3 convolution (8 -> 20 channels on 15x13: no panel or block divides its shape), a
    depthwise 3x3 of stride 2, Relu, then Flatten and a MatMul by a constant with a bias: the
    blocked kernels' packed lhs, run-time windows and packed rhs."""
    rng = np.random.default_rng(11)
    w1 = (rng.standard_normal((20, 8, 3, 3)) * 0.2).astype(np.float32)
    b1 = (rng.standard_normal(20) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((20, 1, 3, 3)) * 0.3).astype(np.float32)
    head = (rng.standard_normal((20 * 8 * 7, 37)) * 0.05).astype(np.float32)
    bias = (rng.standard_normal(37) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], group=20, strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"]),
             helper.make_node("MatMul", ["f", "head"], ["m"]),
             helper.make_node("Add", ["m", "bias"], ["y"])]
    graph = helper.make_graph(
        nodes, "levels", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 15, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 37])],
        [numpy_helper.from_array(a, n) for n, a in
         (("w1", w1), ("b1", b1), ("w2", w2), ("head", head), ("bias", bias))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return {"x": rng.standard_normal((2, 8, 15, 13)).astype(np.float32)}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    folder = tmp_path_factory.mktemp("levels")
    model = folder / "model.onnx"
    inputs = conv_model(model)
    library = folder / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", *st.shape_flags(inputs), "-o", library])
    return {"folder": folder, "model": model, "inputs": inputs, "library": library,
            "truth": st.run_onnxruntime(model, inputs)}


def run_artifact(compiled, folder, prefix=(), env=None):
    """`sinter run` (under `prefix`, a qemu command line, when given) and the level the loader
    chose (`sinter bench --json`)."""
    environment = dict(os.environ, **(env or {}))
    out = folder / "out.npz"
    command = [*prefix, str(st.sinter_bin())]
    flags = st._input_flags(compiled["inputs"], folder)
    subprocess.run([*command, "run", str(compiled["library"]), *flags, "-o", str(out)],
                   check=True, env=environment, capture_output=True, timeout=600)
    bench = subprocess.run([*command, "bench", str(compiled["library"]), "--warmup", "0", "--iterations",
                            "1", "--json"], check=True, env=environment, capture_output=True, text=True,
                           timeout=600)
    return st._load_npz(out), json.loads(bench.stdout)["cpu_level"]


def test_default_artifact_names_every_level_and_exports_each_kernel_for_each(compiled):
    info = json.loads(st.run_cli(["inspect", compiled["library"], "--json"]).stdout)
    assert info["cpu_levels"] == LEVELS
    assert any(k["generator"] == "llvm-x86-blocked" for k in info["kernels"]), info["kernels"]
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(compiled["library"])], check=True,
                             capture_output=True, text=True).stdout.split()
    for kernel in info["kernels"]:
        for level in LEVELS:
            assert f"{kernel['name']}.{level}" in symbols, (kernel["name"], level)
        assert kernel["name"] not in symbols  # only the levels' entry points


def test_the_best_level_the_host_has_runs_by_default(compiled, tmp_path):
    actual, level = run_artifact(compiled, tmp_path)
    assert level == host_levels()[-1]
    st.assert_outputs_match(actual, compiled["truth"], context=f"default ({level})")


@pytest.mark.parametrize("limit", LEVELS)
def test_sinter_max_cpu_level_caps_the_choice(compiled, tmp_path, limit):
    """Each cap runs the highest level at or below it that this machine has; every level this
    machine has is run once this way and matches onnxruntime."""
    actual, level = run_artifact(compiled, tmp_path, env={"SINTER_MAX_CPU_LEVEL": limit})
    expected = [l for l in host_levels() if l <= limit][-1]
    assert level == expected
    st.assert_outputs_match(actual, compiled["truth"], context=f"SINTER_MAX_CPU_LEVEL={limit} ({level})")


@pytest.mark.parametrize("cpu, level", [("Nehalem", "x86-64-v2"), ("Haswell-noTSX", "x86-64-v3")])
def test_other_cpus_load_their_level_under_qemu(compiled, tmp_path, cpu, level):
    qemu = shutil.which("qemu-x86_64")
    assert qemu, "qemu-x86_64 not found (scripts/setup.sh installs qemu-user)"
    actual, chosen = run_artifact(compiled, tmp_path, prefix=[qemu, "-cpu", cpu])
    assert chosen == level
    st.assert_outputs_match(actual, compiled["truth"], context=f"{cpu} under qemu ({level})")


def test_levels_share_one_set_of_packed_weights(compiled, tmp_path):
    """The levels read the same panels, so three levels store no more weights than one."""
    single = tmp_path / "v3.so"
    st.run_cli(["compile", compiled["model"], "--target", "cpu", "--cpu", "x86-64-v3",
                *st.shape_flags(compiled["inputs"]), "-o", single])
    one = json.loads(st.run_cli(["inspect", single, "--json"]).stdout)
    every = json.loads(st.run_cli(["inspect", compiled["library"], "--json"]).stdout)
    assert one["cpu_levels"] == ["x86-64-v3"]
    assert every["weight_bytes"] == one["weight_bytes"]


def test_a_cap_below_every_level_and_an_unknown_cap_are_clear_errors(compiled, tmp_path):
    single = tmp_path / "v3.so"
    st.run_cli(["compile", compiled["model"], "--target", "cpu", "--cpu", "x86-64-v3",
                *st.shape_flags(compiled["inputs"]), "-o", single])
    for library, limit, message in [
            (single, "x86-64-v2", "has kernels for x86-64-v3, none at or below SINTER_MAX_CPU_LEVEL=x86-64-v2"),
            (compiled["library"], "pentium", "SINTER_MAX_CPU_LEVEL is 'pentium', not a level")]:
        result = subprocess.run([str(st.sinter_bin()), "bench", str(library), "--iterations", "1"],
                                env=dict(os.environ, SINTER_MAX_CPU_LEVEL=limit), capture_output=True,
                                text=True, timeout=300)
        assert result.returncode != 0
        assert message in result.stderr, result.stderr
