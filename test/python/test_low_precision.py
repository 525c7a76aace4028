"""The low-precision element types end to end: Cast, QuantizeLinear, DequantizeLinear and data
movement on float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4e2m1 and the 4- and 2-bit
integers, through the CLI on the reference evaluator and the CPU target.

The truth is ONNX's reference implementation (onnx.reference.ReferenceEvaluator, which converts
with ml_dtypes and onnx.numpy_helper), compared bit for bit: every code, and floats on both sides
of every rounding boundary. Inputs and outputs travel as TensorProto .pb files, so the 4- and
2-bit types are packed as ONNX packs them, exactly as the conformance runner sees them.
"""
import subprocess

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from sinter_testing import enabled_targets, run_cli, sinter_bin

OPSET = 25
FLOAT8 = {
    TensorProto.FLOAT8E4M3FN: ml_dtypes.float8_e4m3fn,
    TensorProto.FLOAT8E4M3FNUZ: ml_dtypes.float8_e4m3fnuz,
    TensorProto.FLOAT8E5M2: ml_dtypes.float8_e5m2,
    TensorProto.FLOAT8E5M2FNUZ: ml_dtypes.float8_e5m2fnuz,
}
FLOATS = {**FLOAT8, TensorProto.FLOAT4E2M1: ml_dtypes.float4_e2m1fn,
          TensorProto.FLOAT8E8M0: ml_dtypes.float8_e8m0fnu}
INTEGERS = {TensorProto.INT4: ml_dtypes.int4, TensorProto.UINT4: ml_dtypes.uint4,
            TensorProto.INT2: ml_dtypes.int2, TensorProto.UINT2: ml_dtypes.uint2}
NAMES = {t: TensorProto.DataType.Name(t).lower() for t in [*FLOATS, *INTEGERS]}
TARGETS = enabled_targets()


