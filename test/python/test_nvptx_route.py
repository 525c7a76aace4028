"""The NVPTX route (`--target cuda --gpu-codegen llvm`) on the model suite, without a GPU: every
models/*.onnx compiles; the artifact carries SASS for each requested architecture in every CUDA
module (cubin ELF headers read here) plus PTX; `sinter inspect` says which
generator built each kernel, and the split follows the fallback rule (docs/nvptx.md): contraction
and convolution groups go to CUDA C, the rest to LLVM's NVPTX backend.

Correctness of what the kernels compute needs a GPU: test/gpu/run_gpu_suite.py --gpu-codegen
both runs these artifacts there against onnxruntime.

The truth each check leans on is independent of the code under test: the cubin bytes (ELF
e_machine EM_CUDA = 190; CUDA 13 keeps the SM in bits 8-15 of e_flags), the artifact's bytes read
with the layout docs/artifact-format.md gives, and ONNX's op names.
"""
import functools
import json
import re
import struct

import pytest

import sinter_testing as st

ARCHS = ["sm_80", "sm_90"]
# Ops whose groups the NVPTX route leaves to CUDA C: contractions (fusion class Gemm),
# convolutions and the opaque ops. Pooling goes through the NVPTX route.
CUDA_C_OPS = {"Einsum", "Gemm", "MatMul", "Conv", "ConvTranspose", "TopK", "NonZero", "Attention",
              "CausalConvWithState", "LinearAttention", "NegativeLogLikelihoodLoss",
              "SoftmaxCrossEntropyLoss"}


# Compiles through LLVM take longer than the default limit.
sinter = functools.partial(st.sinter, timeout=600)


class Reader:
    """Little-endian reads over the manifest bytes (docs/artifact-format.md)."""

    def __init__(self, data, offset):
        self.data, self.offset = data, offset

    def take(self, form):
        values = struct.unpack_from("<" + form, self.data, self.offset)
        self.offset += struct.calcsize("<" + form)
        return values[0] if len(values) == 1 else values

    def string(self):
        size = self.take("I")
        self.offset += size
        return self.data[self.offset - size:self.offset].decode()

    def blob(self):
        size = self.take("Q")
        self.offset += size
        return self.data[self.offset - size:self.offset]

    def items(self, read_one):
        return [read_one() for _ in range(self.take("I"))]


def cuda_modules(path):
    """[[(arch, is_ptx, bytes)]] per CUDA module, from the `.sinter_artifact` section."""
    data = path.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]
    blob = next(s for s in sections
                if data[names + s[0]:data.index(b"\0", names + s[0])] == b".sinter_artifact")[4]
    assert data[blob:blob + 8] == b"SINTERAF"
    metadata_offset, = struct.unpack_from("<Q", data, blob + 24)
    r = Reader(data, blob + metadata_offset)
    r.string(), r.string()  # producer, cpuLevel
    r.items(r.string)  # cudaArchs

    def signature():
        r.string(), r.take("I"), r.items(lambda: r.take("q")), r.items(r.string), r.take("Q")

    r.items(signature), r.items(signature)  # inputs, outputs
    r.take("QQq")  # arenaBytes, activationBytes, sourceNodeCount
    r.items(lambda: (r.string(), r.take("QQ")))  # weight table
    return r.items(lambda: r.items(lambda: (r.string(), r.take("B") == 1, r.blob())))


def cubin_sm(code):
    """(e_machine, SM) of a cubin."""
    assert code[:4] == b"\x7fELF", code[:16]
    machine, = struct.unpack_from("<H", code, 18)
    flags, = struct.unpack_from("<I", code, 48)
    return machine, (flags >> 8) & 0xFF


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """{model stem: (artifact, inspect JSON, inspect text)} for every model, compiled once."""
    folder = tmp_path_factory.mktemp("nvptx")
    results = {}
    for model in st.model_files():
        artifact = folder / f"{model.stem}.so"
        inputs = st.make_inputs(model)
        sinter("compile", model, "-o", artifact, "--force", "--target", "cuda", "--gpu-codegen",
               "llvm", "--arch", ",".join(ARCHS), *st.shape_flags(inputs))
        info = json.loads(sinter("inspect", artifact, "--json").stdout)
        results[model.stem] = (artifact, info, sinter("inspect", artifact).stdout)
    return results


def test_every_model_compiles_with_the_nvptx_route(compiled):
    assert sorted(compiled) == sorted(m.stem for m in st.model_files())


