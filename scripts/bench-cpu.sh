#!/usr/bin/env bash
# Times Sluice's cpu target against ONNX Runtime on a BERT-base-sized encoder
# and a ResNet-18-style CNN (bench/cpu/bench_cpu.py; see bench/cpu/README.md).
# Uses the build in $SLUICE_BUILD_DIR (default build/) and the .venv python;
# exported models and bundles are cached in <build>/bench. Arguments go to the
# script, e.g.:
#   scripts/bench-cpu.sh --threads 1,8 --iters 50 --write-doc docs/benchmarks.md
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
python="${SLUICE_PYTHON:-$root/.venv/bin/python}"
if [[ ! -x "$python" ]]; then
  echo "bench-cpu.sh: error: $python not found (run scripts/setup.sh)" >&2
  exit 2
fi
exec "$python" "$root/bench/cpu/bench_cpu.py" --bin "$build/bin" --out "$build/bench" "$@"
