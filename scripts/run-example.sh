#!/usr/bin/env bash
# The README's main job: set up, build, then compile the bundled example model
# (examples/mlp.onnx) for the cpu target and run the bundle, printing its
# outputs, their check against torch's, and the latency.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
model="$root/examples/mlp.onnx"
bundle="$build/example/mlp.sluice"
echo "[example] compiling $model for the cpu target"
"$build/bin/sluice-compile" "$model" --shape=features=4x32 -o "$bundle" \
  --report="$build/example/report.json"
cat "$build/example/report.json"
echo "[example] running $bundle"
"$build/bin/sluice-run" "$bundle" "$root/examples/mlp_input.npy" \
  --expect "$root/examples/mlp_expected.npy" --rtol=1e-4 --atol=1e-6 \
  --iters=100 --warmup=5 --save-outputs="$build/example/outputs"
"$root/.venv/bin/python" -c "import numpy as np, sys; np.set_printoptions(precision=4, suppress=True); print('probabilities:'); print(np.load(sys.argv[1]))" \
  "$build/example/outputs/probabilities.npy"
