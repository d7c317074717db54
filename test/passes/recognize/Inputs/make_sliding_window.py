#!/usr/bin/env python3
"""A Mistral-style attention block for the sliding-window test (docs/zoo.md):
grouped-query attention (4 query heads, 2 key/value heads, repeat_kv) whose
scores get an additive mask that keeps, for query i, only the keys
i - W < j <= i (Mistral's `sliding_window` W = 5 over 16 tokens), filled with
the dtype's minimum as transformers does. Writes OUT/{model.onnx,
inputs/x.npy, expected/output.npy} with ONNX Runtime's output.

usage: make_sliding_window.py OUT [SEQ WINDOW]   (default 16 5)
"""
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

SEQ, HIDDEN, HEADS, KV_HEADS, WINDOW = 16, 32, 4, 2, 5


class SlidingWindowAttention(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.window = window
        self.dh = HIDDEN // HEADS
        self.q = nn.Linear(HIDDEN, HEADS * self.dh, bias=False)
        self.k = nn.Linear(HIDDEN, KV_HEADS * self.dh, bias=False)
        self.v = nn.Linear(HIDDEN, KV_HEADS * self.dh, bias=False)
        self.o = nn.Linear(HEADS * self.dh, HIDDEN, bias=False)

    def repeat_kv(self, x):
        b, h, s, d = x.shape
        g = HEADS // KV_HEADS
        return x[:, :, None, :, :].expand(b, h, g, s, d).reshape(b, h * g, s, d)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, HEADS, self.dh).transpose(1, 2)
        k = self.repeat_kv(self.k(x).view(b, s, KV_HEADS, self.dh).transpose(1, 2))
        v = self.repeat_kv(self.v(x).view(b, s, KV_HEADS, self.dh).transpose(1, 2))
        i = torch.arange(s).unsqueeze(1)
        j = torch.arange(s).unsqueeze(0)
        keep = (j <= i) & (j > i - self.window)
        mask = torch.zeros(s, s).masked_fill(~keep, torch.finfo(torch.float32).min)
        scores = torch.matmul(q, k.transpose(2, 3)) / self.dh ** 0.5 + mask
        probs = torch.softmax(scores, dim=-1)
        out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, HIDDEN)
        return self.o(out)


def main():
    out = sys.argv[1]
    seq, window = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (SEQ, WINDOW)
    torch.manual_seed(7)
    model = SlidingWindowAttention(window).eval()
    x = np.random.default_rng(7).standard_normal((2, seq, HIDDEN)).astype(np.float32)
    os.makedirs(os.path.join(out, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(out, "expected"), exist_ok=True)
    path = os.path.join(out, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (torch.from_numpy(x),), path, input_names=["x"],
                          output_names=["output"], opset_version=17)
    y = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.save(os.path.join(out, "inputs", "x.npy"), x)
    np.save(os.path.join(out, "expected", "output.npy"), y)


if __name__ == "__main__":
    main()