@pytest.mark.parametrize("model", [m.stem for m in st.model_files()])
def test_modules_carry_sass_for_each_arch_and_ptx(compiled, model):
    artifact, info, _ = compiled[model]
    modules = cuda_modules(artifact)
    assert len(modules) == len(info["cuda_modules"]) >= 1
    for binaries in modules:
        cubins = [(arch, code) for arch, is_ptx, code in binaries if not is_ptx]
        ptx = [(arch, code) for arch, is_ptx, code in binaries if is_ptx]
        assert [arch for arch, _ in cubins] == ARCHS
        for arch, code in cubins:
            assert cubin_sm(code) == (190, int(arch[3:])), arch
        # The NVPTX route's module keeps the newest architecture's PTX (LLVM compiles it per
        # architecture); a CUDA C module the PTX it assembled every cubin from, the oldest's.
        assert [arch for arch, _ in ptx] in (["compute_90"], ["compute_80"])
        assert b".target sm_" + ptx[0][0][8:].encode() in ptx[0][1]


@pytest.mark.parametrize("model", [m.stem for m in st.model_files()])
def test_kernels_report_the_generator_that_built_them(compiled, model):
    artifact, info, text = compiled[model]
    kernels = info["kernels"]
    nvptx = [k for k in kernels if k["generator"] == "llvm-nvptx"]
    # Fusion may leave a model with contraction kernels only (tiny_mlp: Gemm+Relu three times).
    expected = [k for k in kernels if not set(k["ops"]) & CUDA_C_OPS]
    assert len(nvptx) == len(expected), f"{model}: {len(nvptx)} NVPTX kernels, expected {len(expected)}"
    for kernel in kernels:
        # The CUDA C backend's generators: "cuda-c", or "cuda-c tiled" for its tiled contractions.
        route = "cuda-c" if set(kernel["ops"]) & CUDA_C_OPS else "llvm-nvptx"
        assert kernel["generator"].split()[0] == route, kernel
        assert re.search(rf"^\s+{kernel['index']}\s+{kernel['name']}\s+"
                         rf"{re.escape(kernel['generator'])}\s+module {kernel['cuda_module']}$",
                         text, re.M), text
    # The NVPTX route's one module first, then the CUDA C backend's (one per 8 kernels at most,
    # consecutive indices), none of them shared between the routes.
    modules = {g: {k["cuda_module"] for k in kernels if k["generator"].split()[0] == g}
               for g in ("llvm-nvptx", "cuda-c")}
    assert modules["llvm-nvptx"] == ({0} if nvptx else set())
    cuda_c = [k for k in kernels if k["generator"].split()[0] == "cuda-c"]
    first = 1 if nvptx else 0
    expected_cuda_c = min(16, -(-len(cuda_c) // 8))
    assert modules["cuda-c"] == set(range(first, first + expected_cuda_c)), modules
    assert len(info["cuda_modules"]) == bool(modules["llvm-nvptx"]) + len(modules["cuda-c"])
    if nvptx:
        ptx = cuda_modules(artifact)[0][-1][2].decode()
        assert "Generated by LLVM NVPTX Back-End" in ptx
        for kernel in kernels:
            assert (f".entry {kernel['name']}(" in ptx) == (kernel["generator"] == "llvm-nvptx")


def test_emit_source_writes_ir_and_ptx_of_an_elementwise_kernel(tmp_path):
    sources = tmp_path / "sources"
    model = st.MODELS_DIR / "tiny_mlp.onnx"
    sinter("compile", model, "-o", tmp_path / "mlp.so", "--target", "cuda", "--gpu-codegen",
           "llvm", "--arch", "sm_90", "--emit-source", sources, "--disable-pass", "fuse-kernels")
    info = json.loads(sinter("inspect", tmp_path / "mlp.so", "--json").stdout)
    relu = [k for k in info["kernels"] if k["ops"] == ["Relu"]]
    assert relu and relu[0]["generator"] == "llvm-nvptx", info["kernels"]
    name = relu[0]["name"]
    ir = (sources / f"{name}.ll").read_text()
    assert re.search(rf"define void @{name}\(ptr noalias", ir), ir
    ptx = (sources / f"{name}.ptx").read_text()
    assert ptx.startswith(f".visible .entry {name}("), ptx
    assert re.search(r"\bmax\.(NaN\.)?f32\b|\bselp\.f32\b|\bsetp\.", ptx), ptx
    assert "st.global.f32" in ptx, ptx
    assert (sources / "nvptx_module.sm_90.ptx").is_file()
    assert "cuda-c" in (sources / "routes.txt").read_text()


def test_artifacts_are_deterministic(tmp_path):
    model = st.MODELS_DIR / "tiny_attention.onnx"
    for name in ("a.so", "b.so"):
        sinter("compile", model, "-o", tmp_path / name, "--target", "cuda", "--gpu-codegen", "llvm",
               "--arch", ",".join(ARCHS))
    assert (tmp_path / "a.so").read_bytes() == (tmp_path / "b.so").read_bytes()


def test_unknown_gpu_codegen_is_refused(tmp_path):
    result = sinter("compile", st.MODELS_DIR / "tiny_mlp.onnx", "-o", tmp_path / "x.so",
                    "--target", "cuda", "--gpu-codegen", "spirv", expect=1)
    assert "unknown --gpu-codegen 'spirv'; use cuda-c or llvm" in result.stderr
