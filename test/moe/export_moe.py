#!/usr/bin/env python3
"""Exports the two mixture-of-experts test models (docs/parallel.md) with torch.onnx
and records ONNX Runtime's outputs on fixed inputs.

- moe_top2: a transformer-ish block (LayerNorm, learned router, residual)
  whose MoE is the plain PyTorch form: softmax over E=4 experts, top-2,
  the top-2 probabilities renormalized, every expert computed densely on
  every token (one batched MatMul over the stacked [E, D, F] / [E, F, D]
  weights, GELU between), the two chosen experts' outputs gathered by the
  top-k indices (GatherElements) and summed with their weights.
- moe_hard: a hard-gated MoE: each sentence's expert is its language id
  (an int64 input, E=4 languages); the exporter writes the expert's weights
  gathered by that id (Gather on the stacked weights), then the MLP (ReLU).

Each model gets a folder with model.onnx (static shapes), inputs/*.npy,
expected/*.npy (ONNX Runtime) and a manifest.json, like test/models. The
tokens per expert that the router chooses are recorded in
expected_load.json, counted here in numpy from the router's own outputs
(the hand count the expert-load profile is checked against).

Usage: export_moe.py [OUT_DIR]   (default: the folder of this script).
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

BATCH, SEQ, HIDDEN, FFN, EXPERTS, TOP_K = 2, 8, 32, 64, 4, 2


class Top2Moe(nn.Module):
    """LayerNorm -> router (Linear, softmax, top-2, renormalized) -> experts
    computed densely and gathered by the top-2 indices -> residual."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(HIDDEN)
        self.router = nn.Linear(HIDDEN, EXPERTS, bias=False)
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.b1 = nn.Parameter(torch.randn(EXPERTS, FFN) * 0.1)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)
        self.b2 = nn.Parameter(torch.randn(EXPERTS, HIDDEN) * 0.1)
        # A sharper router than the default init so that the choice is
        # uneven (a profile worth looking at).
        nn.init.normal_(self.router.weight, std=0.5)

    def forward(self, hidden_states):
        b, s, d = hidden_states.shape
        tokens = self.ln(hidden_states).reshape(b * s, d)
        probs = torch.softmax(self.router(tokens), dim=-1)
        weights, experts = torch.topk(probs, TOP_K, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        h = torch.nn.functional.gelu(torch.matmul(tokens, self.w1) + self.b1.unsqueeze(1))
        y = (torch.matmul(h, self.w2) + self.b2.unsqueeze(1)).permute(1, 0, 2)  # [T, E, D]
        chosen = torch.gather(y, 1, experts.unsqueeze(-1).expand(b * s, TOP_K, d))
        out = (chosen * weights.unsqueeze(-1)).sum(dim=1)
        return hidden_states + out.reshape(b, s, d)


class HardMoe(nn.Module):
    """One expert MLP per language, chosen by the sentence's language id."""

    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(EXPERTS, HIDDEN, FFN) / HIDDEN ** 0.5)
        self.b1 = nn.Parameter(torch.randn(EXPERTS, FFN) * 0.1)
        self.w2 = nn.Parameter(torch.randn(EXPERTS, FFN, HIDDEN) / FFN ** 0.5)
        self.b2 = nn.Parameter(torch.randn(EXPERTS, HIDDEN) * 0.1)

    def forward(self, hidden_states, language):
        h = torch.relu(torch.matmul(hidden_states, self.w1[language]) +
                       self.b1[language].unsqueeze(1))
        return hidden_states + (torch.matmul(h, self.w2[language]) +
                                self.b2[language].unsqueeze(1))


def save(folder, model, inputs, input_names, output_names):
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, tuple(torch.from_numpy(x) for x in inputs), path,
                          input_names=input_names, output_names=output_names, opset_version=17,
                          do_constant_folding=True)
        reference = model(*(torch.from_numpy(x) for x in inputs)).numpy()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = session.run(None, dict(zip(input_names, inputs)))
    if not np.allclose(outputs[0], reference, rtol=1e-4, atol=1e-5):
        sys.exit(f"{folder}: ONNX Runtime disagrees with torch")
    for name, value in zip(input_names, inputs):
        np.save(os.path.join(folder, "inputs", name + ".npy"), value)
    np.save(os.path.join(folder, "expected", output_names[0] + ".npy"), outputs[0])
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"opset": 17, "inputs": input_names, "outputs": output_names, "shapes": []},
                  f, indent=1)
    return outputs


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(17)

    torch.manual_seed(17)
    top2 = Top2Moe().eval()
    x = rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
    folder = os.path.join(out, "moe_top2")
    save(folder, top2, [x], ["hidden_states"], ["output"])
    # The hand count: the router's top-2 experts per token, from numpy.
    with torch.no_grad():
        tokens = top2.ln(torch.from_numpy(x)).reshape(-1, HIDDEN).numpy()
        logits = tokens @ top2.router.weight.numpy().T
    chosen = np.argsort(-logits, axis=-1, kind="stable")[:, :TOP_K]
    per_expert = np.bincount(chosen.ravel(), minlength=EXPERTS)
    with open(os.path.join(folder, "expected_load.json"), "w") as f:
        json.dump({"tokens_per_expert": per_expert.tolist(), "top_k": TOP_K}, f)

    torch.manual_seed(18)
    hard = HardMoe().eval()
    x = rng.standard_normal((BATCH * 3, SEQ, HIDDEN)).astype(np.float32)
    language = np.array([2, 0, 2, 3, 0, 2], dtype=np.int64)
    folder = os.path.join(out, "moe_hard")
    save(folder, hard, [x, language], ["hidden_states", "language"], ["output"])
    per_expert = np.bincount(np.repeat(language, SEQ), minlength=EXPERTS)
    with open(os.path.join(folder, "expected_load.json"), "w") as f:
        json.dump({"tokens_per_expert": per_expert.tolist(), "top_k": 1}, f)


if __name__ == "__main__":
    main()
