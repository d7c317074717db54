#!/usr/bin/env python3
"""Near misses of the MoE blocks RecognizeMoe matches: graphs that look like
test/moe's models but are not a mixture of experts as sluice.moe defines it
(recognizing them would change the result, or leave nothing for the op to
hold).

- topk_logits: the top-2 experts chosen on the router's logits and weighted
  by the logits themselves (no softmax): sluice.moe's weights are softmax
  probabilities, so the op must not form.
- hard_two_ids: the hard-gated MLP whose second weight is gathered by a
  different index than the first (two id inputs): not one expert per sample.
- two_routers: the experts chosen by one router's top-2 and weighted by
  another router's top-2 probabilities.
- topk_features: the top-2 of a softmax over the tokens' own first E
  features, not over a learned router's logits.
- computed_weights: the experts' first weight is a graph input, not a
  constant (nothing for sluice.moe or expert parallelism to hold).

Each goes to OUT/NAME/{model.onnx, inputs/*.npy, expected/output.npy} with
ONNX Runtime's output, for sluice-run --reference to match.

usage: make_moe_near_miss.py OUT
"""
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

HIDDEN, FFN, EXPERTS = 16, 32, 4


class TopkOnLogits(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)

    def forward(self, tokens):
        t, d = tokens.shape
        weights, experts = torch.topk(self.router(tokens), 2, dim=-1)
        h = torch.relu(torch.matmul(tokens, self.w1))
        y = torch.matmul(h, self.w2).permute(1, 0, 2)
        chosen = torch.gather(y, 1, experts.unsqueeze(-1).expand(t, 2, d))
        return (chosen * weights.unsqueeze(-1)).sum(dim=1)


class HardTwoIds(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)

    def forward(self, x, first, second):
        return torch.matmul(torch.relu(torch.matmul(x, self.w1[first])), self.w2[second])


def stacked_experts(tokens, w1, w2, experts, weights):
    """Every expert on every token (ReLU), the chosen two gathered and
    weighted."""
    t, d = tokens.shape
    y = torch.matmul(torch.relu(torch.matmul(tokens, w1)), w2).permute(1, 0, 2)
    chosen = torch.gather(y, 1, experts.unsqueeze(-1).expand(t, 2, d))
    return (chosen * weights.unsqueeze(-1)).sum(dim=1)


class TwoRouters(nn.Module):
    def __init__(self):
        super().__init__()
        self.choose = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.weigh = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)

    def forward(self, tokens):
        _, experts = torch.topk(torch.softmax(self.choose(tokens), -1), 2, dim=-1)
        weights, _ = torch.topk(torch.softmax(self.weigh(tokens), -1), 2, dim=-1)
        return stacked_experts(tokens, self.w1, self.w2, experts, weights)


class TopkFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)

    def forward(self, tokens):
        weights, experts = torch.topk(torch.softmax(tokens[:, :EXPERTS], -1), 2, dim=-1)
        return stacked_experts(tokens, self.w1, self.w2, experts, weights)


class ComputedWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)

    def forward(self, tokens, w1):
        weights, experts = torch.topk(torch.softmax(self.router(tokens), -1), 2, dim=-1)
        return stacked_experts(tokens, w1, self.w2, experts, weights)


def save(folder, model, inputs, names):
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(torch.from_numpy(x) for x in inputs), path,
                          input_names=names, output_names=["output"], opset_version=17)
    out = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(
        None, dict(zip(names, inputs)))[0]
    for name, value in zip(names, inputs):
        np.save(os.path.join(folder, "inputs", name + ".npy"), value)
    np.save(os.path.join(folder, "expected", "output.npy"), out)


def main():
    out = sys.argv[1]
    torch.manual_seed(5)
    rng = np.random.default_rng(5)
    save(os.path.join(out, "topk_logits"), TopkOnLogits().eval(),
         [rng.standard_normal((12, HIDDEN)).astype(np.float32)], ["tokens"])
    save(os.path.join(out, "hard_two_ids"), HardTwoIds().eval(),
         [rng.standard_normal((3, 5, HIDDEN)).astype(np.float32),
          np.array([1, 0, 3], dtype=np.int64), np.array([2, 0, 1], dtype=np.int64)],
         ["x", "first", "second"])
    tokens = rng.standard_normal((12, HIDDEN)).astype(np.float32)
    save(os.path.join(out, "two_routers"), TwoRouters().eval(), [tokens], ["tokens"])
    save(os.path.join(out, "topk_features"), TopkFeatures().eval(), [tokens], ["tokens"])
    w1 = (rng.standard_normal((EXPERTS, HIDDEN, FFN)) / HIDDEN ** 0.5).astype(np.float32)
    save(os.path.join(out, "computed_weights"), ComputedWeights().eval(), [tokens, w1],
         ["tokens", "w1"])


if __name__ == "__main__":
    main()
