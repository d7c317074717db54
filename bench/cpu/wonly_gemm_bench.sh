#!/usr/bin/env bash
# Builds bench/cpu/wonly_gemm_bench.cpp like generated cpu bundles
# (-O2 -march=native -fopenmp) and runs it: the weight-only GEMM
# (sluice_gen/cpu_wonly.h, int8 and int4 weights) against the cpu target's
# f32 GEMM at GPT-2 decoding shapes (M = 1, 4, 16).
#
#   bench/cpu/wonly_gemm_bench.sh [THREADS ...]   (default: threads 1 and 2)
#   SLUICE_BUILD_DIR=build: where the binary goes (bench/wonly_gemm_bench)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
build="${SLUICE_BUILD_DIR:-$root/build}"
mkdir -p "$build/bench"
c++ -std=c++17 -O2 -march=native -fopenmp -I "$root/codegen/include" -I "$root/include" \
  "$here/wonly_gemm_bench.cpp" -lopenblas -o "$build/bench/wonly_gemm_bench"
exec "$build/bench/wonly_gemm_bench" "$@"
