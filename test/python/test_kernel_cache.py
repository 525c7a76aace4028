"""The kernel cache and the job pool through `sinter compile` (CUDA without a GPU, and CPU): the
artifact is byte-identical with the cache cold, warm and off and with any -j; a damaged entry is
detected, rebuilt and not used; two compiles sharing one fresh cache folder at once both succeed
with the same artifact. The truth is the artifact compiled with --no-cache -j 1 (NVRTC and ptxas
run once per unit, in order); docs/architecture.md says why every result must equal it.
"""
import re
import subprocess

import sinter_testing as st

MODEL = st.MODELS_DIR / "tiny_cnn.onnx"
FLAGS = ["--target", "cuda", "--arch", "sm_80,sm_90", "--force"]


def compile_model(output, *extra):
    return st.sinter("compile", MODEL, "-o", output, *FLAGS, *extra)


def cache_line(result):
    """(units from the cache, units, damaged entries rebuilt) from the compile's summary."""
    match = re.search(r"kernel cache .*: (\d+) of (\d+) toolchain units from the cache"
                      r"(?: \((\d+) damaged entries rebuilt\))?", result.stderr)
    assert match, result.stderr
    return int(match[1]), int(match[2]), int(match[3] or 0)


def entries(cache):
    return sorted(p for p in (cache / "kernels-v1").rglob("*") if p.is_file())


def test_cold_warm_and_no_cache_artifacts_are_identical(tmp_path):
    cache = tmp_path / "cache"
    truth = tmp_path / "truth.so"
    result = compile_model(truth, "--no-cache", "-j", "1")
    assert "kernel cache" not in result.stderr
    cold, warm, parallel = tmp_path / "cold.so", tmp_path / "warm.so", tmp_path / "parallel.so"
    hits, units, _ = cache_line(compile_model(cold, "--cache-dir", cache, "-j", "1"))
    assert hits == 0 and units > 0
    assert len(entries(cache)) == units
    assert cache_line(compile_model(warm, "--cache-dir", cache)) == (units, units, 0)
    compile_model(parallel, "--no-cache", "-j", "2")
    for artifact in (cold, warm, parallel):
        assert artifact.read_bytes() == truth.read_bytes(), artifact.name


def test_damaged_entries_are_detected_and_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    truth = tmp_path / "truth.so"
    compile_model(truth, "--cache-dir", cache)
    files = entries(cache)
    assert files
    # One byte flipped in the middle of every entry (its payload), one entry cut short.
    for path in files:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x40
        path.write_bytes(bytes(data))
    files[0].write_bytes(files[0].read_bytes()[:100])
    rebuilt = tmp_path / "rebuilt.so"
    hits, units, damaged = cache_line(compile_model(rebuilt, "--cache-dir", cache))
    assert rebuilt.read_bytes() == truth.read_bytes()
    # NVRTC's results are looked up first; a damaged one is rebuilt, and the ptxas keys of the
    # rebuilt PTX are the damaged cubin entries: every unit is rebuilt, none is used.
    assert hits == 0 and damaged == units == len(files)
    # The rebuilt entries are whole again.
    assert cache_line(compile_model(rebuilt, "--cache-dir", cache)) == (units, units, 0)


def test_two_compiles_sharing_a_fresh_cache_both_succeed(tmp_path):
    cache = tmp_path / "cache"
    truth = tmp_path / "truth.so"
    compile_model(truth, "--no-cache")
    outputs = [tmp_path / f"concurrent{i}.so" for i in range(2)]
    processes = [subprocess.Popen([str(st.sinter_bin()), "compile", str(MODEL), "-o", str(output),
                                   *FLAGS, "--cache-dir", str(cache)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for output in outputs]
    for process in processes:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
    for output in outputs:
        assert output.read_bytes() == truth.read_bytes(), output.name
    assert not [p for p in (cache / "kernels-v1").rglob(".tmp-*")]


def test_cpu_objects_come_from_the_cache_byte_identical(tmp_path):
    """The CPU target's objects (LLVM O3 and code generation) go through the same cache: the
    model fills one module at each of the default artifact's three x86-64 levels, each an entry."""
    cache = tmp_path / "cache"
    flags = ["--target", "cpu", "--force"]
    truth, cold, warm = tmp_path / "truth.so", tmp_path / "cold.so", tmp_path / "warm.so"
    st.sinter("compile", MODEL, "-o", truth, *flags, "--no-cache")
    assert cache_line(st.sinter("compile", MODEL, "-o", cold, *flags, "--cache-dir", cache)) == (0, 3, 0)
    assert cache_line(st.sinter("compile", MODEL, "-o", warm, *flags, "--cache-dir", cache)) == (3, 3, 0)
    stored = entries(cache)
    assert len(stored) == 3
    data = stored[0].read_bytes()
    stored[0].write_bytes(data[:-1] + bytes([data[-1] ^ 0x01]))  # an object's last byte flipped
    rebuilt = tmp_path / "rebuilt.so"
    assert cache_line(st.sinter("compile", MODEL, "-o", rebuilt, *flags, "--cache-dir", cache)) == (2, 3, 1)
    for artifact in (cold, warm, rebuilt):
        assert artifact.read_bytes() == truth.read_bytes(), artifact.name


def test_cpu_modules_are_built_in_parallel_and_cached_one_by_one(tmp_path):
    """A model of more than eight kernels fills several LLVM modules, built on the -j pool: the
    artifact is the same for -j 1 and -j 2, each module's object is an entry of its own, and a
    compile that finds all but one of them builds that one alone."""
    model = st.MODELS_DIR / "mobilenet_v2.onnx"
    flags = ["--target", "cpu", "--force", "--dim", "batch=1"]
    truth, parallel = tmp_path / "truth.so", tmp_path / "parallel.so"
    st.sinter("compile", model, "-o", truth, *flags, "--no-cache", "-j", "1")
    st.sinter("compile", model, "-o", parallel, *flags, "--no-cache", "-j", "2")
    assert parallel.read_bytes() == truth.read_bytes()
    cache = tmp_path / "cache"
    cold, warm, partial = tmp_path / "cold.so", tmp_path / "warm.so", tmp_path / "partial.so"
    hits, units, _ = cache_line(st.sinter("compile", model, "-o", cold, *flags, "--cache-dir", cache, "-j", "2"))
    assert hits == 0 and units > 1, units
    assert len(entries(cache)) == units
    assert cache_line(st.sinter("compile", model, "-o", warm, *flags, "--cache-dir", cache)) == (units, units, 0)
    entries(cache)[0].unlink()
    assert cache_line(st.sinter("compile", model, "-o", partial, *flags, "--cache-dir", cache)) == (units - 1, units, 0)
    for artifact in (cold, warm, partial):
        assert artifact.read_bytes() == truth.read_bytes(), artifact.name
