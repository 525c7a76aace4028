"""The installed package: `cmake --install` of this build into a fresh prefix gives the CLI, the
runtime, its headers, a CMake package and a pkg-config file; examples/ then builds in a clean
folder against that prefix alone, through find_package(sinter) (the sinter::runtime target) and
through pkg-config, and each build of run_model runs a CPU artifact that the installed CLI
compiled, printing the outputs onnxruntime gives for run_model's inputs."""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import sinter_testing as st

MODEL = st.MODELS_DIR / "tiny_mlp.onnx"  # features f32[1,64] -> scores f32[1,8]


def run(command, timeout=300, **kwargs):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                            timeout=timeout, **kwargs)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited {result.returncode}\n"
                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout


def run_model_inputs():
    """examples/run_model.cpp's input 0: element i is +-(1 + (7i) % 11) / 8, + for even i."""
    i = np.arange(64)
    magnitude = (1 + (i * 7) % 11) / 8.0
    return np.where(i % 2 == 0, magnitude, -magnitude).astype(np.float32).reshape(1, 64)


def printed_scores(output):
    line = next(l for l in output.splitlines() if l.startswith("scores f32 [1,8]:"))
    return np.array([float(v) for v in line.split(":", 1)[1].split()], dtype=np.float32)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", st.BUILD, "--prefix", prefix])
    yield prefix
    shutil.rmtree(prefix, ignore_errors=True)  # the CLI alone is some 160 MB in a debug build


def test_install_lays_out_the_package(prefix):
    for path in ["bin/sinter", "lib/libsinter_rt.so", "include/sinter/runtime.h",
                 "include/sinter/runtime.hpp", "include/sinter/batching.hpp",
                 "lib/cmake/sinter/sinterConfig.cmake",
                 "lib/cmake/sinter/sinterConfigVersion.cmake",
                 "lib/cmake/sinter/sinterTargets.cmake", "lib/pkgconfig/sinter.pc"]:
        assert (prefix / path).is_file(), path
    # Only the runtime's public headers, the header-only batching rule and JSON reader the
    # examples use: the compiler's stay in the source tree, and these include nothing of them.
    assert sorted(p.name for p in (prefix / "include" / "sinter").iterdir()) == \
        ["batching.hpp", "io", "runtime.h", "runtime.hpp"]
    batching = (prefix / "include" / "sinter" / "batching.hpp").read_text()
    assert re.findall(r'#include\s*"(.*)"', batching) == ["sinter/runtime.h"]
    assert [p.name for p in (prefix / "include" / "sinter" / "io").iterdir()] == ["json_reader.h"]
    reader = (prefix / "include" / "sinter" / "io" / "json_reader.h").read_text()
    assert re.findall(r'#include\s*"', reader) == []


def test_examples_build_against_the_installed_prefix(prefix, tmp_path):
    # A clean folder with a copy of examples/: nothing of the source or build tree is in reach.
    source = tmp_path / "examples"
    shutil.copytree(st.ROOT / "examples", source)
    library = tmp_path / "tiny_mlp.so"
    run([prefix / "bin" / "sinter", "compile", MODEL, "--target", "cpu", "-o", library])
    expected = st.run_onnxruntime(MODEL, {"features": run_model_inputs()})["scores"].ravel()
    environment = dict(os.environ, LD_LIBRARY_PATH=str(prefix / "lib"))

    # find_package(sinter): the whole examples project (the server too, when cpp-httplib is there).
    build = tmp_path / "build-cmake"
    run(["cmake", "-S", source, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build, "-j", "2"])
    output = run([build / "run_model", library, "--values", "8"], env=environment)
    np.testing.assert_allclose(printed_scores(output), expected, rtol=1e-5, atol=1e-6)
    assert str(prefix / "lib") in run(["ldd", build / "run_model"], env=environment)

    # pkg-config: one compiler command.
    pc_environment = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "sinter"], env=pc_environment).split()
    assert f"-I{prefix}/include" in [re.sub(r"/lib/pkgconfig/\.\./\.\.", "", f) for f in flags]
    binary = tmp_path / "run_model_pc"
    run(["c++", "-std=c++17", "-O1", source / "run_model.cpp", "-o", binary, *flags])
    output = run([binary, library, "--values", "8"], env=environment)
    np.testing.assert_allclose(printed_scores(output), expected, rtol=1e-5, atol=1e-6)


def test_run_model_refuses_element_types_it_does_not_fill(tmp_path):
    """The example fills and prints 8- to 64-bit types; a model with a float8 input gets a clear
    refusal naming the input (it used to feed and print whatever memory held)."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)], "float8",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = tmp_path / "float8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), str(model))
    artifact = tmp_path / "float8.so"
    st.sinter("compile", model, "--target", "cpu", "-o", artifact)
    result = subprocess.run([str(st.BUILD / "bin" / "run_model"), str(artifact)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1, result
    assert "x has element type" in result.stderr and "sinter run" in result.stderr, result.stderr
