"""Writes x.npy and the expected outputs of newer-opsets.onnxtxt, computed
with Python's math module (independent of the evaluator)."""
import math
import os
import sys

import numpy as np

out = sys.argv[1]
x = np.array([-3.0, -0.5, 0.25, 2.0], dtype=np.float32)
a = np.array([12, -7, 5, 255], dtype=np.int32)
b = np.array([10, 3, -1, 15], dtype=np.int32)
gelu = [0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()]
gelu_tanh = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
             for v in x.tolist()]
mish = [v * math.tanh(math.log1p(math.exp(v))) for v in x.tolist()]
np.save(os.path.join(out, "x.npy"), x)
np.save(os.path.join(out, "a.npy"), a)
np.save(os.path.join(out, "b.npy"), b)
np.save(os.path.join(out, "g.npy"), np.array(gelu, dtype=np.float32))
np.save(os.path.join(out, "t.npy"), np.array(gelu_tanh, dtype=np.float32))
np.save(os.path.join(out, "m.npy"), np.array(mish, dtype=np.float32))
np.save(os.path.join(out, "w.npy"), ~(a & b))
