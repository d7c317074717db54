#!/bin/sh
# The simulated cuda bundle with a data-dependent output: its extent comes
# back through the device-side output dims, and such a bundle runs eagerly.
# usage: run_dynamic.sh SLUICE_RUN PYTHON MAKE_BUNDLE_INPUTS BUNDLE WORKDIR
set -u
run=$1 python=$2 make_inputs=$3 bundle=$4 work=$5
rm -rf "$work" && mkdir -p "$work" && "$python" "$make_inputs" "$work" || exit 2
# x = -3 .. 4: the positive elements are 1, 2, 3, 4.
"$python" -c "import numpy as np, sys; np.save(sys.argv[1], np.arange(1, 5, dtype=np.float32))" \
  "$work/positive.npy" || exit 2
out=$("$run" "$bundle" "$work/x.npy" --expect y="$work/y.npy" positive="$work/positive.npy" --iters=3 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAILED: exit $rc"; exit 1; }
echo "$out" | grep -q "output 'positive' f32\[4\]: max abs err 0, max rel err 0: ok" ||
  { echo "FAILED: the data-dependent output"; exit 1; }
echo "$out" | grep -q "cuda graph: off (an output has a data-dependent shape)" ||
  { echo "FAILED: a data-dependent bundle must run eagerly"; exit 1; }
echo "ok"
