"""The CLI on compiled artifacts: `sinter compile`, then `inspect` (text, JSON, --plan), `bench`
and `run` on a model.so, for the CPU target (run here) and the CUDA target (compiled here: NVRTC
and ptxas need no GPU; nothing CUDA runs unless this machine has a driver).

The truth each check leans on is independent of the code under test: the ONNX model itself (names,
dtypes, shapes, node count), onnxruntime (outputs), the artifact's bytes read here with the layout
docs/artifact-format.md gives (ABI version, target, weights size), readelf (dynamic needs) and
plain byte comparison (determinism).

CTest sets SINTER_BIN and SINTER_ROOT; outside CTest they default to build/bin/sinter in the
checkout that holds this file.
"""
import ctypes
import json
import re
import shutil
import struct
import subprocess

import numpy as np
import onnx
import pytest
from onnx import helper

import sinter_testing as st

MODEL = st.MODELS_DIR / "tiny_mlp.onnx"
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0"}


sinter = st.sinter


error_line = st.error_line


def compile_model(model, output, *flags):
    sinter("compile", model, "-o", output, "--force", *flags)
    return output


def onnx_signature(model_path):
    """[(name, dtype name as sinter prints it, dims)] of the graph inputs and outputs."""
    model = onnx.load(str(model_path), load_external_data=False)
    names = {1: "f32", 6: "i32", 7: "i64", 9: "bool", 10: "f16", 11: "f64"}

    def describe(values):
        return [(v.name, names[v.type.tensor_type.elem_type],
                 [d.dim_value for d in v.type.tensor_type.shape.dim]) for v in values]

    initializers = {t.name for t in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    return describe(inputs), describe(model.graph.output), len(model.graph.node)


def artifact_header(path):
    """(abi version, target, weights bytes) from the `.sinter_artifact` section's header, found
    through the ELF section headers (docs/artifact-format.md: magic, u32 ABI, u32 target, ...,
    u64 weights bytes at offset 56)."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = sections[shstrndx][4]

    def name(section):
        start = names_offset + section[0]
        return data[start:data.index(b"\0", start)].decode()

    blob = next(s for s in sections if name(s) == ".sinter_artifact")
    offset = blob[4]
    assert data[offset:offset + 8] == b"SINTERAF"
    abi, target = struct.unpack_from("<II", data, offset + 8)
    weights, = struct.unpack_from("<Q", data, offset + 56)
    return abi, {1: "cpu", 2: "cuda"}[target], weights


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("artifacts")
    return {
        "cpu": compile_model(MODEL, folder / "cpu.so", "--target", "cpu"),
        "cuda": compile_model(MODEL, folder / "cuda.so", "--target", "cuda", "--arch",
                              "sm_80,sm_90"),
        "folder": folder,
    }


def inspect_json(artifact, *flags):
    return json.loads(sinter("inspect", artifact, "--json", *flags).stdout)


# --- inspect, CPU target -------------------------------------------------------------------------

def test_inspect_json_describes_the_cpu_artifact(artifacts):
    info = inspect_json(artifacts["cpu"])
    inputs, outputs, node_count = onnx_signature(MODEL)
    abi, target, weight_bytes = artifact_header(artifacts["cpu"])
    assert info["format"] == "sinter-artifact"
    assert info["target"] == target == "cpu"
    assert info["abi_version"] == abi == 1
    assert info["producer"].startswith("sinter ")
    # compile's default: kernels for every level, of which the runtime runs the best it can
    assert info["cpu_levels"] == ["x86-64-v2", "x86-64-v3", "x86-64-v4"]
    assert info["cpu_level"] == "x86-64-v2,x86-64-v3,x86-64-v4"
    assert info["cuda_archs"] == [] and info["cuda_modules"] == []
    assert info["file_bytes"] == artifacts["cpu"].stat().st_size
    assert [(t["name"], t["dtype"], t["dims"]) for t in info["inputs"]] == inputs
    assert [(t["name"], t["dtype"], t["dims"]) for t in info["outputs"]] == outputs
    assert info["inputs"][0]["type"] == "f32[1,64]"
    assert info["weight_bytes"] == weight_bytes > 0
    # tiny_mlp's initializers: W1 64x32, b1 32, W2 32x16 (+ bias), W3 16x8 (+ bias), all f32.
    model = onnx.load(str(MODEL))
    parameter_bytes = sum(onnx.numpy_helper.to_array(t).nbytes for t in model.graph.initializer)
    assert info["weight_bytes"] >= parameter_bytes
    assert 0 < info["arena_bytes"] <= info["activation_bytes"]
    assert info["arena_ratio"] == pytest.approx(info["arena_bytes"] / info["activation_bytes"])
    assert info["source_node_count"] == node_count
    assert 1 <= info["kernel_count"] == len(info["kernels"]) <= node_count
    for index, kernel in enumerate(info["kernels"]):
        assert kernel["index"] == index
        assert kernel["generator"] == "llvm-x86"
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kernel["name"])
        assert kernel["ops"], kernel
        assert "cuda_module" not in kernel
    # Every ONNX op is computed by some kernel (the importer keeps these ops' names).
    fused = [op for kernel in info["kernels"] for op in kernel["ops"]]
    for node in model.graph.node:
        assert node.op_type in fused, (node.op_type, fused)
    assert "plan" not in info


def test_inspect_text_shows_the_summary(artifacts):
    info = inspect_json(artifacts["cpu"])
    text = sinter("inspect", artifacts["cpu"]).stdout
    assert f"artifact: {artifacts['cpu']}" in text
    assert "target: cpu, x86-64-v2, x86-64-v3, x86-64-v4 (the runtime runs the highest this CPU has)" in text
    assert "abi version: 1" in text
    assert f"producer: {info['producer']}" in text
    assert re.search(r"^  features\s+f32\[1,64\]$", text, re.M), text
    assert re.search(r"^  scores\s+f32\[1,8\]$", text, re.M), text
    assert re.search(r"^arena: .* of activations \(ratio \d\.\d{3}\)$", text, re.M), text
    assert f"({info['weight_bytes']} bytes)" in text
    assert f"kernels: {info['kernel_count']} from {info['source_node_count']} source nodes" in text
    for kernel in info["kernels"]:
        assert re.search(rf"^\s+{kernel['index']}\s+{kernel['name']}\s+llvm-x86$", text, re.M)
    assert "plan:" not in text


def test_inspect_plan_lists_every_step(artifacts):
    info = inspect_json(artifacts["cpu"], "--plan")
    plan = info["plan"]
    assert [step["step"] for step in plan] == list(range(len(plan)))
    launches = [step for step in plan if step["kind"] == "launch"]
    assert sorted({step["kernel_index"] for step in launches}) == list(range(info["kernel_count"]))
    for step in launches:
        kernel = info["kernels"][step["kernel_index"]]
        assert step["kernel"] == kernel["name"] and step["ops"] == kernel["ops"]
        assert step["parallel_extent"] >= 1
        assert step["args"], step
        for arg in step["args"]:
            assert arg["region"] in ("arena", "weights")
            limit = info["arena_bytes"] if arg["region"] == "arena" else info["weight_bytes"]
            assert 0 <= arg["offset"] < limit
    text = sinter("inspect", artifacts["cpu"], "--plan").stdout
    plan_text = text[text.index("plan: "):]
    assert plan_text.startswith(f"plan: {len(plan)} steps ({len(launches)} launches, "
                                f"{len(plan) - len(launches)} copies)")
    for step in launches:
        line = next(l for l in plan_text.splitlines() if l.startswith(f"  [{step['step']}] "))
        assert step["kernel"] in line and f"extent {step['parallel_extent']}" in line
        assert "moved" in line and "FLOP" in line
        assert ", ".join(step["ops"]) in line


def test_inspect_json_counts_a_runs_work_by_launch(tmp_path):
    """Two MatMuls of the same shapes share one kernel entry; a run does the work of both, so the
    plan's FLOPs are twice the entry's: 2 * 8 * 64 * 48 multiply-adds each, from the model's
    shapes."""
    rng = np.random.default_rng(0)
    weights = [rng.uniform(-1, 1, (64, 64)).astype(np.float32), rng.uniform(-1, 1, (64, 48)).astype(np.float32),
               rng.uniform(-1, 1, (64, 48)).astype(np.float32)]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w0"], ["h"]), helper.make_node("MatMul", ["h", "w1"], ["y0"]),
         helper.make_node("MatMul", ["h", "w2"], ["y1"])], "repeated",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [8, 64])],
        [helper.make_tensor_value_info("y0", onnx.TensorProto.FLOAT, [8, 48]),
         helper.make_tensor_value_info("y1", onnx.TensorProto.FLOAT, [8, 48])],
        [onnx.numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(weights)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "repeated.onnx"))
    # --disable-pass: keep the two sibling products apart (they would be merged into one).
    artifact = compile_model(tmp_path / "repeated.onnx", tmp_path / "repeated.so", "--target", "cpu",
                             "--disable-pass", "merge-sibling-matmuls")
    info = inspect_json(artifact, "--plan")
    launches = [step for step in info["plan"] if step["kind"] == "launch"]
    assert len(launches) == 3
    flops = {kernel["index"]: kernel["flops"] for kernel in info["kernels"]}
    assert sorted(flops[step["kernel_index"]] for step in launches) == [2 * 8 * 64 * 48] * 2 + [2 * 8 * 64 * 64]
    assert len({step["kernel_index"] for step in launches}) == 2, "the two 64 -> 48 products share an entry"
    assert info["plans"][0]["flops"] == 2 * 8 * 64 * 64 + 2 * (2 * 8 * 64 * 48)


def test_inspect_plan_shows_copies(tmp_path):
    """A constant graph output is copied into the arena by a Copy step after the kernels."""
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "copies",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2, 3])],
        [onnx.numpy_helper.from_array(value, "c")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "copies.onnx"))
    artifact = compile_model(tmp_path / "copies.onnx", tmp_path / "copies.so", "--target", "cpu")
    plan = inspect_json(artifact, "--plan")["plan"]
    copies = [step for step in plan if step["kind"] == "copy"]
    assert len(copies) == 1
    assert copies[0]["source"]["region"] == "weights"
    assert copies[0]["destination"]["region"] == "arena"
    assert copies[0]["bytes"] == value.nbytes
    text = sinter("inspect", artifact, "--plan").stdout
    assert re.search(rf"^  \[{copies[0]['step']}\] copy weights\+\d+ -> arena\+\d+, 24 B$", text,
                     re.M), text
    # and the run gives the constant back
    x = np.full((2, 3), -1.0, np.float32)
    outputs = st.run_cpu(tmp_path / "copies.onnx", {"x": x}, tmp_path)
    np.testing.assert_array_equal(outputs["c"], value)
    np.testing.assert_array_equal(outputs["y"], np.zeros((2, 3), np.float32))


# --- bench and run, CPU target -------------------------------------------------------------------

def test_bench_json_reports_every_iteration(artifacts):
    report = json.loads(sinter("bench", artifacts["cpu"], "--iterations", 5, "--warmup", 2,
                               "--threads", 1, "--json").stdout)
    latencies = report["latencies_ms"]
    assert len(latencies) == report["iterations"] == 5
    assert report["warmup"] == 2 and report["threads"] == 1
    assert report["target"] == "cpu" and report["timing"] == "steady-clock"
    assert all(latency > 0 for latency in latencies), latencies
    stats = report["latency_ms"]
    assert stats["min"] == min(latencies) and stats["max"] == max(latencies)
    assert stats["mean"] == pytest.approx(np.mean(latencies))
    for name, q in (("p50", 50), ("p90", 90), ("p99", 99)):
        assert stats[name] == pytest.approx(np.percentile(latencies, q))
    assert report["batch"] == 1  # features f32[1,64]
    assert report["throughput_per_s"] == pytest.approx(1000.0 / stats["mean"])


def test_bench_text_and_defaults(artifacts):
    text = sinter("bench", artifacts["cpu"], "--threads", 2).stdout
    assert "runs: 10 warm-up, 100 timed" in text
    match = re.search(r"latency \(ms\): p50 ([\d.]+)  p90 ([\d.]+)  p99 ([\d.]+)  mean ([\d.]+)  "
                      r"min ([\d.]+)  max ([\d.]+)", text)
    assert match, text
    p50, p90, p99, mean, low, high = map(float, match.groups())
    assert 0 < low <= p50 <= p90 <= p99 <= high
    assert re.search(r"throughput: [\d.]+ inferences/s \(batch 1 / mean latency\)", text)


def test_bench_batch_is_the_first_dim(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Cast", ["ids"], ["z"], to=1)],
        "batch", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8]),
                  helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 8]),
         helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "batch.onnx"))
    artifact = compile_model(tmp_path / "batch.onnx", tmp_path / "batch.so", "--target", "cpu")
    report = json.loads(sinter("bench", artifact, "--iterations", 3, "--json").stdout)
    assert report["batch"] == 4
    assert report["throughput_per_s"] == pytest.approx(4 * 1000.0 / report["latency_ms"]["mean"])


def test_bench_rejects_bad_arguments(artifacts):
    assert "--iterations" in error_line(sinter("bench", artifacts["cpu"], "--iterations", 0,
                                               expect=1))
    assert "--warmup" in error_line(sinter("bench", artifacts["cpu"], "--warmup", -1, expect=1))
    assert "not a compiled artifact" in error_line(sinter("bench", MODEL, expect=1))
    assert "no such file" in error_line(sinter("bench", artifacts["folder"] / "missing.so",
                                               expect=1))


def libcuda_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_bench_on_cuda_without_a_driver_is_a_user_error(artifacts):
    if libcuda_loads():
        report = json.loads(sinter("bench", artifacts["cuda"], "--iterations", 3, "--json").stdout)
        assert report["timing"] == "cuda-events" and len(report["latencies_ms"]) == 3
        return
    assert "libcuda.so.1" in error_line(sinter("bench", artifacts["cuda"], expect=1))


def test_run_matches_onnxruntime(artifacts, tmp_path):
    inputs = st.make_inputs(MODEL)
    expected = st.run_onnxruntime(MODEL, inputs)
    flags = []
    for index, (name, array) in enumerate(inputs.items()):
        np.save(tmp_path / f"in{index}.npy", array)
        flags += ["--input", f"{name}={tmp_path / f'in{index}.npy'}"]
    sinter("run", artifacts["cpu"], *flags, "-o", tmp_path / "out.npz")
    with np.load(tmp_path / "out.npz") as archive:
        actual = {name: archive[name] for name in archive.files}
    st.assert_outputs_match(actual, expected, "tiny_mlp (cpu)")


# --- CUDA target (compiled only) ------------------------------------------------------------------

def test_inspect_cuda_artifact_lists_cubins_and_ptx(artifacts):
    info = inspect_json(artifacts["cuda"])
    abi, target, weight_bytes = artifact_header(artifacts["cuda"])
    assert info["target"] == target == "cuda" and info["abi_version"] == abi
    assert info["weight_bytes"] == weight_bytes
    assert info["cpu_level"] is None
    assert info["cuda_archs"] == ["sm_80", "sm_90"]
    assert info["cuda_modules"], info
    for module in info["cuda_modules"]:
        kinds = {(b["kind"], b["arch"]) for b in module["binaries"]}
        assert {("cubin", "sm_80"), ("cubin", "sm_90")} <= kinds, kinds
        assert any(kind == "ptx" for kind, _ in kinds), kinds
        assert all(b["bytes"] > 0 for b in module["binaries"])
    for kernel in info["kernels"]:
        assert kernel["generator"] == "cuda-c"
        assert 0 <= kernel["cuda_module"] < len(info["cuda_modules"])
    text = sinter("inspect", artifacts["cuda"]).stdout
    assert re.search(r"^target: cuda, sm_80, sm_90 \+ PTX compute_\d+$", text, re.M), text
    assert re.search(r"^  module 0 \(\d+ kernels\): .*cubin sm_80 .*cubin sm_90 .*PTX compute_",
                     text, re.M), text
    for kernel in info["kernels"]:
        assert re.search(rf"^\s+{kernel['index']}\s+{kernel['name']}\s+cuda-c\s+module "
                         rf"{kernel['cuda_module']}$", text, re.M), text


def test_inspect_cuda_plan_shows_launch_shapes(artifacts):
    info = inspect_json(artifacts["cuda"], "--plan")
    launches = [step for step in info["plan"] if step["kind"] == "launch"]
    assert sorted({s["kernel_index"] for s in launches}) == list(range(info["kernel_count"]))
    text = sinter("inspect", artifacts["cuda"], "--plan").stdout
    for step in launches:
        assert all(d >= 1 for d in step["grid"] + step["block"]), step
        grid = "x".join(map(str, step["grid"]))
        block = "x".join(map(str, step["block"]))
        assert f"[{step['step']}] {step['kernel']} (" in text
        assert f"grid {grid} x block {block}" in text


@pytest.mark.parametrize("target", ["cpu", "cuda"])
def test_artifact_needs_only_libc(artifacts, target):
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("readelf (binutils) is not installed")
    dynamic = subprocess.run([readelf, "-d", str(artifacts[target])], capture_output=True,
                             text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    assert "(NEEDED)" not in dynamic or needed, dynamic  # the pattern matched what is there
    assert needed <= ALLOWED_NEEDED, needed


@pytest.mark.parametrize("target,flags", [("cpu", ["--target", "cpu"]),
                                          ("cuda", ["--target", "cuda", "--arch", "sm_80,sm_90"])])
def test_compiling_twice_gives_identical_bytes(artifacts, tmp_path, target, flags):
    # The second compile runs in another working directory: nothing of where sinter ran may
    # reach the artifact (NVRTC once wrote the directory into the PTX's line info).
    again = tmp_path / f"again_{target}.so"
    subprocess.run([str(st.sinter_bin()), "compile", str(MODEL), "-o", str(again), "--force", *flags],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    assert st.sinter_bin().resolve().parent != tmp_path.resolve()
    first, second = artifacts[target].read_bytes(), again.read_bytes()
    assert len(first) == len(second)
    assert first == second, next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)


# --- failures -------------------------------------------------------------------------------------

def test_inspect_rejects_files_that_are_not_artifacts(artifacts, tmp_path):
    text_file = tmp_path / "notes.so"
    text_file.write_text("not an ELF file\n")
    assert "not an ELF file" in error_line(sinter("inspect", text_file, expect=1))
    # A real shared library without a manifest: the runtime library itself, if built beside.
    runtime = st.sinter_bin().parent.parent / "lib" / "libsinter_rt.so"
    if runtime.exists():
        line = error_line(sinter("inspect", runtime, expect=1))
        assert "no .sinter_artifact section" in line, line


def test_inspect_rejects_a_corrupt_manifest(artifacts, tmp_path):
    data = bytearray(artifacts["cpu"].read_bytes())
    start = data.index(b"SINTERAF")
    data[start + 100] ^= 0xFF  # inside the metadata, whose hash the header holds
    corrupt = tmp_path / "corrupt.so"
    corrupt.write_bytes(bytes(data))
    line = error_line(sinter("inspect", corrupt, expect=1))
    assert "corrupt" in line or "hash" in line or "checksum" in line, line


def test_inspect_flags_that_do_not_fit_the_file(artifacts):
    assert "--plan" in error_line(sinter("inspect", MODEL, "--plan", expect=1))
    assert "--ir" in error_line(sinter("inspect", artifacts["cpu"], "--ir", expect=1))


def test_cpu_native_names_the_host_level_and_runs(tmp_path):
    """--cpu native compiles for the best x86-64 level of this machine and records that level,
    so the runtime can check it (and load it here); the result still matches onnxruntime."""
    model = st.MODELS_DIR / "tiny_cnn.onnx"
    inputs = st.make_inputs(model, 1)
    library = tmp_path / "native.so"
    st.run_cli(["compile", model, "--target", "cpu", "--cpu", "native", *st.shape_flags(inputs), "-o", library])
    level = inspect_json(library)["cpu_level"]
    assert level in ("x86-64-v2", "x86-64-v3", "x86-64-v4")
    flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0].split()
    expected = ("x86-64-v4" if "avx512f" in flags and "avx512bw" in flags
                else "x86-64-v3" if "avx2" in flags and "fma" in flags else "x86-64-v2")
    assert level == expected
    out = tmp_path / "out.npz"
    st.run_cli(["run", library, *st._input_flags(inputs, tmp_path), "-o", out])
    st.assert_outputs_match(st._load_npz(out), st.run_onnxruntime(model, inputs), context="native")
