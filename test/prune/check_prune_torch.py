#!/usr/bin/env python3
"""Pruning differential test (docs/pruning.md): the program sluice-prune writes,
evaluated by the reference evaluator, must equal the model that the same
decisions give in torch.

For each small torch model below (random weights from a fixed seed; a
transformer with per-layer head and MLP sizes, a CNN with a BatchNorm'd
residual block):
  1. export it with torch.onnx (node names such as /layers.0/q/MatMul), write
     two calibration sets of random inputs;
  2. sluice-compile MODEL --prune=... --calibration=... --accuracy-budget=1e9
     --stop-after=compress --emit=mlir --report=R.json (the budget so large
     that every group is pruned as requested: this test checks how the
     decisions are carried out, the accuracy tests check the guard);
  3. read pruning.layers from the report (node, kind, kept_units) and prune
     the torch model by hand with those units: the rows/columns of the Q, K,
     V and output projections of the kept heads, the MLP's kept hidden
     units, a convolution's kept output channels together with its
     BatchNorm, the next convolution's input channels, the flattened
     features of the next Linear, and every layer tied to them by the
     residual add; and first the compensation sluice-prune makes (each
     removed input's mean over the calibration sets, measured here with
     forward hooks on the unpruned model, times its weights, added to the
     consuming layer's bias, or subtracted from the running mean of the
     BatchNorm after a convolution without bias, which is the same once
     torch.onnx folds the BatchNorm into the convolution);
  4. run the pruned program (sluice-run FILE.mlir --reference) and the pruned
     torch model on the same fresh input: the outputs must agree (rtol 1e-4,
     atol 1e-5), and the report's kept counts must be what was requested
     (kept = original - round(fraction * original) unless the layer says
     why not) and params_after what the pruned torch model holds.

Exit 0 when every model agrees.
Usage: check_prune_torch.py --bin BUILD/bin [--keep DIR]
"""
import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402

torch.manual_seed(0)


class TinyTransformer(nn.Module):
    """Two pre-norm layers with per-layer head counts (head size 16) and MLP
    widths, attention written as MatMul/Softmax (recognized as
    sluice.attention), mean pool, classifier."""

    def __init__(self, heads=(4, 4), mlp=(128, 128), hidden=64, head_dim=16, tokens=8,
                 features=8):
        super().__init__()
        self.tokens, self.features, self.head_dim = tokens, features, head_dim
        self.embed = nn.Linear(features, hidden)
        self.layers = nn.ModuleList()
        for h, m in zip(heads, mlp):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(hidden), "q": nn.Linear(hidden, h * head_dim),
                "k": nn.Linear(hidden, h * head_dim), "v": nn.Linear(hidden, h * head_dim),
                "o": nn.Linear(h * head_dim, hidden), "ln2": nn.LayerNorm(hidden),
                "fc1": nn.Linear(hidden, m), "fc2": nn.Linear(m, hidden)}))
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 10)

    def forward(self, image):
        b = image.shape[0]
        x = self.embed(image.reshape(b, self.tokens, self.features))
        s, d = x.shape[1], self.head_dim
        for layer in self.layers:
            h = layer["q"].out_features // d
            y = layer["ln1"](x)
            q = layer["q"](y).view(b, s, h, d).permute(0, 2, 1, 3)
            k = layer["k"](y).view(b, s, h, d).permute(0, 2, 1, 3)
            v = layer["v"](y).view(b, s, h, d).permute(0, 2, 1, 3)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
            ctx = torch.matmul(nn.functional.softmax(scores, dim=-1), v)
            x = x + layer["o"](ctx.permute(0, 2, 1, 3).reshape(b, s, h * d))
            x = x + layer["fc2"](nn.functional.gelu(layer["fc1"](layer["ln2"](x))))
        return self.head(self.ln(x).mean(dim=1))


