"""Shape buckets (docs/runtime.md, "Shape buckets"): `sinter compile --dim batch=1,2,4` puts a plan
per bucket into one artifact. Against independent truth: at every bucket the bucketed artifact's
outputs are bit-identical to a single-shape artifact compiled for that size, and at sizes between
buckets (run padded in the next bucket up) they match onnxruntime at that size, for models of
models/ with a symbolic batch. A model whose batch is mixed (a Softmax along it) gets exact buckets
only, and a size between them is refused with the proof's reason. `sinter bench --batch` runs
the plan of that batch; `sinter inspect` shows the buckets."""
import ctypes
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sinter_ctypes
import sinter_testing as st
from sinter_ctypes import Tensor, TensorInfo

DTYPES = {np.dtype(np.float32): 1, np.dtype(np.int64): 7}

# model, the bucketed symbol, other symbols bound to a size, the buckets, sizes in between.
CASES = [
    ("tiny_dynamic.onnx", [], [1, 2, 4], [3]),
    ("mobilenet_v2.onnx", [], [1, 2, 4], [3]),
    ("bert_tiny.onnx", ["--dim", "seq=8"], [1, 2, 4], [3]),
]


def load_runtime():
    rt = sinter_ctypes.load_runtime(st.BUILD / "lib" / "libsinter_rt.so")
    rt.sinter_model_dim_symbol.restype = ctypes.c_char_p
    return rt


def check(rt, status, what):
    assert status == 0, f"{what}: {rt.sinter_last_error().decode()}"


def inputs_at(model_path, batch, seq=8):
    """make_input's deterministic inputs with every symbolic dim `seq`, cut to `batch` rows."""
    full = st.make_inputs(model_path, symbolic_dim=seq)
    return {name: np.ascontiguousarray(array[:batch]) for name, array in full.items()}


class Loaded:
    """A model.so through libsinter_rt, run on host buffers."""

    def __init__(self, rt, path):
        self.rt = rt
        self.model, self.session = ctypes.c_void_p(), ctypes.c_void_p()
        check(rt, rt.sinter_model_load(str(path).encode(), ctypes.byref(self.model)), "load")
        check(rt, rt.sinter_session_create(self.model, None, ctypes.byref(self.session)), "session")

    def close(self):
        self.rt.sinter_session_destroy(self.session)
        self.rt.sinter_model_free(self.model)

    def run(self, inputs):
        """(status, outputs by name): the outputs take the shapes sinter_model_output_shape gives."""
        rt = self.rt
        arrays = list(inputs.values())
        tensors = (Tensor * len(arrays))(*[sinter_ctypes.tensor(a, DTYPES[a.dtype]) for a in arrays])
        outputs = {}
        count = rt.sinter_model_output_count(self.model)
        for o in range(count):
            info = TensorInfo()
            status = rt.sinter_model_output_shape(self.model, tensors, len(arrays), o,
                                                  ctypes.byref(info))
            if status != 0:
                return status, rt.sinter_last_error().decode()
            shape = tuple(info.dims[i] for i in range(info.rank))
            outputs[info.name.decode()] = np.full(shape, np.nan, np.float32)
        out = (Tensor * count)(*[sinter_ctypes.tensor(a, 1) for a in outputs.values()])
        status = rt.sinter_session_run_host(self.session, tensors, len(arrays), out, count)
        if status != 0:
            return status, rt.sinter_last_error().decode()
        return 0, outputs


@pytest.mark.parametrize("name,flags,buckets,between", CASES, ids=[c[0] for c in CASES])
def test_bucketed_artifact_matches_single_shapes_and_onnxruntime(tmp_path, name, flags, buckets,
                                                                  between):
    model = st.MODELS_DIR / name
    bucketed = tmp_path / "bucketed.so"
    dims = ",".join(str(b) for b in buckets)
    st.run_cli(["compile", model, "--target", "cpu", "--dim", f"batch={dims}", *flags,
                "-o", bucketed])
    described = json.loads(st.run_cli(["inspect", bucketed, "--json"]).stdout)
    assert described["shape_buckets"][0]["symbol"] == "batch"
    assert described["shape_buckets"][0]["buckets"] == buckets
    assert described["shape_buckets"][0]["paddable"], described["shape_buckets"]
    assert len(described["plans"]) == len(buckets)

    rt = load_runtime()
    artifact = Loaded(rt, bucketed)
    try:
        for batch in buckets:
            single = tmp_path / f"single_{batch}.so"
            st.run_cli(["compile", model, "--target", "cpu", "--dim", f"batch={batch}", *flags,
                        "-o", single])
            one = Loaded(rt, single)
            x = inputs_at(model, batch)
            status, got = artifact.run(x)
            assert status == 0, got
            status, want = one.run(x)
            one.close()
            assert status == 0, want
            for output, value in want.items():
                assert np.array_equal(got[output], value), f"{output} at batch {batch}"
            st.assert_outputs_match(got, st.run_onnxruntime(model, x), f"bucket {batch}")
        for batch in between:  # padded into the next bucket up, outputs trimmed
            x = inputs_at(model, batch)
            status, got = artifact.run(x)
            assert status == 0, got
            assert all(value.shape[0] == batch for value in got.values())
            st.assert_outputs_match(got, st.run_onnxruntime(model, x), f"padded batch {batch}")
    finally:
        artifact.close()


