#!/usr/bin/env python3
"""Data for the sluice-prune lit tests (test/passes/compress/prune-*.mlir).

  prune_data.py DIR NAME=2x3 ...   two calibration sets DIR/set0, DIR/set1 of
                                   seeded uniform [0, 1) float32 inputs
  prune_data.py --ffn-expect X OUT the hand-pruned FFN of prune-ffn.mlir (its
                                   hidden units 1 and 3 kept) on X, as OUT
"""
import os
import sys

import numpy as np


def calibration(folder, specs):
    rng = np.random.default_rng(16)
    for s in range(2):
        sub = os.path.join(folder, "set%d" % s)
        os.makedirs(sub, exist_ok=True)
        for spec in specs:
            name, shape = spec.split("=")
            dims = [int(d) for d in shape.split("x")]
            np.save(os.path.join(sub, name + ".npy"), rng.random(dims, dtype=np.float32))


def ffn_expect(x_path, out_path):
    # prune-ffn.mlir's weights with hidden units 0 and 2 removed by hand,
    # their mean activation over the calibration sets (the folders beside
    # X's) times their W2 rows moved into b2 (FLAP's compensation).
    w1 = np.array([[1, 2, 3, 4]] * 3, dtype=np.float32)
    b1 = np.array([0, 0.5, 0, 0.25], dtype=np.float32)
    w2 = np.array([[0.1, -0.1], [1, -1], [0.2, 0.2], [2, 0.5]], dtype=np.float32)
    b2 = np.array([0.125, -0.5], dtype=np.float64)
    root = os.path.dirname(os.path.dirname(x_path))
    sets = [np.load(os.path.join(root, d, "x.npy")) for d in sorted(os.listdir(root))]
    hidden = np.concatenate([np.maximum(s @ w1 + b1, 0) for s in sets]).astype(np.float64)
    removed = [0, 2]
    b2 = b2 + hidden.mean(axis=0)[removed] @ w2[removed]
    keep = [1, 3]
    x = np.load(x_path)
    y = np.maximum(x @ w1[:, keep] + b1[keep], 0) @ w2[keep] + b2.astype(np.float32)
    np.save(out_path, y.astype(np.float32))


if __name__ == "__main__":
    if sys.argv[1] == "--ffn-expect":
        ffn_expect(sys.argv[2], sys.argv[3])
    else:
        calibration(sys.argv[1], sys.argv[2:])