def model(nodes, inputs, outputs):
    """A model of `nodes`; inputs and outputs as (name, elem_type, shape)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def run_sinter(target, onnx_model, feeds, tmp_path):
    """Outputs (in graph order) of `onnx_model` on `feeds` (name -> array) through the CLI."""
    path = tmp_path / "model.onnx"
    onnx.save(onnx_model, str(path))
    files = []
    for index, info in enumerate(onnx_model.graph.input):
        files.append(tmp_path / f"input_{index}.pb")
        files[-1].write_bytes(numpy_helper.from_array(feeds[info.name], info.name).SerializeToString())
    out = tmp_path / "out"
    flags = ["--output-dir", out, "--output-format", "pb"]
    if target == "reference":
        run_cli(["run", path, *files, "--reference", *flags])
    else:
        library = tmp_path / "model.so"
        run_cli(["compile", path, "--target", target, "-o", library])
        run_cli(["run", library, *files, *flags])
    results = []
    for index, info in enumerate(onnx_model.graph.output):
        tensor = onnx.TensorProto()
        tensor.ParseFromString((out / f"output_{index}.pb").read_bytes())
        assert tensor.data_type == info.type.tensor_type.elem_type, info.name
        results.append(numpy_helper.to_array(tensor))
    return results


def codes(array):
    """An array's elements as comparable integers: the code of a low-precision float (the low
    4 bits for float4), the value of an integer."""
    if array.dtype in [np.dtype(t) for t in INTEGERS.values()]:
        return array.astype(np.int32)
    if array.dtype == np.dtype(ml_dtypes.float4_e2m1fn):
        return array.view(np.uint8) & 0x0F
    if array.dtype in [np.dtype(t) for t in FLOATS.values()]:
        return array.view(np.uint8)
    if array.dtype == np.float16:
        return array.view(np.uint16)
    if array.dtype == np.float32:
        return array.view(np.uint32)
    return array


def assert_bit_exact(actual, expected, inputs=None):
    for index, (a, e) in enumerate(zip(actual, expected)):
        assert a.shape == e.shape, f"output {index}: shape {a.shape} vs {e.shape}"
        a_codes, e_codes = codes(np.asarray(a)), codes(np.asarray(e))
        if e.dtype in (np.float16, np.float32):  # any NaN matches any NaN
            both_nan = np.isnan(a.astype(np.float32)) & np.isnan(e.astype(np.float32))
            a_codes = np.where(both_nan, 0, a_codes)
            e_codes = np.where(both_nan, 0, e_codes)
        wrong = np.flatnonzero(a_codes.ravel() != e_codes.ravel())
        if wrong.size:
            i = wrong[0]
            given = "" if inputs is None else f" for input {inputs.ravel()[i]!r}"
            pytest.fail(f"output {index}: {wrong.size} of {a.size} elements differ; first at {i}"
                        f"{given}: got {a.ravel()[i]!r} ({a_codes.ravel()[i]:#x}), expected "
                        f"{e.ravel()[i]!r} ({e_codes.ravel()[i]:#x})", pytrace=False)


def check(target, onnx_model, feeds, tmp_path, inputs_for_message=None):
    expected = ReferenceEvaluator(onnx_model).run(None, feeds)
    actual = run_sinter(target, onnx_model, feeds, tmp_path)
    assert_bit_exact(actual, expected, inputs_for_message)


def probe_floats(np_type):
    """float32s around every value of a low-precision float: the values, the midpoints between
    neighbours and the floats next to them, specials, and a log-uniform sample."""
    values = np.arange(256, dtype=np.uint8).view(np_type).astype(np.float64)
    finite = np.unique(values[np.isfinite(values)])
    middles = ((finite[:-1] + finite[1:]) / 2).astype(np.float32)
    random = np.random.default_rng(5)
    sample = np.exp2(random.uniform(-140, 120, 300)) * random.choice([-1, 1], 300)
    probes = np.concatenate([
        finite, middles, np.nextafter(middles, np.float32(np.inf)),
        np.nextafter(middles, np.float32(-np.inf)), sample,
        [0.0, -0.0, np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30, 1e-30, -1e-30]])
    return probes.astype(np.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("to", list(FLOATS), ids=lambda t: NAMES[t])
def test_cast_float_into_low_precision_floats(target, to, tmp_path):
    x = probe_floats(FLOATS[to])
    if to == TensorProto.FLOAT8E8M0:  # every round_mode, saturating or not
        variants = [dict(saturate=s, round_mode=m) for s in (1, 0) for m in ("up", "down", "nearest")]
    elif to in FLOAT8:
        variants = [dict(saturate=1), dict(saturate=0)]
    else:
        variants = [{}]
    nodes = [helper.make_node("Cast", ["x"], [f"y{i}"], to=to, **v) for i, v in enumerate(variants)]
    m = model(nodes, [("x", TensorProto.FLOAT, [x.size])],
              [(f"y{i}", to, [x.size]) for i in range(len(variants))])
    check(target, m, {"x": x}, tmp_path, x)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source", [*FLOATS, *INTEGERS], ids=lambda t: NAMES[t])
def test_cast_every_code_out_of_low_precision(target, source, tmp_path):
    np_type = {**FLOATS, **INTEGERS}[source]
    bits = 8 if source in (*FLOAT8, TensorProto.FLOAT8E8M0) else 4 if source in (
        TensorProto.FLOAT4E2M1, TensorProto.INT4, TensorProto.UINT4) else 2
    if source in INTEGERS:
        info = ml_dtypes.iinfo(np_type)
        x = np.arange(info.min, info.max + 1).astype(np_type)
    else:
        x = np.arange(1 << bits, dtype=np.uint8).view(np_type)
    targets = [TensorProto.FLOAT, TensorProto.FLOAT8E5M2]
    if target == "reference":  # the CPU target cannot link float16 conversions yet
        targets.append(TensorProto.FLOAT16)
    if source in INTEGERS:  # ONNX's reference cannot cast between the sub-byte integers
        targets.append(TensorProto.INT8)
    nodes = [helper.make_node("Cast", ["x"], [f"y{i}"], to=t) for i, t in enumerate(targets)]
    m = model(nodes, [("x", source, [x.size])],
              [(f"y{i}", t, [x.size]) for i, t in enumerate(targets)])
    check(target, m, {"x": x}, tmp_path, x)


def integer_range(elem_type):
    info = ml_dtypes.iinfo(INTEGERS[elem_type])
    return int(info.min), int(info.max)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("to", list(INTEGERS), ids=lambda t: NAMES[t])
def test_cast_into_sub_byte_integers(target, to, tmp_path):
    """What the ONNX spec defines: floats whose truncation is in the target's range truncate
    toward zero (the spec leaves other floats undefined: see the next test); integers keep
    their low bits, two's complement, whatever their value."""
    low, high = integer_range(to)
    x = np.array([0, 0.5, -0.5, 1.9, -1.9, low, high, low - 0.75, high + 0.75,
                  np.nextafter(np.float32(low - 1), np.float32(0)),
                  np.nextafter(np.float32(high + 1), np.float32(0))], dtype=np.float32)
    x = x[(np.trunc(x) >= low) & (np.trunc(x) <= high)]  # -1.9 is out of an unsigned range
    n = np.array([0, 1, -1, 7, 8, -9, 100, -100, 255, 70000], dtype=np.int32)
    nodes = [helper.make_node("Cast", ["x"], ["f"], to=to), helper.make_node("Cast", ["n"], ["i"], to=to)]
    m = model(nodes, [("x", TensorProto.FLOAT, [x.size]), ("n", TensorProto.INT32, [n.size])],
              [("f", to, [x.size]), ("i", to, [n.size])])
    check(target, m, {"x": x, "n": n}, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_cast_out_of_range_floats_into_sub_byte_integers_wraps(target, tmp_path):
    """sinter's choice where the spec says "undefined if OOR" (docs/precision.md): a float
    truncates toward zero and keeps its low bits, as an integer source would; NaN and
    infinities give 0. The truth is exact int64 arithmetic, not numpy's cast of the floats,
    which is undefined too and differs between CPUs."""
    x = np.array([8, -9, 15.5, 16, 17, -17.5, -100.25, 1e6, -3e9, 2.5e15,
                  np.nan, np.inf, -np.inf], dtype=np.float32)
    finite = np.isfinite(x)
    truncated = np.trunc(np.where(finite, x, 0).astype(np.float64)).astype(np.int64)  # all < 2**53
    nodes, outputs, expected = [], [], []
    for index, to in enumerate(INTEGERS):
        low, high = integer_range(to)
        span = high - low + 1
        wrapped = np.where(finite, (truncated - low) % span + low, 0)  # Python-style %: in [0, span)
        nodes.append(helper.make_node("Cast", ["x"], [f"y{index}"], to=to))
        outputs.append((f"y{index}", to, [x.size]))
        expected.append(wrapped.astype(INTEGERS[to]))
    m = model(nodes, [("x", TensorProto.FLOAT, [x.size])], outputs)
    assert_bit_exact(run_sinter(target, m, {"x": x}, tmp_path), expected, x)


QUANTIZED = [TensorProto.INT4, TensorProto.UINT4, TensorProto.INT2, TensorProto.UINT2,
             TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2, TensorProto.FLOAT4E2M1]


def zero_point(elem_type, shape):
    np_type = {**FLOATS, **INTEGERS}[elem_type]
    if elem_type in INTEGERS:
        info = ml_dtypes.iinfo(np_type)
        values = np.random.default_rng(3).integers(info.min, info.max + 1, shape)
        return values.astype(np_type)
    return np.zeros(shape, dtype=np_type)  # float8 zero points must be 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("elem_type", QUANTIZED, ids=lambda t: NAMES[t])
def test_quantize_and_dequantize(target, elem_type, tmp_path):
    random = np.random.default_rng(11)
    x = (random.standard_normal((4, 6)) * 20).astype(np.float32)
    per_axis = np.array([0.5, 2.0, 3.0, 0.25], dtype=np.float32)  # axis 0
    blocked = random.uniform(0.5, 4, (4, 2)).astype(np.float32)   # axis 1, blocks of 3
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_axis", "z_axis"], ["q_axis"], axis=0),
        helper.make_node("DequantizeLinear", ["q_axis", "s_axis", "z_axis"], ["d_axis"], axis=0),
        helper.make_node("QuantizeLinear", ["x", "s_block", "z_block"], ["q_block"], axis=1,
                         block_size=3),
        helper.make_node("DequantizeLinear", ["q_block", "s_block", "z_block"], ["d_block"],
                         axis=1, block_size=3),
        helper.make_node("QuantizeLinear", ["x", "s_tensor"], ["q_tensor"], output_dtype=elem_type),
    ]
    feeds = {"x": x, "s_axis": per_axis, "z_axis": zero_point(elem_type, [4]),
             "s_block": blocked, "z_block": zero_point(elem_type, [4, 2]),
             "s_tensor": np.array(0.75, dtype=np.float32)}
    m = model(nodes,
              [("x", TensorProto.FLOAT, [4, 6]), ("s_axis", TensorProto.FLOAT, [4]),
               ("z_axis", elem_type, [4]), ("s_block", TensorProto.FLOAT, [4, 2]),
               ("z_block", elem_type, [4, 2]), ("s_tensor", TensorProto.FLOAT, [])],
              [("q_axis", elem_type, [4, 6]), ("d_axis", TensorProto.FLOAT, [4, 6]),
               ("q_block", elem_type, [4, 6]), ("d_block", TensorProto.FLOAT, [4, 6]),
               ("q_tensor", elem_type, [4, 6])])
    check(target, m, feeds, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("elem_type", [TensorProto.INT4, TensorProto.UINT2, TensorProto.FLOAT4E2M1,
                                       TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E8M0],
                         ids=lambda t: NAMES[t])
def test_data_movement_keeps_every_bit(target, elem_type, tmp_path):
    # Odd sizes, so packing pads; every code appears, NaN codes included.
    np_type = {**FLOATS, **INTEGERS}[elem_type]
    if elem_type in INTEGERS:
        info = ml_dtypes.iinfo(np_type)
        values = np.resize(np.arange(info.min, info.max + 1), 3 * 5 * 7).astype(np_type)
    else:
        count = 16 if elem_type == TensorProto.FLOAT4E2M1 else 256
        values = np.resize(np.arange(count, dtype=np.uint8), 3 * 5 * 7).view(np_type)
    x = values.reshape(3, 5, 7)
    flag = np.array([True, False, True, True, False, False, True], dtype=bool)
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[2, 0, 1]),
        helper.make_node("Reshape", ["t", "shape"], ["r"]),
        helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Concat", ["x", "x"], ["c"], axis=1),
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="edge"),
        helper.make_node("Transpose", ["x"], ["t7"], perm=[0, 1, 2]),
        helper.make_node("Where", ["flag", "x", "t7"], ["w"]),
        helper.make_node("Flatten", ["x"], ["f"], axis=2),
    ]
    feeds = {"x": x, "shape": np.array([35, 3], dtype=np.int64),
             "starts": np.array([1, 0], dtype=np.int64), "ends": np.array([5, 7], dtype=np.int64),
             "axes": np.array([1, 2], dtype=np.int64),
             "pads": np.array([0, 1, 0, 0, 2, 1], dtype=np.int64), "flag": flag}
    m = model(nodes,
              [("x", elem_type, [3, 5, 7]), ("shape", TensorProto.INT64, [2]),
               ("starts", TensorProto.INT64, [2]), ("ends", TensorProto.INT64, [2]),
               ("axes", TensorProto.INT64, [2]), ("pads", TensorProto.INT64, [6]),
               ("flag", TensorProto.BOOL, [7])],
              [("r", elem_type, [35, 3]), ("s", elem_type, [3, 4, 7]),
               ("c", elem_type, [3, 10, 7]), ("p", elem_type, [3, 8, 8]),
               ("w", elem_type, [3, 5, 7]), ("f", elem_type, [15, 7])])
    if target != "reference":  # shapes and pads must be constants to compile
        for name in ("shape", "starts", "ends", "axes", "pads"):
            m.graph.initializer.append(numpy_helper.from_array(feeds[name], name))
        keep = [i for i in m.graph.input if i.name not in {"shape", "starts", "ends", "axes", "pads"}]
        del m.graph.input[:]
        m.graph.input.extend(keep)
    check(target, m, {i.name: feeds[i.name] for i in m.graph.input} if target != "reference"
          else feeds, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_arithmetic_on_low_precision_is_refused(target, tmp_path):
    """No op computes in a low-precision type: a clear error, never a wrong answer."""
    m = model([helper.make_node("Add", ["a", "b"], ["y"])],
              [("a", TensorProto.FLOAT8E4M3FN, [4]), ("b", TensorProto.FLOAT8E4M3FN, [4])],
              [("y", TensorProto.FLOAT8E4M3FN, [4])])
    path = tmp_path / "model.onnx"
    onnx.save(m, str(path))
    x = np.arange(4, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    files = []
    for name in ("a", "b"):
        files.append(tmp_path / f"{name}.pb")
        files[-1].write_bytes(numpy_helper.from_array(x, name).SerializeToString())
    if target == "reference":
        command = [sinter_bin(), "run", path, *files, "--reference", "--output-dir", tmp_path / "o",
                   "--output-format", "pb"]
    else:
        command = [sinter_bin(), "compile", path, "--target", target, "-o", tmp_path / "m.so"]
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "f8e4m3fn" in result.stderr and "Add" in result.stderr, result.stderr
