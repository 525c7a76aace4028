"""The ONNX backend node tests of the pinned onnx package, as folders on disk.

Each test is a folder holding model.onnx and test_data_set_N/{input,output}_K.pb. Older onnx
wheels ship these folders in onnx/backend/test/data/node; newer ones (1.23 included) ship only
the Python cases that generate them, so `node_test_root` writes them once into a cache folder,
one per onnx version, and reuses it afterwards. numpy's global generator is seeded first, so the
random inputs many cases draw are the same on every machine.

`describe(test_dir)` says which op a test exercises and whether its inputs and outputs are all
tensors of a type sinter could have (no sequences, optionals, maps or strings).
"""
import json
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

PACKAGE_DATA = Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"
DEFAULT_RTOL, DEFAULT_ATOL = 1e-3, 1e-7  # the node tests' tolerances (onnx.backend.test.case.node)


def node_test_root(cache_dir):
    """The folder of node-test folders: the package's own, else one materialised in cache_dir."""
    if PACKAGE_DATA.is_dir() and any(PACKAGE_DATA.iterdir()):
        return PACKAGE_DATA
    root = Path(cache_dir) / f"onnx-{onnx.__version__}" / "node"
    if not (root / "complete.json").is_file():
        # Write beside it and rename, so a concurrent or interrupted run never sees half a set.
        partial = Path(tempfile.mkdtemp(prefix="node.partial-", dir=_made(root.parent)))
        count = materialise(partial)
        (partial / "complete.json").write_text(json.dumps({"onnx": onnx.__version__, "tests": count}) + "\n")
        shutil.rmtree(root, ignore_errors=True)  # an older, incomplete set
        try:
            partial.rename(root)
        except OSError:  # another run finished first
            shutil.rmtree(partial, ignore_errors=True)
    return root


def _made(folder):
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _serialize(value, type_proto, name):
    """One test value as the protobuf the ONNX test data stores for its declared type."""
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name)
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name)
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(value, name)


def materialise(root):
    """Writes every node test case of the installed onnx package under `root`; returns the count."""
    from onnx.backend.test.loader import load_model_tests

    np.random.seed(0)  # many cases draw their inputs from numpy's global generator
    with warnings.catch_warnings():  # the cases' own numpy warnings (log(0) and the like)
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    for case in cases:
        test_dir = root / case.name
        test_dir.mkdir(parents=True, exist_ok=True)
        (test_dir / "model.onnx").write_bytes(case.model.SerializeToString())
        if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
            (test_dir / "data.json").write_text(json.dumps({"rtol": case.rtol, "atol": case.atol}))
        graph = case.model.graph
        for set_index, (inputs, outputs) in enumerate(case.data_sets):
            set_dir = test_dir / f"test_data_set_{set_index}"
            set_dir.mkdir(exist_ok=True)
            for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
                for index, (value, info) in enumerate(zip(values, infos)):
                    proto = _serialize(value, info.type, info.name)
                    (set_dir / f"{kind}_{index}.pb").write_bytes(proto.SerializeToString())
    return len(cases)


def tolerances(test_dir):
    path = Path(test_dir) / "data.json"
    data = json.loads(path.read_text()) if path.is_file() else {}
    return data.get("rtol", DEFAULT_RTOL), data.get("atol", DEFAULT_ATOL)


def _type_problem(value_info):
    """Why this input or output is beyond sinter (a non-tensor or a string), or None."""
    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        return f"{value_info.name!r} is a {kind.replace('_type', '')}"
    if value_info.type.tensor_type.elem_type == TensorProto.STRING:
        return f"{value_info.name!r} is a string tensor"
    return None


def _op_name(node):
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"


def _squash(text):
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _tested_op(name, graph, root):
    """The op a test exercises: the only node's op; for an `_expanded` test (the op's function
    body, inlined) the op of the test it expands; else the node whose op the test name spells."""
    if len(graph.node) == 1:
        return _op_name(graph.node[0])
    base = re.sub(r"_expanded(_ver\d+)?$", "", name)
    base_model = Path(root) / base / "model.onnx"
    if base != name and base_model.is_file():
        base_graph = onnx.load(str(base_model)).graph
        if len(base_graph.node) == 1:
            return _op_name(base_graph.node[0])
    squashed = _squash(name)
    spelled = [n for n in graph.node if _squash(n.op_type) in squashed]
    chosen = max(spelled, key=lambda n: len(n.op_type)) if spelled else graph.node[-1]
    return _op_name(chosen)


def describe(test_dir):
    """{'name', 'op', 'type_problem' (None when all inputs and outputs are plain tensors),
    'output_names', 'input_names', 'data_sets': [folders]} for one node-test folder."""
    test_dir = Path(test_dir)
    model = onnx.load(str(test_dir / "model.onnx"))
    problems = [p for p in map(_type_problem, [*model.graph.input, *model.graph.output]) if p]
    return {
        "name": test_dir.name,
        "op": _tested_op(test_dir.name, model.graph, test_dir.parent),
        "type_problem": "; ".join(problems) or None,
        "output_names": [o.name for o in model.graph.output],
        # The graph inputs in order: test_data_set_N/input_K.pb feeds input_names[K].
        "input_names": [i.name for i in model.graph.input],
        "data_sets": sorted(p for p in test_dir.glob("test_data_set_*") if p.is_dir()),
    }


def list_tests(root, pattern=None):
    """The node-test folders under root, sorted by name, optionally filtered by a regex search."""
    regex = re.compile(pattern) if pattern else None
    return [p for p in sorted(Path(root).iterdir())
            if (p / "model.onnx").is_file() and (regex is None or regex.search(p.name))]


if __name__ == "__main__":  # python node_tests.py CACHE_DIR: materialise and print the folder
    import sys

    print(node_test_root(sys.argv[1] if len(sys.argv) > 1 else os.getcwd()))
