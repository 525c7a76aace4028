#!/usr/bin/env python3
"""Prints each array of an .npz file: name, dtype, shape, min / max / mean, first values.

    .venv/bin/python models/show_npz.py FILE.npz
"""
import sys

import numpy as np


def describe(name, array, first=6):
    flat = array.reshape(-1)
    line = f"{name}: {array.dtype}{list(array.shape)}"
    if flat.size:
        numbers = flat.astype(np.float64)
        line += f"  min {numbers.min():.6g}  max {numbers.max():.6g}  mean {numbers.mean():.6g}"
        values = ", ".join(f"{v:.6g}" for v in numbers[:first])
        line += f"  first [{values}{', ...' if flat.size > first else ''}]"
    return line


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: show_npz.py FILE.npz")
    with np.load(sys.argv[1]) as archive:
        for name in archive.files:
            print(describe(name, archive[name]))


if __name__ == "__main__":
    main()
