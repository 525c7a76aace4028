"""`sinter verify`: compiled outputs against a truth, golden folders, bisection, JUnit, and
byte-identical artifacts. The truths the tests check sinter against are independent of it:
numpy arithmetic on outputs that `sinter run` and onnxruntime give, hashlib, a Python splitmix64,
xml.etree, and models edited with onnx.helper so the diverging node is known beforehand.
"""
import filecmp
import hashlib
import json
import os
import sys
import xml.etree.ElementTree as ET

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

DIVERGE = 3  # verify's exit status when outputs diverge
os.environ["SINTER_PYTHON"] = sys.executable  # --against onnxruntime: this Python has it


def verify(*args, expect=0, timeout=300):
    return st.sinter("verify", *args, expect=expect, timeout=timeout)


def verify_json(*args, expect=0, timeout=300):
    result = verify(*args, "--json", expect=expect, timeout=timeout)
    return json.loads(result.stdout)


def chain_model(path, bias_shift=None, culprit="add_5"):
    """x f32[2,16] through MatMul, Add(bias), Relu/Tanh/Sigmoid blocks, each node named; with
    `bias_shift`, the bias of node `culprit` is shifted by it (the deliberately broken model)."""
    rng = np.random.default_rng(7)
    nodes, initializers = [], []
    value = "x"
    for block in range(4):
        weight = rng.uniform(-0.5, 0.5, (16, 16)).astype(np.float32)
        bias = rng.uniform(-0.5, 0.5, (16,)).astype(np.float32)
        add = f"add_{2 * block + 1}"
        if bias_shift is not None and add == culprit:
            bias = bias + np.float32(bias_shift)
        initializers += [numpy_helper.from_array(weight, f"w{block}"), numpy_helper.from_array(bias, f"b{block}")]
        nodes.append(helper.make_node("MatMul", [value, f"w{block}"], [f"mm{block}"], name=f"matmul_{2 * block}"))
        nodes.append(helper.make_node("Add", [f"mm{block}", f"b{block}"], [f"sum{block}"], name=add))
        activation = ["Relu", "Tanh", "Sigmoid", "Relu"][block]
        value = "y" if block == 3 else f"act{block}"
        nodes.append(helper.make_node(activation, [f"sum{block}"], [value], name=f"{activation.lower()}_{block}"))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_verify")
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def symbol_flags(model):
    """--dim SYMBOL=2 for every symbolic dim of the model's inputs."""
    loaded = onnx.load(str(model), load_external_data=False)
    symbols = sorted({d.dim_param for i in loaded.graph.input for d in i.type.tensor_type.shape.dim
                      if d.dim_param})
    return [arg for s in symbols for arg in ("--dim", f"{s}=2")]


# --- verify passes and reports what numpy computes ----------------------------------------------

def test_metrics_are_numpy_metrics_against_onnxruntime(tmp_path):
    """The reported metrics are those of the artifact's outputs (sinter run) against onnxruntime's
    outputs, computed here with numpy."""
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    inputs = st.make_inputs(model)
    (name, array), = inputs.items()
    np.save(tmp_path / "x.npy", array)
    artifact = tmp_path / "mlp.so"
    report = verify_json(model, "--target", "cpu", "--against", "onnxruntime", "--input", f"{name}={tmp_path / 'x.npy'}",
                         "-o", artifact)
    assert report["passed"] and report["truth"].startswith("onnxruntime")
    st.run_cli(["run", artifact, tmp_path / "x.npy", "-o", tmp_path / "out.npz"])
    actual = np.load(tmp_path / "out.npz")
    expected = st.run_onnxruntime(model, inputs)
    (row,) = report["cases"][0]["outputs"]
    a, e = actual[row["output"]].astype(np.float64), expected[row["output"]].astype(np.float64)
    difference = np.abs(a - e)
    assert row["max_abs"] == pytest.approx(difference.max(), rel=1e-12, abs=1e-300)
    assert row["relative_l2"] == pytest.approx(np.linalg.norm(a - e) / np.linalg.norm(e), rel=1e-9, abs=1e-300)
    assert row["mismatched"] == int(np.sum(difference > row["atol"] + row["rtol"] * np.abs(e)))
    assert row["elements"] == e.size and row["type"] == "f32[1,8]"
    # The fp32 defaults docs/cli.md states: rtol 1e-4, atol max(1e-5, 1e-5 * max|truth|).
    assert row["rtol"] == 1e-4 and row["atol"] == pytest.approx(max(1e-5, 1e-5 * np.abs(e).max()), rel=1e-6)


