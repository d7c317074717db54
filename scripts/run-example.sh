#!/usr/bin/env bash
# The README's main job: set up, build, then compile the bundled example model
# (examples/mlp.onnx) through the phases this build has and run it, printing
# its outputs, their check against torch's, and the latency.
#
# The cpu code-generation target is not built yet (see docs/architecture.md):
# the example runs on the reference evaluator.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
model="$root/examples/mlp.onnx"
echo "[example] compiling $model (import + simplify)"
"$build/bin/sluice-compile" "$model" --shape=features=4x32 --stop-after=simplify \
  --emit=mlir --elide-weights -o "$build/example.mlir" --report="$build/example-report.json"
echo "[example] IR after simplify: $build/example.mlir"
cat "$build/example-report.json"
echo "[example] running on the reference evaluator"
"$build/bin/sluice-run" "$model" --reference "$root/examples/mlp_input.npy" \
  --expect "$root/examples/mlp_expected.npy" --rtol=1e-4 --atol=1e-6 \
  --iters=20 --warmup=2 --save-outputs="$build/example-outputs"
"$root/.venv/bin/python" -c "import numpy as np, sys; np.set_printoptions(precision=4, suppress=True); print('probabilities:'); print(np.load(sys.argv[1]))" \
  "$build/example-outputs/probabilities.npy"
