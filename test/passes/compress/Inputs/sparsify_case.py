#!/usr/bin/env python3
"""The module, calibration data and checks of test/passes/compress/sparsify.mlir
(sluice-sparsify, 2:4 by Wanda's importance |W| x ||X_k||; docs/pruning.md).

  sparsify_case.py write DIR    DIR/model.mlir, DIR/cal/set{0,1}/x.npy,
                                DIR/eye/x.npy (seeded: every run the same)
  sparsify_case.py check DIR OUT sparse|dense sparse|dense
                                checks OUT/{y1,y2,y4}.npy, the outputs of the
                                sparsified model on the identity, with W1 and
                                W3 expected 2:4 (sparse) or as they were

The model: x [64, 64] -> y1 = x W1 (K 64, N 16: a candidate), y2 = x W2
(N 8 < 16: too small), y4 = (x W3) W4 (W3: K 64, N 32, a candidate; W4:
K 32 < 64, too small). With x the identity every output is its weights, so
the check reads the pruned weights back through the evaluator.

W1's magnitudes favour k % 4 in {0, 1} (twice as large) while the
calibration activations are ten times louder on k % 4 in {2, 3}: Wanda keeps
{2, 3} of every group, magnitude pruning would keep {0, 1}. The check also
recomputes the whole 2:4 choice in numpy from the calibration files and
compares bit for bit (W3's is random, no structure).
"""
import os
import sys

import numpy as np

K = 64


def weights():
    rng = np.random.default_rng(16)
    k = np.arange(K)
    w1 = rng.uniform(0.5, 1.0, size=(K, 16)) * np.where(k % 4 < 2, 2.0, 1.0)[:, None]
    w1 *= rng.choice([-1.0, 1.0], size=w1.shape)
    w2 = rng.uniform(-1, 1, size=(K, 8))
    w3 = rng.uniform(-1, 1, size=(K, 32))
    w4 = rng.uniform(-1, 1, size=(32, 16))
    return [w.astype(np.float32) for w in (w1, w2, w3, w4)]


def calibration():
    rng = np.random.default_rng(17)
    k = np.arange(K)
    loud = np.where(k % 4 >= 2, 10.0, 1.0) * rng.uniform(0.5, 1.0, size=K)
    return [(rng.normal(size=(K, K)) * loud[None, :]).astype(np.float32) for _ in range(2)]


def hexconst(w):
    return 'dense<"0x' + w.astype("<f4").tobytes().hex().upper() + '">'


def write(d):
    w1, w2, w3, w4 = weights()
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"
    lines = [
        "module {",
        '  func.func @main(%x: tensor<64x64xf32>) -> (tensor<64x16xf32>, tensor<64x8xf32>, '
        'tensor<64x16xf32>) attributes {sluice.input_names = ["x"], '
        'sluice.output_names = ["y1", "y2", "y4"]} {',
    ]
    for i, w in enumerate((w1, w2, w3, w4), 1):
        lines.append(f"    %w{i} = sluice.constant {hexconst(w)} : {t(w.shape)}")
    lines += [
        f"    %y1 = sluice.matmul %x, %w1 : (tensor<64x64xf32>, {t(w1.shape)}) -> tensor<64x16xf32>",
        f"    %y2 = sluice.matmul %x, %w2 : (tensor<64x64xf32>, {t(w2.shape)}) -> tensor<64x8xf32>",
        f"    %y3 = sluice.matmul %x, %w3 : (tensor<64x64xf32>, {t(w3.shape)}) -> tensor<64x32xf32>",
        f"    %y4 = sluice.matmul %y3, %w4 : (tensor<64x32xf32>, {t(w4.shape)}) -> tensor<64x16xf32>",
        "    return %y1, %y2, %y4 : tensor<64x16xf32>, tensor<64x8xf32>, tensor<64x16xf32>",
        "  }",
        "}",
    ]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.mlir"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for s, x in enumerate(calibration()):
        os.makedirs(os.path.join(d, "cal", f"set{s}"), exist_ok=True)
        np.save(os.path.join(d, "cal", f"set{s}", "x.npy"), x)
    os.makedirs(os.path.join(d, "eye"), exist_ok=True)
    np.save(os.path.join(d, "eye", "x.npy"), np.eye(K, dtype=np.float32))


def wanda24(w, x_sets):
    """The reference 2:4 choice: per column, per group of four k, the two of
    largest |w| * ||X_k|| stay (ties: larger |w|, then lower k)."""
    norm = np.sqrt(sum((x.astype(np.float64) ** 2).sum(axis=tuple(range(x.ndim - 1)))
                       for x in x_sets))
    out = w.copy()
    for g in range(0, w.shape[0], 4):
        for j in range(w.shape[1]):
            mag = np.abs(w[g:g + 4, j].astype(np.float64))
            score = mag * norm[g:g + 4]
            order = sorted(range(4), key=lambda r: (-score[r], -mag[r], r))
            for r in order[2:]:
                out[g + r, j] = 0
    return out


def groups_ok(w):
    nz = (w != 0).reshape(w.shape[0] // 4, 4, w.shape[1]).sum(axis=1)
    return int(nz.max()) <= 2


def check(d, out, sparse1, sparse3):
    w1, w2, w3, w4 = weights()
    cal = calibration()
    y1, y2, y4 = (np.load(os.path.join(out, f"{n}.npy")) for n in ("y1", "y2", "y4"))
    ok = True

    def report(name, good, what):
        nonlocal ok
        ok &= bool(good)
        print(f"{name}: {what}: {'ok' if good else 'FAILED'}")

    if sparse1:
        report("y1", groups_ok(y1), "every group of 4 along K has <= 2 nonzeros")
        kept = np.argwhere(y1 != 0)[:, 0] % 4
        report("y1", set(kept.tolist()) == {2, 3} and (y1 != 0).sum() == y1.size // 2,
               "kept k % 4 in {2, 3} (loud features), not the larger {0, 1}")
        report("y1", np.array_equal(y1, wanda24(w1, cal)), "equals numpy's Wanda 2:4")
    else:
        report("y1", np.array_equal(y1, w1), "dense, as in the model")
    if sparse3:
        report("y4", np.allclose(y4, wanda24(w3, cal) @ w4, rtol=1e-5, atol=1e-5),
               "equals numpy's Wanda 2:4 of W3 times the dense W4")
        report("y4", not np.allclose(y4, w3 @ w4, rtol=1e-3, atol=1e-3), "differs from dense")
    else:
        report("y4", np.allclose(y4, w3 @ w4, rtol=1e-5, atol=1e-5), "dense, as in the model")
    report("y2", np.array_equal(y2, w2), "too small, dense")
    print("all ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4] == "sparse", sys.argv[5] == "sparse"))
