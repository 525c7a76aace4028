#!/usr/bin/python3
"""Exports the torch-made test models of models/ with torch.onnx.export (opset 17).

Run with Debian's Python, which has torch 1.13 and torchvision 0.14 (`scripts/setup.sh --torch`
installs them): `/usr/bin/python3 models/make_torch.py [OUT_DIR]` (default: this folder).
Exports use the exporter's defaults (constant folding on, eval mode), as a user would.
Weights come from fixed seeds; batch-norm statistics and affine parameters are randomised so the
folded convolutions are not trivial.

  resnet_narrow.onnx   torchvision ResNet-18 layout (BasicBlock, [2, 2, 2, 2]) at 1/8 width
  mobilenet_v2.onnx    torchvision MobileNetV2, width_mult 0.25; symbolic batch
  vit_tiny.onnx        torchvision VisionTransformer: 32x32 images, 8x8 patches, 2 layers
  bert_tiny.onnx       BERT-style encoder: embeddings, padding-mask attention, erf GELU, pooler;
                       symbolic batch and sequence
  gpt2_tiny.onnx       GPT-2-style decoder: causal mask (tril + where), tanh GELU, tied LM head;
                       symbolic batch and sequence
"""
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models import mobilenet_v2
from torchvision.models.resnet import BasicBlock, ResNet
from torchvision.models.vision_transformer import VisionTransformer

OPSET = 17


class NarrowResNet(ResNet):
    """torchvision's ResNet with every stage `width / 64` as wide (the stem too)."""

    def __init__(self, width=8, num_classes=10):
        self.scale = width / 64
        super().__init__(BasicBlock, [2, 2, 2, 2], num_classes=num_classes)
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.fc = nn.Linear(8 * width * BasicBlock.expansion, num_classes)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        if planes == 64:  # the first stage: its input is the (narrowed) stem
            self.inplanes = int(64 * self.scale)
        return super()._make_layer(block, int(planes * self.scale), blocks, stride, dilate)


class Attention(nn.Module):
    """Multi-head self-attention written the way model code writes it: sizes read from the
    tensor (the exporter turns them into Shape/Gather/Concat), an additive mask."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, x):
        batch, seq, hidden = x.size()
        return x.view(batch, seq, self.heads, hidden // self.heads).transpose(1, 2)

    def forward(self, x, additive_mask):
        q, k, v = (self.split_heads(t) for t in self.qkv(x).chunk(3, dim=-1))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        weights = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(weights, v).transpose(1, 2)
        return self.out(context.reshape(x.size(0), x.size(1), -1))


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = Attention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.up = nn.Linear(hidden, intermediate)
        self.down = nn.Linear(intermediate, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, additive_mask):
        x = self.norm1(x + self.attention(x, additive_mask))
        return self.norm2(x + self.down(F.gelu(self.up(x))))  # erf GELU


class BertTiny(nn.Module):
    def __init__(self, vocab=256, hidden=64, layers=2, heads=4, intermediate=128, max_positions=64):
        super().__init__()
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.token_types = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, token_type_ids, attention_mask):
        positions = torch.arange(input_ids.size(1), dtype=torch.long).unsqueeze(0)
        x = self.words(input_ids) + self.positions(positions) + self.token_types(token_type_ids)
        x = self.norm(x)
        # [batch, seq] of 0/1 -> [batch, 1, 1, seq] of 0 / -10000, as BERT does.
        additive_mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, additive_mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return x, pooled


class Gpt2Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)

    def attend(self, x):
        batch, seq, hidden = x.size()
        q, k, v = (t.view(batch, seq, self.heads, -1).transpose(1, 2)
                   for t in self.qkv(x).split(hidden, dim=2))
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.size(-1)))
        causal = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
        scores = torch.where(causal, scores, torch.tensor(torch.finfo(scores.dtype).min))
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(context.transpose(1, 2).contiguous().view(batch, seq, hidden))

    def forward(self, x):
        x = x + self.attend(self.norm1(x))
        return x + self.down(F.gelu(self.up(self.norm2(x)), approximate="tanh"))


class Gpt2Tiny(nn.Module):
    def __init__(self, vocab=256, hidden=64, layers=2, heads=4, max_positions=64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max_positions, hidden)
        self.blocks = nn.ModuleList(Gpt2Block(hidden, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.size(-1), dtype=torch.long)
        x = self.tokens(input_ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return torch.matmul(self.norm(x), self.tokens.weight.t())  # tied LM head: logits


def randomize_norms(model, generator):
    """Gives batch and layer norms non-trivial statistics and affine parameters."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                count = module.weight.numel()
                module.weight.copy_(0.75 + 0.5 * torch.rand(count, generator=generator))
                module.bias.copy_(0.2 * torch.rand(count, generator=generator) - 0.1)
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.copy_(0.2 * torch.rand(count, generator=generator) - 0.1)
                module.running_var.copy_(0.5 + torch.rand(count, generator=generator))
    return model


def dynamic(names, axes):
    return {name: axes for name in names}


def export(model, args, path, input_names, output_names, dynamic_axes=None):
    model.eval()
    torch.onnx.export(model, args, path, opset_version=OPSET, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes)
    print(f"wrote {path}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    out = lambda name: os.path.join(out_dir, name)  # noqa: E731
    generator = torch.Generator().manual_seed(0)

    torch.manual_seed(1)
    resnet = randomize_norms(NarrowResNet(width=8), generator)
    export(resnet, (torch.randn(1, 3, 64, 64),), out("resnet_narrow.onnx"), ["input"], ["logits"])

    torch.manual_seed(2)
    mobilenet = randomize_norms(mobilenet_v2(width_mult=0.25, num_classes=10), generator)
    export(mobilenet, (torch.randn(1, 3, 64, 64),), out("mobilenet_v2.onnx"), ["input"],
           ["logits"], dynamic(["input", "logits"], {0: "batch"}))

    torch.manual_seed(3)
    vit = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                            mlp_dim=128, num_classes=10)
    # torchvision zero-initialises the classification head; give it weights.
    nn.init.normal_(vit.heads.head.weight, std=0.3)
    export(randomize_norms(vit, generator), (torch.randn(1, 3, 32, 32),), out("vit_tiny.onnx"),
           ["input"], ["logits"])

    torch.manual_seed(4)
    ids = torch.randint(0, 256, (1, 8))
    bert_inputs = (ids, torch.zeros_like(ids), torch.ones_like(ids))
    bert_names = ["input_ids", "token_type_ids", "attention_mask"]
    export(randomize_norms(BertTiny(), generator), bert_inputs, out("bert_tiny.onnx"), bert_names,
           ["last_hidden_state", "pooled"],
           {**dynamic(bert_names + ["last_hidden_state"], {0: "batch", 1: "seq"}),
            "pooled": {0: "batch"}})

    torch.manual_seed(5)
    export(randomize_norms(Gpt2Tiny(), generator), (torch.randint(0, 256, (1, 8)),),
           out("gpt2_tiny.onnx"), ["input_ids"], ["logits"],
           dynamic(["input_ids", "logits"], {0: "batch", 1: "seq"}))


if __name__ == "__main__":
    main()
