#!/usr/bin/env python3
"""Writes two full-width transformer models for scripts/check_codegen_identical.sh.

Run with the project's venv: `.venv/bin/python scripts/make_check_models.py OUT_DIR`. They have
the layer widths of ViT-B/16 and BERT-base (hidden 768, 12 heads, MLP 3072; ViT's 197 tokens
from 224x224 patches, BERT's 128 tokens) with two layers each, so their kernels are the shapes
of the real models' while compiling in seconds. Weights come from fixed seeds: every run writes
identical files. They are for comparing generated code, not accuracy (models/ holds those).

  vit_base_2layer.onnx   patch Conv 16x16, class token, position embedding, pre-norm encoder
                         layers (LayerNormalization, Q/K/V MatMuls, heads by Reshape/Transpose,
                         Softmax, erf GELU), classifier Gemm
  bert_base_2layer.onnx  word/type embeddings (Gather), additive padding mask, post-norm encoder
                         layers, tanh pooler
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from make_small import GraphBuilder  # noqa: E402

HIDDEN, HEADS, MLP = 768, 12, 3072
HEAD = HIDDEN // HEADS


def linear(g, x, fan_in, fan_out, name):
    y = g.op("MatMul", [x, g.weight(f"{name}.w", (fan_in, fan_out), fan_in=fan_in)])
    return g.op("Add", [y, g.weight(f"{name}.b", (fan_out,), fan_in=fan_in, scale=0.1)])


def layer_norm(g, x, name):
    scale = g.const(np.ones(HIDDEN, np.float32) + g.rng.standard_normal(HIDDEN).astype(np.float32) * 0.05,
                    f"{name}.scale")
    bias = g.const(g.rng.standard_normal(HIDDEN).astype(np.float32) * 0.05, f"{name}.bias")
    return g.op("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)


def gelu(g, x):
    inner = g.op("Erf", [g.op("Div", [x, g.const(np.float32(np.sqrt(2.0)))])])
    return g.op("Mul", [g.op("Mul", [x, g.op("Add", [inner, g.const(np.float32(1.0))])]),
                        g.const(np.float32(0.5))])


def attention(g, x, tokens, name, mask=None):
    def heads(t, perm):
        t = g.op("Reshape", [t, g.const(np.array([1, tokens, HEADS, HEAD], np.int64))])
        return g.op("Transpose", [t], perm=perm)

    q = heads(linear(g, x, HIDDEN, HIDDEN, f"{name}.q"), [0, 2, 1, 3])
    k = heads(linear(g, x, HIDDEN, HIDDEN, f"{name}.k"), [0, 2, 3, 1])
    v = heads(linear(g, x, HIDDEN, HIDDEN, f"{name}.v"), [0, 2, 1, 3])
    scores = g.op("Mul", [g.op("MatMul", [q, k]), g.const(np.float32(1.0 / np.sqrt(HEAD)))])
    if mask is not None:
        scores = g.op("Add", [scores, mask])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    context = g.op("Transpose", [context], perm=[0, 2, 1, 3])
    context = g.op("Reshape", [context, g.const(np.array([1, tokens, HIDDEN], np.int64))])
    return linear(g, context, HIDDEN, HIDDEN, f"{name}.out")


def mlp(g, x, name):
    return linear(g, gelu(g, linear(g, x, HIDDEN, MLP, f"{name}.fc1")), MLP, HIDDEN, f"{name}.fc2")


def vit(layers=2):
    g = GraphBuilder(seed=768)
    tokens = 197
    patches = g.op("Conv", ["input", g.weight("patch.w", (HIDDEN, 3, 16, 16), fan_in=3 * 256),
                            g.weight("patch.b", (HIDDEN,), fan_in=768, scale=0.1)],
                   kernel_shape=[16, 16], strides=[16, 16])
    patches = g.op("Reshape", [patches, g.const(np.array([1, HIDDEN, 196], np.int64))])
    patches = g.op("Transpose", [patches], perm=[0, 2, 1])
    x = g.op("Concat", [g.weight("cls", (1, 1, HIDDEN), fan_in=1, scale=0.02), patches], axis=1)
    x = g.op("Add", [x, g.weight("position", (1, tokens, HIDDEN), fan_in=1, scale=0.02)])
    for i in range(layers):
        x = g.op("Add", [x, attention(g, layer_norm(g, x, f"l{i}.ln1"), tokens, f"l{i}.attn")])
        x = g.op("Add", [x, mlp(g, layer_norm(g, x, f"l{i}.ln2"), f"l{i}.mlp")])
    x = layer_norm(g, x, "final_ln")
    first = g.op("Gather", [x, g.const(np.array(0, np.int64))], axis=1)
    logits = g.op("Gemm", [first, g.weight("head.w", (1000, HIDDEN)), g.weight("head.b", (1000,), scale=0.1)],
                  ["logits"], transB=1)
    assert logits == "logits"
    return g.model("vit_base_2layer",
                   [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])],
                   [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])])


def bert(layers=2):
    g = GraphBuilder(seed=30522)
    tokens, vocab = 128, 4096
    words = g.op("Gather", [g.weight("word_embeddings", (vocab, HIDDEN), fan_in=1, scale=0.02), "input_ids"])
    types = g.op("Gather", [g.weight("type_embeddings", (2, HIDDEN), fan_in=1, scale=0.02), "token_type_ids"])
    x = g.op("Add", [g.op("Add", [words, types]), g.weight("position", (1, tokens, HIDDEN), fan_in=1, scale=0.02)])
    x = layer_norm(g, x, "embeddings_ln")
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask = g.op("Mul", [g.op("Sub", [g.const(np.float32(1.0)), mask]), g.const(np.float32(-10000.0))])
    mask = g.op("Unsqueeze", [mask, g.const(np.array([1, 2], np.int64))])
    for i in range(layers):
        x = layer_norm(g, g.op("Add", [x, attention(g, x, tokens, f"l{i}.attn", mask)]), f"l{i}.ln1")
        x = layer_norm(g, g.op("Add", [x, mlp(g, x, f"l{i}.mlp")]), f"l{i}.ln2")
    g.op("Identity", [x], ["last_hidden_state"])
    first = g.op("Gather", [x, g.const(np.array(0, np.int64))], axis=1)
    pooled = g.op("Gemm", [first, g.weight("pooler.w", (HIDDEN, HIDDEN)), g.weight("pooler.b", (HIDDEN,), scale=0.1)],
                  transB=1)
    g.op("Tanh", [pooled], ["pooled"])
    ids = [helper.make_tensor_value_info(name, TensorProto.INT64, [1, tokens])
           for name in ("input_ids", "token_type_ids", "attention_mask")]
    return g.model("bert_base_2layer", ids,
                   [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, tokens, HIDDEN]),
                    helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, HIDDEN])])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    import onnx
    for name, model in (("vit_base_2layer.onnx", vit()), ("bert_base_2layer.onnx", bert())):
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name))


if __name__ == "__main__":
    main()
