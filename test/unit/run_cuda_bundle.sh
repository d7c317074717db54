#!/bin/sh
# The fake cuda bundle (fixtures/FakeCudaModel.cu) through sluice-run: with a
# CUDA graph (on by default: the first run eager, then captured and
# replayed), with --no-cuda-graph, traced, a device-side failure and a bad
# --device. Exits 77 (skipped) when this machine has no CUDA device.
#
# usage: run_cuda_bundle.sh SLUICE_RUN PYTHON MAKE_BUNDLE_INPUTS BUNDLE WORKDIR
set -u
run=$1 python=$2 make_inputs=$3 bundle=$4 work=$5

rm -rf "$work" && mkdir -p "$work" && "$python" "$make_inputs" "$work" || exit 2

fail() {
  echo "FAILED: $1"
  exit 1
}

out=$("$run" "$bundle" "$work/x.npy" --expect "$work/y.npy" --iters=5 --warmup=1 2>&1)
rc=$?
echo "$out"
case "$out" in
*"no CUDA device"*) echo "no CUDA device: skipped"; exit 77 ;;
esac
[ $rc -eq 0 ] || fail "the graph run (exit $rc)"
echo "$out" | grep -q "output 'y' f32\[2x4\]: max abs err 0, max rel err 0: ok" ||
  fail "outputs of the graph run"
echo "$out" | grep -q "latency over 5 runs (cuda target on .*sm_.*): .*cuda graph: replayed" ||
  fail "the timed runs did not replay a CUDA graph"

# Other contexts replay their graphs and must agree with the first run.
out=$("$run" "$bundle" "$work/x.npy" --expect "$work/y.npy" --contexts=2 --iters=4 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "two contexts (exit $rc)"
echo "$out" | grep -q "2 contexts x 4 runs at once: all outputs agree" || fail "two contexts"

out=$("$run" "$bundle" "$work/x.npy" --expect "$work/y.npy" --iters=3 --no-cuda-graph 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the eager run (exit $rc)"
echo "$out" | grep -q "cuda graph: off (turned off)" || fail "--no-cuda-graph"

out=$("$run" "$bundle" x="$work/x.npy" --expect y="$work/y.npy" --iters=2 --trace="$work/trace.json" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the traced run (exit $rc)"
"$python" - "$work/trace.json" <<'PY' || fail "the trace"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["name"] for e in events]
assert names == ["run", "k0_scale", "k1_bias"], names
cats = [e["cat"] for e in events]
assert cats == ["run", "kernel", "host"], cats
run = events[0]
for e in events[1:]:
    assert e["dur"] >= 0 and e["ts"] >= 0, e
    assert e["ts"] + e["dur"] <= run["dur"] + 1, (e, run)
assert events[1]["ts"] <= events[2]["ts"], events
print("trace ok:", [(e["name"], e["ts"], e["dur"]) for e in events])
PY

# --profile and --json: the timed runs still replay the graph and carry the
# host-to-device / compute / device-to-host split; the profile's traced runs
# name both steps with their nodes.
out=$("$run" "$bundle" "$work/x.npy" --iters=4 --warmup=1 --profile --json="$work/bench.json" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "the profiled run (exit $rc)"
echo "$out" | grep -q "cuda graph: replayed" || fail "--profile: the timed runs did not replay a CUDA graph"
echo "$out" | grep -q "^per run (CUDA events): host to device .* ms, compute .* ms, device to host .* ms$" ||
  fail "--iters on cuda: the run split"
echo "$out" | grep -q "^profile over 4 traced runs (cuda target, CUDA events, eager): 2 steps ran" ||
  fail "--profile: the heading"
echo "$out" | grep -Eq "^ +[12]  k0_scale +kernel +sluice.mul .* 1  /Mul$" || fail "--profile: k0_scale"
echo "$out" | grep -Eq "^ +[12]  k1_bias +host +sluice.add .* 1  /Add$" || fail "--profile: k1_bias"
"$python" "$(dirname "$make_inputs")/check_bench_json.py" "$work/bench.json" 4 cuda --profile ||
  fail "--json: the file"

# A failure found on the device surfaces at the synchronize, naming the kernel.
"$python" -c "import numpy as np, sys; x = np.zeros((2, 4), np.float32); x[0, 0] = -12345; np.save(sys.argv[1], x)" "$work/magic.npy" || exit 2
out=$("$run" "$bundle" "$work/magic.npy" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || fail "the magic input should fail the run (exit $rc)"
echo "$out" | grep -q "run failed: k0_scale (node '/Mul'): refused the magic input -12345 (device-side check)" ||
  fail "the device-side failure's message"

out=$("$run" "$bundle" "$work/x.npy" --device=4096 2>&1)
rc=$?
echo "$out"
[ $rc -eq 2 ] || fail "--device=4096 should fail (exit $rc)"
echo "$out" | grep -q "there is no CUDA device 4096" || fail "--device=4096's message"
echo "all cuda bundle checks passed"
