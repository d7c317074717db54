#!/bin/sh
# The GPU machine's scripts, checked where there is no GPU (ctest
# device-scripts): scripts/device-tests.sh --dry-run and its argument errors,
# bench/gpu/bench_gpu.py --dry-run, kernels_bench.py --dry-run (models built
# and compiled with nvcc where there is one), --from-results --write-doc on a small
# results file into a copy of docs/benchmarks.md, and the step-bandwidth
# accounting on a cpu bundle's trace of test/models/bert_encoder.
#
# usage: check_device_scripts.sh SOURCE_DIR PYTHON BIN_DIR WORK_DIR
set -u
src=$1 python=$2 bin=$3 work=$4
rm -rf "$work" && mkdir -p "$work" || exit 2
tests="$src/scripts/device-tests.sh"
bench="$src/bench/gpu/bench_gpu.py"
failures=0
fail() {
  echo "FAILED: $1"
  failures=$((failures + 1))
}
expect() { # expect WHAT PATTERN FILE: FILE has a line matching PATTERN
  grep -q -e "$2" "$3" || { fail "$1: no line matching '$2' in:"; cat "$3"; }
}

# device-tests.sh --dry-run: every stage's commands, no GPU needed.
bash "$tests" --dry-run --bundle "$work/none.tar.xz" --logs "$work/logs" \
  env runtime kernels models conformance:3/8 bench:quick kernels-bench:row >"$work/dry.txt" 2>&1
[ $? -eq 0 ] || fail "device-tests.sh --dry-run exit status"
[ "$(grep -c '^  \[models/' "$work/dry.txt")" -eq 12 ] || fail "dry run: 12 model checks (4 models x 3 precisions)"
expect "dry run models" "check_model.py --bin .* --target cuda --gpu-arch=sm_[0-9]* --precision bf16 .*/test/models/llama_block$" "$work/dry.txt"
expect "dry run conformance" "run_conformance.py .* --targets cuda .* --shard 3/8 .*--results $work/logs/conformance-3-of-8.json" "$work/dry.txt"
expect "dry run bench" "bench/gpu/run.sh quick .*--results $work/logs/bench-results.json" "$work/dry.txt"
expect "dry run env" "^  \[env\] nvidia-smi > nvidia-smi.txt" "$work/dry.txt"
expect "dry run kernels-bench" "^  \[kernels-bench:row\] .*bench/gpu/kernels_bench.py .*--cases row .*--results $work/logs/kernels-bench-results.json" "$work/dry.txt"
[ ! -e "$work/logs" ] || fail "a dry run wrote logs"

for bad in "conformance:0/4" "conformance:5/4" "benchmark" "--frobnicate env"; do
  # shellcheck disable=SC2086
  bash "$tests" --dry-run $bad >"$work/bad.txt" 2>&1
  [ $? -eq 2 ] || fail "device-tests.sh $bad: expected exit 2"
done
bash "$tests" --dry-run >"$work/bad.txt" 2>&1
[ $? -eq 2 ] || fail "device-tests.sh without a stage: expected exit 2"
expect "no stage" "no stage given" "$work/bad.txt"

# Without a GPU a real run is skipped (77) before it looks for a bundle.
if ! nvidia-smi -L 2>/dev/null | grep -q GPU; then
  OUT="$work/out" bash "$tests" env >"$work/nogpu.txt" 2>&1
  [ $? -eq 77 ] || fail "device-tests.sh env without a GPU: expected exit 77"
fi

# bench_gpu.py --dry-run: the plan, with or without torch and transformers.
"$python" "$bench" --dry-run --bin "$bin" --configs all --out "$work/bench" \
  >"$work/bench-dry.txt" 2>&1 || fail "bench_gpu.py --dry-run exit status"
for shape in 1x128 32x128 8x1024; do
  expect "bench dry run" "sluice-compile .* --target=cuda --precision=fp16 .*--shape=input_ids=$shape" "$work/bench-dry.txt"
done
[ "$(grep -c ': torch fp16 eager, compile, reduce-overhead' "$work/bench-dry.txt")" -eq 6 ] ||
  fail "bench dry run: 6 configurations timed in torch"
expect "bench dry run" "import torch: " "$work/bench-dry.txt"
"$python" "$bench" --dry-run --configs bert,nonesuch >"$work/bad.txt" 2>&1 &&
  fail "bench_gpu.py with an unknown configuration succeeded"
expect "unknown configuration" "unknown configuration 'nonesuch'" "$work/bad.txt"

