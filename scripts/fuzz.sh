#!/usr/bin/env bash
# Fuzzes Sluice's readers of untrusted input with libFuzzer (test/fuzz).
#
#   scripts/fuzz.sh [--time=SECONDS] [--jobs=N] [--merge] [TARGET ...]
#
# Builds build-fuzz/ with clang, -DSLUICE_FUZZ=ON (libFuzzer coverage,
# AddressSanitizer, UndefinedBehaviorSanitizer), then runs each target
# (default: all of json manifest npy tensor_proto onnx_import) for SECONDS
# (default 600) from a copy of its committed corpus, with a 10 s per-input
# timeout and a 2 GiB memory limit: a crash, leak, hang or oversized
# allocation stops it with the input saved under build-fuzz/findings/.
# Prints the executions per target. --merge minimizes what was found into
# test/fuzz/corpus/<target>/ (the corpus CI replays).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${SLUICE_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds=600 jobs=1 merge=0 targets=()
for arg in "$@"; do
  case "$arg" in
    --time=*) seconds="${arg#--time=}" ;;
    --jobs=*) jobs="${arg#--jobs=}" ;;
    --merge) merge=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$arg' (see --help)" >&2; exit 2 ;;
    *) targets+=("$arg") ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(json manifest npy tensor_proto onnx_import)
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/setup.sh installs clang)" >&2; exit 2; }

if [ ! -f "$build/build.ninja" ]; then
  echo "[fuzz] configuring $build (clang, SLUICE_FUZZ=ON)"
  CC=clang CXX=clang++ cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSLUICE_FUZZ=ON -DSLUICE_WERROR=OFF -DSLUICE_CUDA=OFF >/dev/null
fi
ninja -C "$build" -j "$jobs" $(printf 'sluice-fuzz-%s ' "${targets[@]}")

mkdir -p "$build/findings"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# The targets write each input to a file: in memory where there is /dev/shm.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; else export TMPDIR="$build/findings"; fi
status=0
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  cp -n "$root/test/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
  log="$build/findings/$t.log"
  echo "[fuzz] $t: ${seconds} s"
  if "$build/bin/sluice-fuzz-$t" "$work" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/findings/$t-" >"$log" 2>&1; then
    runs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "[fuzz] $t: ${runs:-?} executions, no crash, hang or leak"
  else
    status=1
    echo "[fuzz] $t: FAILED; see $log and $build/findings/$t-*"
    tail -30 "$log"
  fi
  if [ "$merge" = 1 ]; then
    "$build/bin/sluice-fuzz-$t" -merge=1 "$root/test/fuzz/corpus/$t" "$work" >/dev/null 2>&1
  fi
done
exit $status
