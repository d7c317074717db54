#!/usr/bin/env python3
"""Exports mixture-of-experts blocks written in different ways with
torch.onnx, each one a test/moe/forms/NAME folder (as export_moe.py does
for moe_top2): model.onnx (static shapes), inputs/hidden_states.npy,
expected/output.npy (ONNX Runtime), manifest.json, and expected_load.json
(the tokens each expert gets, counted here in numpy from the router's
logits, and the bytes of the expert weights, which --ep splits).

Every block is the same computation in the end -- a learned router over E
experts, the top-k of them per token, each expert an MLP, the chosen
experts' outputs weighted and summed -- written the ways PyTorch code
writes it:

  name                       experts                     act     bias  gating               k  combine
  einsum_relu_top2           stacked, einsum nd,edf->enf relu    no    softmax, top-k       2  GatherElements
  bmm_gelu_top1_scatter      stacked, batched matmul     gelu    yes   softmax, top-k       1  scatter, mul + sum over E
  list_swiglu_loop           list of nn.Linear (Mixtral) swiglu  no    top-k, softmax       2  scatter, loop over experts
  list_gelu_stack            list of nn.Linear           gelu    yes   softmax, top-k, norm 2  stack, GatherElements
  einsum_swiglu_scatter_add  stacked, einsum td,edf->etf swiglu  yes   top-k, softmax       2  GatherElements, scatter_add
  matmul_relu_scatter_bmm    stacked, matmul             relu    no    softmax, top-k, norm 2  scatter, bmm
  list_relu_index_add        list of nn.Linear           relu    yes   softmax, top-k       1  GatherElements, index_add

(swiglu: w2(silu(w1 x) * w3 x), as Mixtral and Qwen2-MoE write their
experts.) torch 1.13 exports index_add only without repeated indices, so
the index_add form has k = 1; scatter_add (ScatterElements with
reduction=add) takes the k = 2 slots.

Usage: export_moe_forms.py [OUT_DIR]   (default: test/moe/forms)
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort
import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN, FFN, EXPERTS = 2, 8, 16, 32, 4
TOKENS = BATCH * SEQ


class Router(nn.Module):
    """A learned router: the logits, then the top-k weights and experts.
    `order`: "softmax-topk" (Switch, GShard; `normalize` renormalizes the k
    weights) or "topk-softmax" (the softmax over the k chosen logits)."""

    def __init__(self, k, order, normalize=False, bias=False):
        super().__init__()
        self.gate = nn.Linear(HIDDEN, EXPERTS, bias=bias)
        # Sharper than the default init, so that the choice is uneven.
        nn.init.normal_(self.gate.weight, std=0.5)
        self.k, self.order, self.normalize = k, order, normalize

    def forward(self, tokens):
        logits = self.gate(tokens)
        if self.order == "topk-softmax":
            values, experts = torch.topk(logits, self.k, dim=-1)
            return F.softmax(values, dim=-1), experts
        weights, experts = torch.topk(F.softmax(logits, dim=-1), self.k, dim=-1)
        if self.normalize:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights, experts


def stacked(*shape):
    fan_in = shape[-2] if len(shape) == 3 else HIDDEN
    return nn.Parameter(torch.randn(*shape) / fan_in ** 0.5)


def gather_chosen(y_ted, experts):
    """The chosen experts' outputs [T, k, D] of y [T, E, D]."""
    k = experts.shape[-1]
    return torch.gather(y_ted, 1, experts.unsqueeze(-1).expand(TOKENS, k, HIDDEN))


def dense_weights(weights, experts):
    """The routing weights as a dense [T, E] matrix, 0 for experts not chosen."""
    return torch.zeros(TOKENS, EXPERTS).scatter(1, experts, weights)


class EinsumReluTop2(nn.Module):
    """Stacked experts by einsum, no biases, ReLU; top-2 of the softmax,
    not renormalized; the chosen outputs gathered."""

    def __init__(self):
        super().__init__()
        self.router = Router(2, "softmax-topk")
        self.w1, self.w2 = stacked(EXPERTS, HIDDEN, FFN), stacked(EXPERTS, FFN, HIDDEN)

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        h = torch.relu(torch.einsum("nd,edf->enf", x, self.w1))
        y = torch.einsum("enf,efd->end", h, self.w2)
        out = (gather_chosen(y.permute(1, 0, 2), experts) * weights.unsqueeze(-1)).sum(dim=1)
        return out.reshape(BATCH, SEQ, HIDDEN)