@pytest.mark.parametrize("model", st.model_files(), ids=lambda path: path.stem)
def test_every_model_verifies_on_cpu_at_default_tolerances(model):
    report = verify_json(model, "--target", "cpu", *symbol_flags(model), timeout=600)
    assert report["passed"] and report["outputs_compared"] >= 1
    assert report["storage_precision"] == "fp32" and report["target"] == "cpu"


def test_table_and_exit_status_of_a_divergence(tmp_path):
    original = chain_model(tmp_path / "chain.onnx")
    broken = chain_model(tmp_path / "broken.onnx", bias_shift=0.25)
    artifact = tmp_path / "broken.so"
    st.run_cli(["compile", broken, "--target", "cpu", "-o", artifact])
    result = verify(original, artifact, expect=DIVERGE)
    assert "DIVERGES" in result.stdout and "verify: FAILED: 1 of 1 output diverges" in result.stdout
    assert "outputs diverge" in result.stderr
    # The artifact of the original model passes.
    verify(original, "--target", "cpu")


# --- bisection names the node that was changed ---------------------------------------------------

@pytest.mark.parametrize("culprit", ["add_3", "add_5"])
def test_bisect_names_the_changed_node(tmp_path, culprit):
    original = chain_model(tmp_path / "chain.onnx")
    broken = chain_model(tmp_path / "broken.onnx", bias_shift=0.25, culprit=culprit)
    artifact = tmp_path / "broken.so"
    report = verify_json(broken, "--truth-model", original, "--target", "cpu", "--bisect", "-o", artifact,
                         expect=DIVERGE)
    bisect = report["bisect"]
    assert bisect["found"], bisect["summary"]
    assert bisect["node"] == culprit and bisect["op_type"] == "Add" and bisect["opset"] == 17
    assert bisect["value"] == {"add_3": "sum1", "add_5": "sum2"}[culprit]
    # Every element of the shifted bias row differs by 0.25 from the truth.
    assert bisect["error"]["max_abs"] == pytest.approx(0.25, rel=1e-4)
    assert bisect["error"]["mismatched"] == 32
    # The kernel named is the artifact's (sinter inspect) and computes an Add.
    kernels = {k["name"]: k["ops"] for k in json.loads(st.run_cli(["inspect", artifact, "--json"]).stdout)["kernels"]}
    assert bisect["kernel"] in kernels and "Add" in kernels[bisect["kernel"]], (bisect, kernels)
    assert bisect["kernel_ops"] == kernels[bisect["kernel"]]
    # The bias is wrong whatever the fusion: the variant with one kernel per node diverges too.
    assert "--disable-pass fuse-kernels (one kernel per node) output 'y' still diverges" in bisect["summary"]


