#!/usr/bin/env python3
"""Writes the Form I8 test modules of test/codegen/cpu-int8-*.test
(docs/quantization.md): sluice-dialect functions before the fuse phase, with
int8 weights as constants (seeded, so every run writes the same module).

  int8_modules.py matmul|batched|conv|qdq|repeated > MODULE.mlir

matmul:  one quantized activation [64, 96] times weights with N = 80, 72, 48,
         40 (full and partial 64-column panels), each output kind of the
         kernel: f32 + bias (bias in the lambda), relu + quantize u8
         (requant in the kernel), bias + quantize i8 with a scalar scale
         (f32 scratch, quantize in the lambda), raw int32, s8 activations,
         bias + GELU (the BERT FF1 shape, small).
batched: attention-style matmuls with an activation B (per-batch packing,
         a transposed view), a batched A with a shared weight (stacked into
         M), a shared activation B, a small weight packed per run, s8
         activations requantized to i8 in the kernel, a weight two GEMMs
         share (packed once) and one also read raw (packed per run).
conv:    2-D conv_integer with groups, strides, asymmetric pads and
         dilations, u8 and s8 inputs, f32 / requantized / int32 outputs.
repeated: three identical int8 layers, one after the other (a
         transformer's blocks: quantize u8, int8 GEMM with per-column scales
         and bias, ReLU), so that the steps of the first two GEMMs (each
         ending in the next layer's quantization) are alike but for their
         names and share one device namespace (the second runs the first's
         epilogue functor).
qdq:     per-tensor quantize / dequantize as elementwise ops: in a float
         GEMM's epilogue, a QDQ pair around an add (one elementwise
         kernel), around a layer norm (its prologue and epilogue), and a
         dequantize from i32 in double.
"""
import sys

import numpy as np

from mlir_main import print_main

rng = np.random.default_rng(15)
lines = []
names = []


def ty(shape, et):
    return "tensor<" + "".join(f"{d}x" for d in shape) + et + ">"


counter = [0]


def fresh():
    counter[0] += 1
    return f"%v{counter[0]}"


def const(values, et):
    v = fresh()
    arr = np.asarray(values)
    if arr.ndim == 0:
        text = f"dense<{arr.item()!r}>" if et not in ("f32",) else f"dense<{float(arr):.9e}>"
    elif et == "f32":
        text = 'dense<"0x' + arr.astype("<f4").tobytes().hex().upper() + '">'
    elif et == "i8":
        text = 'dense<"0x' + arr.astype(np.int8).tobytes().hex().upper() + '">'
    elif et == "ui8":
        text = 'dense<"0x' + arr.astype(np.uint8).tobytes().hex().upper() + '">'
    else:
        raise ValueError(et)
    lines.append(f"    {v} = sluice.constant {text} : {ty(arr.shape, et)}")
    return v


def op(text, result_type):
    v = fresh()
    lines.append(f"    {v} = {text} -> {result_type}")
    return v


def quantize(x, shape, scale, zero, et):
    s = const(np.float32(scale), "f32")
    z = const(np.array(zero), et)
    return op(f"sluice.quantize_linear {x}, {s}, {z} : ({ty(shape, 'f32')}, tensor<f32>, tensor<{et}>)",
              ty(shape, et))


def matmul_integer(a, ashape, aet, b, bshape, zero_a, out_shape):
    za = const(np.array(zero_a), aet)
    zb = const(np.array(0), "i8")
    return op(f"sluice.matmul_integer {a}, {b}, {za}, {zb} : ({ty(ashape, aet)}, {ty(bshape, 'i8')}, "
              f"tensor<{aet}>, tensor<i8>)", ty(out_shape, "i32"))


def weight(shape):
    return const(rng.integers(-127, 128, size=shape), "i8")


def cols(n, lo, hi):
    return rng.uniform(lo, hi, size=n).astype(np.float32)


def cast_line(acc, shape):
    v = fresh()
    lines.append(f"    {v} = sluice.cast {acc} : {ty(shape, 'i32')} -> {ty(shape, 'f32')}")
    return v


def dq(acc, shape, scale, scale_shape, bias=None):
    f = cast_line(acc, shape)
    s = const(np.asarray(scale, dtype=np.float32).reshape(scale_shape), "f32")
    y = op(f"sluice.mul {f}, {s} : ({ty(shape, 'f32')}, {ty(scale_shape, 'f32')})", ty(shape, "f32"))
    if bias is not None:
        b = const(np.asarray(bias, dtype=np.float32).reshape(scale_shape), "f32")
        y = op(f"sluice.add {y}, {b} : ({ty(shape, 'f32')}, {ty(scale_shape, 'f32')})", ty(shape, "f32"))
    return y


