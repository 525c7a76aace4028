"""Mixed precision end to end: every models/*.onnx compiled for the CPU with `--precision fp16`
and `--precision bf16` (float32 weights and activations stored in 16 bits, computed in f32) runs
and matches onnxruntime's float32 outputs within a relative L2 error of 1e-2
(||actual - expected||_2 / ||expected||_2); integer and bool outputs must match exactly. The
artifact keeps the model's float32 signature. Models with symbolic dims run with every symbolic
dim 2. The CUDA C of an fp16 and a bf16 model must compile through NVRTC and ptxas (no GPU
needed), and bad --precision values are user errors.
"""
import json
import subprocess

import numpy as np
import pytest

import sinter_testing as st

PRECISIONS = ["fp16", "bf16"]
RELATIVE_L2 = 1e-2


def relative_l2(actual, expected):
    a, b = actual.astype(np.float64).ravel(), expected.astype(np.float64).ravel()
    norm = np.linalg.norm(b)
    return np.linalg.norm(a - b) / norm if norm > 0 else np.linalg.norm(a - b)


def compare_l2(actual, expected):
    """Problems found comparing outputs: dtype/shape exactly, floats by relative L2, the rest exactly."""
    problems = [f"{name}: missing" for name in expected if name not in actual]
    for name, b in expected.items():
        if name not in actual:
            continue
        a = np.asarray(actual[name])
        if a.dtype != b.dtype or a.shape != b.shape:
            problems.append(f"{name}: got {a.dtype}{list(a.shape)}, expected {b.dtype}{list(b.shape)}")
        elif np.issubdtype(b.dtype, np.floating):
            if not np.array_equal(np.isfinite(a), np.isfinite(b)):
                problems.append(f"{name}: non-finite values in other places than onnxruntime's")
                continue
            finite = np.isfinite(b)
            error = relative_l2(a[finite], b[finite])
            if not error <= RELATIVE_L2:
                problems.append(f"{name}: relative L2 error {error:.3g} > {RELATIVE_L2:g}")
        elif not np.array_equal(a, b):
            problems.append(f"{name}: {np.count_nonzero(a != b)} of {a.size} elements differ")
    return problems


def compile_and_run(model, inputs, workdir, *flags):
    library = workdir / "model.so"
    st.run_cli(["compile", model, "--target", "cpu", *st.shape_flags(inputs), *flags, "-o", library])
    out = workdir / "outputs.npz"
    st.run_cli(["run", library, *st._input_flags(inputs, workdir), "-o", out])
    return st._load_npz(out)


def cases():
    for model in st.model_files():
        for precision in PRECISIONS:
            yield pytest.param(model, precision, id=f"{model.stem}-{precision}")


