#!/usr/bin/env bash
# Compiles one ONNX backend test case for the cpu target and runs it through
# the bundle ABI (scripts/dev/run_bundle.py). Usage: try_case.sh test_name [BUILD_DIR]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${2:-$root/build}"
py="${SLUICE_PYTHON:-/work/main/.venv/bin/python}"
case_dir=""
for suite in node pytorch-converted pytorch-operator simple; do
  [ -d "/usr/share/libonnx-testdata/data/$suite/$1" ] && case_dir="/usr/share/libonnx-testdata/data/$suite/$1"
done
[ -n "$case_dir" ] || { echo "no case $1"; exit 2; }
shapes=$("$py" - "$case_dir" <<'PY'
import sys, glob, onnx
m = onnx.load(sys.argv[1] + "/model.onnx")
init = {x.name for x in m.graph.initializer}
ins = [i.name for i in m.graph.input if i.name not in init]
files = sorted(glob.glob(sys.argv[1] + "/test_data_set_0/input_*.pb"), key=lambda p: int(p.rsplit("_", 1)[1][:-3]))
for n, p in zip(ins, files):
    t = onnx.TensorProto(); t.ParseFromString(open(p, "rb").read())
    print(f"--shape={n}=" + ("x".join(map(str, t.dims)) or "scalar"))
PY
)
out=$(mktemp -d)
"$build/bin/sluice-compile" "$case_dir/model.onnx" -o "$out/b" --quiet $shapes || exit 2
"$py" "$root/scripts/dev/run_bundle.py" "$out/b" $(ls "$case_dir"/test_data_set_0/input_*.pb 2>/dev/null | sort -V) \
  --expect $(ls "$case_dir"/test_data_set_0/output_*.pb | sort -V)
rc=$?
[ -n "${KEEP:-}" ] && echo "bundle: $out/b" || rm -rf "$out"
exit $rc
