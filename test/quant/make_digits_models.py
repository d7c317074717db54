#!/usr/bin/env python3
"""Builds the real-task accuracy assets of the quantization tests
(docs/quantization.md, "The accuracy task"):
two small classifiers trained on scikit-learn's digits (8x8 grey images of
the digits 0-9, 1797 samples), exported by torch.onnx, their QDQ variants
made by ONNX Runtime's quantize_static, the test split, the calibration sets
and a manifest of the top-1 accuracies the compiled bundles are judged
against (test/quant/check_accuracy.py).

The split is fixed (one permutation from seed 0): 997 training images, 200
calibration images, 600 test images. Every bundle is compiled at one batch
(BATCH = 50, the "batch" of the manifest) because the compiler's calibration
sets must have the compile shapes: the 200 calibration images are four sets
of 50 (calibration/set0 ... set3, each holding image.npy, named after the
model's input) and the 600 test images run as twelve batches of 50.

Models (input `image` [N,1,8,8] float32 in [0,1], output `logits` [N,10]):
  digits_cnn          conv 3x3 (1->16) relu, conv 3x3 (16->32) relu, max pool
                      2x2, linear 512->64 relu, linear 64->10;
  digits_transformer  the 8 rows are 8 tokens of 8 pixels: a linear patch
                      embedding to d=64, learned positions, 2 pre-LN encoder
                      layers (4 heads, attention written as MatMul/Softmax so
                      that Sluice's recognizer turns it into sluice.attention,
                      an erf-GELU MLP of 256), final LayerNorm, mean pool,
                      linear head;
  *_qdq               quant_pre_process, then quantize_static with QDQ format,
                      per-channel symmetric int8 weights, int8 activations
                      (ONNX Runtime's defaults: asymmetric, per tensor, MinMax
                      calibration on the four calibration sets).

Training runs on the CPU in one thread with deterministic algorithms and
fixed seeds, so running the script again on the same torch / onnxruntime
rewrites the same files byte for byte (the manifest holds no timing); other
library versions give close but not identical weights.

Usage: make_digits_models.py [OUT_DIR]   (default: digits/ beside this script)
"""
import json
import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quant_pre_process, quantize_static)
from sklearn.datasets import load_digits
from torch import nn

SEED = 0
TRAIN, CALIBRATION, TEST = 997, 200, 600
BATCH = 50  # the compile batch: calibration set size and test run size
OPSET = 17


class DigitsCnn(nn.Module):
    """Two 3x3 convolutions, a max pool and two linear layers."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, image):
        x = torch.relu(self.conv1(image))
        x = torch.relu(self.conv2(x))
        x = nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.fc1(torch.flatten(x, 1)))
        return self.fc2(x)


class DigitsTransformer(nn.Module):
    """Rows as tokens: patch embedding, learned positions, pre-LN encoder
    layers with separate Q/K/V projections and hand-written attention (the
    form torch.onnx exports as MatMul, Div, Softmax, MatMul, as ViT's in
    test/models/export_models.py), mean pool, classifier."""

    def __init__(self, tokens=8, features=8, hidden=64, heads=4, layers=2, mlp=256,
                 classes=10):
        super().__init__()
        self.tokens, self.features, self.heads = tokens, features, heads
        self.embed = nn.Linear(features, hidden)
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens, hidden))
        self.layers = nn.ModuleList()
        for _ in range(layers):
            self.layers.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(hidden), "q": nn.Linear(hidden, hidden),
                "k": nn.Linear(hidden, hidden), "v": nn.Linear(hidden, hidden),
                "o": nn.Linear(hidden, hidden), "ln2": nn.LayerNorm(hidden),
                "fc1": nn.Linear(hidden, mlp), "fc2": nn.Linear(mlp, hidden)}))
        self.ln = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, image):
        b = image.shape[0]
        x = self.embed(image.reshape(b, self.tokens, self.features)) + self.pos
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
        return self.head(self.ln(x).mean(dim=1))


# name -> (constructor, epochs, learning rate)
MODELS = {
    "digits_cnn": (DigitsCnn, 30, 2e-3),
    "digits_transformer": (DigitsTransformer, 40, 1e-3),
}


def load_split():
    """The digits as [N,1,8,8] float32 in [0,1] and int64 labels, split by one
    fixed permutation into training, calibration and test images."""
    digits = load_digits()
    images = (digits.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    labels = digits.target.astype(np.int64)
    assert len(images) == TRAIN + CALIBRATION + TEST, len(images)
    order = np.random.RandomState(SEED).permutation(len(images))
    images, labels = images[order], labels[order]
    cut1, cut2 = TRAIN, TRAIN + CALIBRATION
    return ((images[:cut1], labels[:cut1]), (images[cut1:cut2], labels[cut1:cut2]),
            (images[cut2:], labels[cut2:]))


def train(name, train_images, train_labels):
    """Trains one model with Adam on shuffled minibatches of 32; the model's
    initial weights and the shuffling come from its own seed, so that each
    model is reproducible alone."""
    make, epochs, lr = MODELS[name]
    torch.manual_seed(SEED)
    model = make()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x, y = torch.from_numpy(train_images), torch.from_numpy(train_labels)
    shuffle = torch.Generator().manual_seed(SEED)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(x), generator=shuffle).split(32):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
    model.eval()
    return model


def top1(logits, labels):
    """(correct count, top-1 in percent) of logits [N,10] against labels."""
    correct = int((np.argmax(logits, axis=1) == labels).sum())
    return correct, round(100.0 * correct / len(labels), 2)


def ort_logits(path, images):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(["logits"], {"image": images})[0]


class CalibrationSets(CalibrationDataReader):
    """Feeds ONNX Runtime's calibrator the same sets the compiler reads."""

    def __init__(self, sets):
        self.sets = iter(sets)

    def get_next(self):
        batch = next(self.sets, None)
        return None if batch is None else {"image": batch}


