"""Writes x.npy and the expected outputs of dynamic-output.test's model
(NonZero and a Unique over the same input), computed with NumPy."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
x = np.array([[0, 2, 0, 5], [2, 0, 0, 7], [0, 0, 5, 0]], dtype=np.float32)
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "nz.npy"), np.stack(np.nonzero(x)).astype(np.int64))
values, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                           return_counts=True)
np.save(os.path.join(out, "uy.npy"), values)
np.save(os.path.join(out, "ui.npy"), first.astype(np.int64))
np.save(os.path.join(out, "uinv.npy"), inverse.reshape(-1).astype(np.int64))
np.save(os.path.join(out, "uc.npy"), counts.astype(np.int64))