class BmmGeluTop1Scatter(nn.Module):
    """Stacked experts by batched matmul with biases, GELU; top-1 (a router
    with a bias); the weights scattered into [T, E] and the sum over experts
    written as a product and a ReduceSum; a residual around it."""

    def __init__(self):
        super().__init__()
        self.router = Router(1, "softmax-topk", bias=True)
        self.w1, self.w2 = stacked(EXPERTS, HIDDEN, FFN), stacked(EXPERTS, FFN, HIDDEN)
        self.b1 = nn.Parameter(torch.randn(EXPERTS, FFN) * 0.1)
        self.b2 = nn.Parameter(torch.randn(EXPERTS, HIDDEN) * 0.1)

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        xs = x.unsqueeze(0).expand(EXPERTS, TOKENS, HIDDEN)
        h = F.gelu(torch.bmm(xs, self.w1) + self.b1[:, None, :])
        y = torch.bmm(h, self.w2) + self.b2[:, None, :]  # [E, T, D]
        combine = dense_weights(weights, experts)
        out = (y * combine.t().unsqueeze(-1)).sum(dim=0)
        return hidden_states + out.reshape(BATCH, SEQ, HIDDEN)


class SwiGluExpert(nn.Module):
    """Mixtral's expert: w2(silu(w1 x) * w3 x), no biases."""

    def __init__(self, bias=False):
        super().__init__()
        self.w1 = nn.Linear(HIDDEN, FFN, bias=bias)
        self.w2 = nn.Linear(FFN, HIDDEN, bias=bias)
        self.w3 = nn.Linear(HIDDEN, FFN, bias=bias)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class ListSwiGluLoop(nn.Module):
    """A list of SwiGLU experts; Mixtral's routing (softmax over the top-2
    logits); the weights scattered into [T, E] and a Python loop adding each
    expert's weighted output."""

    def __init__(self):
        super().__init__()
        self.router = Router(2, "topk-softmax")
        self.experts = nn.ModuleList([SwiGluExpert() for _ in range(EXPERTS)])

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        combine = dense_weights(weights, experts)
        out = 0
        for e, expert in enumerate(self.experts):
            out = out + combine[:, e:e + 1] * expert(x)
        return out.reshape(BATCH, SEQ, HIDDEN)


class ListGeluStack(nn.Module):
    """A list of Linear-GELU-Linear experts with biases, stacked along dim 1;
    top-2 of the softmax renormalized; the chosen outputs gathered."""

    def __init__(self):
        super().__init__()
        self.router = Router(2, "softmax-topk", normalize=True)
        self.experts = nn.ModuleList([
            nn.Sequential(nn.Linear(HIDDEN, FFN), nn.GELU(), nn.Linear(FFN, HIDDEN))
            for _ in range(EXPERTS)])

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        y = torch.stack([expert(x) for expert in self.experts], dim=1)  # [T, E, D]
        out = (gather_chosen(y, experts) * weights.unsqueeze(-1)).sum(dim=1)
        return out.reshape(BATCH, SEQ, HIDDEN)


class EinsumSwiGluScatterAdd(nn.Module):
    """Stacked SwiGLU experts by einsum with biases; top-2 then softmax; each
    token's k weighted outputs gathered, flattened to slots and added back
    to their tokens by scatter_add."""

    def __init__(self):
        super().__init__()
        self.router = Router(2, "topk-softmax")
        self.w1, self.w3 = stacked(EXPERTS, HIDDEN, FFN), stacked(EXPERTS, HIDDEN, FFN)
        self.w2 = stacked(EXPERTS, FFN, HIDDEN)
        self.b1 = nn.Parameter(torch.randn(EXPERTS, 1, FFN) * 0.1)
        self.b3 = nn.Parameter(torch.randn(EXPERTS, 1, FFN) * 0.1)
        self.b2 = nn.Parameter(torch.randn(EXPERTS, 1, HIDDEN) * 0.1)

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        gate = F.silu(torch.einsum("td,edf->etf", x, self.w1) + self.b1)
        up = torch.einsum("td,edf->etf", x, self.w3) + self.b3
        y = torch.einsum("etf,efd->etd", gate * up, self.w2) + self.b2
        slots = gather_chosen(y.permute(1, 0, 2), experts) * weights.unsqueeze(-1)
        token_of_slot = torch.arange(TOKENS).repeat_interleave(2)
        out = torch.zeros(TOKENS, HIDDEN).scatter_add(
            0, token_of_slot[:, None].expand(TOKENS * 2, HIDDEN), slots.reshape(TOKENS * 2, HIDDEN))
        return out.reshape(BATCH, SEQ, HIDDEN)


