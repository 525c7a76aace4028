"""Which expected values of a node test the ONNX spec leaves undefined.

Cast's spec (onnx.defs.get_schema("Cast").doc): "Casting from floating point to fixed point:
undefined if OOR (out of range)". The node tests' expected outputs are computed by numpy on the
machine that materialises them (node_tests.py), and numpy's own float-to-integer conversion of
such a value is undefined too (C's rule): its SIMD paths give different integers on different
CPUs (seen: 8.0 into INT4 gives -8 on one x86-64 machine and 0 on another). Those elements are
no truth for anyone, so the runner compares only the elements the spec defines and reports the
test as `spec-undefined`, with the count, instead of `pass` or `wrong-result`.

`undefined_elements(model_path, input_files, output_shapes)` finds every Cast and CastLike of
the main graph from a floating-point type into an integer type, evaluates its input (a graph
input, an initializer, or an intermediate value through onnx's reference evaluator, whose
floating-point arithmetic is defined), and marks the elements that are NaN, infinite, or whose
truncation toward zero lies outside the target type's range. When such a cast's output is a
graph output, the marks mask that output's elements; when it feeds further nodes, no output
element can be trusted and the whole test is `spec-undefined`.

What sinter itself does with such values is its own choice, stated in docs/precision.md and
tested against exact integer arithmetic in test/python/test_low_precision.py.
"""
import threading
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE,
               TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
               TensorProto.FLOAT8E5M2FNUZ, TensorProto.FLOAT4E2M1, TensorProto.FLOAT8E8M0}
# Inclusive value ranges of the integer types, from their widths (two's complement when signed).
INTEGER_RANGES = {
    TensorProto.INT2: (-2, 1), TensorProto.UINT2: (0, 3),
    TensorProto.INT4: (-8, 7), TensorProto.UINT4: (0, 15),
    TensorProto.INT8: (-2**7, 2**7 - 1), TensorProto.UINT8: (0, 2**8 - 1),
    TensorProto.INT16: (-2**15, 2**15 - 1), TensorProto.UINT16: (0, 2**16 - 1),
    TensorProto.INT32: (-2**31, 2**31 - 1), TensorProto.UINT32: (0, 2**32 - 1),
    TensorProto.INT64: (-2**63, 2**63 - 1), TensorProto.UINT64: (0, 2**64 - 1),
}


# Per thread, how deep this module is in evaluating a model itself (its intermediate values may
# pass through an undefined cast that it then masks); test/python/conftest.py's guard lets those
# through on that thread only, so another thread's evaluation is still checked meanwhile.
_state = threading.local()


def evaluating():
    """True while the calling thread is inside this module's own evaluation of a model."""
    return getattr(_state, "depth", 0) > 0


@dataclass
class Undefined:
    """masks: {output index: bool array, True where the expected element is undefined};
    whole_test: no output element is defined (an undefined cast feeds further nodes);
    reason: what was found, for the results file."""
    masks: dict = field(default_factory=dict)
    whole_test: bool = False
    reason: str = ""


def out_of_range(values, to):
    """True where converting `values` (a float array) into the integer type `to` is undefined:
    NaN, infinities, and values whose truncation lies outside the type's range."""
    low, high = INTEGER_RANGES[to]
    wide = np.asarray(values).astype(np.float64)  # exact for every float type here
    with np.errstate(invalid="ignore"):
        truncated = np.trunc(wide)
        # Compared as floats: the bounds of the 64-bit types are powers of two (exact in float64)
        # or one below one (then the next float above the bound is the first out of range).
        return ~np.isfinite(wide) | (truncated < float(low)) | (truncated > float(high))


def is_float(array):
    name = np.asarray(array).dtype.name
    return name.startswith(("float", "bfloat"))


def _cast_target(node, values):
    if node.op_type == "Cast":
        return next(a.i for a in node.attribute if a.name == "to")
    like = values(node.input[1])  # CastLike: the second input's element type
    return None if like is None else onnx.helper.np_dtype_to_tensor_dtype(np.asarray(like).dtype)


def undefined_elements(model_path, input_files, output_shapes):
    """The Undefined of one data set: model_path's graph fed the tensors in input_files (graph
    input order), whose expected outputs have output_shapes."""
    model = onnx.load(str(model_path))
    graph = model.graph
    casts = [n for n in graph.node if n.op_type in ("Cast", "CastLike") and n.domain in ("", "ai.onnx")]
    if not casts:
        return Undefined()
    known = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for info, path in zip(graph.input, input_files):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(path.read_bytes())
        known[info.name] = numpy_helper.to_array(tensor)
    evaluated = {}

    def values(name):
        if name in known:
            return known[name]
        if not evaluated:  # intermediate values, once, from onnx's reference evaluator
            from onnx.reference import ReferenceEvaluator
            feeds = {i.name: known[i.name] for i in graph.input if i.name in known}
            _state.depth = getattr(_state, "depth", 0) + 1
            try:
                evaluated.update(ReferenceEvaluator(model).run(None, feeds, intermediate=True))
            except Exception:  # noqa: BLE001  (it cannot run this model: nothing is known)
                evaluated["\0failed"] = None
            finally:
                _state.depth -= 1
        return evaluated.get(name)

    outputs = {o.name: index for index, o in enumerate(graph.output)}
    result = Undefined()
    found = []
    for node in casts:
        source = values(node.input[0])
        to = _cast_target(node, values)
        if source is None or to not in INTEGER_RANGES or not is_float(source):
            continue
        mask = out_of_range(source, to)
        if not mask.any():
            continue
        found.append(f"{int(mask.sum())} of {mask.size} elements of {node.output[0]!r} are "
                     f"casts of NaN, infinite or out-of-range floats into "
                     f"{TensorProto.DataType.Name(to)}")
        index = outputs.get(node.output[0])
        if index is None or tuple(output_shapes[index]) != mask.shape:
            result.whole_test = True
            found[-1] += " that feed further nodes"
        else:
            previous = result.masks.get(index)
            result.masks[index] = mask if previous is None else previous | mask
    if found:
        result.reason = ("; ".join(found) + " (undefined in the ONNX spec); "
                         + ("no output compared" if result.whole_test
                            else "every defined element matches"))
    return result


def defined_parts(expected, actual, masks):
    """expected and actual with the masked outputs reduced to their defined elements (1-D).
    An output whose actual shape differs is left whole, for the comparison to report."""
    expected, actual = list(expected), list(actual)
    for index, mask in masks.items():
        if index < len(actual) and np.shape(actual[index]) == mask.shape:
            expected[index] = np.asarray(expected[index])[~mask]
            actual[index] = np.asarray(actual[index])[~mask]
    return expected, actual