def test_bisect_on_a_torch_model(tmp_path):
    """gpt2_tiny with one bias Add's initializer shifted: bisection must name that Add."""
    model = onnx.load(str(st.MODELS_DIR / "gpt2_tiny.onnx"))
    initializers = {t.name: t for t in model.graph.initializer}
    adds = [n for n in model.graph.node if n.op_type == "Add" and any(i in initializers for i in n.input)
            and numpy_helper.to_array(initializers[[i for i in n.input if i in initializers][0]]).size > 1]
    culprit = adds[len(adds) // 2]
    tensor = initializers[[i for i in culprit.input if i in initializers][0]]
    values = numpy_helper.to_array(tensor) + np.float32(0.5)
    shared = sum(tensor.name in n.input for n in model.graph.node)
    assert shared == 1, "the changed initializer must feed that one node"
    tensor.CopyFrom(numpy_helper.from_array(values.astype(np.float32), tensor.name))
    onnx.save(model, str(tmp_path / "broken.onnx"))
    report = verify_json(tmp_path / "broken.onnx", "--truth-model", st.MODELS_DIR / "gpt2_tiny.onnx",
                         "--target", "cpu", "--dim", "batch=1", "--dim", "seq=8", "--bisect",
                         expect=DIVERGE, timeout=600)
    assert report["bisect"]["found"], report["bisect"]["summary"]
    assert culprit.name and report["bisect"]["node"] == culprit.name
    assert report["bisect"]["op_type"] == "Add"
    assert report["bisect"]["value"] == culprit.output[0]


def test_bisect_of_an_artifact_from_another_model_says_so(tmp_path):
    original = chain_model(tmp_path / "chain.onnx")
    broken = chain_model(tmp_path / "broken.onnx", bias_shift=0.25)
    artifact = tmp_path / "broken.so"
    st.run_cli(["compile", broken, "--target", "cpu", "-o", artifact])
    report = verify_json(original, artifact, "--bisect", expect=DIVERGE)
    assert not report["bisect"]["found"]
    assert "agrees with the reference" in report["bisect"]["summary"]


# --- golden folders --------------------------------------------------------------------------------

def test_golden_round_trip(tmp_path):
    model = st.MODELS_DIR / "tiny_cnn.onnx"
    golden = tmp_path / "golden"
    artifact = tmp_path / "cnn.so"
    report = verify_json(model, "--target", "cpu", "--random", "2", "--seed", "5", "--write-golden", golden,
                         "-o", artifact)
    assert report["golden_written"] == str(golden)
    manifest = json.loads((golden / "manifest.json").read_text())
    assert manifest["model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert manifest["format"] == "sinter-golden" and manifest["cases"] == ["test_data_set_0", "test_data_set_1"]
    assert ["--target", "cpu"] in manifest["compile_flags"]
    assert manifest["outputs"][0]["rtol"] == 1e-4 and manifest["outputs"][0]["atol"] == 1e-5  # softmax: max <= 1
    assert manifest["sinter_version"] in st.sinter("--version").stdout
    # The stored outputs are the reference's (sinter run --reference on the stored inputs).
    stored_input = numpy_helper.to_array(onnx.load_tensor(str(golden / "test_data_set_1" / "input_0.pb")))
    np.save(tmp_path / "in.npy", stored_input)
    st.run_cli(["run", model, "--reference", tmp_path / "in.npy", "-o", tmp_path / "ref.npz"])
    stored_output = numpy_helper.to_array(onnx.load_tensor(str(golden / "test_data_set_1" / "output_0.pb")))
    np.testing.assert_array_equal(stored_output, np.load(tmp_path / "ref.npz")["probabilities"])

    # Against the golden folder: the artifact just compiled, and a fresh compile.
    assert verify_json(model, artifact, "--golden", golden)["passed"]
    assert verify_json(model, "--target", "cpu", "--golden", golden)["inputs"] == f"golden {golden}"

    # Never overwritten without --force, and --force replaces only golden folders.
    result = verify(model, "--target", "cpu", "--write-golden", golden, expect=1)
    assert "--force" in st.error_line(result)
    verify(model, artifact, "--write-golden", golden, "--force")
    other = tmp_path / "not_golden"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    result = verify(model, artifact, "--write-golden", other, "--force", expect=1)
    assert "not a golden folder" in st.error_line(result)
    assert (other / "keep.txt").read_text() == "mine"


def test_golden_of_another_model_is_refused(tmp_path):
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    golden = tmp_path / "golden"
    verify(model, "--target", "cpu", "--write-golden", golden)
    changed = onnx.load(str(model))
    changed.producer_name = "edited"  # same computation, other bytes
    onnx.save(changed, str(tmp_path / "edited.onnx"))
    result = verify(tmp_path / "edited.onnx", "--target", "cpu", "--golden", golden, expect=1)
    message = st.error_line(result)
    assert hashlib.sha256(model.read_bytes()).hexdigest() in message
    assert hashlib.sha256((tmp_path / "edited.onnx").read_bytes()).hexdigest() in message


def test_perturbed_golden_output_diverges(tmp_path):
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    golden = tmp_path / "golden"
    artifact = tmp_path / "mlp.so"
    verify(model, "--target", "cpu", "--write-golden", golden, "-o", artifact)
    path = golden / "test_data_set_0" / "output_0.pb"
    values = numpy_helper.to_array(onnx.load_tensor(str(path))).copy()
    values[0, 5] += np.float32(0.01) + np.float32(0.01) * abs(values[0, 5])
    onnx.save_tensor(numpy_helper.from_array(values), str(path))
    report = verify_json(model, artifact, "--golden", golden, expect=DIVERGE)
    (row,) = report["cases"][0]["outputs"]
    assert row["mismatched"] == 1 and row["worst_index"] == [0, 5]
    # A per-output tolerance wide enough lets it pass; one for another output is an error.
    assert verify_json(model, artifact, "--golden", golden, "--atol", "scores=0.1")["passed"]
    result = verify(model, artifact, "--golden", golden, "--atol", "nope=0.1", expect=1)
    assert "nope" in st.error_line(result)


# --- JUnit -------------------------------------------------------------------------------------------

def check_junit(path, tests, failures):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    for attribute in ("name", "tests", "failures", "errors", "time"):
        assert attribute in root.attrib, attribute
    assert int(root.get("tests")) == tests and int(root.get("failures")) == failures
    suites = root.findall("testsuite")
    assert suites
    counted_tests = counted_failures = 0
    for suite in suites:
        for attribute in ("name", "package", "id", "timestamp", "hostname", "tests", "failures", "errors", "time"):
            assert attribute in suite.attrib, attribute
        assert suite.find("properties") is not None
        assert suite.find("system-out") is not None and suite.find("system-err") is not None
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        for case in cases:
            for attribute in ("name", "classname", "time"):
                assert attribute in case.attrib, attribute
            float(case.get("time"))
            failure = case.find("failure")
            if failure is not None:
                assert failure.get("message") and failure.get("type")
                counted_failures += 1
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
        counted_tests += len(cases)
    assert (counted_tests, counted_failures) == (tests, failures)
    return root


def test_junit_output(tmp_path):
    original = chain_model(tmp_path / "chain.onnx")
    broken = chain_model(tmp_path / "broken.onnx", bias_shift=0.25)
    verify(original, "--target", "cpu", "--random", "2", "--junit", tmp_path / "pass.xml")
    check_junit(tmp_path / "pass.xml", tests=2, failures=0)
    verify(broken, "--truth-model", original, "--target", "cpu", "--bisect", "--junit", tmp_path / "fail.xml",
           expect=DIVERGE)
    root = check_junit(tmp_path / "fail.xml", tests=1, failures=1)
    failure = root.find("testsuite/testcase/failure")
    assert "add_5" in failure.text and "y diverges" in failure.get("message")


# --- inputs -------------------------------------------------------------------------------------------

def splitmix64(state):
    mask = (1 << 64) - 1
    while True:
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        yield z ^ (z >> 31)


def expected_random(shape, dtype, seed, case, index, high):
    """docs/cli.md's definition of --random, written again in Python."""
    mix = splitmix64(seed)
    state = next(mix) ^ case
    mix = splitmix64(state)
    state = next(mix) ^ index
    mix = splitmix64(state)
    values = splitmix64(next(mix))
    count = int(np.prod(shape))
    out = []
    for _ in range(count):
        bits = next(values)
        if dtype == np.bool_:
            out.append(bits >> 63)
        elif np.issubdtype(dtype, np.integer):
            out.append(bits % high)
        else:
            magnitude = 0.1 + 0.9 * (bits >> 11) * 2.0 ** -53
            out.append(-magnitude if next(values) >> 63 else magnitude)
    return np.array(out, dtype=np.float64).astype(dtype).reshape(shape)


def test_random_inputs_follow_their_definition(tmp_path):
    """--random's values are the documented splitmix64 streams (so the same on every machine),
    and integer inputs that index a Gather stay below the gathered axis."""
    model = st.MODELS_DIR / "bert_tiny.onnx"
    golden = tmp_path / "golden"
    verify(model, "--target", "cpu", "--dim", "batch=1", "--dim", "seq=8", "--random", "2", "--seed", "11",
           "--write-golden", golden, timeout=600)
    names = [i["name"] for i in json.loads((golden / "manifest.json").read_text())["inputs"]]
    assert names == ["input_ids", "token_type_ids", "attention_mask"]
    highs = {"input_ids": 256, "token_type_ids": 2, "attention_mask": 2}  # vocabulary, types, mask default
    for case in range(2):
        for index, name in enumerate(names):
            stored = numpy_helper.to_array(onnx.load_tensor(str(golden / f"test_data_set_{case}" / f"input_{index}.pb")))
            expected = expected_random((1, 8), np.int64, 11, case, index, highs[name])
            np.testing.assert_array_equal(stored, expected)
    # Floats, from tiny_mlp: |v| in [0.1, 1], both signs.
    verify(st.MODELS_DIR / "tiny_mlp.onnx", "--target", "cpu", "--seed", "3", "--write-golden", tmp_path / "mlp")
    stored = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "mlp" / "test_data_set_0" / "input_0.pb")))
    np.testing.assert_array_equal(stored, expected_random((1, 64), np.float32, 3, 0, 0, 2))
    assert (np.abs(stored) >= 0.1).all() and (np.abs(stored) <= 1).all() and (stored < 0).any()


