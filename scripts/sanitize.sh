#!/usr/bin/env bash
# Runs Sluice's tests under sanitizers (docs/hardening.md, "Sanitizers").
#
#   scripts/sanitize.sh [address|thread] [--ci|--runtime-only] [--jobs=N]
#
# address (the default): build-asan/ with -DSLUICE_SANITIZE=address,undefined
#   (gcc; every target of the project instrumented, at -O0 -g1; the bundles
#   sluice-compile builds there get the same sanitizers), then the unit tests
#   (ctest -L unit), the tool lit tests (lit-tools) and the corpus replay
#   (ctest -L fuzz).
#   --ci: the same tests in build-asan-ci/, where the compiler's IR libraries
#   (SluiceDialect, SluicePasses, SluiceCodegen: they see only IR that the
#   importer or MLIR's parser accepted and verified) are left uninstrumented
#   and compile as in build/ (Release), so that after scripts/build.sh their
#   objects are ccache hits: what .ci/run runs (a third of the build).
#   --runtime-only builds and runs only what does not link MLIR: the
#   runtime's tests and the replays of the json, manifest, npy, tensor_proto
#   and bundle corpora.
# thread: build-tsan/ with -DSLUICE_SANITIZE=thread: the runtime and its
#   tests (sluice-runtime-tests), with test/unit/fixtures/concurrent.onnxtxt
#   compiled by build/'s sluice-compile (scripts/build.sh first) and its
#   library rebuilt with -fsanitize=thread, so that the concurrent-context
#   tests run generated OpenMP code too; suppressions: test/tsan.supp.
#
# Exit status: 0 when everything ran clean, 1 on a finding or a failed test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode=address runtime_only=0 ci=0 jobs=2
for arg in "$@"; do
  case "$arg" in
    address|thread) mode="$arg" ;;
    --runtime-only) runtime_only=1 ;;
    --ci) ci=1 ;;
    --jobs=*) jobs="${arg#--jobs=}" ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sanitize.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

# Paths relative to the checkout in ccache's keys: build/ and build-asan-ci/
# then share the objects of the targets a sanitizer build leaves alone.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"

configure() { # build-dir sanitizers [cmake options]
  local dir="$1" sanitizers="$2"
  shift 2
  if [ ! -f "$dir/build.ninja" ]; then
    echo "[sanitize] configuring $dir (-DSLUICE_SANITIZE=$sanitizers $*)"
    launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    cmake -G Ninja -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
      -DSLUICE_SANITIZE="$sanitizers" -DSLUICE_CUDA=OFF "${launcher[@]}" "$@" >/dev/null
  fi
}

# A finding stops the program with a report; UBSan prints its stack.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
status=0

if [ "$mode" = address ]; then
  if [ "$ci" = 1 ]; then
    build="${SLUICE_ASAN_BUILD_DIR:-$root/build-asan-ci}"
    configure "$build" address,undefined -DSLUICE_SANITIZE_OPT="-O0 -g1" \
      -DSLUICE_SANITIZE_SKIP="SluiceDialect;SluicePasses;SluiceCodegen"
  else
    build="${SLUICE_ASAN_BUILD_DIR:-$root/build-asan}"
    configure "$build" address,undefined -DSLUICE_SANITIZE_OPT="-O0 -g1"
  fi
  # allocator_may_return_null: the hostile-input tests check that oversized
  # allocations fail cleanly rather than abort. detect_leaks=0: gcc 12's
  # LeakSanitizer crashes in its own tracer ("Tracer caught signal 11") on
  # the thread-local storage of dlopened model libraries; the fuzz runs
  # (clang, scripts/fuzz.sh) check leaks.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1}"
  replays=(json manifest npy tensor_proto bundle)
  if [ "$runtime_only" = 1 ]; then
    ninja -C "$build" -j "$jobs" sluice-runtime-tests $(printf 'sluice-fuzz-replay-%s ' "${replays[@]}")
    (cd "$build" && ctest --output-on-failure -j "$jobs" -R '^Runtime\.') || status=1
    (cd "$build" && ctest --output-on-failure -j "$jobs" \
       -R "^fuzz-replay-($(IFS='|'; echo "${replays[*]}"))\$") || status=1
  else
    ninja -C "$build" -j "$jobs" sluice-unit-tests sluice-runtime-tests sluice-test-depends \
      $(printf 'sluice-fuzz-replay-%s ' "${replays[@]}" onnx_import)
    (cd "$build" && ctest --output-on-failure -j "$jobs" -L 'unit|fuzz') || status=1
    (cd "$build" && ctest --output-on-failure -R '^lit-tools$') || status=1
  fi
else
  build="${SLUICE_TSAN_BUILD_DIR:-$root/build-tsan}"
  compiler="${SLUICE_BUILD_DIR:-$root/build}/bin/sluice-compile"
  [ -x "$compiler" ] || { echo "sanitize.sh: $compiler not found (run scripts/build.sh)" >&2; exit 2; }
  configure "$build" thread -DSLUICE_SANITIZE_OPT="-O1 -g"
  ninja -C "$build" -j "$jobs" sluice-runtime-tests
  # The generated bundle, its library rebuilt with ThreadSanitizer (the
  # source embeds its bundle id, so the manifest still matches it).
  bundle="$build/tsan-concurrent.sluice"
  rm -rf "$bundle"
  "$compiler" "$root/test/unit/fixtures/concurrent.onnxtxt" -o "$bundle" --quiet
  library="$bundle/$(sed -n 's/^ *"library": "\(.*\)",$/\1/p' "$bundle/manifest.json")"
  flags="$(sed -n 's/^ *"compile_flags": "\(.*\)",$/\1/p' "$bundle/manifest.json")"
  # shellcheck disable=SC2086 # the recorded flags are words
  "${CXX:-c++}" $flags -fsanitize=thread -fno-omit-frame-pointer -I"$root/codegen/include" \
    -I"$root/include" "$bundle/model.cpp" -o "$library" -lopenblas
  export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} suppressions=$root/test/tsan.supp"
  # One OpenMP thread per run: libgomp is not built with ThreadSanitizer, so
  # the barriers that order a parallel region's threads are invisible to it
  # and every value a region shares would be reported. What is checked is
  # contexts against each other (the runtime, the per-thread scratch and its
  # registry, the OpenBLAS thread-count lock), not OpenMP's teams.
  SLUICE_TEST_OMP_THREADS=1 SLUICE_TEST_GENERATED_BUNDLE="$bundle" "$build/bin/sluice-runtime-tests" \
    --gtest_filter='Runtime.*Concurrent*:Runtime.ScratchFreedWithTheLastModel:Runtime.DefaultThreadsShareTheCores' \
    || status=1
fi
if [ "$status" = 0 ]; then echo "[sanitize] $mode: clean"; else echo "[sanitize] $mode: FAILED"; fi
exit $status