@pytest.mark.parametrize("model,precision", list(cases()))
def test_model_matches_onnxruntime_in_reduced_precision(model, precision, tmp_path):
    dim = 2 if st.has_symbolic_dims(model) else 1
    inputs = st.make_inputs(model, dim)
    expected = st.run_onnxruntime(model, inputs)
    actual = compile_and_run(model, inputs, tmp_path, "--precision", precision)
    problems = compare_l2(actual, expected)
    if problems:
        pytest.fail(f"{model.name} at {precision}:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.mark.parametrize("norm_inputs", ["f32", "stored"])
@pytest.mark.parametrize("model", ["vit_tiny", "bert_tiny", "gpt2_tiny"])
def test_normalisation_inputs_either_way_match_onnxruntime(model, norm_inputs, tmp_path):
    """--norm-inputs f32 (the residual streams in f32) and stored (in f16, the LayerNorms reading
    their inputs as stored) are both within the 16-bit bound of onnxruntime's float32 outputs."""
    path = st.MODELS_DIR / f"{model}.onnx"
    inputs = st.make_inputs(path, 2 if st.has_symbolic_dims(path) else 1)
    expected = st.run_onnxruntime(path, inputs)
    actual = compile_and_run(path, inputs, tmp_path, "--precision", "fp16", "--norm-inputs", norm_inputs)
    problems = compare_l2(actual, expected)
    if problems:
        pytest.fail(f"{model} with --norm-inputs {norm_inputs}:\n  " + "\n  ".join(problems), pytrace=False)


def test_normalisation_inputs_default_to_stored_with_fp16_and_f32_with_bf16(tmp_path):
    """Without --norm-inputs, fp16 gives the outputs of --norm-inputs stored bit for bit and bf16
    those of f32; the two choices differ at each precision, so the comparison can tell."""
    path = st.MODELS_DIR / "vit_tiny.onnx"
    inputs = st.make_inputs(path, 1)
    for precision, default in [("fp16", "stored"), ("bf16", "f32")]:
        runs = {}
        for choice in [None, "f32", "stored"]:
            flags = ["--precision", precision] + ([] if choice is None else ["--norm-inputs", choice])
            work = tmp_path / f"{precision}-{choice}"
            work.mkdir()
            runs[choice] = compile_and_run(path, inputs, work, *flags)
        other = "f32" if default == "stored" else "stored"
        for name in runs[None]:
            assert np.array_equal(runs[None][name], runs[default][name]), (precision, name)
        assert any(not np.array_equal(runs[None][name], runs[other][name]) for name in runs[None]), precision


@pytest.mark.parametrize("model", ["resnet_narrow", "bert_tiny"])
def test_hardware_half_conversions_match_onnxruntime(model, tmp_path):
    """--cpu native on a CPU with F16C converts f16 with instructions, in the packing of the
    blocked contractions too; the results must match as the software conversions do."""
    path = st.MODELS_DIR / f"{model}.onnx"
    inputs = st.make_inputs(path, 1)
    expected = st.run_onnxruntime(path, inputs)
    actual = compile_and_run(path, inputs, tmp_path, "--precision", "fp16", "--cpu", "native")
    problems = compare_l2(actual, expected)
    assert not problems, problems


def test_reduced_precision_halves_weights_and_activations_on_cuda(tmp_path):
    """resnet_narrow's weights are float32 convolution filters: for the CUDA target (which reads
    weights as they are stored; the CPU target also keeps f32 packed copies for its micro-kernel)
    16-bit storage takes about half the weight bytes, and the arena shrinks too."""
    model = st.MODELS_DIR / "resnet_narrow.onnx"
    info = {}
    for precision in ["fp32", "fp16"]:
        library = tmp_path / f"{precision}.so"
        st.run_cli(["compile", model, "--target", "cuda", "--arch", "sm_90", "--precision", precision,
                    "-o", library])
        info[precision] = json.loads(st.run_cli(["inspect", library, "--json"]).stdout)
    assert info["fp16"]["weight_bytes"] < 0.55 * info["fp32"]["weight_bytes"], info
    assert info["fp16"]["arena_bytes"] < info["fp32"]["arena_bytes"]
    assert (info["fp32"]["storage_precision"], info["fp16"]["storage_precision"]) == ("f32", "f16")
    assert [p["type"] for p in info["fp16"]["inputs"] + info["fp16"]["outputs"]] == \
        [p["type"] for p in info["fp32"]["inputs"] + info["fp32"]["outputs"]]


def test_comparison_catches_differences():
    expected = {"f": np.array([3.0, -4.0], np.float32), "i": np.array([1, 2], np.int64)}
    assert compare_l2(dict(expected), expected) == []
    close = {"f": np.array([3.02, -4.02], np.float32), "i": expected["i"]}  # 0.57% of ||b|| = 5
    assert compare_l2(close, expected) == []
    far = {"f": np.array([3.1, -4.0], np.float32), "i": expected["i"]}  # 2%
    assert "relative L2 error" in compare_l2(far, expected)[0]
    assert "differ" in compare_l2({"f": expected["f"], "i": np.array([1, 3])}, expected)[0]
    assert "expected float32" in compare_l2({"f": expected["f"].astype(np.float16), "i": expected["i"]},
                                            expected)[0]
    assert "non-finite" in compare_l2({"f": np.array([np.inf, -4.0], np.float32), "i": expected["i"]},
                                      expected)[0]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("model", ["tiny_attention", "resnet_narrow"])
def test_cuda_c_of_a_reduced_precision_model_compiles(model, precision, tmp_path):
    """NVRTC and ptxas accept the CUDA C of a transformer block and of a CNN stored in 16 bits."""
    library = tmp_path / "model.so"
    source = tmp_path / "source"
    st.run_cli(["compile", st.MODELS_DIR / f"{model}.onnx", "--target", "cuda", "--arch", "sm_90",
                "--precision", precision, "--emit-source", source, "-o", library])
    assert library.stat().st_size > 0
    code = "".join(path.read_text() for path in sorted(source.glob("fused_*.cu")))
    assert "const unsigned short *__restrict__" in code, "no kernel reads 16-bit storage"


@pytest.mark.parametrize("precision", PRECISIONS)
def test_16_bit_convolutions_run_on_tensor_cores(precision, tmp_path):
    """A CNN stored in 16 bits at a batch whose convolutions give most SMs a tile multiplies them
    with mma.sync in the precision's type (smaller grids keep the f32 kernel, which splits k)."""
    source = tmp_path / "source"
    st.run_cli(["compile", st.MODELS_DIR / "mobilenet_v2.onnx", "--target", "cuda", "--arch",
                "sm_90", "--dim", "batch=32", "--precision", precision, "--emit-source", source,
                "-o", tmp_path / "model.so"])
    code = "".join(path.read_text() for path in sorted(source.glob("fused_*.cu")))
    mma_type = "f16" if precision == "fp16" else "bf16"
    assert "contraction on tensor cores" in code, "no tensor-core convolution"
    assert f"mma.sync.aligned.m16n8k16.row.col.f32.{mma_type}.{mma_type}.f32" in code


@pytest.mark.parametrize("flags,message", [
    (["--precision", "fp8"], "unknown --precision 'fp8'"),
    (["--fp32-contractions", "tf32"], "unknown --fp32-contractions 'tf32'"),
    (["--precision", "tf32", "--target", "cpu"], "tf32 is a CUDA tensor-core mode"),
    (["--precision", "tf32", "--fp32-contractions", "simt"], "cannot go with --fp32-contractions simt"),
    (["--tensor-core-tile", "96"], "--tensor-core-tile '96' is not ROWSxCOLUMNS"),
    (["--tensor-core-tile", "96x128", "--target", "cpu"], "no meaning with --target cpu"),
    (["--wgmma", "maybe"], "unknown --wgmma 'maybe'; use on or off"),
    (["--tensor-core-epilogue", "columns"], "unknown --tensor-core-epilogue 'columns'; use rows or fragments"),
    (["--stream-k", "on"], "unknown --stream-k 'on'; use auto or off"),
    (["--norm-inputs", "f16"], "unknown --norm-inputs 'f16'; use auto, f32 or stored"),
    (["--norm-inputs", "stored"], "no meaning without --precision fp16 or bf16"),
])
def test_bad_precision_is_a_user_error(flags, message, tmp_path):
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    result = subprocess.run([str(st.sinter_bin()), "compile", str(model), *flags, "-o",
                             str(tmp_path / "model.so")], capture_output=True, text=True)
    assert result.returncode == 1, result
    assert message in result.stderr


def test_forced_tensor_core_tile(tmp_path):
    """--tensor-core-tile puts every tensor-core contraction on the named tile; a size the
    generator does not have is an error that lists the ones it has."""
    model = st.MODELS_DIR / "bert_tiny.onnx"
    shape = ["--target", "cuda", "--arch", "sm_90", "--dim", "batch=64", "--dim", "seq=64"]
    source = tmp_path / "source"
    st.run_cli(["compile", model, *shape, "--tensor-core-tile", "96x128", "--emit-source", source,
                "-o", tmp_path / "model.so"])
    headers = tensor_core_headers(source)
    assert headers and all("tile 96x128x16" in line for line in headers), headers
    result = subprocess.run([str(st.sinter_bin()), "compile", str(model), *shape,
                             "--tensor-core-tile", "100x100", "-o", str(tmp_path / "other.so")],
                            capture_output=True, text=True)
    assert result.returncode == 1, result
    assert "--tensor-core-tile 100x100 is not a tensor-core tile; use one of 128x128" in result.stderr


def tensor_core_headers(source):
    """The header comment of every tensor-core kernel in an --emit-source folder."""
    return [line for path in sorted(source.glob("fused_*.cu"))
            for line in path.read_text().splitlines() if "contraction on tensor cores" in line]


def test_16_bit_matmuls_stage_operands_by_their_reads(tmp_path):
    """In a transformer stored in f16 at a batch that fills the GPU, the tensor-core kernels copy
    16-bit activations and weights as 16-byte runs (along k, or along n for row-major weights):
    with --norm-inputs f32, the layer norms (which compute and keep their outputs in f32 for the
    residual adds) also store the f16 rounding the next MatMul reads."""
    source = tmp_path / "source"
    st.run_cli(["compile", st.MODELS_DIR / "bert_tiny.onnx", "--target", "cuda", "--arch",
                "sm_90", "--dim", "batch=64", "--dim", "seq=64", "--precision", "fp16", "--norm-inputs", "f32",
                "--emit-source", source, "-o", tmp_path / "model.so"])
    stagings = [header.split("in flight; ")[1] for header in tensor_core_headers(source)]
    assert "lhs vector along k, rhs vector along n" in stagings, stagings
    assert not any("narrowed" in staging for staging in stagings), stagings
    norms = sorted(path.stem for path in source.glob("fused_layernormalization*.kir"))
    assert norms and sum(name.startswith("fused_layernormalization_cast_") for name in norms) >= 4, norms


def test_a_float32_operand_is_rounded_by_the_tensor_core_kernel(tmp_path):
    """A LayerNorm's f32 output that is also a graph output reaches a 16-bit MatMul as f32 (the
    graph output keeps its type); the tensor-core kernel reads it in 16-byte runs and rounds it."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    rows, width = 4096, 256
    nodes = [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["normed"], axis=-1),
             helper.make_node("MatMul", ["normed", "weight"], ["y"])]
    initializers = [numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "scale"),
                    numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "bias"),
                    numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32), "weight")]
    graph = helper.make_graph(nodes, "norm_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
                              [helper.make_tensor_value_info("normed", TensorProto.FLOAT, [rows, width]),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
                              initializers)
    model = tmp_path / "norm_matmul.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(model))
    source = tmp_path / "source"
    st.run_cli(["compile", model, "--target", "cuda", "--arch", "sm_90", "--precision", "fp16",
                "--emit-source", source, "-o", tmp_path / "model.so"])
    stagings = [header.split("in flight; ")[1] for header in tensor_core_headers(source)]
    assert "lhs narrowed vector along k, rhs vector along n" in stagings, stagings


@pytest.mark.parametrize("flags,kernel", [
    ([], "f32 operands as tf32 pairs, three products"),
    (["--precision", "tf32"], "f32 operands rounded to tf32"),
    (["--fp32-contractions", "simt"], None),
])
def test_fp32_contractions_choose_their_kernel(flags, kernel, tmp_path):
    """At fp32 a transformer's contractions run on tensor cores as tf32 pairs (fp32 accuracy),
    with --precision tf32 on single tf32 roundings, and with --fp32-contractions simt on the f32
    FMA kernel; inspect --plan names the choice per kernel."""
    source = tmp_path / "source"
    library = tmp_path / "model.so"
    st.run_cli(["compile", st.MODELS_DIR / "bert_tiny.onnx", "--target", "cuda", "--arch",
                "sm_90", "--dim", "batch=64", "--dim", "seq=64", *flags,
                "--emit-source", source, "-o", library])
    headers = tensor_core_headers(source)
    plan = st.run_cli(["inspect", library, "--plan"]).stdout
    if kernel is None:
        assert headers == [], headers
        assert "tensor-core" not in plan and "cuda-c tiled" in plan
        return
    assert headers and all(kernel in header for header in headers), headers
    # The f32 GEMMs by row-major weights copy both operands as 16-byte runs.
    assert any("lhs vector along k, rhs vector along n" in header for header in headers), headers
    # One module per 8 kernels, its PTX for the oldest architecture (the only one here):
    # module.compute_90.ptx, or module0.compute_90.ptx, module1.compute_90.ptx, ...
    ptx = "".join(path.read_text() for path in sorted(source.glob("module*.compute_90.ptx")))
    assert "cvt.rna.tf32.f32" in ptx and "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in ptx
    name = "tf32x3" if not flags else "tf32"
    assert f"cuda-c tensor-core {name}" in plan