def test_onnx_test_data_sets(tmp_path):
    model = st.MODELS_DIR / "tiny_cnn.onnx"
    inputs = st.make_inputs(model)
    for number in range(2):
        folder = tmp_path / "data" / f"test_data_set_{number}"
        folder.mkdir(parents=True)
        array = next(iter(inputs.values())) * (1 + number)
        onnx.save_tensor(numpy_helper.from_array(array), str(folder / "input_0.pb"))
        outputs = st.run_onnxruntime(model, {next(iter(inputs)): array})
        onnx.save_tensor(numpy_helper.from_array(outputs["probabilities"]), str(folder / "output_0.pb"))
    report = verify_json(model, "--target", "cpu", "--test-data", tmp_path / "data", "--against", "test-data")
    assert [c["name"] for c in report["cases"]] == ["test_data_set_0", "test_data_set_1"] and report["passed"]
    assert report["truth"] == "test data outputs"
    # A wrong expected output in the data set diverges.
    path = tmp_path / "data" / "test_data_set_1" / "output_0.pb"
    wrong = numpy_helper.to_array(onnx.load_tensor(str(path))) * np.float32(1.01)
    onnx.save_tensor(numpy_helper.from_array(wrong), str(path))
    verify(model, "--target", "cpu", "--test-data", tmp_path / "data", "--against", "test-data", expect=DIVERGE)