# --from-results --write-doc: only the marked section changes.
cat >"$work/results.json" <<'EOF'
{"env": {"date": "2026-11-25", "gpu": "NVIDIA H100 80GB HBM3", "device_kind": "nvidia-h100-x1",
         "torch": "2.11.0+cu130", "cuda": "13.0", "transformers": "5.17.0",
         "sluice_commit": "abc1234", "precision": "fp16", "iters": 100, "warmup": 20,
         "copy_gbs": 3000.0},
 "configs": {
  "bert-b1-s128": {"model": "bert", "batch": 1, "seq": 128, "sluice_ms": 1.5,
    "torch": {"eager": {"ms": 6.0}, "compile": {"ms": 3.0}, "reduce-overhead": {"ms": 2.0}},
    "bandwidth": {"layernorm": {"steps": 25, "bytes": 4915200, "us": 4.0, "gbs": 1228.8,
                                "fraction": 0.4096, "unsized": 0}},
    "rel_l2_vs_fp32": 0.0012, "kernels": 40, "library_calls": 49, "compile_s": 30.2},
  "gpt2-b8-s1024": {"model": "gpt2", "batch": 8, "seq": 1024,
    "torch": {"eager": {"ms": 40.0}}, "error": "sluice-compile (exit 1): unsupported ops"}}}
EOF
cp "$src/docs/benchmarks.md" "$work/benchmarks.md"
"$python" "$bench" --from-results "$work/results.json" --write-doc "$work/benchmarks.md" \
  >"$work/doc.txt" 2>&1 || { fail "bench_gpu.py --from-results --write-doc"; cat "$work/doc.txt"; }
section="$work/section.md"
sed -n '/<!-- bench-gpu:begin -->/,/<!-- bench-gpu:end -->/p' "$work/benchmarks.md" >"$section"
expect "doc section" "on NVIDIA H100 80GB HBM3 (nvidia-h100-x1)" "$section"
expect "doc section" "Device-to-device copy: 3000 GB/s" "$section"
# Sluice / best compile = 1.5 / min(3, 2); Sluice / eager = 1.5 / 6.
expect "doc row" "^| bert-b1-s128 | 1 | 128 | 1.5 | 6 | 3 | 2 | 0.75 | 0.25 | 1229 GB/s (41%, 25 steps) | - | 0.0012 | 40 + 49 | 30.2 |$" "$section"
expect "doc error row" "^| gpt2-b8-s1024 | 8 | 1024 | error | 40 | - | - |" "$section"
expect "doc errors" "^- gpt2-b8-s1024: sluice-compile (exit 1): unsupported ops" "$section"
grep -q "No GPU run yet" "$section" && fail "the old section text is still there"
sed '/<!-- bench-gpu:begin -->/,/<!-- bench-gpu:end -->/d' "$work/benchmarks.md" >"$work/rest-new.md"
sed '/<!-- bench-gpu:begin -->/,/<!-- bench-gpu:end -->/d' "$src/docs/benchmarks.md" >"$work/rest-old.md"
cmp -s "$work/rest-new.md" "$work/rest-old.md" || fail "--write-doc changed text outside its section"
printf '# no markers\n' >"$work/plain.md"
"$python" "$bench" --from-results "$work/results.json" --write-doc "$work/plain.md" \
  >"$work/bad.txt" 2>&1 && fail "--write-doc into a file without the markers succeeded"

# kernels_bench.py --dry-run: one case of each kind built as ONNX, compiled
# for sm_90 with nvcc and checked (the attention fused and causal, four
# library GEMMs, four layer_norm kernels); about 30 s with two nvcc at once.
kbench="$src/bench/gpu/kernels_bench.py"
"$python" "$kbench" --dry-run --cases nonesuch >"$work/bad.txt" 2>&1 &&
  fail "kernels_bench.py with an unknown case succeeded"
# --from-results: the kernel targets judged from a results file (made up
# here: attention 4% slower than cuDNN's; the d128 case 393 TFLOP/s; the GEMMs
# 610 TFLOP/s by FLOPs, FF2 7% slower than torch.matmul; layer_norm 79% of the
# copy).
cat >"$work/kbench-results.json" <<'EOF2'
{"cases": {
 "attention-b8-h12-s1024-d64": {"kind": "attention", "sluice_ms": 0.05, "torch": {"cudnn": {"ms": 0.048}}},
 "attention-b4-h16-s4096-d128": {"kind": "attention", "sluice_ms": 0.7, "sluice_tflops": 392.7, "torch": {"cudnn": {"ms": 0.48}}},
 "gemm-qkv-4096x2304x768": {"kind": "gemm", "sluice_ms": 0.025, "torch": {"matmul": {"ms": 0.025}}},
 "gemm-out-4096x768x768": {"kind": "gemm", "sluice_ms": 0.01, "torch": {"matmul": {"ms": 0.023}}},
 "gemm-ff1-4096x3072x768": {"kind": "gemm", "sluice_ms": 0.03, "torch": {"matmul": {"ms": 0.032}}},
 "gemm-ff2-4096x768x3072": {"kind": "gemm", "sluice_ms": 0.03, "torch": {"matmul": {"ms": 0.028}}},
 "layernorm-bert-b32-s128": {"kind": "row", "sluice_ms": 0.004, "copy_fraction": 0.786, "torch": {}}}}
EOF2
"$python" "$kbench" --from-results "$work/kbench-results.json" >"$work/kbench-acc.txt" 2>&1 ||
  fail "kernels_bench.py --from-results exit status"
