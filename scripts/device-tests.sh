#!/usr/bin/env bash
# Runs Sluice's GPU checks on a GPU machine without LLVM from a device
# bundle (scripts/device-bundle.sh; docs/device.md says what each stage
# checks).
#
# usage: scripts/device-tests.sh [options] STAGE...
#
# Stages, run in the order given:
#   env               nvidia-smi, nvcc, python/torch versions, ldd of the tools
#   runtime           the gpu-labelled runtime tests (a computing fake bundle
#                     through sluice-run and the runtime API)
#   kernels           the other gpu-labelled unit tests (test/gpu binaries:
#                     cuBLASLt/cuDNN, row ops, attention, and gpu-quant, the
#                     int8 / weight-only / fp8 GEMMs with their timings)
#   models            test/models/check_model.py --target cuda for the four
#                     models at fp32, fp16 and bf16
#   conformance[:K/N] shard K of N (1-based) of the ONNX backend cases on cuda
#                     (needs a bundle made with --testdata)
#   bench[:CFG]       bench/gpu/run.sh CFG (default: all configurations)
#   kernels-bench[:CASES]
#                     bench/gpu/kernels_bench.py --cases CASES (default all;
#                     groups attention, gemm, row): Sluice's fused attention,
#                     BERT-b32 GEMMs, layer_norm and softmax one at a time
#                     against torch SDPA's backends, torch.matmul/addmm and a
#                     device copy (the kernel targets of bench/gpu/README.md)
#   parallel          test/parallel/check_parallel.py --target cuda: the five
#                     transformer models at --tp=2 and --tp=2 --sp as two
#                     ranks sharing the GPU (host-staged MPI transport; mpirun
#                     is the bundle's Open MPI, mpi/)
#   moe               test/moe/check_ep.py --target cuda: the MoE models
#                     (moe_top2, moe_hard) at --ep=2 as two ranks sharing the
#                     GPU, and check_model.py --target cuda on each
#   quant             test/quant/check_accuracy.py --target cuda: the digits
#                     classifiers' top-1 as int8 (QDQ and calibrated), fp8,
#                     w8a16 and w4a16 bundles on the GPU, with the ctest
#                     bounds, plus GPT-2 w8a16 by relative L2
#   zoo               test/models/check_model.py --target cuda --precision
#                     fp16 on the zoo models the bundle carries (--zoo)
#   all               env runtime kernels models
#
# Options:
#   --bundle FILE     the bundle tarball (default: device-bundle/sluice-device.tar.xz
#                     beside this repository), extracted into
#                     $SLUICE_DEVICE_ROOT (default /tmp/sluice-device) unless
#                     the extraction there came from the same tarball
#   --logs DIR        where logs go (default: $OUT if set, else ./device-logs)
#   --dry-run         print what would run, run nothing (works without a GPU)
#
# Environment: SLUICE_DEVICE_BUDGET_S, seconds for all stages together
# (default 540: nine minutes); a stage that would start
# with less than a minute left is skipped and reported. Each stage's command
# is stopped at the budget's end. SLUICE_DEVICE_JOBS: model checks at once
# (default 4).
#
# The logs folder receives at most 8 files (few, so that copying the results
# back from the GPU machine stays simple): summary.txt, nvidia-smi.txt, logs.tar.gz (every stage's log) and the
# stages' JSON results (conformance-K-of-N.json, bench-results.json,
# kernels-bench-results.json).
#
# Exit status: 0 every stage passed, 1 a stage failed, 77 no GPU here (not
# with --dry-run), 2 bad usage or no bundle.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
bundle="$repo/device-bundle/sluice-device.tar.xz"
logs="${OUT:-$PWD/device-logs}"
dry=0
stages=()

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "device-tests: error: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    --bundle) bundle=$2; shift 2 ;;
    --bundle=*) bundle=${1#*=}; shift ;;
    --logs) logs=$2; shift 2 ;;
    --logs=*) logs=${1#*=}; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option '$1' (see --help)" ;;
    all) stages+=(env runtime kernels models); shift ;;
    env|runtime|kernels|models|parallel|moe|quant|zoo|conformance|conformance:*|bench|bench:*|kernels-bench|kernels-bench:*) stages+=("$1"); shift ;;
    *) die "unknown stage '$1' (env runtime kernels models parallel moe quant zoo conformance[:K/N] bench[:CFG] kernels-bench[:CASES] all)" ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || die "no stage given (see --help)"
