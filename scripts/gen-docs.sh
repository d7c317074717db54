#!/usr/bin/env bash
# Regenerates the reference docs that come from the sources: the op
# reference of each dialect family and the pass reference (from TableGen), and
# the ONNX coverage table (from a conformance run of the current build).
# ctest's docs-up-to-date test fails when the TableGen-derived pages are stale.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null
mkdir -p "$root/docs/dialect"
for md in "$build"/dialects/sluice/Sluice*Ops.md; do
  cp "$md" "$root/docs/dialect/$(basename "$md")"
done
cp "$build/passes/Passes.md" "$root/docs/passes.md"
echo "[docs] op and pass references updated under docs/"
if [ "${1:-}" != "--no-coverage" ]; then
  "$root/scripts/coverage.sh"
fi