def unary(name, x, shape, et="f32"):
    return op(f"sluice.{name} {x} : ({ty(shape, et)})", ty(shape, et))


def emit(inputs, outputs):
    print_main(inputs, [(v, t) for _, t, v in outputs], lines)


def matmul_module():
    m, k = 64, 96
    xq = quantize("%x", [m, k], 1 / 127, 128, "ui8")
    xs = quantize("%x", [m, k], 1 / 100, 0, "i8")
    outs = []
    # f32 with a per-column scale and bias: the bias is added in the lambda.
    n = 80
    acc = matmul_integer(xq, [m, k], "ui8", weight([k, n]), [k, n], 128, [m, n])
    outs.append(("o0", ty([m, n], "f32"), dq(acc, [m, n], cols(n, 1e-4, 3e-4), [n], cols(n, -1, 1))))
    # relu + quantize u8: requantized in the kernel.
    n = 72
    acc = matmul_integer(xq, [m, k], "ui8", weight([k, n]), [k, n], 128, [m, n])
    y = unary("relu", dq(acc, [m, n], cols(n, 1e-4, 3e-4), [n]), [m, n])
    outs.append(("o1", ty([m, n], "ui8"), quantize(y, [m, n], 0.02, 3, "ui8")))
    # bias + quantize i8, scalar scale: f32 scratch, quantize in the lambda.
    n = 48
    acc = matmul_integer(xq, [m, k], "ui8", weight([k, n]), [k, n], 128, [m, n])
    y = dq(acc, [m, n], np.float32(2e-4), [], None)
    b = const(cols(n, -1, 1), "f32")
    y = op(f"sluice.add {y}, {b} : ({ty([m, n], 'f32')}, {ty([n], 'f32')})", ty([m, n], "f32"))
    outs.append(("o2", ty([m, n], "i8"), quantize(y, [m, n], 0.03, -2, "i8")))
    # raw int32 sums.
    n = 40
    acc = matmul_integer(xq, [m, k], "ui8", weight([k, n]), [k, n], 128, [m, n])
    outs.append(("o3", ty([m, n], "i32"), acc))
    # s8 activations, f32 without bias: the kernel writes the output.
    n = 80
    acc = matmul_integer(xs, [m, k], "i8", weight([k, n]), [k, n], 0, [m, n])
    outs.append(("o4", ty([m, n], "f32"), dq(acc, [m, n], cols(n, 1e-4, 3e-4), [n])))
    # bias + GELU.
    n = 96
    acc = matmul_integer(xq, [m, k], "ui8", weight([k, n]), [k, n], 128, [m, n])
    y = dq(acc, [m, n], cols(n, 1e-4, 3e-4), [n], cols(n, -1, 1))
    outs.append(("o5", ty([m, n], "f32"), op(f"sluice.gelu {y} : ({ty([m, n], 'f32')})", ty([m, n], "f32"))))
    emit([("x", ty([m, k], "f32"))], outs)