class TinyCnn(nn.Module):
    """conv1 -> relu -> conv2 -> relu, a residual block (conv3 -> bn3 -> relu
    -> conv4 -> bn4, + skip) whose output channels are tied to conv2's by
    the add, max pool, flatten, fc1 -> relu -> fc2."""

    def __init__(self, c1=16, c2=32, c3=32):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.conv3 = nn.Conv2d(c2, c3, 3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(c3)
        self.conv4 = nn.Conv2d(c3, c2, 3, padding=1, bias=False)
        self.bn4 = nn.BatchNorm2d(c2)
        self.fc1 = nn.Linear(c2 * 16, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, image):
        x = torch.relu(self.conv2(torch.relu(self.conv1(image))))
        y = self.bn4(self.conv4(torch.relu(self.bn3(self.conv3(x)))))
        x = nn.functional.max_pool2d(torch.relu(x + y), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def randomize_bn(model):
    """Non-trivial BatchNorm statistics (eval mode uses the running ones)."""
    g = torch.Generator().manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(0.1 * torch.randn(m.num_features, generator=g))
            m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=g))
            m.weight.data.copy_(0.5 + torch.rand(m.num_features, generator=g))
            m.bias.data.copy_(0.1 * torch.randn(m.num_features, generator=g))


# --- pruning a torch model by the report's decisions -------------------------

def keep_linear(linear, rows=None, cols=None):
    """A copy of `linear` with output features `rows` and input features
    `cols` kept (None: all)."""
    w = linear.weight.data
    b = linear.bias.data if linear.bias is not None else None
    if rows is not None:
        w, b = w[rows], (b[rows] if b is not None else None)
    if cols is not None:
        w = w[:, cols]
    out = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    out.weight.data.copy_(w)
    if b is not None:
        out.bias.data.copy_(b)
    return out


def keep_conv(conv, out_ch=None, in_ch=None):
    w = conv.weight.data
    b = conv.bias.data if conv.bias is not None else None
    if out_ch is not None:
        w, b = w[out_ch], (b[out_ch] if b is not None else None)
    if in_ch is not None:
        w = w[:, in_ch]
    out = nn.Conv2d(w.shape[1], w.shape[0], conv.kernel_size, conv.stride, conv.padding,
                    bias=b is not None)
    out.weight.data.copy_(w)
    if b is not None:
        out.bias.data.copy_(b)
    return out


def keep_bn(bn, ch):
    out = nn.BatchNorm2d(len(ch))
    for name in ("weight", "bias"):
        getattr(out, name).data.copy_(getattr(bn, name).data[ch])
    for name in ("running_mean", "running_var"):
        getattr(out, name).copy_(getattr(bn, name)[ch])
    out.eps = bn.eps
    return out.eval()


def input_means(model, names, batches):
    """Mean of the input of each module in `names` over `batches`, per
    feature: the last axis for a Linear, the channel axis for a Conv2d."""
    sums, counts, hooks = {}, {}, []
    modules = dict(model.named_modules())
    for name in names:
        def hook(module, inputs, _out, name=name):
            x = inputs[0].detach().double()
            axis = 1 if isinstance(module, nn.Conv2d) else x.dim() - 1
            dims = [d for d in range(x.dim()) if d != axis]
            sums[name] = sums.get(name, 0) + x.sum(dim=dims)
            counts[name] = counts.get(name, 0) + x.numel() // x.shape[axis]
        hooks.append(modules[name].register_forward_hook(hook))
    with torch.no_grad():
        for b in batches:
            model(torch.from_numpy(b))
    for h in hooks:
        h.remove()
    return {n: sums[n] / counts[n] for n in names}


def compensation(module, mean, kept_positions):
    """What sluice-prune adds to `module`'s bias for the inputs not in
    `kept_positions`: sum over them of mean * their weights."""
    removed = sorted(set(range(mean.numel())) - set(kept_positions))
    w = module.weight.data.double()
    if isinstance(module, nn.Conv2d):
        w = w.sum(dim=(2, 3))
    return (w[:, removed] @ mean[removed]).float()


def add_to_bias(module, delta, bn=None):
    if module.bias is not None:
        module.bias.data += delta
    else:  # the BatchNorm after it (folded into the convolution on export)
        bn.running_mean -= delta


def module_path(node):
    """'/layers.0/q/MatMul' -> 'layers.0.q' (torch.onnx's scoped names)."""
    parts = [p for p in node.split("/") if p]
    return ".".join(parts[:-1])


TRANSFORMER_SINKS = [f"layers.{i}.{m}" for i in range(2) for m in ("o", "fc2")]
CNN_SINKS = ["conv2", "conv3", "conv4", "fc1"]


