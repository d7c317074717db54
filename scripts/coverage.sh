#!/usr/bin/env bash
# Regenerates docs/onnx-coverage.md from a conformance run of the current
# build on the reference evaluator and the cpu target, and raises the
# committed baselines to the new pass counts (ctest fails below them, so
# coverage only goes up).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
results="$build/conformance-all-results.json"
"$root/.venv/bin/python" "$root/test/conformance/run_conformance.py" --bin "$build/bin" \
  --targets reference,cpu --results "$results" --write-doc "$root/docs/onnx-coverage.md"
"$root/.venv/bin/python" - "$results" "$root/test/conformance" <<'PY'
import json, os, sys
results = json.load(open(sys.argv[1]))
for target, name in (("reference", "baseline.txt"), ("cpu", "baseline-cpu.txt")):
    path = os.path.join(sys.argv[2], name)
    passed = sum(r[target]["status"] == "passed" for r in results)
    old = int(open(path).read().split()[0]) if os.path.exists(path) else 0
    if passed >= old:
        open(path, "w").write(f"{passed}\n")
    print(f"[coverage] {target}: {passed} passed (baseline {max(passed, old)})")
PY
