#!/usr/bin/env python3
"""Exports the test models with a real exporter (torch.onnx, Debian's torch)
and records their expected outputs.

Each model gets a folder with model.onnx (dynamic batch/sequence axes), the
inputs it is checked on (inputs/*.npy, at shapes other than the export
shapes, so that shape specialization is exercised), torch's outputs
(expected/*.npy) and a manifest.json naming the --shape bindings. The script
also runs ONNX Runtime on the same inputs and fails if it disagrees with torch,
so the expected outputs are cross-checked by a second implementation.

Usage: export_models.py [OUT_DIR] [MODEL...]   (default: the folder of this
script, all models). Each model seeds the generators itself, so exporting one
model alone gives the same files as exporting all of them.
"""
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

torch.manual_seed(0)
np.random.seed(0)


class BertEncoder(nn.Module):
    """BERT-style: token/position/type embeddings, post-LN layers with a
    padding mask, erf GELU."""

    def __init__(self, vocab=96, hidden=64, heads=4, layers=2, ffn=128, max_len=64):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(max_len, hidden)
        self.typ = nn.Embedding(2, hidden)
        self.emb_ln = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "qkv": nn.Linear(hidden, 3 * hidden), "out": nn.Linear(hidden, hidden),
                "ln1": nn.LayerNorm(hidden, eps=1e-12), "ff1": nn.Linear(hidden, ffn),
                "ff2": nn.Linear(ffn, hidden), "ln2": nn.LayerNorm(hidden, eps=1e-12)}))
        self.pool = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        b, s = input_ids.shape
        positions = torch.arange(s, device=input_ids.device).unsqueeze(0).expand(b, s)
        x = self.tok(input_ids) + self.pos(positions) + self.typ(torch.zeros_like(input_ids))
        x = self.emb_ln(x)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        h = x.shape[-1]
        d = h // self.heads
        for layer in self.layers:
            q, k, v = layer["qkv"](x).split(h, dim=-1)
            q = q.view(b, s, self.heads, d).transpose(1, 2)
            k = k.view(b, s, self.heads, d).transpose(1, 2)
            v = v.view(b, s, self.heads, d).transpose(1, 2)
            scores = q @ k.transpose(-1, -2) / math.sqrt(d) + mask
            ctx = torch.softmax(scores, dim=-1) @ v
            ctx = ctx.transpose(1, 2).reshape(b, s, h)
            x = layer["ln1"](x + layer["out"](ctx))
            ff = layer["ff2"](nn.functional.gelu(layer["ff1"](x)))
            x = layer["ln2"](x + ff)
        pooled = torch.tanh(self.pool(x[:, 0]))
        return x, pooled


class GptDecoder(nn.Module):
    """GPT-2-style: pre-LN blocks, causal mask, tanh GELU, tied embeddings."""

    def __init__(self, vocab=96, hidden=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_len, hidden)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(hidden), "attn": nn.Linear(hidden, 3 * hidden),
                "proj": nn.Linear(hidden, hidden), "ln2": nn.LayerNorm(hidden),
                "fc": nn.Linear(hidden, 4 * hidden), "fc_proj": nn.Linear(4 * hidden, hidden)}))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, input_ids):
        b, s = input_ids.shape
        positions = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        h = x.shape[-1]
        d = h // self.heads
        causal = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
        for blk in self.blocks:
            q, k, v = blk["attn"](blk["ln1"](x)).split(h, dim=-1)
            q = q.view(b, s, self.heads, d).transpose(1, 2)
            k = k.view(b, s, self.heads, d).transpose(1, 2)
            v = v.view(b, s, self.heads, d).transpose(1, 2)
            scores = (q @ k.transpose(-1, -2)) / math.sqrt(d)
            scores = scores.masked_fill(~causal, float("-inf"))
            ctx = torch.softmax(scores, dim=-1) @ v
            x = x + blk["proj"](ctx.transpose(1, 2).reshape(b, s, h))
            m = blk["fc"](blk["ln2"](x))
            x = x + blk["fc_proj"](nn.functional.gelu(m, approximate="tanh"))
        x = self.ln_f(x)
        return x @ self.wte.weight.t()  # tied embeddings


