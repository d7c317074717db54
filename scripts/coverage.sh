#!/usr/bin/env bash
# Regenerates docs/onnx-coverage.md from a conformance run of the current
# build, and raises the committed baseline to the new pass count (ctest fails
# below it, so coverage only goes up).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
"$root/.venv/bin/python" "$root/test/conformance/run_conformance.py" --bin "$build/bin" \
  --results "$build/conformance-results.json" --write-doc "$root/docs/onnx-coverage.md" \
  --baseline "$root/test/conformance/baseline.txt" --update-baseline