def test_against_command(tmp_path):
    """A truth command gets MODEL INPUT_DIR OUTPUT_DIR; here it is onnxruntime, then a wrong one."""
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    script = tmp_path / "truth.py"
    script.write_text(
        "import sys, numpy as np, onnxruntime as ort\n"
        "model, inputs, outputs = sys.argv[1:4]\n"
        "s = ort.InferenceSession(model, providers=['CPUExecutionProvider'])\n"
        "feeds = {p.name: np.load(f'{inputs}/input_{k}.npy') for k, p in enumerate(s.get_inputs())}\n"
        "scale = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0\n"
        "for k, v in enumerate(s.run(None, feeds)):\n"
        "    np.save(f'{outputs}/output_{k}.npy', v * np.float32(scale))\n")
    verify(model, "--target", "cpu", "--against-command", f"{sys.executable} {script}")
    # The protocol appends MODEL INPUT_DIR OUTPUT_DIR, so a command's own arguments come first;
    # this one scales the outputs by 2 through a wrapper.
    wrapper = tmp_path / "wrong.sh"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$1" "$2" "$3" 2\n')
    wrapper.chmod(0o755)
    verify(model, "--target", "cpu", "--against-command", str(wrapper), expect=DIVERGE)
    result = verify(model, "--target", "cpu", "--against-command", "false", expect=1)
    assert "failed (exit status 1)" in st.error_line(result)


