"""End-to-end tests of the sinter CLI (`inspect`, `run`), checked against onnxruntime and against
the models' own definitions (built here with onnx.helper, so every expected field is known).

CTest sets SINTER_BIN and SINTER_ROOT; outside CTest they default to build/bin/sinter in the
checkout that holds this file.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(os.environ.get("SINTER_ROOT", Path(__file__).resolve().parents[2]))
SINTER = Path(os.environ.get("SINTER_BIN", ROOT / "build" / "bin" / "sinter"))

OPSET = 17
IR_VERSION = 8
WEIGHT = (np.arange(60, dtype=np.float32).reshape(3, 20) - 30) / 16  # 240 bytes: elided in --ir


def sinter(*args, expect=None):
    """Runs the CLI; with `expect`, fails unless it exits with that code."""
    if not (SINTER.is_file() and os.access(SINTER, os.X_OK)):
        pytest.fail(f"sinter CLI not found at {SINTER} (build it, or set SINTER_BIN)")
    result = subprocess.run([str(SINTER), *map(str, args)], capture_output=True, text=True,
                            timeout=120)
    if expect is not None and result.returncode != expect:
        pytest.fail(f"expected exit {expect}, got {result.returncode}: sinter {' '.join(map(str, args))}"
                    f"\n--- stderr ---\n{result.stderr}\n--- stdout ---\n{result.stdout}")
    return result


def user_error(*args, mentions=()):
    """Runs the CLI expecting exit 1 and one `sinter: error:` line naming every `mentions` text."""
    result = sinter(*args, expect=1)
    errors = [line for line in result.stderr.splitlines() if line.startswith("sinter: error: ")]
    assert errors, result.stderr
    for text in mentions:
        assert text in errors[-1], f"{text!r} not in {errors[-1]!r}"
    return errors[-1]


def save_model(model, path):
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


@pytest.fixture
def mlp(tmp_path):
    """x, y: f32[batch,3] -> "out/relu" = Relu(Relu(x + y) @ W), "sum" = x + y."""
    nodes = [
        helper.make_node("Add", ["x", "y"], ["sum"], name="add"),
        helper.make_node("Relu", ["sum"], ["hidden"], name="relu0"),
        helper.make_node("MatMul", ["hidden", "W"], ["mm"], name="matmul"),
        helper.make_node("Relu", ["mm"], ["out/relu"], name="relu1"),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 3]) for n in ("x", "y")],
        [helper.make_tensor_value_info("out/relu", TensorProto.FLOAT, ["batch", 20]),
         helper.make_tensor_value_info("sum", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(WEIGHT, "W")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="cli-test", producer_version="2.5")
    model.ir_version = IR_VERSION
    return save_model(model, tmp_path / "mlp.onnx")


@pytest.fixture
def int_model(tmp_path):
    """k: i64[2,2], b: bool[2] -> "twice" = k + k, "flags" = Not(b)."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["k", "k"], ["twice"]), helper.make_node("Not", ["b"], ["flags"])],
        "ints",
        [helper.make_tensor_value_info("k", TensorProto.INT64, [2, 2]),
         helper.make_tensor_value_info("b", TensorProto.BOOL, [2])],
        [helper.make_tensor_value_info("twice", TensorProto.INT64, [2, 2]),
         helper.make_tensor_value_info("flags", TensorProto.BOOL, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    return save_model(model, tmp_path / "ints.onnx")


def mlp_inputs(batch, seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.standard_normal((batch, 3)).astype(np.float32) for name in ("x", "y")}


def onnxruntime_outputs(model_path, inputs):
    session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


def assert_matches(actual, expected):
    assert list(actual) == list(expected), "outputs differ in names or order"
    for name in expected:
        a, e = np.asarray(actual[name]), expected[name]
        assert a.dtype == e.dtype and a.shape == e.shape, f"{name}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(a, e, err_msg=name)


def save_npy(tmp_path, arrays):
    paths = {}
    for name, array in arrays.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], array)
    return paths


def save_pb(tmp_path, arrays):
    paths = {}
    for name, array in arrays.items():
        paths[name] = tmp_path / f"{name}.pb"
        paths[name].write_bytes(numpy_helper.from_array(array, name).SerializeToString())
    return paths