class SmallCnn(nn.Module):
    """Conv + BatchNorm + ReLU stem, one residual block, pooling, classifier."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(16), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(16), nn.ReLU(),
                                   nn.Conv2d(16, 16, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(16))
        self.down = nn.Sequential(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.head = nn.Linear(32, classes)

    def forward(self, image):
        x = self.stem(image)
        x = torch.relu(x + self.block(x))
        x = self.down(x)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


class LlamaBlock(nn.Module):
    """LLaMA-style: RMSNorm pre-norm layers, bias-free projections, rotary
    position embeddings (rotate-half form), causal additive mask, SwiGLU
    feed-forward, untied lm_head."""

    def __init__(self, vocab=96, hidden=64, heads=4, layers=2, ffn=176, eps=1e-6):
        super().__init__()
        self.heads = heads
        self.eps = eps
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(hidden, hidden, bias=False),
                "k": nn.Linear(hidden, hidden, bias=False),
                "v": nn.Linear(hidden, hidden, bias=False),
                "o": nn.Linear(hidden, hidden, bias=False),
                "gate": nn.Linear(hidden, ffn, bias=False),
                "up": nn.Linear(hidden, ffn, bias=False),
                "down": nn.Linear(ffn, hidden, bias=False)}))
        # RMSNorm weights: attention norm, ffn norm per layer, then the final one.
        self.norms = nn.ParameterList(
            [nn.Parameter(1.0 + 0.1 * torch.randn(hidden)) for _ in range(2 * layers + 1)])
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        d = hidden // heads
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)))

    def rms_norm(self, x, weight):
        # HF LlamaRMSNorm: statistics in fp32, cast back.
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return weight * x.to(dtype)

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, input_ids):
        b, s = input_ids.shape
        x = self.embed(input_ids)
        h = x.shape[-1]
        d = h // self.heads
        t = torch.arange(s, device=x.device).to(self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        mask = torch.full((s, s), float("-inf"), device=x.device).triu(1)
        for i, layer in enumerate(self.layers):
            y = self.rms_norm(x, self.norms[2 * i])
            q = layer["q"](y).view(b, s, self.heads, d).transpose(1, 2)
            k = layer["k"](y).view(b, s, self.heads, d).transpose(1, 2)
            v = layer["v"](y).view(b, s, self.heads, d).transpose(1, 2)
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            scores = q @ k.transpose(2, 3) / math.sqrt(d) + mask
            ctx = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
            x = x + layer["o"](ctx.transpose(1, 2).reshape(b, s, h))
            y = self.rms_norm(x, self.norms[2 * i + 1])
            x = x + layer["down"](nn.functional.silu(layer["gate"](y)) * layer["up"](y))
        return self.lm_head(self.rms_norm(x, self.norms[-1]))


class T5Block(nn.Module):
    """T5-style encoder (HF T5Stack as written for T5 v1.0): RMS layer norms
    without bias or mean, bias-free projections, attention without the
    1/sqrt(d) scaling whose scores get a relative-position bias, computed
    once (in layer 0, from bucketed relative positions, as HF's
    `compute_bias`) and shared by every layer; ReLU feed-forward, a final
    RMS norm. The bias is per head: [1, H, S, S]."""

    def __init__(self, vocab=96, hidden=64, heads=4, layers=2, ffn=256, num_buckets=32,
                 max_distance=128, eps=1e-6):
        super().__init__()
        self.heads = heads
        self.eps = eps
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.embed = nn.Embedding(vocab, hidden)
        self.relative_attention_bias = nn.Embedding(num_buckets, heads)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "q": nn.Linear(hidden, hidden, bias=False),
                "k": nn.Linear(hidden, hidden, bias=False),
                "v": nn.Linear(hidden, hidden, bias=False),
                "o": nn.Linear(hidden, hidden, bias=False),
                "wi": nn.Linear(hidden, ffn, bias=False),
                "wo": nn.Linear(ffn, hidden, bias=False)}))
        # T5LayerNorm weights: attention norm, ffn norm per layer, the final one.
        self.norms = nn.ParameterList(
            [nn.Parameter(1.0 + 0.1 * torch.randn(hidden)) for _ in range(2 * layers + 1)])

    def layer_norm(self, x, weight):
        # HF T5LayerNorm: root mean square only (no mean, no bias), in fp32.
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + self.eps))

    def relative_position_bucket(self, relative_position):
        # HF T5Attention._relative_position_bucket, bidirectional: half the
        # buckets per direction, exact for small distances, log-spaced up to
        # max_distance beyond. log(0) is -inf at distance 0, but Where
        # takes the exact branch there, as in HF.
        num_buckets = self.num_buckets // 2
        buckets = (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(self.max_distance / max_exact) * (num_buckets - max_exact)).to(torch.long)
        if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
        return buckets + torch.where(is_small, relative_position, if_large)

    def compute_bias(self, query_length, key_length, device):
        context = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        bucket = self.relative_position_bucket(memory - context)
        values = self.relative_attention_bias(bucket)  # [Sq, Sk, H]
        return values.permute([2, 0, 1]).unsqueeze(0)  # [1, H, Sq, Sk]

    def forward(self, input_ids):
        b, s = input_ids.shape
        x = self.embed(input_ids)
        h = x.shape[-1]
        d = h // self.heads
        position_bias = None
        for i, layer in enumerate(self.layers):
            y = self.layer_norm(x, self.norms[2 * i])
            q = layer["q"](y).view(b, s, self.heads, d).transpose(1, 2)
            k = layer["k"](y).view(b, s, self.heads, d).transpose(1, 2)
            v = layer["v"](y).view(b, s, self.heads, d).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(3, 2))  # T5: no 1/sqrt(d)
            if position_bias is None:  # layer 0 computes it, the others share it
                position_bias = self.compute_bias(s, s, x.device)
            scores = scores + position_bias
            probs = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
            ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
            x = x + layer["o"](ctx)
            y = self.layer_norm(x, self.norms[2 * i + 1])
            x = x + layer["wo"](nn.functional.relu(layer["wi"](y)))
        return self.layer_norm(x, self.norms[-1])


class Vit(nn.Module):
    """ViT (HF ViTModel + ViTForImageClassification): a Conv2d patch
    embedding (stride = patch), a cls token, learned position embeddings,
    pre-LN encoder layers with separate biased Q/K/V projections and an erf
    GELU MLP (4x), a final LayerNorm and a classifier on the cls token.
    The image is 24x40 in 8x8 patches: 3x5 patches plus the cls token make
    16 tokens, a sequence that --sp can split 2 or 4 ways (a square image
    never can: n*n + 1 is never a multiple of 4)."""

    def __init__(self, channels=3, image=(24, 40), patch=8, hidden=64, heads=4, layers=2,
                 classes=10, eps=1e-6):
        super().__init__()
        self.heads = heads
        tokens = (image[0] // patch) * (image[1] // patch) + 1
        self.patch = nn.Conv2d(channels, hidden, patch, stride=patch)
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, hidden))
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens, hidden))
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(hidden, eps=eps), "q": nn.Linear(hidden, hidden),
                "k": nn.Linear(hidden, hidden), "v": nn.Linear(hidden, hidden),
                "o": nn.Linear(hidden, hidden), "ln2": nn.LayerNorm(hidden, eps=eps),
                "fc1": nn.Linear(hidden, 4 * hidden), "fc2": nn.Linear(4 * hidden, hidden)}))
        self.ln = nn.LayerNorm(hidden, eps=eps)
        self.head = nn.Linear(hidden, classes)
        # Fresh LayerNorms are all ones and zeros, one constant the compiler
        # shares between them: give each its own values, so that a norm
        # that reads another's (or a wrongly sliced) weight shows.
        with torch.no_grad():
            for m in self.modules():
                if isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)

    def forward(self, pixel_values):
        b = pixel_values.shape[0]
        x = self.patch(pixel_values).flatten(2).transpose(1, 2)  # [B, patches, hidden]
        x = torch.cat((self.cls.expand(b, -1, -1), x), dim=1) + self.pos
        s, h = x.shape[1], x.shape[2]
        d = h // self.heads
        for layer in self.layers:
            y = layer["ln1"](x)
            q = layer["q"](y).view(b, s, self.heads, d).permute(0, 2, 1, 3)
            k = layer["k"](y).view(b, s, self.heads, d).permute(0, 2, 1, 3)
            v = layer["v"](y).view(b, s, self.heads, d).permute(0, 2, 1, 3)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
            ctx = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
            x = x + layer["o"](ctx.permute(0, 2, 1, 3).reshape(b, s, h))
            x = x + layer["fc2"](nn.functional.gelu(layer["fc1"](layer["ln2"](x))))
        return self.head(self.ln(x)[:, 0])


def randomize_batchnorm(model):
    # Fresh BatchNorm statistics are 0/1: give them real values.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)


def export(out_dir, name, model, export_inputs, check_inputs, input_names,
           output_names, dynamic_axes, opset, keep_batchnorm=False):
    folder = os.path.join(out_dir, name)
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    model.eval()
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, export_inputs, path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=opset, do_constant_folding=True,
                          # PRESERVE keeps BatchNormalization nodes (EVAL
                          # folds them into the convolutions).
                          training=(torch.onnx.TrainingMode.PRESERVE if keep_batchnorm
                                    else torch.onnx.TrainingMode.EVAL))
        outputs = model(*check_inputs)
    if not isinstance(outputs, (tuple, list)):
        outputs = (outputs,)
    feeds = {n: t.numpy() for n, t in zip(input_names, check_inputs)}
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ort_outputs = session.run(output_names, feeds)
    shapes = []
    for n, t in feeds.items():
        np.save(os.path.join(folder, "inputs", f"{n}.npy"), t)
        shapes.append(f"{n}={'x'.join(map(str, t.shape))}")
    for n, t, o in zip(output_names, outputs, ort_outputs):
        expected = t.numpy()
        np.save(os.path.join(folder, "expected", f"{n}.npy"), expected)
        diff = float(np.max(np.abs(expected - o)))
        print(f"{name}: output {n} {expected.shape}: torch vs onnxruntime max abs diff {diff:.2e}")
        if not np.allclose(o, expected, rtol=1e-4, atol=1e-5):
            sys.exit(f"{name}: onnxruntime disagrees with torch on {n}")
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"opset": opset, "inputs": input_names, "outputs": output_names,
                   "shapes": shapes}, f, indent=1)
    print(f"{name}: {os.path.getsize(path)} bytes, opset {opset}")


def export_bert(out_dir):
    bert = BertEncoder()
    ids = torch.randint(0, 96, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    check_ids = torch.randint(0, 96, (3, 11))
    check_mask = torch.ones(3, 11, dtype=torch.int64)
    check_mask[1, 7:] = 0
    check_mask[2, 4:] = 0
    export(out_dir, "bert_encoder", bert, (ids, mask), (check_ids, check_mask),
           ["input_ids", "attention_mask"], ["last_hidden_state", "pooled"],
           {"input_ids": {0: "batch", 1: "sequence"},
            "attention_mask": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"}, "pooled": {0: "batch"}},
           opset=17)


def export_gpt(out_dir):
    gpt = GptDecoder()
    export(out_dir, "gpt_decoder", gpt, (torch.randint(0, 96, (2, 8)),),
           (torch.randint(0, 96, (2, 13)),), ["input_ids"], ["logits"],
           {"input_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch", 1: "sequence"}}, opset=14)


def export_cnn(out_dir):
    cnn = SmallCnn()
    randomize_batchnorm(cnn)
    export(out_dir, "small_cnn", cnn, (torch.randn(2, 3, 16, 16),),
           (torch.randn(3, 3, 16, 16),), ["image"], ["logits"],
           {"image": {0: "batch"}, "logits": {0: "batch"}}, opset=13, keep_batchnorm=True)


def export_llama(out_dir):
    torch.manual_seed(4)
    llama = LlamaBlock()
    export(out_dir, "llama_block", llama, (torch.randint(0, 96, (2, 8)),),
           (torch.randint(0, 96, (3, 10)),), ["input_ids"], ["logits"],
           {"input_ids": {0: "batch", 1: "sequence"},
            "logits": {0: "batch", 1: "sequence"}}, opset=17)


def export_t5(out_dir):
    torch.manual_seed(5)
    t5 = T5Block()
    export(out_dir, "t5_block", t5, (torch.randint(0, 96, (2, 8)),),
           (torch.randint(0, 96, (3, 12)),), ["input_ids"], ["last_hidden_state"],
           {"input_ids": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"}}, opset=17)


def export_vit(out_dir):
    torch.manual_seed(6)
    vit = Vit()
    # The token count is fixed by the position embeddings: only the batch
    # is dynamic.
    export(out_dir, "vit", vit, (torch.randn(2, 3, 24, 40),), (torch.randn(3, 3, 24, 40),),
           ["pixel_values"], ["logits"],
           {"pixel_values": {0: "batch"}, "logits": {0: "batch"}}, opset=17)


def main():
    args = sys.argv[1:]
    out_dir = args.pop(0) if args else os.path.dirname(os.path.abspath(__file__))
    # bert, gpt and cnn share one generator stream from the seed at the top
    # (their files were exported that way): they are exported together, in
    # this order. Later models seed themselves.
    models = args or ["bert_encoder", "gpt_decoder", "small_cnn", "llama_block", "t5_block",
                      "vit"]
    if any(m in models for m in ("bert_encoder", "gpt_decoder", "small_cnn")):
        export_bert(out_dir)
        export_gpt(out_dir)
        export_cnn(out_dir)
    if "llama_block" in models:
        export_llama(out_dir)
    if "t5_block" in models:
        export_t5(out_dir)
    if "vit" in models:
        export_vit(out_dir)

if __name__ == "__main__":
    main()
