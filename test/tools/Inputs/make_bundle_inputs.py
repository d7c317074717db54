"""Inputs and expected outputs for the fake bundle of test/unit/fixtures
(y = x * 2 + w, x and y float32[2x4], w = 0.5, 1.0, ... 4.0)."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = np.arange(8, dtype=np.float32).reshape(2, 4) - 3
w = (np.arange(1, 9, dtype=np.float32) * 0.5).reshape(2, 4)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "y.npy"), x * 2 + w)
np.save(os.path.join(out, "x_i64.npy"), x.astype(np.int64))
np.save(os.path.join(out, "x_3x4.npy"), np.zeros((3, 4), np.float32))