@pytest.mark.parametrize("args,needle", [
    (["--against", "magic"], "unknown --against"),
    (["--against", "onnxruntime", "--golden", "g"], "give one of them"),
    (["--random", "1", "--input", "features=x.npy"], "give the inputs one way"),
    (["--random", "0"], "at least one"),
    (["--rtol", "abc"], "not a non-negative number"),
    (["--against", "test-data"], "give --test-data"),
])
def test_user_errors(tmp_path, args, needle):
    result = verify(st.MODELS_DIR / "tiny_mlp.onnx", "--target", "cpu", *args, expect=1)
    assert needle in st.error_line(result)


def test_symbolic_dims_need_values_for_random_inputs():
    result = verify(st.MODELS_DIR / "tiny_dynamic.onnx", "--target", "cpu", expect=1)
    assert "--dim" in st.error_line(result) and "batch" in st.error_line(result)


# --- determinism ----------------------------------------------------------------------------------------

def test_artifacts_are_byte_identical(tmp_path):
    """Same model and flags: the same bytes, whatever the output folder, the working folder, or
    whether compile or verify wrote it."""
    for model in ["tiny_cnn.onnx", "tiny_attention.onnx"]:
        first, second = tmp_path / "a" / model, tmp_path / "b" / "deeper" / model
        first.parent.mkdir(parents=True, exist_ok=True)
        second.parent.mkdir(parents=True, exist_ok=True)
        st.run_cli(["compile", st.MODELS_DIR / model, "--target", "cpu", "-o", first.with_suffix(".so")])
        st.run_cli(["compile", st.MODELS_DIR / model, "--target", "cpu", "-o", second.with_suffix(".so")])
        assert filecmp.cmp(first.with_suffix(".so"), second.with_suffix(".so"), shallow=False), model
        third = tmp_path / f"verify_{model}.so"
        verify(st.MODELS_DIR / model, "--target", "cpu", "-o", third)
        assert filecmp.cmp(first.with_suffix(".so"), third, shallow=False), model


def test_cpu_outputs_do_not_depend_on_the_thread_count(tmp_path):
    """docs/ci.md: the runtime's threads split independent output tiles and rows, never a sum, so
    a CPU artifact's outputs are bit-identical with 1, 2 or 5 worker threads."""
    for model, flags in [("resnet_narrow.onnx", []), ("gpt2_tiny.onnx", ["--dim", "batch=1", "--dim", "seq=8"]),
                         ("tiny_attention.onnx", [])]:
        artifact = tmp_path / f"{model}.so"
        golden = tmp_path / f"{model}.golden"
        verify(st.MODELS_DIR / model, "--target", "cpu", *flags, "-o", artifact, "--write-golden", golden)
        inputs = sorted((golden / "test_data_set_0").glob("input_*.pb"))
        outputs = []
        for threads in (1, 2, 5):
            out = tmp_path / f"{model}.{threads}.npz"
            st.run_cli(["run", artifact, *inputs, "--threads", threads, "-o", out])
            with np.load(out) as archive:
                outputs.append({name: archive[name].tobytes() for name in archive.files})
        assert outputs[0] == outputs[1] == outputs[2], model


def test_golden_is_not_written_on_divergence_and_bad_manifests_are_refused(tmp_path):
    original = chain_model(tmp_path / "chain.onnx")
    broken = chain_model(tmp_path / "broken.onnx", bias_shift=0.25)
    verify(broken, "--truth-model", original, "--target", "cpu", "--write-golden", tmp_path / "g", expect=DIVERGE)
    assert not (tmp_path / "g").exists()
    verify(original, "--target", "cpu", "--write-golden", tmp_path / "g")
    manifest = tmp_path / "g" / "manifest.json"
    manifest.write_text(manifest.read_text()[:-20])
    result = verify(original, "--target", "cpu", "--golden", tmp_path / "g", expect=1)
    assert "malformed JSON" in st.error_line(result) and "manifest.json" in st.error_line(result)
    (tmp_path / "g" / "manifest.json").unlink()
    result = verify(original, "--target", "cpu", "--golden", tmp_path / "g", expect=1)
    assert "no manifest.json" in st.error_line(result)
