#!/usr/bin/env python3
"""Writes float GEMM modules that --quantize=w8a16|w4a16 turns into Form W
(docs/quantization.md: dequantize_linear of an int8 / int4 constant weight as
the GEMM group's prologue), for test/codegen/cuda-wonly.test and the
emulation ctests of test/unit/cuda_int8_emulate.py (seeded: every run
writes the same module).

  wonly_modules.py decode|repeated > MODULE.mlir

decode: the weight-only GEMM's cases on the cuda target: M = 1 (GPT-2
        decoding) with a bias and GELU, M = 3 with odd N and K > 128 (two
        int4 blocks, the second partial), M = 16, a batched A [2, 3, K]
        stacked into M = 6, and M = 40 (the large-M path: dequantize +
        cuBLASLt) with a residual add.
repeated: two identical layers (a decoder's blocks: M = 4, K = N = 128,
        bias and GELU), so that their steps are alike but for their names
        and share one device namespace (the second step runs the first's
        kernels and epilogue functor).
"""
import sys

import numpy as np

from mlir_main import print_main

rng = np.random.default_rng(21)
lines = []
counter = [0]


def ty(shape, et="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


def fresh():
    counter[0] += 1
    return f"%v{counter[0]}"


def weight(shape):
    v = fresh()
    arr = rng.normal(0.0, 0.2, size=shape).astype("<f4")
    lines.append(f'    {v} = sluice.constant dense<"0x{arr.tobytes().hex().upper()}"> : {ty(shape)}')
    return v


def op(text, result_shape, name=None):
    v = fresh()
    loc = f' loc("{name}")' if name else ""
    lines.append(f"    {v} = {text} -> {ty(result_shape)}{loc}")
    return v


def linear(x, xshape, k, n, name, bias=True, bias_values=None):
    out = list(xshape[:-1]) + [n]
    w = weight([k, n])
    y = op(f"sluice.matmul {x}, {w} : ({ty(xshape)}, {ty([k, n])})", out, name)
    if bias:
        b = weight([n]) if bias_values is None else constant(bias_values)
        y = op(f"sluice.add {y}, {b} : ({ty(out)}, {ty([n])})", out)
    return y, out


def constant(arr):
    v = fresh()
    lines.append(f'    {v} = sluice.constant dense<"0x{arr.astype("<f4").tobytes().hex().upper()}"> '
                 f': {ty(arr.shape)}')
    return v


def emit(args, outs):
    print_main([(n, ty(s)) for n, s in args], [(v, ty(s)) for v, s in outs], lines)


def repeated():
    # The bias is compiled into the kernels (a small constant): the layers
    # share its values and differ in their weights only (weights.bin).
    bias = rng.normal(0.0, 0.2, size=[128]).astype(np.float32)
    h, s = "%x", [4, 128]
    for layer in range(2):
        y, s = linear(h, s, 128, 128, f"block{layer}_fc", bias_values=bias)
        h = op(f"sluice.gelu {y} : ({ty(s)})", s)
    emit([("x", [4, 128])], [(h, s)])


def decode():
    args = [("x1", [1, 256]), ("x3", [3, 200]), ("x16", [16, 64]), ("xb", [2, 3, 96]),
            ("x40", [40, 96]), ("r40", [40, 48])]
    outs = []
    y, s = linear("%x1", [1, 256], 256, 384, "fc_decode")
    outs.append((op(f"sluice.gelu {y} : ({ty(s)})", s), s))
    outs.append(linear("%x3", [3, 200], 200, 75, "fc_odd", bias=False))
    y, s = linear("%x16", [16, 64], 64, 160, "fc_m16")
    outs.append((op(f"sluice.relu {y} : ({ty(s)})", s), s))
    outs.append(linear("%xb", [2, 3, 96], 96, 32, "fc_batched"))
    y, s = linear("%x40", [40, 96], 96, 48, "fc_large")
    outs.append((op(f"sluice.add {y}, %r40 : ({ty(s)}, {ty([40, 48])})", s), s))
    emit(args, outs)


if __name__ == "__main__":
    {"decode": decode, "repeated": repeated}[sys.argv[1]]()
