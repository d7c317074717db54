#!/usr/bin/env bash
# Builds bench/cpu/int8_gemm_bench.cpp like generated cpu bundles
# (-O2 -march=native -fopenmp), with oneDNN's int8 matmul as a third column
# when libdnnl-dev is installed, and runs it: int8 GEMM (sluice_gen/cpu_int8.h)
# against the cpu target's f32 GEMM at BERT-base shapes.
#
#   bench/cpu/int8_gemm_bench.sh [--batch=B ...] [THREADS ...]
#   (default: batch 1 and 4 (M = 128 and 512), threads 1 and 2)
#   SLUICE_BUILD_DIR=build: where the binary goes (bench/int8_gemm_bench)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
build="${SLUICE_BUILD_DIR:-$root/build}"
mkdir -p "$build/bench"
dnnl=(-ldnnl)
if ! echo '#include <oneapi/dnnl/dnnl.hpp>' | c++ -std=c++17 -x c++ -fsyntax-only - 2>/dev/null; then
  echo "[int8_gemm_bench] oneDNN headers not found (Debian libdnnl-dev): no oneDNN column"
  dnnl=(-DSLUICE_BENCH_NO_DNNL)
fi
c++ -std=c++17 -O2 -march=native -fopenmp -I "$root/codegen/include" -I "$root/include" \
  "$here/int8_gemm_bench.cpp" -lopenblas "${dnnl[@]}" -o "$build/bench/int8_gemm_bench"
exec "$build/bench/int8_gemm_bench" "$@"