for s in "${stages[@]}"; do
  case $s in
    conformance:*)
      [[ ${s#conformance:} =~ ^([0-9]+)/([0-9]+)$ ]] &&
        (( BASH_REMATCH[1] >= 1 && BASH_REMATCH[1] <= BASH_REMATCH[2] )) ||
        die "bad shard '$s' (expected conformance:K/N with 1 <= K <= N)" ;;
  esac
done

budget=${SLUICE_DEVICE_BUDGET_S:-540}
[[ $budget =~ ^[0-9]+$ ]] || die "SLUICE_DEVICE_BUDGET_S must be a number of seconds, not '$budget'"
start=$(date +%s)
root="${SLUICE_DEVICE_ROOT:-/tmp/sluice-device}"
work="${TMPDIR:-/tmp}/sluice-device-work.$$" # logs before packing, bench models

# The bundle root: an extracted bundle, or this repository when its
# scripts run from inside one (the tarball holds scripts/ too).
inside=0
if [ -x "$here/../bin/sluice-compile" ] && [ -f "$here/../MANIFEST.txt" ]; then
  root=$(cd "$here/.." && pwd)
  inside=1
fi

gpu_present() { nvidia-smi -L 2>/dev/null | grep -c GPU >/dev/null; }

if [ $dry -eq 1 ]; then
  echo "device-tests (dry run): bundle $bundle -> $root, logs in $logs, budget ${budget}s"
  gpu_present && echo "a GPU is present" || echo "no GPU here (a real run exits 77)"
else
  if ! gpu_present; then
    echo "device-tests: no GPU here (nvidia-smi -L lists none): skipped"
    exit 77
  fi
  mkdir -p "$logs" "$work" || die "cannot create $logs"
  logs=$(cd "$logs" && pwd) work=$(cd "$work" && pwd)
  # Extract when the root holds no bundle or another one than $bundle (a
  # machine may keep an earlier run's extraction; the bundle may have been
  # rebuilt since): the tarball's checksum is kept beside it.
  if [ $inside -eq 0 ] && [ -f "$bundle" ]; then
    sum=$(cksum <"$bundle")
    if [ ! -x "$root/bin/sluice-compile" ] || [ "$(cat "$root/.bundle-sum" 2>/dev/null)" != "$sum" ]; then
      # Only ever remove an earlier extraction, never another folder.
      if [ -e "$root" ] && [ -n "$(ls -A "$root" 2>/dev/null)" ] && [ ! -f "$root/MANIFEST.txt" ]; then
        die "$root is not empty and holds no bundle: set SLUICE_DEVICE_ROOT to another folder"
      fi
      rm -rf "$root"
      mkdir -p "$root" && tar -xJf "$bundle" -C "$root" --strip-components=1 ||
        die "cannot extract $bundle into $root"
      echo "$sum" >"$root/.bundle-sum"
    fi
  fi
  [ -x "$root/bin/sluice-compile" ] || die "no bundle at $bundle (scripts/device-bundle.sh makes it)"
  export SLUICE_DEVICE_ROOT=$root
  # shellcheck source=device-env.sh
  source "$root/scripts/device-env.sh"
fi
arch=${SLUICE_GPU_ARCH:-sm_90}
py=${SLUICE_PYTHON:-python3}
jobs=$(nproc 2>/dev/null || echo 4)

declare -a results=()
failed=0

left() { echo $(( budget - ($(date +%s) - start) )); }

# run_step NAME LOG CMD...: runs CMD under the budget, logging to LOG.
run_step() {
  local name=$1 log=$2
  shift 2
  if [ $dry -eq 1 ]; then
    printf '  [%s] %s\n' "$name" "$*"
    return 0
  fi
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 60 ]; then
    results+=("$name: SKIPPED (budget: ${remaining}s left)")
    echo "[$name] skipped: ${remaining}s of the budget left"
    return 0
  fi
  echo "[$name] $* (up to ${remaining}s)" | tee -a "$log"
  if [ "$parallel" -gt 1 ]; then
    # One of several at once (run_parallel_end collects them, in order).
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n; done
    pending+=("$name|$log")
    (timed_run "$remaining" "$log" "$@" >"$log.status") &
    return 0
  fi
  record "$name" "$log" "$(timed_run "$remaining" "$log" "$@")"
}

# timed_run SECONDS LOG CMD...: prints "EXIT SECONDS_TAKEN".
timed_run() {
  local limit=$1 log=$2 t0 rc
  shift 2
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  echo "$rc $(( $(date +%s) - t0 ))"
}

# record NAME LOG "EXIT SECONDS": the step's line in the summary.
record() {
  local name=$1 log=$2 rc dt
  read -r rc dt <<<"$3"
  case $rc in
    0) results+=("$name: passed (${dt}s)") ;;
    77) results+=("$name: skipped by the test (${dt}s)") ;;
    124|137) results+=("$name: TIMED OUT at the budget (${dt}s)"); failed=1 ;;
    *) results+=("$name: FAILED exit $rc (${dt}s), log $(basename "$log")"); failed=1 ;;
  esac
  echo "[$name] exit $rc after ${dt}s" | tee -a "$log"
  tail -n 3 "$log"
}