def load_npz(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


# --- global behaviour -------------------------------------------------------------------------

def test_version_and_help_exit_zero():
    assert re.fullmatch(r"sinter \d+\.\d+\.\d+\s*", sinter("--version", expect=0).stdout)
    assert "inspect" in sinter("--help", expect=0).stdout
    assert "--reference" in sinter("run", "--help", expect=0).stdout


def test_command_line_mistakes_are_user_errors(tmp_path, mlp):
    user_error("run", mlp, "--reference", "--no-such-option", mentions=["--no-such-option"])
    user_error("no-such-command")
    assert sinter(expect=1).stderr  # no subcommand: usage on stderr
    user_error("run", mlp, "--reference", "-o", tmp_path / "a.npz", "--output-dir", tmp_path / "d",
               mentions=["--output"])
    user_error("run", mlp, "--reference", "--shape", "x=2xq", mentions=["'q'", "--shape"])
    user_error("run", mlp, "--reference", "--dim", "batch=-1", mentions=["--dim"])


# --- inspect ----------------------------------------------------------------------------------

def test_inspect_text(mlp):
    out = sinter("inspect", mlp, expect=0).stdout
    assert "imports: yes" in out
    assert "IR version 8" in out and "opset 17" in out
    assert "cli-test" in out
    assert re.search(r"^\s+x\s+f32\[batch,3\]$", out, re.M)
    assert re.search(r"^\s+out/relu\s+f32\[batch,20\]$", out, re.M)
    ops = re.findall(r"^\s+(Relu|Add|MatMul)\s+(\d+)$", out, re.M)
    assert ops == [("Relu", "2"), ("Add", "1"), ("MatMul", "1")]  # by count, then by name
    assert "parameters: 60 " in out and "240 bytes" in out
    assert "unsupported ops: none" in out


def test_inspect_json(mlp):
    report = json.loads(sinter("inspect", mlp, "--json", expect=0).stdout)
    assert report["ir_version"] == IR_VERSION and report["opset"] == OPSET
    assert "cli-test" in report["producer"]
    assert report["inputs"] == [{"name": "x", "type": "f32[batch,3]"},
                                {"name": "y", "type": "f32[batch,3]"}]
    assert report["outputs"] == [{"name": "out/relu", "type": "f32[batch,20]"},
                                 {"name": "sum", "type": "f32[batch,3]"}]
    assert report["ops"] == [{"op": "Relu", "count": 2}, {"op": "Add", "count": 1},
                             {"op": "MatMul", "count": 1}]
    assert report["node_count"] == 4
    assert report["parameters"]["count"] == WEIGHT.size
    assert report["parameters"]["bytes"] == WEIGHT.nbytes
    assert report["unsupported_ops"] == []
    assert report["imports"] is True
    assert "ir" not in report


def test_inspect_lists_unsupported_ops(tmp_path):
    nodes = [helper.make_node("Frobnicate", ["x"], ["a"], domain="com.example"),
             helper.make_node("Frobnicate", ["a"], ["b"], domain="com.example"),
             helper.make_node("Wibble", ["b"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"])]
    graph = helper.make_graph(nodes, "custom",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("com.example", 1)])
    model.ir_version = IR_VERSION
    path = tmp_path / "custom.onnx"
    onnx.save(model, str(path))  # not checkable: the checker does not know com.example
    # Every unsupported op in the summary, then exit 1 with compile's message naming them all.
    result = sinter("inspect", path, "--json", expect=1)
    report = json.loads(result.stdout)
    assert {entry["op"].split(" ")[0]: entry["count"] for entry in report["unsupported_ops"]} == {
        "com.example:Frobnicate": 2, "ai.onnx:Wibble": 1}
    assert report["imports"] is False and "Wibble" in report["import_error"]
    error = user_error("inspect", path, mentions=["Frobnicate x2", "Wibble x1"])
    assert "Frobnicate" in sinter("inspect", path).stdout
    assert error == user_error("compile", path, "--target", "cpu", "-o", tmp_path / "m.so")


def _bad_model(kind, folder):
    """A model that `compile` refuses while importing it, and the words its message must hold."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    weight = numpy_helper.from_array(np.ones([2, 3], np.float32), "w")
    nodes, inputs, outputs, initializers = [helper.make_node("Add", ["x", "w"], ["y"])], [x], [y], [weight]
    if kind == "cycle":
        nodes = [helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                 helper.make_node("Relu", ["a"], ["y"])]
        initializers, words = [], ["cycle", "Add"]
    elif kind == "undefined value":
        nodes, initializers, words = [helper.make_node("Add", ["x", "ghost"], ["y"])], [], ["'ghost'", "not defined"]
    elif kind == "external data outside the folder":
        weight.ClearField("raw_data")
        weight.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "../outside.bin"), ("offset", "0"), ("length", "24")):
            entry = weight.external_data.add()
            entry.key, entry.value = key, value
        (folder.parent / "outside.bin").write_bytes(np.ones(6, np.float32).tobytes())
        words = ["'w'", "../outside.bin", "leaves the model's folder"]
    elif kind == "short raw_data":
        weight.raw_data = weight.raw_data[:10]
        words = ["'w'", "10 bytes", "expected 24"]
    elif kind == "huge input":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**40, 2**40])]
        outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2**40, 2**40])]
        nodes, initializers, words = [helper.make_node("Relu", ["x"], ["y"])], [], ["'x'", "too many elements"]
    graph = helper.make_graph(nodes, "bad", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    path = folder / "bad.onnx"
    path.write_bytes(model.SerializeToString())  # the checker would refuse most of these
    return path, words


@pytest.mark.parametrize("kind", ["cycle", "undefined value", "external data outside the folder",
                                  "short raw_data", "huge input"])
def test_inspect_says_why_a_model_will_not_import(kind, tmp_path):
    """inspect validates what it summarises: the summary it could read on stdout, then compile's
    own message and exit 1 (not "unsupported ops: none" and exit 0)."""
    folder = tmp_path / "model"
    folder.mkdir()
    path, words = _bad_model(kind, folder)
    error = user_error("inspect", path, mentions=["bad.onnx", *words])
    result = sinter("inspect", path)
    assert "inputs:" in result.stdout and "imports: no" in result.stdout
    assert error == user_error("compile", path, "--target", "cpu", "-o", tmp_path / "m.so")
    report = json.loads(sinter("inspect", path, "--json", expect=1).stdout)
    assert report["imports"] is False and report["import_error"] in error


def test_inspect_ir_elides_large_constants(mlp):
    out = sinter("inspect", mlp, "--ir", expect=0).stdout
    assert "graph @" in out and "MatMul(" in out and "Relu(" in out
    assert "elided 240 bytes" in out
    full = sinter("inspect", mlp, "--ir", "--full-constants", expect=0).stdout
    assert "elided" not in full and "MatMul(" in full
    report = json.loads(sinter("inspect", mlp, "--json", "--ir", expect=0).stdout)
    assert "MatMul(" in report["ir"]
    bound = sinter("inspect", mlp, "--ir", "--dim", "batch=7", expect=0).stdout
    assert "f32[7,3]" in bound


def test_inspect_missing_or_malformed_model(tmp_path):
    user_error("inspect", tmp_path / "nope.onnx", mentions=["nope.onnx"])
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07this is not a protobuf \xff\xff\xff")
    result = sinter("inspect", garbage, expect=1)
    assert result.stderr.startswith("sinter: error: ")


# --- run --------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [1, 5])
def test_run_named_npy_inputs_to_npz(tmp_path, mlp, batch):
    inputs = mlp_inputs(batch)
    files = save_npy(tmp_path, inputs)
    out = tmp_path / "out.npz"
    sinter("run", mlp, "--reference", "--input", f"x={files['x']}", "--input", f"y={files['y']}",
           "-o", out, expect=0)
    assert_matches(load_npz(out), onnxruntime_outputs(mlp, inputs))


def test_run_positional_pb_inputs_to_output_dir(tmp_path, mlp):
    inputs = mlp_inputs(3, seed=1)
    files = save_pb(tmp_path, inputs)
    out_dir = tmp_path / "outs"
    sinter("run", mlp, "--reference", files["x"], files["y"], "--output-dir", out_dir, expect=0)
    assert sorted(p.name for p in out_dir.iterdir()) == ["out_relu.npy", "sum.npy"]
    actual = {"out/relu": np.load(out_dir / "out_relu.npy"), "sum": np.load(out_dir / "sum.npy")}
    assert_matches(actual, onnxruntime_outputs(mlp, inputs))


def test_run_mixed_positional_and_named(tmp_path, mlp):
    inputs = mlp_inputs(2, seed=2)
    x = save_npy(tmp_path, {"x": inputs["x"]})["x"]
    y = save_pb(tmp_path, {"y": inputs["y"]})["y"]
    out = tmp_path / "o.npz"
    sinter("run", mlp, x, "--input", f"y={y}", "--reference", "-o", out, expect=0)
    assert_matches(load_npz(out), onnxruntime_outputs(mlp, inputs))


def test_run_output_format_pb(tmp_path, int_model):
    inputs = {"k": np.array([[1, -2], [2**40, 7]], dtype=np.int64),
              "b": np.array([True, False])}
    files = save_pb(tmp_path, inputs)
    out_dir = tmp_path / "pb"
    sinter("run", int_model, "--reference", files["k"], files["b"], "--output-dir", out_dir,
           "--output-format", "pb", expect=0)
    actual = {}
    for index, name in enumerate(["twice", "flags"]):
        proto = TensorProto()
        proto.ParseFromString((out_dir / f"output_{index}.pb").read_bytes())
        actual[name] = numpy_helper.to_array(proto)
    assert_matches(actual, onnxruntime_outputs(int_model, inputs))


def test_run_prints_a_summary_without_outputs(tmp_path, mlp):
    inputs = mlp_inputs(2, seed=3)
    files = save_npy(tmp_path, inputs)
    out = sinter("run", mlp, "--reference", files["x"], files["y"], expect=0).stdout
    expected = onnxruntime_outputs(mlp, inputs)
    for name, array in expected.items():
        match = re.search(rf"^{re.escape(name)}: f32\[2,\d+\]\s+min (\S+)\s+max (\S+)\s+mean (\S+)$",
                          out, re.M)
        assert match, out
        got = [float(v) for v in match.groups()]
        np.testing.assert_allclose(got, [array.min(), array.max(), array.mean()], rtol=1e-4,
                                   atol=1e-5, err_msg=name)
    assert not list(tmp_path.glob("*.npz"))


def test_run_output_dir_names_are_sanitised_and_unique(tmp_path):
    outputs = ["a/b", "a_b", "A_B", "..", "y:0"]
    ops = ["Relu", "Neg", "Abs", "Sigmoid", "Exp"]
    nodes = [helper.make_node(op, ["x"], [name]) for op, name in zip(ops, outputs)]
    graph = helper.make_graph(
        nodes, "names", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    path = save_model(model, tmp_path / "names.onnx")
    x = np.array([-1.5, 0.0, 2.0], dtype=np.float32)
    out_dir = tmp_path / "o"
    sinter("run", path, "--reference", save_npy(tmp_path, {"x": x})["x"], "--output-dir", out_dir,
           expect=0)
    expected = onnxruntime_outputs(path, {"x": x})
    # In output order: collisions (ignoring case) get _2, _3; a leading '.' gets a '_' first.
    files = {"a/b": "a_b.npy", "a_b": "a_b_2.npy", "A_B": "A_B_3.npy", "..": "_...npy",
             "y:0": "y_0.npy"}
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(files.values())
    assert_matches({name: np.load(out_dir / files[name]) for name in expected}, expected)


def test_run_refuses_to_overwrite_without_force(tmp_path, mlp):
    files = save_npy(tmp_path, mlp_inputs(1))
    out = tmp_path / "out.npz"
    out.write_bytes(b"precious")
    user_error("run", mlp, "--reference", files["x"], files["y"], "-o", out,
               mentions=["already exists", "--force"])
    assert out.read_bytes() == b"precious"
    sinter("run", mlp, "--reference", files["x"], files["y"], "-o", out, "--force", expect=0)
    assert set(load_npz(out)) == {"out/relu", "sum"}

    out_dir = tmp_path / "d"
    sinter("run", mlp, "--reference", files["x"], files["y"], "--output-dir", out_dir, expect=0)
    user_error("run", mlp, "--reference", files["x"], files["y"], "--output-dir", out_dir,
               mentions=["already exists", "--force"])
    sinter("run", mlp, "--reference", files["x"], files["y"], "--output-dir", out_dir, "-f",
           expect=0)


def test_run_input_errors(tmp_path, mlp):
    good = save_npy(tmp_path, mlp_inputs(2))
    user_error("run", mlp, "--reference", good["x"], mentions=["missing input", "y: f32[batch,3]"])
    user_error("run", mlp, "--reference", "--input", f"z={good['x']}",
               mentions=["no input named 'z'", "x: f32[batch,3]", "y: f32[batch,3]"])
    user_error("run", mlp, "--reference", good["x"], good["y"], "--input", f"x={good['x']}",
               mentions=["'x' is given twice"])
    user_error("run", mlp, "--reference", good["x"], good["y"], good["x"],
               mentions=["3 input files", "2 inputs"])
    wrong_dtype = save_npy(tmp_path, {"x64": np.zeros((2, 3), np.float64)})["x64"]
    user_error("run", mlp, "--reference", wrong_dtype, good["y"],
               mentions=["input 'x'", "f64", "f32[batch,3]"])
    wrong_shape = save_npy(tmp_path, {"x4": np.zeros((2, 4), np.float32)})["x4"]
    user_error("run", mlp, "--reference", wrong_shape, good["y"],
               mentions=["input 'x'", "[2,4]", "f32[batch,3]"])
    other_batch = save_npy(tmp_path, {"y5": np.zeros((5, 3), np.float32)})["y5"]
    user_error("run", mlp, "--reference", good["x"], other_batch, mentions=["'batch'", "5", "2"])
    user_error("run", mlp, "--reference", good["x"], good["y"], "--dim", "batch=3",
               mentions=["'batch'", "--dim batch=3"])
    user_error("run", mlp, "--reference", good["x"], tmp_path / "absent.npy",
               mentions=["absent.npy"])
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"not numpy at all")
    user_error("run", mlp, "--reference", good["x"], garbage, mentions=["garbage.npy"])
    user_error("run", mlp, "--reference", good["x"], good["y"], "--shape", "x=1x3",
               mentions=["--shape", "'x'"])


def test_run_needs_reference_and_an_existing_model(tmp_path, mlp):
    files = save_npy(tmp_path, mlp_inputs(1))
    user_error("run", mlp, files["x"], files["y"],
               mentions=["use --reference or compile the model first"])
    user_error("run", tmp_path / "missing.onnx", "--reference", mentions=["missing.onnx"])
    user_error("run", mlp, "--reference", files["x"], files["y"], "-o",
               tmp_path / "no" / "such" / "dir.npz", mentions=["does not exist"])


def test_a_missing_temporary_folder_is_a_user_error(tmp_path, monkeypatch):
    """A TMPDIR that does not exist is named in a one-line error, and no artifact is written."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    output = tmp_path / "model.so"
    user_error("compile", ROOT / "models" / "tiny_cnn.onnx", "-o", output, "--target", "cpu",
               mentions=("TMPDIR", "missing"))
    assert not output.exists()


def test_where_the_scratch_object_goes_does_not_change_the_artifact(tmp_path, monkeypatch):
    """The blob object goes to /dev/shm when TMPDIR is unset (and it has room), else to TMPDIR:
    the artifact's bytes are the same either way."""
    model = ROOT / "models" / "mobilenet_v2.onnx"
    monkeypatch.delenv("TMPDIR", raising=False)
    default = tmp_path / "default.so"
    sinter("compile", model, "-o", default, "--target", "cpu", "--dim", "batch=1", expect=0)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    chosen = tmp_path / "chosen.so"
    sinter("compile", model, "-o", chosen, "--target", "cpu", "--dim", "batch=1", expect=0)
    assert chosen.read_bytes() == default.read_bytes()
    assert not list(scratch.iterdir())  # the scratch folder is removed
