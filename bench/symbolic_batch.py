"""Writes a copy of an ONNX model whose inputs' and outputs' first dim is the symbol `batch`
(for bench/serving.sh: models/ with a static batch of 1, compiled with shape buckets).
Intermediate shapes recorded in the model are dropped, so shape inference starts afresh.
    python bench/symbolic_batch.py IN.onnx OUT.onnx"""
import sys

import onnx


def main():
    source, target = sys.argv[1:3]
    model = onnx.load(source)
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if len(dims):
            dims[0].Clear()
            dims[0].dim_param = "batch"
    del model.graph.value_info[:]
    onnx.save(model, target)


if __name__ == "__main__":
    main()
