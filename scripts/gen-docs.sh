#!/usr/bin/env bash
# Regenerates the reference docs that come from the sources: the op
# reference of each dialect family and the pass reference (from TableGen), and
# the ONNX coverage table (from a conformance run of the current build).
# --zoo instead writes only docs/zoo.md: it makes the zoo's models (test/zoo,
# reusing build/test/zoo), checks every one of them, known failures included,
# two at a time, and writes the table from their results.
# ctest's docs-up-to-date test fails when the TableGen-derived pages are stale.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_BUILD_DIR:-$root/build}"
"$root/scripts/build.sh" >/dev/null
if [ "${1:-}" = "--zoo" ]; then
  python="$root/.venv/bin/python"
  zoo="$build/test/zoo"
  results="$build/test/zoo-results-doc"
  rm -rf "$results"
  "$python" "$root/test/zoo/make_zoo.py" "$zoo" --reuse
  "$python" "$root/test/zoo/make_zoo.py" --list |
    xargs -P2 -I{} sh -c '"$1" "$2/test/zoo/check_zoo.py" --bin "$3/bin" --results "$4" "$5" {} \
      >"$4.{}.log" 2>&1 || echo "[docs] zoo: {} fails (see $4.{}.log)"' \
      sh "$python" "$root" "$build" "$results" "$zoo"
  "$python" "$root/test/zoo/check_zoo.py" --write-doc "$root/docs/zoo.md" --results "$results" "$zoo"
  exit 0
fi
mkdir -p "$root/docs/dialect"
for md in "$build"/dialects/sluice/Sluice*Ops.md; do
  cp "$md" "$root/docs/dialect/$(basename "$md")"
done
cp "$build/passes/Passes.md" "$root/docs/passes.md"
echo "[docs] op and pass references updated under docs/"
if [ "${1:-}" != "--no-coverage" ]; then
  "$root/scripts/coverage.sh"
fi