def batched_module():
    outs = []
    qq = quantize("%q", [2, 3, 8, 16], 1 / 127, 128, "ui8")
    kq = quantize("%k", [2, 3, 12, 16], 1 / 127, 0, "i8")
    perm = op(f"sluice.transpose {kq} {{perm = array<i64: 0, 1, 3, 2>}} : ({ty([2, 3, 12, 16], 'i8')})",
              ty([2, 3, 16, 12], "i8"))
    acc = matmul_integer(qq, [2, 3, 8, 16], "ui8", perm, [2, 3, 16, 12], 128, [2, 3, 8, 12])
    outs.append(("o0", ty([2, 3, 8, 12], "f32"), dq(acc, [2, 3, 8, 12], np.float32(4e-4), [])))
    # Batched A, shared weight: stacked into M.
    rq = quantize("%r", [4, 8, 32], 1 / 127, 128, "ui8")
    acc = matmul_integer(rq, [4, 8, 32], "ui8", weight([32, 64]), [32, 64], 128, [4, 8, 64])
    outs.append(("o1", ty([4, 8, 64], "f32"), dq(acc, [4, 8, 64], cols(64, 1e-4, 3e-4), [64], cols(64, -1, 1))))
    # Batched A, shared activation B, int32 out.
    bq = quantize("%b", [16, 20], 1 / 127, 0, "i8")
    acc = matmul_integer(qq, [2, 3, 8, 16], "ui8", bq, [16, 20], 128, [2, 3, 8, 20])
    outs.append(("o2", ty([2, 3, 8, 20], "i32"), acc))
    # A small weight (inlined in the kernel body): packed per run; requant.
    acc = matmul_integer(rq, [4, 8, 32], "ui8", weight([32, 6]), [32, 6], 128, [4, 8, 6])
    y = dq(acc, [4, 8, 6], cols(6, 1e-4, 3e-4), [6])
    outs.append(("o3", ty([4, 8, 6], "ui8"), quantize(y, [4, 8, 6], 0.01, 128, "ui8")))
    # s8 A, requantized to i8 in the kernel (no ReLU: the full range).
    rs = quantize("%r", [4, 8, 32], 1 / 90, 3, "i8")
    acc = matmul_integer(rs, [4, 8, 32], "i8", weight([32, 40]), [32, 40], 3, [4, 8, 40])
    y = dq(acc, [4, 8, 40], cols(40, 1e-4, 3e-4), [40])
    outs.append(("o4", ty([4, 8, 40], "i8"), quantize(y, [4, 8, 40], 0.004, -5, "i8")))
    # One weight, two int8 GEMMs that pack it alike: stored packed once.
    shared = weight([32, 24])
    outs.append(("o5", ty([4, 8, 24], "i32"),
                 matmul_integer(rq, [4, 8, 32], "ui8", shared, [32, 24], 128, [4, 8, 24])))
    outs.append(("o6", ty([4, 8, 24], "i32"),
                 matmul_integer(rs, [4, 8, 32], "i8", shared, [32, 24], 3, [4, 8, 24])))
    # A weight also read raw (by a generic matmul_integer: its zero point is
    # not 0): stored raw, packed per run by the int8 GEMM.
    raw = weight([32, 16])
    outs.append(("o7", ty([4, 8, 16], "i32"),
                 matmul_integer(rq, [4, 8, 32], "ui8", raw, [32, 16], 128, [4, 8, 16])))
    za, zb = const(np.array(128), "ui8"), const(np.array(1), "i8")
    outs.append(("o8", ty([4, 8, 16], "i32"),
                 op(f"sluice.matmul_integer {rq}, {raw}, {za}, {zb} : ({ty([4, 8, 32], 'ui8')}, "
                    f"{ty([32, 16], 'i8')}, tensor<ui8>, tensor<i8>)", ty([4, 8, 16], "i32"))))
    emit([("q", ty([2, 3, 8, 16], "f32")), ("k", ty([2, 3, 12, 16], "f32")),
          ("r", ty([4, 8, 32], "f32")), ("b", ty([16, 20], "f32"))], outs)


def conv(x, xshape, xet, w, wshape, zero, out_shape, group, strides, pads, dilations):
    za = const(np.array(zero), xet)
    zb = const(np.array(0), "i8")
    attrs = (f"{{dilations = array<i64: {', '.join(map(str, dilations))}>, group = {group} : i64, "
             f"pads = array<i64: {', '.join(map(str, pads))}>, strides = array<i64: {', '.join(map(str, strides))}>}}")
    return op(f"sluice.conv_integer {x}, {w}, {za}, {zb} {attrs} : ({ty(xshape, xet)}, {ty(wshape, 'i8')}, "
              f"tensor<{xet}>, tensor<i8>)", ty(out_shape, "i32"))


def conv_module():
    outs = []
    xshape = [2, 8, 9, 9]
    xq = quantize("%x", xshape, 1 / 127, 120, "ui8")
    xs = quantize("%x", xshape, 1 / 100, 0, "i8")
    # groups 2, stride 2, pads 1: [2, 12, 5, 5]; cast, mul, add per channel.
    acc = conv(xq, xshape, "ui8", weight([12, 4, 3, 3]), [12, 4, 3, 3], 120, [2, 12, 5, 5], 2,
               [2, 2], [1, 1, 1, 1], [1, 1])
    outs.append(("o0", ty([2, 12, 5, 5], "f32"),
                 dq(acc, [2, 12, 5, 5], cols(12, 1e-4, 3e-4), [12, 1, 1], cols(12, -1, 1))))
    # asymmetric pads, dilation along W: relu + quantize u8 in the kernel.
    # H: 9 + 1 + 0 - 3 + 1 = 8; W: 9 + 0 + 1 - 5 + 1 = 6.
    acc = conv(xq, xshape, "ui8", weight([5, 8, 3, 3]), [5, 8, 3, 3], 120, [2, 5, 8, 6], 1,
               [1, 1], [1, 0, 0, 1], [1, 2])
    y = unary("relu", dq(acc, [2, 5, 8, 6], cols(5, 1e-4, 3e-4), [5, 1, 1]), [2, 5, 8, 6])
    outs.append(("o1", ty([2, 5, 8, 6], "ui8"), quantize(y, [2, 5, 8, 6], 0.02, 5, "ui8")))
    # s8 input, 1x1 weight small enough to be inlined (packed per run), int32.
    acc = conv(xs, xshape, "i8", weight([4, 8, 1, 1]), [4, 8, 1, 1], 0, [2, 4, 9, 9], 1,
               [1, 1], [0, 0, 0, 0], [1, 1])
    outs.append(("o2", ty([2, 4, 9, 9], "i32"), acc))
    emit([("x", ty(xshape, "f32"))], outs)