def prune_transformer(model, layers, means):
    # torch.onnx names a ModuleDict's modules by their key alone ('/q/MatMul',
    # '/q_1/MatMul' for the second layer's): the groups of each kind come in
    # program order, one per layer.
    seen = {}
    for entry in layers:
        if entry["kept"] == entry["original"]:
            continue
        index = seen.get(entry["kind"], 0)
        seen[entry["kind"]] = index + 1
        layer = model.layers[index]
        kept = entry["kept_units"]
        if entry["kind"] == "heads":
            d = model.head_dim
            cols = [h * d + i for h in kept for i in range(d)]
            add_to_bias(layer["o"], compensation(layer["o"], means[f"layers.{index}.o"], cols))
            for name in ("q", "k", "v"):
                layer[name] = keep_linear(layer[name], rows=cols)
            layer["o"] = keep_linear(layer["o"], cols=cols)
        elif entry["kind"] == "ffn":
            add_to_bias(layer["fc2"], compensation(layer["fc2"], means[f"layers.{index}.fc2"], kept))
            layer["fc1"] = keep_linear(layer["fc1"], rows=kept)
            layer["fc2"] = keep_linear(layer["fc2"], cols=kept)
        else:
            raise ValueError(f"unexpected kind {entry['kind']} at {entry['node']}")


def prune_cnn(model, layers, means):
    # Every compensation from the unpruned weights first: conv3's and
    # conv4's weights are sliced by two groups each.
    for entry in layers:
        path, kept = module_path(entry["node"]), entry["kept_units"]
        if entry["kept"] == entry["original"]:
            continue
        if path == "conv1":
            add_to_bias(model.conv2, compensation(model.conv2, means["conv2"], kept))
        elif path == "conv2":
            add_to_bias(model.conv3, compensation(model.conv3, means["conv3"], kept), model.bn3)
            feats = [c * 16 + i for c in kept for i in range(16)]
            add_to_bias(model.fc1, compensation(model.fc1, means["fc1"], feats))
        elif path == "conv3":
            add_to_bias(model.conv4, compensation(model.conv4, means["conv4"], kept), model.bn4)
    for entry in layers:
        path, kept = module_path(entry["node"]), entry["kept_units"]
        if entry["kept"] == entry["original"]:
            continue
        if path == "conv1":
            model.conv1 = keep_conv(model.conv1, out_ch=kept)
            model.conv2 = keep_conv(model.conv2, in_ch=kept)
        elif path == "conv2":
            # Tied by the residual add: conv2's and conv4's outputs (with
            # bn4) are one group; conv3 and fc1 consume it.
            model.conv2 = keep_conv(model.conv2, out_ch=kept)
            model.conv4 = keep_conv(model.conv4, out_ch=kept)
            model.bn4 = keep_bn(model.bn4, kept)
            model.conv3 = keep_conv(model.conv3, in_ch=kept)
            feats = [c * 16 + i for c in kept for i in range(16)]
            model.fc1 = keep_linear(model.fc1, cols=feats)
        elif path == "conv3":
            model.conv3 = keep_conv(model.conv3, out_ch=kept)
            model.bn3 = keep_bn(model.bn3, kept)
            model.conv4 = keep_conv(model.conv4, in_ch=kept)
        elif path == "fc1":
            model.fc1 = keep_linear(model.fc1, rows=kept)
            model.fc2 = keep_linear(model.fc2, cols=kept)
        else:
            raise ValueError(f"unexpected pruned layer {entry['node']}")


CASES = [
    # name, constructor, pruner, the modules whose input means compensate,
    # --prune, input shape
    ("transformer", TinyTransformer, prune_transformer, TRANSFORMER_SINKS,
     "heads=0.25,ffn=0.5", (4, 1, 8, 8)),
    ("cnn", TinyCnn, prune_cnn, CNN_SINKS, "channels=0.25", (4, 1, 8, 8)),
]


