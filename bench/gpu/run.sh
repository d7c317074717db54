#!/usr/bin/env bash
# Times Sluice's cuda target against PyTorch on the GPU (bench/gpu/bench_gpu.py;
# see bench/gpu/README.md). Runs on a GPU machine from an extracted
# device bundle, or in a checkout with a build and a GPU.
#
# usage: bench/gpu/run.sh [CFG] [bench_gpu.py options]
#   CFG: all (default), quick, bert, gpt2, or comma-separated configuration
#        names (bert-b1-s128, gpt2-b8-s1024, ...)
# The tools come from $SLUICE_BIN, else the bundle's bin/ ($SLUICE_DEVICE_ROOT
# or the folder above bench/), else build/bin; the python from $SLUICE_PYTHON
# (default python3).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cfg=all
if [ $# -gt 0 ] && [[ $1 != -* ]]; then
  cfg=$1
  shift
fi
if [ -n "${SLUICE_BIN:-}" ]; then
  bin=$SLUICE_BIN
elif [ -n "${SLUICE_DEVICE_ROOT:-}" ] && [ -x "$SLUICE_DEVICE_ROOT/bin/sluice-run" ]; then
  bin=$SLUICE_DEVICE_ROOT/bin
elif [ -x "$root/bin/sluice-run" ]; then
  bin=$root/bin
else
  bin=$root/build/bin
fi
export PYTHONUNBUFFERED=1
exec "${SLUICE_PYTHON:-python3}" "$root/bench/gpu/bench_gpu.py" --bin "$bin" --configs "$cfg" \
  --out "${SLUICE_BENCH_OUT:-/tmp/sluice-bench-gpu}" "$@"
