#!/usr/bin/env python3
"""Exports sinter's model zoo with torch (run where torch, torchvision and transformers are
installed, e.g. the GPU machine): torchvision classification and segmentation models and
transformers encoders/decoders, random init, through both torch exporters.

The weights do not travel: each large float initializer is replaced by its statistics
(mean, std) in a sidecar NAME.stats.json, and bench/zoo/materialize.py draws new weights
with the same statistics wherever the zoo is needed. Small tensors (shape constants, biases
under 1024 elements) stay in the graph exactly. The graph, the exporter's own, is unchanged.

  python3 bench/zoo/export.py OUT_DIR [--jobs N] [--only NAME,...]
"""
import argparse
import json
import multiprocessing
import os
import sys
import time
import traceback

VISION = {
    # name: (torchvision constructor, input hw, kwargs)
    "resnet18": ("resnet18", 224, {}),
    "resnet50": ("resnet50", 224, {}),
    "mobilenet_v2": ("mobilenet_v2", 224, {}),
    "mobilenet_v3_large": ("mobilenet_v3_large", 224, {}),
    "efficientnet_b0": ("efficientnet_b0", 224, {}),
    "shufflenet_v2": ("shufflenet_v2_x1_0", 224, {}),
    "squeezenet": ("squeezenet1_1", 224, {}),
    "densenet121": ("densenet121", 224, {}),
    "regnet_y_400mf": ("regnet_y_400mf", 224, {}),
    "convnext_tiny": ("convnext_tiny", 224, {}),
    "googlenet": ("googlenet", 224, {"aux_logits": False, "init_weights": True}),
    "mnasnet": ("mnasnet1_0", 224, {}),
    "vit_b_16": ("vit_b_16", 224, {}),
    "swin_t": ("swin_t", 224, {}),
}
SEGMENTATION = {
    "fcn_resnet50": ("fcn_resnet50", 224, {"aux_loss": False, "weights_backbone": None}),
    "deeplabv3_mobilenet": ("deeplabv3_mobilenet_v3_large", 224,
                            {"aux_loss": False, "weights_backbone": None}),
    "lraspp_mobilenet": ("lraspp_mobilenet_v3_large", 224, {"weights_backbone": None}),
}
TEXT = ["bert_base", "gpt2", "llama_gqa"]
EXPORTERS = {"ts": 17, "dynamo": 20}


def build(name):
    import torch
    if name in VISION or name in SEGMENTATION:
        import torchvision
        ctor, hw, kwargs = VISION.get(name) or SEGMENTATION[name]
        model = getattr(torchvision.models if name in VISION else torchvision.models.segmentation,
                        ctor)(weights=None, **kwargs)
        inner = model

        class Seg(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = inner

            def forward(self, x):
                return self.m(x)["out"]

        # torchvision draws convolution weights with fan_out scaling, which for a grouped or
        # depthwise convolution (few inputs per output) shrinks the activations block by block:
        # EfficientNet-B0's and MobileNetV3's outputs ended near 1e-14, below float16, so that
        # torch's own fp16 output was 100% off its fp32 one. Grouped convolutions take fan_in
        # scaling instead, which keeps the activations near 1.
        generator = torch.Generator().manual_seed(1)
        for module in inner.modules():
            if isinstance(module, torch.nn.Conv2d) and module.groups > 1:
                fan_in = module.weight[0].numel()
                torch.nn.init.normal_(module.weight, std=(2.0 / fan_in) ** 0.5, generator=generator)
        if name in SEGMENTATION:
            model = Seg()
        return model.eval(), (torch.randn(1, 3, hw, hw),), ["images"], {0: "batch"}
    import transformers
    if name == "bert_base":
        inner = transformers.BertModel(transformers.BertConfig())
    elif name == "gpt2":
        inner = transformers.GPT2Model(transformers.GPT2Config(use_cache=False))
    else:  # a Llama-style decoder: RMSNorm, rotary embeddings, gated MLP, grouped-query attention
        inner = transformers.LlamaModel(transformers.LlamaConfig(
            hidden_size=1024, intermediate_size=2816, num_hidden_layers=4, num_attention_heads=16,
            num_key_value_heads=4, vocab_size=32000, max_position_embeddings=1024, use_cache=False))

    class Text(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = inner

        def forward(self, ids):
            return self.m(input_ids=ids).last_hidden_state

    ids = torch.randint(0, 1000, (1, 128))
    return Text().eval(), (ids,), ["input_ids"], {0: "batch", 1: "seq"}


def strip(model_proto):
    """Replaces large float initializers by their statistics; returns the statistics."""
    import numpy as np
    from onnx import numpy_helper, TensorProto
    stats = {}
    for init in model_proto.graph.initializer:
        if init.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16):
            continue
        count = int(np.prod(init.dims)) if len(init.dims) else 1
        if count < 1024:
            continue
        values = numpy_helper.to_array(init).astype(np.float64)
        stats[init.name] = {"mean": float(values.mean()), "std": float(values.std()),
                            "min": float(values.min()), "max": float(values.max())}
        name, data_type, dims = init.name, init.data_type, list(init.dims)
        init.Clear()
        init.name, init.data_type = name, data_type
        init.dims.extend(dims)
    return stats


def export_one(job):
    name, exporter, out_dir = job
    import torch
    import onnx
    torch.manual_seed(0)
    stem = f"{name}.{exporter}"
    path = os.path.join(out_dir, stem + ".full.onnx")
    start = time.time()
    try:
        model, args, input_names, dyn = build(name)
        with torch.no_grad():
            if exporter == "ts":
                torch.onnx.export(model, args, path, dynamo=False, opset_version=EXPORTERS["ts"],
                                  input_names=input_names, output_names=["output"],
                                  dynamic_axes={input_names[0]: dyn, "output": {0: "batch"}})
            else:
                program = torch.onnx.export(model, args, dynamo=True,
                                            opset_version=EXPORTERS["dynamo"],
                                            input_names=input_names, output_names=["output"])
                program.save(path, external_data=True)
        proto = onnx.load(path, load_external_data=True)
        stats = strip(proto)
        onnx.save(proto, os.path.join(out_dir, stem + ".onnx"))
        with open(os.path.join(out_dir, stem + ".stats.json"), "w") as f:
            json.dump(stats, f)
        nodes = len(proto.graph.node)
        for leftover in os.listdir(out_dir):
            if leftover.startswith(stem + ".full"):
                os.remove(os.path.join(out_dir, leftover))
        return f"ok   {stem}: {nodes} nodes, {len(stats)} stripped, {time.time() - start:.1f} s"
    except Exception as error:  # an exporter failure is a result, not a stop
        last = traceback.format_exception_only(type(error), error)[-1].strip()
        return f"FAIL {stem}: {last[:300]}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    os.makedirs(options.out_dir, exist_ok=True)
    names = list(VISION) + list(SEGMENTATION) + TEXT
    if options.only:
        names = [n for n in names if n in options.only.split(",")]
    jobs = [(n, e, options.out_dir) for n in names for e in EXPORTERS]
    with multiprocessing.get_context("spawn").Pool(options.jobs) as pool:
        for line in pool.imap_unordered(export_one, jobs):
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