expect "acceptance" "^  NOT met   attention-b8-h12-s1024-d64: Sluice / torch SDPA cuDNN time: 1.04 (target <= 1)$" "$work/kbench-acc.txt"
expect "acceptance" "^  met       attention-b4-h16-s4096-d128: Sluice TFLOP/s: 393 (target >= 350)$" "$work/kbench-acc.txt"
expect "acceptance" "^  NOT met   gemm-ff2-4096x768x3072: Sluice / torch.matmul time: 1.07 (target <= 1)$" "$work/kbench-acc.txt"
expect "acceptance" "^  met       BERT-b32 GEMMs: Sluice TFLOP/s, by FLOPs: 610 (target >= 600)$" "$work/kbench-acc.txt"
expect "acceptance" "^  NOT met   layernorm-bert-b32-s128: share of the device copy's bandwidth: 0.786 (target >= 0.85)$" "$work/kbench-acc.txt"
nvcc=${SLUICE_NVCC:-${CUDA_HOME:+$CUDA_HOME/bin/nvcc}}
[ -n "$nvcc" ] || nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if ! "$python" -c "import onnx, numpy" 2>/dev/null; then
  echo "no onnx/numpy in $python: kernels_bench.py --dry-run not checked"
elif [ ! -x "$nvcc" ]; then
  echo "no nvcc ($nvcc): kernels_bench.py --dry-run not checked"
else
  "$python" "$kbench" --dry-run --bin "$bin" --jobs 2 --out "$work/kbench" \
    --cases attention-b8-h12-s1024-d64,gemm-out-4096x768x768,layernorm-bert-b32-s128 \
    >"$work/kbench.txt" 2>&1 || { fail "kernels_bench.py --dry-run exit status"; cat "$work/kbench.txt"; }
  for c in attention-b8-h12-s1024-d64 gemm-out-4096x768x768 layernorm-bert-b32-s128; do
    expect "kernels dry run" "^  compiled $c: [0-9]*s, ok$" "$work/kbench.txt"
    [ -f "$work/kbench/$c.sluice/manifest.json" ] || fail "kernels dry run: no bundle for $c"
  done
  expect "kernels dry run" "attention-b8-h12-s1024-d64: attention (8, 12, 1024, 64, True), 1 per bundle, 12.9 GFLOP" "$work/kbench.txt"
fi

# Step bandwidth: a cpu bundle of the small BERT, traced; each LayerNorm
# step moves its input and output (B x S x H) and its scale and bias (H),
# 2 bytes each.
model="$src/test/models/bert_encoder/model.onnx"
if "$python" -c "import onnx, numpy" 2>/dev/null; then
  "$bin/sluice-compile" "$model" -o "$work/bert.sluice" --quiet \
    --shape=input_ids=2x16 --shape=attention_mask=2x16 >"$work/compile.txt" 2>&1 ||
    { fail "sluice-compile of bert_encoder"; cat "$work/compile.txt"; }
  "$bin/sluice-run" "$work/bert.sluice" --random-inputs --threads=1 \
    --trace="$work/trace.json" >"$work/run.txt" 2>&1 ||
    { fail "sluice-run --trace"; cat "$work/run.txt"; }
  "$python" - "$src/bench/gpu" "$work" "$model" <<'EOF' || fail "step bandwidth"
import sys
sys.path.insert(0, sys.argv[1])
import bench_gpu  # noqa: E402
import onnx  # noqa: E402
work, model = sys.argv[2], sys.argv[3]
shapes = {"input_ids": [2, 16], "attention_mask": [2, 16]}
graph = bench_gpu.boundary_bytes(model, shapes)
hidden = next(list(i.dims) for i in onnx.load(model).graph.initializer
              if i.name == "emb_ln.weight")[0]
want = 2 * (2 * 16 * hidden) * 2 + 2 * hidden * 2
got = bench_gpu.step_bytes(["/ln1/LayerNormalization"], graph)
assert got == want, f"ln1 moves {got} bytes, expected {want}"
classes = bench_gpu.step_bandwidth(work + "/bert.sluice", work + "/trace.json", model,
                                   shapes, 100.0)
ln = classes["layernorm"]
# Five LayerNorm steps; the embeddings' one reads a position table whose
# shape inference leaves unsized.
assert ln["steps"] + ln["unsized"] == 5, ln
assert ln["steps"] >= 4 and ln["bytes"] >= 4 * want and ln["us"] > 0, ln
assert abs(ln["gbs"] - ln["bytes"] / ln["us"] / 1e3) < 1e-6 * ln["gbs"], ln
assert abs(ln["fraction"] - ln["gbs"] / 100.0) < 1e-9, ln
assert "softmax" not in classes, "softmax runs inside the attention step here"
print("step bandwidth ok:", ln)
EOF
else
  echo "no onnx/numpy in $python: step bandwidth not checked"
fi

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "device scripts: all checks passed"
