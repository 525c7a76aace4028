#!/usr/bin/env python3
"""A stand-in for the sinter CLI, for testing the conformance runner and the model tests
without sinter: `run MODEL [INPUT...] [--input NAME=FILE...] --reference (--output-dir D
--output-format pb | -o OUT.npz)` evaluates the model with onnx's own reference evaluator.
`compile MODEL --target T -o OUT.so [--bind-input NAME=FILE...]` writes OUT.so as a small JSON
file naming the model and its bound inputs, which `run OUT.so ...` then evaluates the same way.

SINTER_STUB_FAULTS injects the failures the runner must classify: `REGEX=FAULT;...`, where the
first REGEX found in the model's path picks FAULT, one of: unsupported (exit 1, "unsupported op
types: ..."), import (exit 1, a parse error), runtime (exit 1, an evaluation error), internal
(exit 2), abort (SIGABRT), exit3 (exit 3), hang (sleeps), wrong (perturbs every output),
missing (writes no outputs), bind:A+B (compile fails, as sinter does for a shape that depends on
data, until inputs A and B are bound, naming one missing input per attempt).
"""
import json
import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def fault_for(model_path):
    for rule in filter(None, os.environ.get("SINTER_STUB_FAULTS", "").split(";")):
        pattern, fault = rule.rsplit("=", 1)
        if re.search(pattern, model_path):
            return fault
    return None


def fail(message, code=1):
    print(f"sinter: error: {message}", file=sys.stderr)
    sys.exit(code)


def read_input(path):
    if path.endswith(".pb"):
        tensor = onnx.TensorProto()
        tensor.ParseFromString(Path(path).read_bytes())
        return numpy_helper.to_array(tensor)
    return np.load(path)


def compile_model(args):
    fault = fault_for(args.model) or ""
    bound = dict(spec.split("=", 1) for spec in args.bind_input)
    if fault.startswith("bind:"):
        missing = [name for name in fault[len("bind:"):].split("+") if name not in bound]
        if missing:
            fail(f"Reshape producing 'y' produces 'y' of type f32[?,?] whose shape depends on "
                 f"data; sinter compiles static shapes only; it depends on graph input "
                 f"'{missing[0]}': give its value at compile time with --bind-input "
                 f"{missing[0]}=FILE")
    Path(args.output).write_text(json.dumps({"model": str(Path(args.model).resolve()),
                                             "bound": bound}))


def run(args):
    bound = {}
    if args.model.endswith(".so"):  # written by compile_model
        artifact = json.loads(Path(args.model).read_text())
        args.model, bound = artifact["model"], artifact["bound"]
    fault = fault_for(args.model)
    if fault and fault.startswith("bind:"):
        fault = None
    model = onnx.load(args.model)
    if fault == "unsupported":
        ops = sorted({n.op_type for n in model.graph.node})
        fail(f"{args.model}: {len(ops)} unsupported op types: "
             + ", ".join(f"ai.onnx:{op} x1 (opset 17)" for op in ops))
    if fault == "import":
        fail(f"{args.model}: failed to parse the model")
    if fault == "internal":
        fail("internal invariant broken: stub (stub_sinter.py:1)", code=2)
    if fault == "abort":
        os.abort()
    if fault == "exit3":
        sys.exit(3)
    if fault == "hang":
        time.sleep(3600)

    from onnx.reference import ReferenceEvaluator

    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [i.name for i in model.graph.input
                    if i.name not in initializers and i.name not in bound]
    feeds = {name: read_input(path) for name, path in bound.items()}
    for position, path in enumerate(args.inputs):
        feeds[graph_inputs[position]] = read_input(path)
    for spec in args.input:
        name, path = spec.split("=", 1)
        feeds[name] = read_input(path)
    if fault == "runtime":
        fail(f"node 'n0' ({model.graph.node[0].op_type}): index out of range")
    names = [o.name for o in model.graph.output]
    outputs = ReferenceEvaluator(model).run(None, feeds)
    if fault == "wrong":
        outputs = [np.asarray(o) + np.asarray(1).astype(np.asarray(o).dtype) for o in outputs]
    if fault == "missing":
        return
    if args.output_format == "pb":
        out_dir = Path(args.output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for index, (name, value) in enumerate(zip(names, outputs)):
            proto = numpy_helper.from_array(np.asarray(value), name)
            (out_dir / f"output_{index}.pb").write_bytes(proto.SerializeToString())
    else:
        np.savez(args.output, **dict(zip(names, outputs)))


def main():
    parser = argparse.ArgumentParser(prog="sinter (stub)")
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run")
    run_parser.add_argument("model")
    run_parser.add_argument("inputs", nargs="*")
    run_parser.add_argument("--reference", action="store_true")
    run_parser.add_argument("--input", action="append", default=[])
    run_parser.add_argument("-o", "--output")
    run_parser.add_argument("--output-dir")
    run_parser.add_argument("--output-format", default="npz")
    compile_parser = commands.add_parser("compile")
    compile_parser.add_argument("model")
    compile_parser.add_argument("--target", required=True)
    compile_parser.add_argument("-o", "--output", required=True)
    compile_parser.add_argument("--bind-input", action="append", default=[])
    args = parser.parse_args()
    compile_model(args) if args.command == "compile" else run(args)


if __name__ == "__main__":
    main()
