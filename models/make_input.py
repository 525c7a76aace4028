#!/usr/bin/env python3
"""Deterministic random inputs for a model's graph inputs.

    .venv/bin/python models/make_input.py MODEL.onnx OUT.npy    # the model's first input

As a module, `make_inputs(model_path)` returns every input (name -> numpy array); the model
tests use it. Symbolic or unknown dims take `symbolic_dim` (1 by default). Floats are drawn away
from zero (|v| in [0.1, 1], random sign), so no input is all zeros; integers are drawn from the
range models/inputs.json gives for that model and input (token ids below the vocabulary size,
masks in {0, 1}), else from [0, 10); booleans are true with probability 0.7.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import helper

RANGES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inputs.json")


def graph_inputs(model):
    """The graph inputs that are real inputs (not initializers listed as inputs, as old models do)."""
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def input_shape(value_info, symbolic_dim=1):
    dims = value_info.type.tensor_type.shape.dim
    return [d.dim_value if d.HasField("dim_value") else symbolic_dim for d in dims]


def integer_range(model_path, input_name):
    with open(RANGES_FILE) as f:
        ranges = json.load(f)
    low, high = ranges.get(os.path.basename(model_path), {}).get(input_name, [0, 10])
    return low, high


def make_inputs(model_path, symbolic_dim=1, seed=0):
    model = onnx.load(model_path, load_external_data=False)
    inputs = {}
    for index, value_info in enumerate(graph_inputs(model)):
        rng = np.random.default_rng([seed, index])
        shape = input_shape(value_info, symbolic_dim)
        dtype = helper.tensor_dtype_to_np_dtype(value_info.type.tensor_type.elem_type)
        if dtype == np.bool_:
            array = rng.random(shape) < 0.7
        elif np.issubdtype(dtype, np.integer):
            low, high = integer_range(model_path, value_info.name)
            array = rng.integers(low, high, shape).astype(dtype)
        elif np.issubdtype(dtype, np.floating):
            magnitude = rng.uniform(0.1, 1.0, shape)
            array = (magnitude * rng.choice([-1.0, 1.0], shape)).astype(dtype)
        else:
            raise SystemExit(f"{model_path}: input {value_info.name!r} has dtype {dtype}, "
                             "which make_input does not generate")
        inputs[value_info.name] = array
    return inputs


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: make_input.py MODEL.onnx OUT.npy")
    model_path, out_path = sys.argv[1:]
    name, array = next(iter(make_inputs(model_path).items()))
    np.save(out_path, array)
    print(f"{out_path}: input {name!r} {array.dtype}{list(array.shape)}")


if __name__ == "__main__":
    main()
