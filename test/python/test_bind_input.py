"""`--bind-input NAME=FILE`: a graph input given its value at compile time.

The models here take, as graph inputs, tensors that decide output shapes (Reshape's shape, a
reduction's axes, Trilu's k, Slice's starts and ends), which an ahead-of-time compile needs as
constants. The truth is onnxruntime fed the same values for every input (bound ones included),
the artifact's bytes as docs/artifact-format.md defines them (the hash of a bound value is
recomputed here from that definition), and the ONNX model itself (its input names and types).
"""
import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st


sinter = st.sinter


error_line = st.error_line


def hash64(data):
    """docs/artifact-format.md's hash64, written from the document."""
    mask = (1 << 64) - 1

    def step(state, word):
        m = ((state ^ word) * 0x9E3779B97F4A7C15) & mask
        return m ^ (m >> 31)

    lanes = [0x243F6A8885A308D3, 0x13198A2E03707344, 0xA4093822299F31D0, 0x082EFA98EC4E6C89]
    padded = data + bytes(-len(data) % 32)
    for block in range(0, len(padded), 32):
        for lane in range(4):
            word = int.from_bytes(padded[block + 8 * lane:block + 8 * lane + 8], "little")
            lanes[lane] = step(lanes[lane], word)
    result = step(0, len(data))
    for lane in lanes:
        result = step(result, lane)
    return step(result, 0)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """y = ReduceSum(Relu(Reshape(x, shape)), axes, keepdims=0); z = Trilu(Slice(m, starts, ends), k).
    Every input but x and m decides a shape or an operand that must be constant to compile."""
    folder = tmp_path_factory.mktemp("bind")
    nodes = [
        helper.make_node("Reshape", ["x", "shape"], ["reshaped"]),
        helper.make_node("Relu", ["reshaped"], ["relu"]),
        helper.make_node("ReduceSum", ["relu", "axes"], ["y"], keepdims=0),
        helper.make_node("Slice", ["m", "starts", "ends"], ["sliced"]),
        helper.make_node("Trilu", ["sliced", "k"], ["z"], upper=1),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 12]),
        helper.make_tensor_value_info("shape", TensorProto.INT64, [3]),
        helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
        helper.make_tensor_value_info("m", TensorProto.FLOAT, [5, 6]),
        helper.make_tensor_value_info("starts", TensorProto.INT64, [2]),
        helper.make_tensor_value_info("ends", TensorProto.INT64, [2]),
        helper.make_tensor_value_info("k", TensorProto.INT64, []),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "bind", inputs, outputs)
    path = folder / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)

    rng = np.random.default_rng(7)
    values = {
        "x": rng.standard_normal((2, 12)).astype(np.float32),
        "shape": np.array([4, -1, 3], np.int64),
        "axes": np.array([1], np.int64),
        "m": rng.standard_normal((5, 6)).astype(np.float32),
        "starts": np.array([1, 0], np.int64),
        "ends": np.array([5, 5], np.int64),
        "k": np.array(1, np.int64),
    }
    files = {}
    for name, value in values.items():
        files[name] = folder / f"{name}.npy"
        np.save(files[name], value)
    # The same value as an ONNX TensorProto file, the other accepted format.
    files["k.pb"] = folder / "k.pb"
    files["k.pb"].write_bytes(numpy_helper.from_array(values["k"], "k").SerializeToString())
    return {"path": path, "folder": folder, "values": values, "files": files}


BOUND = ["shape", "axes", "starts", "ends", "k"]


def bind_flags(model, names=BOUND, k_file="k"):
    flags = []
    for name in names:
        flags += ["--bind-input", f"{name}={model['files'][k_file if name == 'k' else name]}"]
    return flags


def read_npz(path):
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def test_compile_error_names_exactly_the_inputs_a_shape_needs(model, tmp_path):
    result = sinter("compile", model["path"], "--target", "cpu", "-o", tmp_path / "m.so",
                    "--dim", "n=2", expect=1)
    message = error_line(result)
    assert "--bind-input shape=FILE" in message, message
    assert "x=FILE" not in message, message  # x's data does not decide a shape


@pytest.mark.parametrize("k_file", ["k", "k.pb"])
def test_bound_model_matches_onnxruntime(model, tmp_path, k_file):
    expected = st.run_onnxruntime(model["path"], model["values"])
    artifact = tmp_path / "m.so"
    sinter("compile", model["path"], "--target", "cpu", "-o", artifact, "--dim", "n=2",
           *bind_flags(model, k_file=k_file))
    sinter("run", artifact, "--input", f"x={model['files']['x']}",
           "--input", f"m={model['files']['m']}", "-o", tmp_path / "out.npz")
    st.assert_outputs_match(read_npz(tmp_path / "out.npz"), expected, "bound model (cpu)")


def test_reference_run_binds_the_same_way(model, tmp_path):
    expected = st.run_onnxruntime(model["path"], model["values"])
    # The unbound inputs are fed positionally, in the model's order less the bound ones.
    sinter("run", model["path"], "--reference", *bind_flags(model), model["files"]["x"],
           model["files"]["m"], "-o", tmp_path / "out.npz")
    st.assert_outputs_match(read_npz(tmp_path / "out.npz"), expected, "bound model (reference)")


