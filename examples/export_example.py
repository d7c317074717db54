#!/usr/bin/env python3
"""Exports the bundled example: a small MLP classifier (torch.onnx, dynamic
batch), with one input batch to run it on. Re-run to regenerate."""
import os

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
here = os.path.dirname(os.path.abspath(__file__))
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.LayerNorm(64),
                      nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10),
                      nn.Softmax(dim=-1)).eval()
x = torch.randn(4, 32)
torch.onnx.export(model, (x,), os.path.join(here, "mlp.onnx"), input_names=["features"],
                  output_names=["probabilities"],
                  dynamic_axes={"features": {0: "batch"}, "probabilities": {0: "batch"}},
                  opset_version=17)
np.save(os.path.join(here, "mlp_input.npy"), x.numpy())
with torch.no_grad():
    np.save(os.path.join(here, "mlp_expected.npy"), model(x).numpy())