def dequantize(x, shape, et, scale, zero, out="f32"):
    s = const(np.float32(scale), "f32")
    z = const(np.array(zero), et)
    return op(f"sluice.dequantize_linear {x}, {s}, {z} : ({ty(shape, et)}, tensor<f32>, tensor<{et}>)",
              ty(shape, out))


def qdq_module():
    outs = []
    m, k, n = 32, 48, 40
    w = const(rng.uniform(-0.2, 0.2, size=(k, n)).astype(np.float32), "f32")
    y = op(f"sluice.matmul %x, {w} : ({ty([m, k], 'f32')}, {ty([k, n], 'f32')})", ty([m, n], "f32"))
    b = const(cols(n, -1, 1), "f32")
    y = op(f"sluice.add {y}, {b} : ({ty([m, n], 'f32')}, {ty([n], 'f32')})", ty([m, n], "f32"))
    outs.append(("o0", ty([m, n], "ui8"), quantize(y, [m, n], 0.01, 128, "ui8")))
    # QDQ pair around an add with a relu: one elementwise kernel.
    xa = quantize("%x", [m, k], 1 / 127, 128, "ui8")
    xb = quantize("%y", [m, k], 1 / 100, -3, "i8")
    fa = dequantize(xa, [m, k], "ui8", 1 / 127, 128)
    fb = dequantize(xb, [m, k], "i8", 1 / 100, -3)
    s = op(f"sluice.add {fa}, {fb} : ({ty([m, k], 'f32')}, {ty([m, k], 'f32')})", ty([m, k], "f32"))
    s = unary("relu", s, [m, k])
    outs.append(("o1", ty([m, k], "ui8"), quantize(s, [m, k], 0.015, 10, "ui8")))
    # dequantize -> layer norm -> quantize i8 (a row group).
    g = const(cols(k, 0.5, 1.5), "f32")
    v = fresh()
    lines.append(f"    {v}, {v}_m, {v}_i = sluice.layer_norm {fb}, {g} {{epsilon = 1.0e-5 : f32}} : "
                 f"({ty([m, k], 'f32')}, {ty([k], 'f32')}) -> ({ty([m, k], 'f32')}, {ty([m, 1], 'f32')}, "
                 f"{ty([m, 1], 'f32')})")
    outs.append(("o2", ty([m, k], "i8"), quantize(v, [m, k], 0.02, 0, "i8")))
    # i32 -> f32 dequantize (double arithmetic), of a matmul_integer with a
    # u8 weight (the generic integer matmul).
    wu = const(rng.integers(0, 256, size=(k, 8)), "ui8")
    za = const(np.array(128), "ui8")
    zb = const(np.array(3), "ui8")
    acc = op(f"sluice.matmul_integer {xa}, {wu}, {za}, {zb} : ({ty([m, k], 'ui8')}, {ty([k, 8], 'ui8')}, "
             f"tensor<ui8>, tensor<ui8>)", ty([m, 8], "i32"))
    outs.append(("o3", ty([m, 8], "f32"), dequantize(acc, [m, 8], "i32", 3.3e-5, 17)))
    emit([("x", ty([m, k], "f32")), ("y", ty([m, k], "f32"))], outs)


def repeated_module():
    # The small per-column constants are compiled into the kernels, so the
    # layers share them (equal values) and differ in their GEMM weights
    # only, which live in weights.bin; three layers because the first
    # layer's input quantization and the last one's float output make those
    # two groups differ from the middle ones.
    m, k = 32, 64
    scale, bias = cols(k, 1e-4, 3e-4), cols(k, -1, 1)
    h = "%x"
    for _ in range(3):
        q = quantize(h, [m, k], 1 / 127, 128, "ui8")
        acc = matmul_integer(q, [m, k], "ui8", weight([k, k]), [k, k], 128, [m, k])
        h = unary("relu", dq(acc, [m, k], scale, [k], bias), [m, k])
    emit([("x", ty([m, k], "f32"))], [("o0", ty([m, k], "f32"), h)])


{"repeated": repeated_module, "qdq": qdq_module, "matmul": matmul_module, "batched": batched_module, "conv": conv_module}[sys.argv[1]]()
