"""Attention whose query, key and value are gathered from one [3, L, B, E] split of the QKV
projection, as torch's dynamo exporter writes nn.MultiheadAttention: duplicate-shared-views copies
the split per product, so no kernel stores it and Q.K^T and P.V read the projection through the
views; the outputs still match onnxruntime, at fp32 and fp16, and the CUDA kernels read the views
as 16-byte runs (the tensor-core printer's index simplification makes them affine)."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import sinter_testing as st

LENGTH, BATCH, HEADS, DIM = 64, 16, 4, 16
WIDTH = HEADS * DIM


def split_attention(path):
    rng = np.random.default_rng(7)

    def ints(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]),
             helper.make_node("Add", ["m", "bias"], ["qkv"]),
             helper.make_node("Reshape", ["qkv", "s4"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "ax0"], ["u"]),
             helper.make_node("Transpose", ["u"], ["t"], perm=[3, 1, 2, 0, 4]),
             helper.make_node("Squeeze", ["t", "ax3"], ["s"])]
    for i, name in enumerate("qkv"):
        nodes += [helper.make_node("Gather", ["s", f"i{i}"], [f"{name}0"], axis=0),
                  helper.make_node("Reshape", [f"{name}0", "s3"], [f"{name}1"]),
                  helper.make_node("Transpose", [f"{name}1"], [f"{name}2"], perm=[1, 0, 2])]
    nodes += [helper.make_node("Transpose", ["k2"], ["kt"], perm=[0, 2, 1]),
              helper.make_node("Mul", ["q2", "scale"], ["qs"]),
              helper.make_node("Mul", ["kt", "scale"], ["ks"]),
              helper.make_node("MatMul", ["qs", "ks"], ["scores"]),
              helper.make_node("Softmax", ["scores"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v2"], ["y"])]
    initializers = [
        numpy_helper.from_array((rng.standard_normal((WIDTH, 3 * WIDTH)) * 0.2).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(3 * WIDTH).astype(np.float32), "bias"),
        ints("s4", [LENGTH, BATCH, 3, WIDTH]), ints("ax0", [0]), ints("ax3", [3]),
        ints("s3", [LENGTH, BATCH * HEADS, DIM]), ints("i0", 0), ints("i1", 1), ints("i2", 2),
        numpy_helper.from_array(np.array([DIM ** -0.25], dtype=np.float32), "scale")]
    graph = helper.make_graph(
        nodes, "split_attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [LENGTH, BATCH, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [BATCH * HEADS, LENGTH, DIM])],
        initializers)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def test_the_split_is_read_through_its_views(tmp_path):
    model = tmp_path / "split_attention.onnx"
    split_attention(model)
    x = np.random.default_rng(8).standard_normal((LENGTH, BATCH, WIDTH)).astype(np.float32)
    expected = ort.InferenceSession(str(model)).run(None, {"x": x})[0]
    np.save(tmp_path / "x.npy", x)
    for precision, bound in (("fp32", 1e-5), ("fp16", 1e-2)):
        library = tmp_path / f"{precision}.so"
        st.run_cli(["compile", model, "--target", "cpu", "--precision", precision, "-o", library])
        out = tmp_path / f"{precision}.npz"
        st.run_cli(["run", library, tmp_path / "x.npy", "-o", out])
        actual = np.load(out)["y"]
        error = np.linalg.norm(actual - expected) / np.linalg.norm(expected)
        assert error <= bound, (precision, error)

    # On the GPU at fp16, fuse-attention makes the products and the softmax one kernel, which
    # copies Q, K and V out of the projection as 16-byte runs through the split's views; its
    # epilogue goes on through the context's reshape to the graph's f32 output, which it stores
    # (docs/fusion.md).
    source = tmp_path / "source"
    st.run_cli(["compile", model, "--target", "cuda", "--arch", "sm_90", "--precision", "fp16",
                "--emit-source", source, "-o", tmp_path / "cuda.so"])
    kernels = sorted(path.stem for path in source.glob("fused_*.kir"))
    assert len(kernels) == 2, kernels
    attention = [name for name in kernels if name.endswith("attention_reshape_cast_" + name.rsplit("_", 1)[1])]
    assert len(attention) == 1, kernels
    assert not any(name.endswith("squeeze_" + name.rsplit("_", 1)[1]) for name in kernels), kernels
    text = (source / f"{attention[0]}.cu").read_text()
    assert "fused attention (f16 operands" in text
    for tile in ("sQ", "sK[0]", "sV[0]", "sK[current ^ 1]", "sV[current ^ 1]"):
        assert f"sn_cp_async16(&{tile}[row][column]" in text, tile

    # bf16 likewise (NVRTC and ptxas build the kernel with bf16 products).
    source = tmp_path / "bf16"
    st.run_cli(["compile", model, "--target", "cuda", "--arch", "sm_80,sm_90", "--precision", "bf16",
                "--emit-source", source, "-o", tmp_path / "bf16.so"])
    assert any("fused attention (bf16 operands" in path.read_text() for path in source.glob("fused_*.cu"))

    # Without it, Q.K^T and P.V read the views, Q.K^T as 16-byte runs of both operands.
    source = tmp_path / "unfused"
    st.run_cli(["compile", model, "--target", "cuda", "--arch", "sm_90", "--precision", "fp16",
                "--disable-pass", "fuse-attention", "--emit-source", source, "-o", tmp_path / "unfused.so"])
    kernels = sorted(path.stem for path in source.glob("fused_*.kir"))
    # The projection, Q.K^T (with the split's views and both scalings), the softmax, P.V.
    assert len(kernels) == 4, kernels
    assert not any(name.endswith("squeeze_" + name.rsplit("_", 1)[1]) for name in kernels), kernels
    headers = [line for path in source.glob("fused_*.cu") for line in path.read_text().splitlines()
               if "contraction on tensor cores" in line and f"batch {BATCH * HEADS}, m {LENGTH}, n {LENGTH}" in line]
    assert headers and all("lhs vector along k, rhs vector along k" in line for line in headers), headers