def test_inspect_shows_the_bound_inputs_and_the_signature_lacks_them(model, tmp_path):
    artifact = tmp_path / "m.so"
    sinter("compile", model["path"], "--target", "cpu", "-o", artifact, "--dim", "n=2",
           *bind_flags(model))
    info = json.loads(sinter("inspect", "--json", artifact).stdout)
    assert [t["name"] for t in info["inputs"]] == ["x", "m"]
    bound = {b["name"]: b for b in info["bound_inputs"]}
    assert sorted(bound) == sorted(BOUND)
    for name in BOUND:
        value = model["values"][name]
        assert bound[name]["dtype"] == "i64"
        assert bound[name]["dims"] == list(value.shape)
        assert bound[name]["values"] == value.reshape(-1).tolist()
        assert bound[name]["hash"] == f"{hash64(value.tobytes()):016x}"
    text = sinter("inspect", artifact).stdout
    assert "bound inputs" in text
    assert re.search(r"\n  shape +i64\[3\] = \[4, -1, 3\]  hash [0-9a-f]{16}\n", text), text


def test_a_bound_input_binds_the_symbols_of_its_declared_shape(tmp_path):
    # b: f32[n] bound to 3 values makes n = 3 everywhere, so x: f32[n,4] needs no --dim.
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "column"], ["y"]),
         helper.make_node("Unsqueeze", ["b", "one"], ["column"])],
        "symbols",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1], np.int64), "one")])
    path = tmp_path / "symbols.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    b = np.array([1.5, -2.0, 4.0], np.float32)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "b.npy", b)
    np.save(tmp_path / "x.npy", x)
    artifact = tmp_path / "s.so"
    sinter("compile", path, "--target", "cpu", "-o", artifact, "--bind-input", f"b={tmp_path / 'b.npy'}")
    info = json.loads(sinter("inspect", "--json", artifact).stdout)
    assert [(t["name"], t["dims"]) for t in info["inputs"]] == [("x", [3, 4])]
    sinter("run", artifact, tmp_path / "x.npy", "-o", tmp_path / "out.npz")
    expected = st.run_onnxruntime(path, {"x": x, "b": b})
    st.assert_outputs_match(read_npz(tmp_path / "out.npz"), expected, "symbol bound by a value")


def test_a_large_bound_value_is_recorded_by_hash_only(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1024]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "large.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    w = np.linspace(-1, 1, 1024, dtype=np.float32)
    np.save(tmp_path / "w.npy", w)
    artifact = tmp_path / "l.so"
    sinter("compile", path, "--target", "cpu", "-o", artifact, "--bind-input", f"w={tmp_path / 'w.npy'}")
    (bound,) = json.loads(sinter("inspect", "--json", artifact).stdout)["bound_inputs"]
    assert bound["values"] is None and bound["hash"] == f"{hash64(w.tobytes()):016x}"
    assert "not recorded" in sinter("inspect", artifact).stdout


def test_artifacts_without_bound_inputs_list_none(tmp_path):
    artifact = tmp_path / "mlp.so"
    sinter("compile", st.MODELS_DIR / "tiny_mlp.onnx", "--target", "cpu", "-o", artifact)
    assert json.loads(sinter("inspect", "--json", artifact).stdout)["bound_inputs"] == []
    assert "bound inputs" not in sinter("inspect", artifact).stdout


def test_bad_bindings_are_user_errors(model, tmp_path):
    files = model["files"]
    out = ["-o", tmp_path / "m.so", "--target", "cpu", "--dim", "n=2"]
    np.save(tmp_path / "shape_i32.npy", np.array([4, -1, 3], np.int32))
    np.save(tmp_path / "shape_2.npy", np.array([4, -1], np.int64))
    np.save(tmp_path / "k_vector.npy", np.array([1], np.int64))
    (tmp_path / "garbage.npy").write_bytes(b"not an npy file")
    cases = [
        (["--bind-input", f"shapes={files['shape']}"], ["no graph input named 'shapes'", "'x'"]),
        (["--bind-input", f"shape={tmp_path / 'shape_i32.npy'}"], ["'shape' is i64[3]", "i32[3]"]),
        (["--bind-input", f"shape={tmp_path / 'shape_2.npy'}"], ["'shape' is i64[3]", "dim 0 must be 3"]),
        (["--bind-input", f"k={tmp_path / 'k_vector.npy'}"], ["'k' is i64[]", "rank"]),
        (["--bind-input", f"shape={tmp_path / 'missing.npy'}"], ["--bind-input shape=", "no such file"]),
        (["--bind-input", f"shape={tmp_path / 'garbage.npy'}"], ["--bind-input shape=", "not an .npy file"]),
        (["--bind-input", f"shape={files['shape']}", "--bind-input", f"shape={files['shape']}"],
         ["'shape' is bound twice"]),
        (["--bind-input", "shape"], ["--bind-input expects NAME=FILE"]),
        (["--bind-input", f"shape={files['shape']}", "--shape", "shape=3"], ["--shape also gives"]),
    ]
    for flags, fragments in cases:
        message = error_line(sinter("compile", model["path"], *out, *flags, expect=1))
        for fragment in fragments:
            assert fragment in message, (flags, message)
    artifact = tmp_path / "ok.so"
    sinter("compile", model["path"], "--target", "cpu", "-o", artifact, "--dim", "n=2", *bind_flags(model))
    message = error_line(sinter("run", artifact, "--bind-input", f"k={files['k']}", files["x"],
                                files["m"], expect=1))
    assert "compiled already" in message
    message = error_line(sinter("run", model["path"], "--reference", "--bind-input",
                                f"kk={files['k']}", files["x"], expect=1))
    assert "no graph input named 'kk'" in message