def softmax_over_batch_model(path):
    """y = Softmax(x @ w, axis=0) for x f32[batch, 4]: every row of y depends on every row of x."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3],
                           np.linspace(-1, 1, 12, dtype=np.float32).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]),
         helper.make_node("Softmax", ["m"], ["y"], axis=0)],
        "softmax_over_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8),
              str(path))


def test_padding_is_refused_where_the_proof_fails(tmp_path):
    model = tmp_path / "softmax_over_batch.onnx"
    softmax_over_batch_model(model)
    library = tmp_path / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", "--dim", "batch=2..4", "-o", library])
    text = st.run_cli(["inspect", library]).stdout
    assert "batch: 2, 4; exact sizes only" in text, text
    assert "Softmax" in text and "normalises along axis 0" in text, text

    rt = load_runtime()
    artifact = Loaded(rt, library)
    try:
        rng = np.random.default_rng(3)
        for batch in (2, 4):  # the buckets themselves run, and are right
            x = {"x": rng.standard_normal((batch, 4)).astype(np.float32)}
            status, got = artifact.run(x)
            assert status == 0, got
            st.assert_outputs_match(got, st.run_onnxruntime(model, x), f"bucket {batch}")
        status, message = artifact.run({"x": rng.standard_normal((3, 4)).astype(np.float32)})
        assert status == 1, message  # SINTER_ERROR_INVALID_ARGUMENT
        assert "'batch' is 3, which is not a bucket of the model (2, 4)" in message, message
        assert "padding it to a bucket is refused" in message and "Softmax" in message, message
        status, message = artifact.run({"x": np.zeros((8, 4), np.float32)})
        assert status == 1 and "'batch' is 8" in message, message
    finally:
        artifact.close()


def test_ranges_pick_powers_of_two_and_bench_batch_picks_a_bucket(tmp_path):
    model = st.MODELS_DIR / "tiny_dynamic.onnx"
    library = tmp_path / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", "--dim", "batch=3..20", "-o", library])
    described = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    assert described["shape_buckets"][0]["buckets"] == [3, 4, 8, 16, 20]
    for batch in (8, 5):  # a bucket, and a size padded to the next one up
        report = json.loads(st.run_cli(["bench", library, "--batch", str(batch), "--iterations", "3",
                                        "--warmup", "1", "--json"]).stdout)
        assert report["batch"] == batch, report
        report = json.loads(st.run_cli(["bench", library, "--batch", str(batch), "--concurrency", "2",
                                        "--iterations", "3", "--warmup", "1", "--json"]).stdout)
        assert report["batch"] == batch, report
    failed = st.sinter("bench", library, "--batch", "64", "--iterations", "1", expect=1)
    assert "'batch' is 64" in st.error_line(failed) and "above the largest bucket" in failed.stderr
    single = tmp_path / "single.so"
    st.run_cli(["compile", model, "--target", "cpu", "--dim", "batch=4", "-o", single])
    failed = st.sinter("bench", single, "--batch", "4", "--iterations", "1", expect=1)
    assert "is not bucketed" in st.error_line(failed)


def test_sinter_run_takes_the_batch_of_its_input_files(tmp_path):
    model = st.MODELS_DIR / "tiny_dynamic.onnx"
    library = tmp_path / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", "--dim", "batch=2,4", "-o", library])
    for batch in (4, 3, 1):  # a bucket, a padded size, a size below the smallest bucket
        x = inputs_at(model, batch)
        np.save(tmp_path / f"x{batch}.npy", x["x"])
        out = tmp_path / f"y{batch}.npz"
        st.run_cli(["run", library, "--input", f"x={tmp_path / f'x{batch}.npy'}", "-o", out])
        with np.load(out) as archive:
            got = {name: archive[name] for name in archive.files}
        st.assert_outputs_match(got, st.run_onnxruntime(model, x), f"sinter run, batch {batch}")
