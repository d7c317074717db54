#!/usr/bin/env python3
"""Compiles the bundled example model (examples/mlp.onnx) with the Python
package, runs it from NumPy and torch, checks it against ONNX Runtime,
reloads the bundle and runs it on two threads (docs/python.md).

    .venv/bin/python examples/python/compile_and_run.py [OUT.sluice]

Needs the set-up and build of the README (the package is on the .venv's
path after scripts/build.sh).
"""
import os
import sys
import tempfile
import threading
import time

import numpy as np
import onnxruntime
import torch

import sluice

here = os.path.dirname(os.path.abspath(__file__))
model_path = os.path.normpath(os.path.join(here, "..", "mlp.onnx"))
x = np.load(os.path.join(here, "..", "mlp_input.npy"))  # 4x32 float32
output = sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "mlp.sluice")

# Compile: the batch dim is dynamic in the ONNX file, bundles are static.
start = time.perf_counter()
model = sluice.compile(model_path, output, shapes={"features": x.shape})
print(f"compiled {model_path} -> {model.path} in {time.perf_counter() - start:.1f} s")
print(model)

# Run from NumPy and from a torch tensor; compare with ONNX Runtime.
session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
(expected,) = session.run(None, {"features": x})
probabilities = model.run({"features": x})["probabilities"]
from_torch = model.run({"features": torch.from_numpy(x)})["probabilities"]
for got in (probabilities, from_torch):
    np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-6)
print("matches ONNX Runtime; argmax per row:", probabilities.argmax(axis=1).tolist())

# Reload the bundle, as another process would.
reloaded = sluice.Model(output)
np.testing.assert_allclose(reloaded.run({"features": x})["probabilities"], expected,
                           rtol=1e-3, atol=1e-6)

# Two threads, each with its own context (runs release the GIL).
def worker(context, runs=200):
    for _ in range(runs):
        context.run({"features": x})

contexts = [reloaded.context(threads=1) for _ in range(2)]
threads = [threading.Thread(target=worker, args=(c,)) for c in contexts]
start = time.perf_counter()
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.perf_counter() - start
print(f"2 threads x 200 runs: {400 / elapsed:.0f} runs/s; last run "
      f"{contexts[0].last_run_ms:.3f} ms on {contexts[0].device}")