def quantize_qdq(fp32_path, qdq_path, calibration_sets):
    """ONNX Runtime's static quantization in QDQ format, per-channel weights.
    quant_pre_process (symbolic shape inference, ORT's basic graph
    optimizations) is what the tool's documentation asks for before
    quantize_static."""
    with tempfile.TemporaryDirectory() as tmp:
        pre = os.path.join(tmp, "pre.onnx")
        quant_pre_process(fp32_path, pre)
        quantize_static(pre, qdq_path, CalibrationSets(calibration_sets),
                        quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def op_counts(path):
    counts = {}
    for node in onnx.load(path).graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items()))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "digits")
    # One thread and deterministic kernels: the same weights on every run.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    (train_x, train_y), (cal_x, _), (test_x, test_y) = load_split()

    os.makedirs(out_dir, exist_ok=True)
    cal_dir = os.path.join(out_dir, "calibration")
    shutil.rmtree(cal_dir, ignore_errors=True)
    calibration_sets = [cal_x[i:i + BATCH] for i in range(0, CALIBRATION, BATCH)]
    for i, batch in enumerate(calibration_sets):
        os.makedirs(os.path.join(cal_dir, f"set{i}"))
        np.save(os.path.join(cal_dir, f"set{i}", "image.npy"), batch)
    np.save(os.path.join(out_dir, "test_images.npy"), test_x)
    np.save(os.path.join(out_dir, "test_labels.npy"), test_y)

    manifest = {
        "dataset": "sklearn.datasets.load_digits, pixels / 16, [N,1,8,8] float32",
        "split": {"seed": SEED, "train": TRAIN, "calibration": CALIBRATION, "test": TEST},
        "batch": BATCH,
        "input": "image", "output": "logits",
        "test_images": "test_images.npy", "test_labels": "test_labels.npy",
        "calibration": "calibration",
        "calibration_sets": len(calibration_sets),
        "versions": {"torch": torch.__version__, "onnxruntime": ort.__version__,
                     "onnx": onnx.__version__, "numpy": np.__version__},
        "models": {},
    }
    for name in MODELS:
        start = time.time()
        model = train(name, train_x, train_y)
        path = os.path.join(out_dir, name + ".onnx")
        with torch.no_grad():
            torch.onnx.export(model, (torch.from_numpy(test_x[:2]),), path,
                              input_names=["image"], output_names=["logits"],
                              dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                              opset_version=OPSET, do_constant_folding=True)
            torch_out = model(torch.from_numpy(test_x)).numpy()
        onnx_out = ort_logits(path, test_x)
        diff = float(np.max(np.abs(torch_out - onnx_out)))
        if not np.allclose(onnx_out, torch_out, rtol=1e-4, atol=1e-4):
            sys.exit(f"{name}: onnxruntime disagrees with torch (max abs diff {diff:.2e})")
        qdq_path = os.path.join(out_dir, name + "_qdq.onnx")
        quantize_qdq(path, qdq_path, calibration_sets)
        qdq_out = ort_logits(qdq_path, test_x)

        torch_correct, torch_top1 = top1(torch_out, test_y)
        ort_correct, ort_top1 = top1(onnx_out, test_y)
        qdq_correct, qdq_top1 = top1(qdq_out, test_y)
        manifest["models"][name] = {
            "file": name + ".onnx", "kind": "fp32", "bytes": os.path.getsize(path),
            "top1_torch": torch_top1, "correct_torch": torch_correct,
            "top1_ort": ort_top1, "correct_ort": ort_correct,
            "ops": op_counts(path),
        }
        manifest["models"][name + "_qdq"] = {
            "file": name + "_qdq.onnx", "kind": "qdq", "fp32_model": name,
            "bytes": os.path.getsize(qdq_path),
            "quantize_static": {"quant_format": "QDQ", "per_channel": True,
                                "activation_type": "QInt8", "weight_type": "QInt8",
                                "calibrate_method": "MinMax", "quant_pre_process": True},
            "top1_ort": qdq_top1, "correct_ort": qdq_correct,
            "ops": op_counts(qdq_path),
        }
        print(f"{name}: torch {torch_top1}%, onnxruntime {ort_top1}% (max abs diff "
              f"{diff:.1e} from torch), QDQ onnxruntime {qdq_top1}%; "
              f"{os.path.getsize(path)} B fp32, {os.path.getsize(qdq_path)} B QDQ; "
              f"{time.time() - start:.1f} s")
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
