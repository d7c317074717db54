#!/usr/bin/env bash
# Fused attention (one F4 kernel) against the unfused kernels the same graph
# compiles to without attention fusion, as bundles timed by sluice-run:
# BERT-base shapes (B=1, 12 heads, S=128, D=64, [B,1,1,S] mask, q/k/v views
# of a [1,128,2304] QKV buffer, output [1,128,768]). Checks the fused
# bundle's output against the unfused one's, then prints both medians (best
# of three alternating rounds) and the ratio for each thread count.
#
#   bench/cpu/attention_bench.sh [THREADS ...]     (default: 1 and nproc)
#   SLUICE_BUILD_DIR=build ITERS=500
# The header-level micro benchmark (no bundles, min and median of single
# calls) is bench/cpu/attention_bench.cpp.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${SLUICE_BUILD_DIR:-$here/../../build}"
iters="${ITERS:-500}"
threads=("$@")
[ ${#threads[@]} -eq 0 ] && threads=(1 "$(nproc)")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for v in fused unfused; do
  "$build/bin/sluice-compile" "$here/attention/$v.mlir" -o "$work/$v.sluice" --quiet
done
"$build/bin/sluice-run" "$work/unfused.sluice" --random-inputs --save-outputs="$work/ref" >/dev/null
"$build/bin/sluice-run" "$work/fused.sluice" --random-inputs --expect "$work/ref/out.npy" --rtol=1e-4 | tail -1
median() { sed -n 's/.*median \([0-9.e-]*\) ms.*/\1/p'; }
# Three alternating rounds per thread count; the best median of each (the
# machine's load may change between runs).
for t in "${threads[@]}"; do
  u=1e9 f=1e9
  for round in 1 2 3; do
    x=$("$build/bin/sluice-run" "$work/unfused.sluice" --random-inputs --iters="$iters" --warmup=50 --threads="$t" | median)
    y=$("$build/bin/sluice-run" "$work/fused.sluice" --random-inputs --iters="$iters" --warmup=50 --threads="$t" | median)
    u=$(python3 -c "print(min($u, $x))") f=$(python3 -c "print(min($f, $y))")
  done
  python3 -c "import sys; u, f = float(sys.argv[2]), float(sys.argv[3]); print(f'threads {sys.argv[1]:>2}: unfused {u:.3f} ms (14 launches)  fused {f:.3f} ms (1 kernel)  unfused/fused {u / f:.2f}x')" "$t" "$u" "$f"
done