class MatmulReluScatterBmm(nn.Module):
    """Stacked experts by matmul, no biases, ReLU; top-2 of the softmax
    renormalized; the weights scattered into [T, E] and the sum over experts
    as a batched matmul."""

    def __init__(self):
        super().__init__()
        self.router = Router(2, "softmax-topk", normalize=True)
        self.w1, self.w2 = stacked(EXPERTS, HIDDEN, FFN), stacked(EXPERTS, FFN, HIDDEN)

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        y = torch.matmul(torch.relu(torch.matmul(x, self.w1)), self.w2)  # [E, T, D]
        combine = dense_weights(weights, experts)
        out = torch.bmm(combine.unsqueeze(1), y.transpose(0, 1)).squeeze(1)
        return out.reshape(BATCH, SEQ, HIDDEN)


class ListReluIndexAdd(nn.Module):
    """A list of Linear-ReLU-Linear experts with biases stacked along dim 0;
    top-1 of the softmax; the chosen output gathered, weighted and added
    back to its token by index_add."""

    def __init__(self):
        super().__init__()
        self.router = Router(1, "softmax-topk")
        self.experts = nn.ModuleList([
            nn.Sequential(nn.Linear(HIDDEN, FFN), nn.ReLU(), nn.Linear(FFN, HIDDEN))
            for _ in range(EXPERTS)])

    def forward(self, hidden_states):
        x = hidden_states.reshape(TOKENS, HIDDEN)
        weights, experts = self.router(x)
        y = torch.stack([expert(x) for expert in self.experts])  # [E, T, D]
        chosen = gather_chosen(y.permute(1, 0, 2), experts)[:, 0] * weights
        out = torch.zeros(TOKENS, HIDDEN).index_add(0, torch.arange(TOKENS), chosen)
        return out.reshape(BATCH, SEQ, HIDDEN)


FORMS = {
    "einsum_relu_top2": EinsumReluTop2,
    "bmm_gelu_top1_scatter": BmmGeluTop1Scatter,
    "list_swiglu_loop": ListSwiGluLoop,
    "list_gelu_stack": ListGeluStack,
    "einsum_swiglu_scatter_add": EinsumSwiGluScatterAdd,
    "matmul_relu_scatter_bmm": MatmulReluScatterBmm,
    "list_relu_index_add": ListReluIndexAdd,
}


def expert_weight_bytes(model):
    """Bytes of the experts' weights and biases (what --ep splits)."""
    return sum(p.numel() * 4 for name, p in model.named_parameters()
               if not name.startswith("router."))


def export(folder, model, x):
    os.makedirs(os.path.join(folder, "inputs"), exist_ok=True)
    os.makedirs(os.path.join(folder, "expected"), exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(model, (torch.from_numpy(x),), path, input_names=["hidden_states"],
                          output_names=["output"], opset_version=17, do_constant_folding=True)
        reference = model(torch.from_numpy(x)).numpy()
        logits = model.router.gate(torch.from_numpy(x).reshape(TOKENS, HIDDEN)).numpy()
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    output = session.run(None, {"hidden_states": x})[0]
    if not np.allclose(output, reference, rtol=1e-4, atol=1e-5):
        sys.exit(f"{folder}: ONNX Runtime disagrees with torch")
    np.save(os.path.join(folder, "inputs", "hidden_states.npy"), x)
    np.save(os.path.join(folder, "expected", "output.npy"), output)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"opset": 17, "inputs": ["hidden_states"], "outputs": ["output"],
                   "shapes": []}, f, indent=1)
    # The hand count: each token's top-k experts by its logits (softmax
    # keeps their order; ties to the lower expert, as TopK).
    k = model.router.k
    chosen = np.argsort(-logits.astype(np.float64), axis=-1, kind="stable")[:, :k]
    per_expert = np.bincount(chosen.ravel(), minlength=EXPERTS)
    with open(os.path.join(folder, "expected_load.json"), "w") as f:
        json.dump({"tokens_per_expert": per_expert.tolist(), "top_k": k,
                   "expert_weight_bytes": expert_weight_bytes(model)}, f)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "forms")
    for seed, (name, form) in enumerate(FORMS.items()):
        torch.manual_seed(100 + seed)
        rng = np.random.default_rng(100 + seed)
        x = rng.standard_normal((BATCH, SEQ, HIDDEN)).astype(np.float32)
        export(os.path.join(out, name), form().eval(), x)
        print(f"{name}: exported")


if __name__ == "__main__":
    main()