def check_case(args, work, name, ctor, pruner, sinks, prune, shape):
    problems = []
    model = ctor().eval()
    randomize_bn(model)
    onnx_path = os.path.join(work, f"{name}.onnx")
    torch.onnx.export(model, torch.zeros(shape), onnx_path, input_names=["image"],
                      output_names=["logits"], opset_version=17)
    rng = np.random.default_rng(0)
    calib = os.path.join(work, f"{name}_calibration")
    batches = [rng.random(shape, dtype=np.float32) for _ in range(2)]
    for k, batch in enumerate(batches):
        os.makedirs(os.path.join(calib, f"set{k}"), exist_ok=True)
        np.save(os.path.join(calib, f"set{k}", "image.npy"), batch)
    mlir = os.path.join(work, f"{name}_pruned.mlir")
    report_path = os.path.join(work, f"{name}_report.json")
    shape_flag = "x".join(str(d) for d in shape)
    p = st.compile_bundle(args.bin, onnx_path, mlir,
                          [f"--shape=image={shape_flag}", f"--prune={prune}",
                           f"--calibration={calib}", "--accuracy-budget=1e9",
                           "--stop-after=compress", "--emit=mlir", f"--report={report_path}",
                           "--quiet"], timeout=600)
    if p.rc != 0:
        return [f"{name}: sluice-compile failed:\n{p.out}"]
    with open(report_path) as f:
        pruning = json.load(f).get("pruning")
    if not pruning or not pruning.get("layers"):
        return [f"{name}: the report has no pruning.layers"]
    requested = {k: float(v) for k, v in (kv.split("=") for kv in prune.split(","))}
    for entry in pruning["layers"]:
        want = entry["original"] - int(math.floor(requested[entry["kind"]] * entry["original"] + 0.5))
        kept = entry["kept_units"]
        if len(kept) != entry["kept"] or sorted(set(kept)) != kept:
            problems.append(f"{name}: {entry['node']}: kept_units {kept} do not match kept "
                            f"{entry['kept']} (ascending, distinct)")
        if entry["kept"] != want and entry.get("reason", "as requested") == "as requested":
            problems.append(f"{name}: {entry['node']}: kept {entry['kept']} of "
                            f"{entry['original']}, requested {want}, and no reason given")
    pruned = ctor().eval()
    pruned.load_state_dict(model.state_dict())
    pruner(pruned, pruning["layers"], input_means(model, sinks, batches))
    pruned.eval()
    x = rng.random(shape, dtype=np.float32)
    xin = os.path.join(work, f"{name}_x.npy")
    np.save(xin, x)
    outdir = os.path.join(work, f"{name}_out")
    p = st.run([st.tool(args.bin, "sluice-run"), mlir, "--reference", f"image={xin}",
                f"--save-outputs={outdir}"], timeout=600)
    if p.rc != 0:
        return problems + [f"{name}: sluice-run --reference failed:\n{p.out}"]
    got = np.load(os.path.join(outdir, "logits.npy"))
    with torch.no_grad():
        want = pruned(torch.from_numpy(x)).numpy()
        full = model(torch.from_numpy(x)).numpy()
    err = float(np.max(np.abs(got - want)))
    ok = np.allclose(got, want, rtol=1e-4, atol=1e-5)
    params_torch = sum(p.numel() for p in pruned.parameters()) + sum(
        b.numel() for n, b in pruned.named_buffers() if "running" in n)
    params_full = sum(p.numel() for p in model.parameters()) + sum(
        b.numel() for n, b in model.named_buffers() if "running" in n)
    kinds = ", ".join(f"{e['node']} {e['kind']} {e['kept']}/{e['original']}"
                      for e in pruning["layers"])
    print(f"{name}: {kinds}")
    print(f"  pruned program vs pruned torch: max |diff| {err:.2e} "
          f"({'agree' if ok else 'DIFFER'}); vs unpruned torch: "
          f"{float(np.max(np.abs(got - full))):.2e}")
    print(f"  params: report {pruning['params_before']} -> {pruning['params_after']}, "
          f"torch {params_full} -> {params_torch}; flops {pruning['flops_before']} -> "
          f"{pruning['flops_after']}")
    if not ok:
        problems.append(f"{name}: the pruned program differs from the pruned torch model "
                        f"(max |diff| {err:.3g})")
    if not pruning["params_after"] < pruning["params_before"]:
        problems.append(f"{name}: params_after is not below params_before")
    if not pruning["flops_after"] < pruning["flops_before"]:
        problems.append(f"{name}: flops_after is not below flops_before")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--keep", help="keep the work folder here")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="sluice-prune-")
    os.makedirs(work, exist_ok=True)
    problems = []
    for case in CASES:
        problems += check_case(args, work, *case)
    return st.finish(problems, "OK", f"{len(problems)} problem(s)")


if __name__ == "__main__":
    sys.exit(main())