parallel=1
pending=()
run_parallel_begin() { [ $dry -eq 1 ] || parallel=$1; pending=(); }
run_parallel_end() {
  wait
  parallel=1
  local p
  for p in ${pending[@]+"${pending[@]}"}; do
    record "${p%%|*}" "${p#*|}" "$(cat "${p#*|}.status" 2>/dev/null || echo "2 0")"
  done
  pending=()
}

stage_env() {
  local log="$work/env.log"
  if [ $dry -eq 1 ]; then
    echo "  [env] nvidia-smi > nvidia-smi.txt; nvidia-smi -q; nvcc --version; $py torch/onnx versions; ldd bin/*"
    return
  fi
  {
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host: $(uname -a)"
    echo "bundle: $root"; head -n 20 "$root/MANIFEST.txt"
    echo "--- nvidia-smi -L"; nvidia-smi -L
    echo "--- nvcc --version"; nvcc --version
    echo "--- c++ --version"; c++ --version | head -n 1
    echo "--- python"
    "$py" -c 'import sys, torch; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); print("device", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))'
    "$py" -c 'import onnx, onnxruntime, numpy; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__, "numpy", numpy.__version__)'
    "$py" -c 'import transformers; print("transformers", transformers.__version__)'
    echo "--- SLUICE_*"; env | grep -E '^(SLUICE_|CUDA_HOME|LD_LIBRARY_PATH)' | sort
    echo "--- ldd"
    for f in "$root"/bin/* "$root"/lib/*.so*; do echo "$f:"; ldd "$f" | grep -E 'not found|=>' ; done
  } >"$log" 2>&1
  nvidia-smi >"$logs/nvidia-smi.txt" 2>&1
  nvidia-smi -q >>"$work/nvidia-smi-q.log" 2>&1
  if grep -q "not found" "$log"; then
    results+=("env: FAILED (a library is not found: see env.log)"); failed=1
  else
    results+=("env: ok ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1))")
  fi
  grep -E '^(torch|onnx|transformers|device)' "$log"
}

# The gpu-labelled tests recorded in the bundle (test/gpu-tests.tsv: name,
# labels, command with @ROOT@ for the bundle root), filtered by $1.
stage_ctest() {
  local stage=$1 list="$root/test/gpu-tests.tsv"
  if [ $dry -eq 1 ] && [ ! -f "$list" ] && [ -f "$bundle" ]; then
    # Not extracted yet: read the list from the tarball.
    list=$(mktemp)
    tar -xJOf "$bundle" sluice-device/test/gpu-tests.tsv >"$list" 2>/dev/null || rm -f "$list"
  fi
  if [ $dry -eq 1 ] && [ ! -f "$list" ]; then
    echo "  [$stage] the gpu-labelled tests listed in the bundle's test/gpu-tests.tsv"
    return
  fi
  [ -f "$list" ] || { results+=("$stage: FAILED (no $list in the bundle)"); failed=1; return; }
  local name labels cmd n=0
  [ $dry -eq 1 ] || cd "$work" || return
  while IFS=$'\t' read -r -u 3 name labels cmd; do
    case $stage in
      runtime) [[ ";$labels;" == *";runtime;"* ]] || continue ;;
      kernels) [[ ";$labels;" == *";runtime;"* || ";$labels;" == *";conformance;"* ||
                  $name == model-* ]] && continue ;;
    esac
    cmd=${cmd//@ROOT@/$root}
    cmd=${cmd//@PYTHON@/$py}
    n=$((n + 1))
    # shellcheck disable=SC2086
    run_step "$stage/$name" "$work/$stage-$name.log" $cmd
  done 3<"$list"
  [ $n -gt 0 ] || { results+=("$stage: FAILED (no tests of this stage in the bundle)"); failed=1; }
}

stage_models() {
  local m p
  # nvcc builds dominate: several checks at once ($SLUICE_DEVICE_JOBS,
  # default 4; the GPU work of each is small).
  run_parallel_begin "${SLUICE_DEVICE_JOBS:-4}"
  for m in bert_encoder gpt_decoder llama_block small_cnn; do
    for p in fp32 fp16 bf16; do
      run_step "models/$m-$p" "$work/models-$m-$p.log" "$py" "$root/test/models/check_model.py" \
        --bin "$root/bin" --target cuda --gpu-arch="$arch" --precision "$p" "$root/test/models/$m"
    done
  done
  run_parallel_end
}

stage_parallel() {
  local m sp
  # mpirun: the bundle's Open MPI (mpi/, put on PATH by device-env.sh).
  if [ $dry -eq 0 ] && ! command -v mpirun >/dev/null 2>&1; then
    results+=("parallel: FAILED (no mpirun: the bundle has no mpi/ and the machine no Open MPI)")
    failed=1
    return
  fi
  [ $dry -eq 1 ] || echo "[parallel] $(command -v mpirun): $(mpirun --version 2>&1 | head -n 1)"
  # nvcc builds dominate, as in the models stage: several checks at once,
  # each two ranks sharing the GPU.
  run_parallel_begin "${SLUICE_DEVICE_JOBS:-4}"
  for m in bert_encoder gpt_decoder llama_block t5_block vit; do
    for sp in "" --sp; do
      run_step "parallel/$m-tp2${sp:+-sp}" "$work/parallel-$m${sp}.log" "$py" \
        "$root/test/parallel/check_parallel.py" --bin "$root/bin" --target cuda \
        --gpu-arch="$arch" --tp 2 $sp "$root/test/models/$m"
    done
  done
  run_parallel_end
}

# Expert parallelism (docs/parallel.md) on the GPU: the MoE test models at --ep=2
# as two ranks sharing it (test/moe/check_ep.py: the report contract, the
# outputs against one device and ONNX Runtime, the expert-load profile),
# and each one's single-device check.
stage_moe() {
  local m
  if [ $dry -eq 0 ] && ! command -v mpirun >/dev/null 2>&1; then
    results+=("moe: FAILED (no mpirun: the bundle has no mpi/ and the machine no Open MPI)")
    failed=1
    return
  fi
  run_parallel_begin "${SLUICE_DEVICE_JOBS:-4}"
  for m in moe_top2 moe_hard; do
    run_step "moe/$m-ep2" "$work/moe-$m-ep2.log" "$py" "$root/test/moe/check_ep.py" \
      --bin "$root/bin" --target cuda --gpu-arch="$arch" --ep 2 "$root/test/moe/$m"
    run_step "moe/$m" "$work/moe-$m.log" "$py" "$root/test/models/check_model.py" \
      --bin "$root/bin" --target cuda --gpu-arch="$arch" "$root/test/moe/$m"
  done
  run_parallel_end
}

stage_quant() {
  local m mode acc="$root/test/quant/check_accuracy.py" cal="--calibration={data}/calibration --quantization-cache=none"
  run_parallel_begin "${SLUICE_DEVICE_JOBS:-6}"
  for m in digits_cnn_qdq digits_transformer_qdq; do
    run_step "quant/$m" "$work/quant-$m.log" "$py" "$acc" --bin "$root/bin" --target cuda \
      --model "$m" --match-ort 1 --max-drop 1 --require-int8 "--flags=--gpu-arch=$arch"
  done
  for m in digits_cnn digits_transformer; do
    run_step "quant/$m-int8" "$work/quant-$m-int8.log" "$py" "$acc" --bin "$root/bin" --target cuda \
      --model "$m" --max-drop 1 --require-int8 "--flags=--quantize=int8 $cal --gpu-arch=$arch"
    run_step "quant/$m-fp8" "$work/quant-$m-fp8.log" "$py" "$acc" --bin "$root/bin" --target cuda \
      --model "$m" --max-drop 1 --require-layers fp8 --require-layer-compute fp8 --max-weights-ratio 0.4 \
      "--flags=--quantize=fp8 $cal --gpu-arch=$arch"
    for mode in w8a16 w4a16; do
      run_step "quant/$m-$mode" "$work/quant-$m-$mode.log" "$py" "$acc" --bin "$root/bin" \
        --target cuda --model "$m" --max-drop 2 --max-weights-ratio 0.4 \
        "--flags=--quantize=$mode --gpu-arch=$arch"
    done
  done
  run_step "quant/gpt_decoder-w8a16" "$work/quant-gpt_decoder-w8a16.log" "$py" \
    "$root/test/models/check_model.py" --bin "$root/bin" --target cuda --gpu-arch="$arch" \
    --quantize w8a16 --max-rel-l2 2e-2 "$root/test/models/gpt_decoder"
  run_parallel_end
}

stage_zoo() {
  local d n=0
  run_parallel_begin "${SLUICE_DEVICE_JOBS:-6}"
  for d in "$root"/test/zoo/*/; do
    [ -f "$d/manifest.json" ] || continue
    n=$((n + 1))
    run_step "zoo/$(basename "$d")-fp16" "$work/zoo-$(basename "$d").log" "$py" \
      "$root/test/models/check_model.py" --bin "$root/bin" --target cuda --gpu-arch="$arch" \
      --precision fp16 --no-launch-budget "$d"
  done
  run_parallel_end
  [ $n -gt 0 ] || [ $dry -eq 1 ] || { results+=("zoo: FAILED (the bundle has no zoo models: make it with --zoo)"); failed=1; }
}

stage_conformance() {
  local shard=${1:-1/1}
  local k=${shard%/*} n=${shard#*/}
  if [ $dry -eq 0 ] && [ ! -d "$root/testdata" ]; then
    results+=("conformance:$shard: FAILED (the bundle has no testdata/: make it with --testdata)")
    failed=1
    return
  fi
  run_step "conformance:$shard" "$work/conformance-$k-of-$n.log" "$py" \
    "$root/test/conformance/run_conformance.py" --bin "$root/bin" --targets cuda \
    --gpu-arch="$arch" --data "$root/testdata" --jobs "$jobs" --shard "$shard" --verbose \
    --results "$logs/conformance-$k-of-$n.json"
}

stage_bench() {
  local cfg=${1:-all}
  run_step "bench:$cfg" "$work/bench-$cfg.log" bash "$root/bench/gpu/run.sh" "$cfg" \
    --out "$work/bench" --results "$logs/bench-results.json"
}

stage_kernels_bench() {
  local cases=${1:-all}
  run_step "kernels-bench:$cases" "$work/kernels-bench-$cases.log" env PYTHONUNBUFFERED=1 \
    "$py" "$root/bench/gpu/kernels_bench.py" --bin "$root/bin" --cases "$cases" \
    --gpu-arch="$arch" --jobs "$jobs" --out "$work/kernels-bench" \
    --results "$logs/kernels-bench-results.json"
}

for s in "${stages[@]}"; do
  case $s in
    env) stage_env ;;
    runtime) stage_ctest runtime ;;
    kernels) stage_ctest kernels ;;
    models) stage_models ;;
    parallel) stage_parallel ;;
    moe) stage_moe ;;
    quant) stage_quant ;;
    zoo) stage_zoo ;;
    conformance) stage_conformance 1/1 ;;
    conformance:*) stage_conformance "${s#conformance:}" ;;
    bench) stage_bench all ;;
    bench:*) stage_bench "${s#bench:}" ;;
    kernels-bench) stage_kernels_bench all ;;
    kernels-bench:*) stage_kernels_bench "${s#kernels-bench:}" ;;
  esac
done

[ $dry -eq 1 ] && exit 0
{
  echo "device-tests $(date -u '+%Y-%m-%d %H:%M UTC'), $(( $(date +%s) - start ))s of ${budget}s"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1
  printf '%s\n' "${results[@]}"
} >"$logs/summary.txt"
# kernels-bench's raw sluice-run logs, --json reports and traces go too (not
# its models and bundles).
raw=()
[ -d "$work/kernels-bench" ] && raw=(./kernels-bench)
(cd "$work" && tar -czf "$logs/logs.tar.gz" --exclude=./bench --exclude='*.sluice' \
  --exclude='*.onnx' ./*.log "${raw[@]}") 2>/dev/null
rm -rf "$work"
echo "=== summary ($logs/summary.txt)"
cat "$logs/summary.txt"
exit $failed
