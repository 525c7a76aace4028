#!/usr/bin/env python3
"""Fills the zoo's stripped graphs (bench/zoo/export.py) with weights drawn to each
initializer's recorded statistics: normal(mean, std) clipped to [min, max], from a seed fixed
by the model's and the tensor's names, so every machine makes the same files.

  python3 bench/zoo/materialize.py IN_DIR OUT_DIR     # IN_DIR holds NAME.onnx + NAME.stats.json
"""
import json
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import TensorProto


def materialize(graph_path, stats_path, out_path):
    model = onnx.load(graph_path, load_external_data=False)
    with open(stats_path) as f:
        stats = json.load(f)
    stem = os.path.basename(graph_path)
    dtypes = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}
    for init in model.graph.initializer:
        s = stats.get(init.name)
        if s is None:
            continue
        rng = np.random.default_rng(zlib.crc32(f"{stem}:{init.name}".encode()))
        shape = tuple(init.dims)
        values = rng.normal(s["mean"], s["std"], size=shape) if s["std"] > 0 else \
            np.full(shape, s["mean"])
        values = np.clip(values, s["min"], s["max"])
        if init.data_type == TensorProto.BFLOAT16:
            bits = (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            init.raw_data = bits.tobytes()
        else:
            init.raw_data = values.astype(dtypes[init.data_type]).tobytes()
    size = model.ByteSize()
    if size < 2**31 - 2**24:
        onnx.save(model, out_path)
    else:
        onnx.save(model, out_path, save_as_external_data=True,
                  location=os.path.basename(out_path) + ".data")


def main():
    in_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for name in sorted(os.listdir(in_dir)):
        if not name.endswith(".onnx"):
            continue
        stem = name[:-len(".onnx")]
        stats = os.path.join(in_dir, stem + ".stats.json")
        if not os.path.exists(stats):
            continue
        out = os.path.join(out_dir, name)
        materialize(os.path.join(in_dir, name), stats, out)
        print(f"{name}: {os.path.getsize(out) / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
