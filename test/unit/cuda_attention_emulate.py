#!/usr/bin/env python3
"""Runs the attention steps of a cuda bundle's generated model.cu on the host.

usage: cuda_attention_emulate.py MODEL WORKDIR --compile=SLUICE_COMPILE
           --run=SLUICE_RUN --cxx=CXX --include=DIR ... [--shape=NAME=2x3 ...]
           [--min-steps=N] [--rtol=R --atol=A]

As cuda_row_emulate.py does for row groups: random inputs go through the
reference evaluator; sluice-compile --target=cuda writes model.cu (built by
nvcc as usual); the step functions of every attention group (launches of
sluice_attn_mma / sluice_attn_fma, codegen/cuda/groups/Attention.cpp) and
the run function are taken from model.cu as they are, each launch
`KERNEL<<<grid, 128, 0, stream>>>(args)` turned into sluice_emu::launch
(CudaAttentionEmulation.h: fibers, barriers, shuffles and an mma.sync
fragment model), compiled with the host compiler and run on the same
inputs; every output an attention step writes is compared with the
evaluator's (NaN where the evaluator has NaN). Steps of other groups do not
run; their outputs are not compared. Exit 0 when at least --min-steps
attention steps ran and every compared output matched.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cuda_row_emulate import SIZES, load_npy, random_input, save_npy, to_numpy  # noqa: E402

PRELUDE = r'''#include "CudaAttentionEmulation.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
typedef void *cudaStream_t;
struct SluiceRunArgs { void *const *inputs; void *const *outputs;
  unsigned char *arena; const unsigned char *weights; void *stream; };
struct SluiceCudaState { std::vector<void *> symbols; };
static SluiceCudaState the_state;
static SluiceCudaState *sluice_state(const SluiceRunArgs *) { return &the_state; }
#define SLUICE_LAUNCHED(kernel)
enum { cudaMemcpyDeviceToDevice };
static int cudaMemcpyAsync(void *d, const void *s, size_t n, int, cudaStream_t) {
  memcpy(d, s, n); return 0; }
#define SLUICE_CUDA(kernel, call) (void)(call)
#define SLUICE_STEP(index, call) do { if (call) return 1; } while (0)
'''


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("work")
    parser.add_argument("--compile", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--shape", action="append", default=[])
    parser.add_argument("--min-steps", type=int, default=1)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    bundle = os.path.join(args.work, "b.sluice")
    shapes = ["--shape=" + s for s in args.shape]
    subprocess.run([args.compile, args.model, "--target=cuda", "--gpu-arch=sm_80", "-o", bundle,
                    "--quiet"] + shapes, check=True)
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    source = open(os.path.join(bundle, "model.cu")).read()

    rng = np.random.default_rng(2024)
    input_files = []
    for i, spec in enumerate(manifest["inputs"]):
        array = random_input(rng, spec["dtype"], spec["shape"])
        if spec["dtype"] == "int64":
            array = np.abs(array) % 16  # token ids of the small models
        path = os.path.join(args.work, "in%d.npy" % i)
        save_npy(path, array, spec["dtype"])
        raw = os.path.join(args.work, "in%d.bin" % i)
        array.tofile(raw)
        input_files.append((path, raw))
    ref = os.path.join(args.work, "ref")
    subprocess.run([args.run, args.model, "--reference"] + shapes + [p for p, _ in input_files] +
                   ["--save-outputs=" + ref], check=True, stdout=subprocess.DEVNULL)

    steps = {m.group(1): m.group(0) for m in re.finditer(
        r"static int32_t (k\w+)\(void \*const \*b, const SluiceRunArgs \*args\) \{\n.*?\n\}\n",
        source, re.S)}
    run = re.search(r"extern \"C\" int32_t sluice_model_run\(const SluiceRunArgs \*args\) \{\n(.*?)\n\}\n",
                    source, re.S).group(1)
    launch = re.compile(r"(sluice_attn_(?:mma|fma)<[^>]*>)<<<(.*?), 128, 0, stream>>>\((.*?)\);")
    attention = [k for k, body in steps.items() if launch.search(body)]

    code = [PRELUDE]
    for k in attention:
        code.append("namespace %s_k {}" % k)
        code.append(launch.sub(r"sluice_emu::launch(\2, 128, [&] { \1(\3); });", steps[k]))
    body, skipped = [], set()
    for block in re.split(r"\n(?=  \{\n|  SLUICE_CUDA|  if )", "\n" + run):
        m = re.search(r"SLUICE_STEP\(\d+, (k\w+)\(b, args\)\);", block)
        if m and m.group(1) not in attention:
            skipped.update(int(o) for o in re.findall(r"args->outputs\[(\d+)\]", block))
            continue
        if "device_state" in block:
            continue
        body.append(block)
    code.append("static int32_t run(const SluiceRunArgs *args) {" + "\n".join(body) +
                "\n  return 0;\n}")
    n_in, n_out = len(manifest["inputs"]), len(manifest["outputs"])
    code.append("int main(int argc, char **argv) {\n  (void)argc;")
    code.append("  std::vector<void *> inputs(%d), outputs(%d);" % (max(n_in, 1), max(n_out, 1)))
    code.append("  auto slurp = [](const char *path, size_t bytes) {\n"
                "    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);\n"
                "    FILE *f = fopen(path, \"rb\");\n"
                "    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, \"cannot read %s\\n\", path); exit(2); }\n"
                "    fclose(f); return p; };")
    nbytes = lambda spec: SIZES[spec["dtype"]] * int(np.prod(spec["shape"], dtype=np.int64))
    for i, spec in enumerate(manifest["inputs"]):
        code.append("  inputs[%d] = slurp(argv[%d], %d);" % (i, 1 + i, nbytes(spec)))
    for i, spec in enumerate(manifest["outputs"]):
        code.append("  outputs[%d] = aligned_alloc(64, %d);" % (i, (nbytes(spec) + 63) // 64 * 64 + 64))
        code.append("  memset(outputs[%d], 0xff, %d);" % (i, nbytes(spec)))
    arena = int(manifest.get("arena_bytes", 0))
    weights = manifest["weights"]["bytes"]
    code.append("  unsigned char *arena = (unsigned char *)aligned_alloc(64, %d);" %
                ((arena + 63) // 64 * 64 + 64))
    code.append("  const unsigned char *weights = %s;" % (
        "(const unsigned char *)slurp(argv[%d], %d)" % (1 + n_in, weights) if weights else "nullptr"))
    code.append("  SluiceRunArgs a{inputs.data(), outputs.data(), arena, weights, nullptr};")
    code.append("  if (run(&a)) { fprintf(stderr, \"the run failed\\n\"); return 1; }")
    code.append("  static const size_t bytes[] = {%s};" %
                ", ".join(str(nbytes(s)) for s in manifest["outputs"] or [{"dtype": "bool", "shape": [0]}]))
    code.append("  for (int i = 0; i < %d; ++i) {" % n_out)
    code.append("    FILE *f = fopen(argv[%d + i], \"wb\");" % (1 + n_in + (1 if weights else 0)))
    code.append("    fwrite(outputs[i], 1, bytes[i], f); fclose(f);\n  }\n  return 0;\n}")
    harness = os.path.join(args.work, "harness.cpp")
    with open(harness, "w") as f:
        f.write("\n".join(code) + "\n")
    exe = os.path.join(args.work, "harness")
    subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", "-fno-strict-aliasing", harness, "-o", exe] +
                   ["-I" + d for d in args.include], check=True)
    out_files = [os.path.join(args.work, "out%d.bin" % i) for i in range(n_out)]
    argv = [exe] + [raw for _, raw in input_files]
    if weights:
        argv.append(os.path.join(bundle, "weights.bin"))
    subprocess.run(argv + out_files, check=True)

    failures = compared = 0
    for i, spec in enumerate(manifest["outputs"]):
        if i in skipped:
            print("%s: not an attention group's output, skipped" % spec["name"])
            continue
        with open(out_files[i], "rb") as f:
            got = to_numpy(f.read(), spec["dtype"], spec["shape"]).astype(np.float64)
        want = load_npy(os.path.join(ref, spec["name"] + ".npy"), spec["dtype"],
                        spec["shape"]).astype(np.float64)
        ok = np.allclose(got, want, rtol=args.rtol, atol=args.atol, equal_nan=True)
        finite = np.isfinite(want) & np.isfinite(got)
        err = float(np.max(np.abs(got - want)[finite])) if finite.any() else 0.0
        print("%s: %s (%s %s, max abs error %.3g)" % (spec["name"], "ok" if ok else "MISMATCH",
                                                     spec["dtype"], spec["shape"], err))
        failures += not ok
        compared += 1
    print("%d attention steps emulated, %d outputs compared, %d mismatched" %
          (len(attention), compared, failures))
    return 0 if failures == 0 and compared and len(attention) >= args.min_steps else 1


if __name__ == "__main__":
    sys.exit(main())
