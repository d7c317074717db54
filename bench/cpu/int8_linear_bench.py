#!/usr/bin/env python3
"""A BERT-base FF1 linear as bundles: Form I8 (docs/quantization.md) against f32, in one
run on one machine.

  y = gelu(x @ W + b),  x [M, 768], W [768, 3072], M = 128 * batch

f32:  one GEMM group (sluice_gemm_batched_ep, the bias and GELU in its
      epilogue).
int8: the Form I8 the quantization passes write (docs/quantization.md):
      quantize_linear(x) -> u8 (one elementwise kernel), then
      matmul_integer with the s8 weight (packed at compile time) ->
      cast -> mul by sx * sw[n] -> add b -> gelu: one sluice_int8_gemm_ep
      launch, the scale in the kernel's f32 output, bias + GELU in its
      epilogue lambda.
Both bundles are compiled from sluice-dialect modules written here (seeded
weights; the int8 weight is the f32 one quantized per column, symmetric),
timed with `sluice-run --iters` alternately (A/B/A/B, median of medians),
and compared: the int8 bundle's relative L2 error against the f32 one is
printed with the speed ratio.

Usage: int8_linear_bench.py --bin BUILD/bin [--batch 1,4] [--threads T]
                            [--iters N] [--rounds R] [--keep DIR]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

K, N = 768, 3072


def hexdense(arr, dtype):
    return 'dense<"0x' + np.ascontiguousarray(arr, dtype=dtype).tobytes().hex().upper() + '">'


def modules(m, rng):
    w = rng.normal(0, 0.03, size=(K, N)).astype(np.float32)
    b = rng.normal(0, 0.1, size=N).astype(np.float32)
    sw = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127
    wq = np.clip(np.rint(w / sw), -127, 127).astype(np.int8)
    sx = np.float32(1.0 / 127)  # inputs are uniform in [-1, 1)
    scale = (sx * sw).astype(np.float32)
    x_t, y_t = f"tensor<{m}x{K}xf32>", f"tensor<{m}x{N}xf32>"
    head = (f'module {{\n  func.func @main(%x: {x_t}) -> {y_t} attributes '
            f'{{sluice.input_names = ["x"], sluice.output_names = ["y"]}} {{\n')
    f32 = head + f"""    %w = sluice.constant {hexdense(w, '<f4')} : tensor<{K}x{N}xf32>
    %b = sluice.constant {hexdense(b, '<f4')} : tensor<{N}xf32>
    %0 = sluice.matmul %x, %w : ({x_t}, tensor<{K}x{N}xf32>) -> {y_t}
    %1 = sluice.add %0, %b : ({y_t}, tensor<{N}xf32>) -> {y_t}
    %2 = sluice.gelu %1 : ({y_t}) -> {y_t}
    return %2 : {y_t}
  }}
}}
"""
    i8 = head + f"""    %sx = sluice.constant dense<{float(sx):.9e}> : tensor<f32>
    %zx = sluice.constant dense<128> : tensor<ui8>
    %zw = sluice.constant dense<0> : tensor<i8>
    %w = sluice.constant {hexdense(wq, np.int8)} : tensor<{K}x{N}xi8>
    %s = sluice.constant {hexdense(scale, '<f4')} : tensor<{N}xf32>
    %b = sluice.constant {hexdense(b, '<f4')} : tensor<{N}xf32>
    %xq = sluice.quantize_linear %x, %sx, %zx : ({x_t}, tensor<f32>, tensor<ui8>) -> tensor<{m}x{K}xui8>
    %acc = sluice.matmul_integer %xq, %w, %zx, %zw : (tensor<{m}x{K}xui8>, tensor<{K}x{N}xi8>, tensor<ui8>, tensor<i8>) -> tensor<{m}x{N}xi32>
    %f = sluice.cast %acc : tensor<{m}x{N}xi32> -> {y_t}
    %y = sluice.mul %f, %s : ({y_t}, tensor<{N}xf32>) -> {y_t}
    %z = sluice.add %y, %b : ({y_t}, tensor<{N}xf32>) -> {y_t}
    %g = sluice.gelu %z : ({y_t}) -> {y_t}
    return %g : {y_t}
  }}
}}
"""
    return f32, i8


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def median_ms(out):
    m = re.search(r"median ([0-9.]+) ?(ms|us|s)", out)
    if not m:
        sys.exit("no median in sluice-run's output:\n" + out)
    v = float(m.group(1))
    return v * {"ms": 1.0, "us": 1e-3, "s": 1e3}[m.group(2)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True)
    ap.add_argument("--batch", default="1,4")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="int8-linear-")
    os.makedirs(work, exist_ok=True)
    compile_, run_ = os.path.join(args.bin, "sluice-compile"), os.path.join(args.bin, "sluice-run")
    rng = np.random.default_rng(15)
    print(f"BERT-base FF1 linear, gelu(x @ W[768x3072] + b), {args.threads} thread(s)")
    print(f"{'M':>6} {'f32 ms':>9} {'int8 ms':>9} {'speedup':>8} {'int8 GOP/s':>11} {'rel L2':>9} "
          f"{'weights f32/int8 (MB)':>22}")
    for batch in [int(b) for b in args.batch.split(",")]:
        m = 128 * batch
        f32, i8 = modules(m, rng)
        x = rng.uniform(-1, 1, size=(m, K)).astype(np.float32)
        np.save(os.path.join(work, f"x{m}.npy"), x)
        bundles = {}
        for name, text in (("f32", f32), ("int8", i8)):
            src = os.path.join(work, f"{name}{m}.mlir")
            with open(src, "w") as f:
                f.write(text)
            bundles[name] = os.path.join(work, f"{name}{m}.sluice")
            run([compile_, src, "-o", bundles[name], "--quiet"])
        outs = {}
        for name, bundle in bundles.items():
            d = os.path.join(work, f"out-{name}{m}")
            run([run_, bundle, f"x={work}/x{m}.npy", f"--save-outputs={d}", "--threads=1"])
            outs[name] = np.load(os.path.join(d, "y.npy")).astype(np.float64)
        err = np.linalg.norm(outs["int8"] - outs["f32"]) / np.linalg.norm(outs["f32"])
        times = {"f32": [], "int8": []}
        for _ in range(args.rounds):
            for name, bundle in bundles.items():
                out = run([run_, bundle, f"x={work}/x{m}.npy", f"--iters={args.iters}", "--warmup=3",
                           f"--threads={args.threads}"])
                times[name].append(median_ms(out))
        t = {k: float(np.median(v)) for k, v in times.items()}
        size = {k: os.path.getsize(os.path.join(b, "weights.bin")) / 1e6 for k, b in bundles.items()}
        print(f"{m:>6} {t['f32']:>9.3f} {t['int8']:>9.3f} {t['f32'] / t['int8']:>7.2f}x "
              f"{2 * m * K * N / t['int8'] / 1e6:>11.0f} {err:>9.2e} "
              f"{size['f32']:>10.2f} / {size['int8']:.2f}")


if __name__ == "__main__":
    main()
