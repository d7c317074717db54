#!/usr/bin/env python3
"""Runs the row kernels of a cuda bundle's generated model.cu on the host.

usage: cuda_row_emulate.py MODEL.mlir WORKDIR --compile=SLUICE_COMPILE
           --run=SLUICE_RUN --cxx=CXX --include=DIR ... [--min-steps=N]
           [--rtol=R --atol=A]

1. random inputs (numpy, fixed seed) are written as .npy and run through the
   reference evaluator (sluice-run --reference);
2. sluice-compile --target=cuda writes model.cu (built by nvcc as usual);
3. the device namespaces and step functions of every row group (kernels
   `row` of codegen/cuda/groups/Row.cpp) and the run function are taken
   from model.cu as they are, the launches `row<<<grid, block, 0, stream>>>`
   turned into sluice_emu::launch (test/unit/CudaRowEmulation.h: each
   block's threads as fibers, barriers and shuffles emulated), compiled with
   the host compiler and run on the same inputs;
4. every output a row group writes is compared with the evaluator's
   (|got - want| <= atol + rtol |want|, default 1e-6 and 1e-5; integers
   exactly). Steps of other groups do not run here; their outputs are not
   compared.
Exit 0 when at least --min-steps row steps ran and every output matched.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8,
         "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}


def to_numpy(raw, dtype, shape):
    if dtype == "bfloat16":
        bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(dtype if dtype != "bool" else np.bool_)).reshape(shape)


def load_npy(path, dtype, shape):
    if dtype == "bfloat16":
        with open(path, "rb") as f:
            data = f.read()
        header_len = int.from_bytes(data[8:10], "little")
        return to_numpy(data[10 + header_len:], dtype, shape)
    return np.load(path).reshape(shape)


def random_input(rng, dtype, shape):
    if dtype in ("float32", "float64", "float16"):
        return rng.uniform(-2.0, 2.0, size=shape).astype(dtype)
    if dtype == "bfloat16":
        f = rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)
        return (f.view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    return rng.integers(-50, 50, size=shape).astype(dtype)


def save_npy(path, array, dtype):
    if dtype == "bfloat16":
        np.save(path, array.view(np.dtype("V2")))
    else:
        np.save(path, array)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("work")
    parser.add_argument("--compile", required=True)
    parser.add_argument("--run", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--min-steps", type=int, default=1)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    bundle = os.path.join(args.work, "b.sluice")
    subprocess.run([args.compile, args.model, "--target=cuda", "--gpu-arch=sm_80", "-o", bundle,
                    "--quiet"], check=True)
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    source = open(os.path.join(bundle, "model.cu")).read()

    # Inputs and the evaluator's outputs.
    rng = np.random.default_rng(2024)
    input_files = []
    for i, spec in enumerate(manifest["inputs"]):
        array = random_input(rng, spec["dtype"], spec["shape"])
        path = os.path.join(args.work, "in%d.npy" % i)
        save_npy(path, array, spec["dtype"])
        raw = os.path.join(args.work, "in%d.bin" % i)
        array.tofile(raw)
        input_files.append((path, raw))
    ref = os.path.join(args.work, "ref")
    subprocess.run([args.run, args.model, "--reference"] + [p for p, _ in input_files] +
                   ["--save-outputs=" + ref], check=True, stdout=subprocess.DEVNULL)

    # The pieces of model.cu.
    namespaces = {m.group(1): m.group(0) for m in re.finditer(
        r"namespace (k\w+)_k \{\n.*?\n\} // namespace \1_k\n", source, re.S)}
    steps = {m.group(1): m.group(0) for m in re.finditer(
        r"static int32_t (k\w+)\(void \*const \*b, const SluiceRunArgs \*args\) \{\n.*?\n\}\n",
        source, re.S)}
    run = re.search(r"extern \"C\" int32_t sluice_model_run\(const SluiceRunArgs \*args\) \{\n(.*?)\n\}\n",
                    source, re.S).group(1)
    symbols = re.findall(r"SLUICE_SYMBOL\((k\w+)_k::(\w+)\);", source)
    row_steps = [k for k, ns in namespaces.items()
                 if re.search(r"__global__ void __launch_bounds__\(\d+\) row\(", ns)]

    launch = re.compile(r"row<<<(.*?), (\d+), 0, stream>>>\((.*?)\);")
    code = ['#include "CudaRowEmulation.h"',
            "#define __align__(n) alignas(n)",
            '#include "sluice_gen/scalar.h"',
            '#include "sluice_gen/cuda_reduce.h"',
            "#include <cstdio>", "#include <cstdlib>", "#include <cstring>", "#include <vector>",
            "typedef void *cudaStream_t;",
            "struct SluiceRunArgs { void *const *inputs; void *const *outputs;",
            "  unsigned char *arena; const unsigned char *weights; void *stream; };",
            "struct SluiceCudaState { std::vector<void *> symbols; };",
            "static SluiceCudaState the_state;",
            "static SluiceCudaState *sluice_state(const SluiceRunArgs *) { return &the_state; }",
            "static unsigned sluice_grid(int64_t n, int block, int per = 1) {",
            "  int64_t blocks = (n + (int64_t)block * per - 1) / ((int64_t)block * per);",
            "  return (unsigned)(blocks < 1 ? 1 : blocks > 65535LL * 32 ? 65535LL * 32 : blocks);",
            "}",
            "#define SLUICE_LAUNCHED(kernel)",
            "enum { cudaMemcpyDeviceToDevice };",
            "static int cudaMemcpyAsync(void *d, const void *s, size_t n, int, cudaStream_t) {",
            "  memcpy(d, s, n); return 0; }",
            "#define SLUICE_CUDA(kernel, call) (void)(call)",
            "#define SLUICE_STEP(index, call) do { if (call) return 1; } while (0)",
            "static int32_t sluice_fail(const SluiceRunArgs *, const char *, const char *) { return 1; }"]
    for k in row_steps:
        code.append(namespaces[k])
    for k in row_steps:
        code.append(launch.sub(r"sluice_emu::launch(\1, \2, [&] { row(\3); });", steps[k]))
    # The run function: steps of other groups do not run.
    body = []
    skipped_outputs = set()
    for block in re.split(r"\n(?=  \{\n|  SLUICE_CUDA|  if )", "\n" + run):
        m = re.search(r"SLUICE_STEP\(\d+, (k\w+)\(b, args\)\);", block)
        if m and m.group(1) not in row_steps:
            for out in re.findall(r"args->outputs\[(\d+)\]", block):
                skipped_outputs.add(int(out))
            continue
        if "device_state" in block:
            continue
        body.append(block)
    code.append("static int32_t run(const SluiceRunArgs *args) {" + "\n".join(body) +
                "\n  return 0;\n}")
    code.append("int main(int argc, char **argv) {")
    code.append("  (void)argc;")
    code.append("  the_state.symbols = {%s};" % ", ".join(
        "(void *)%s_k::%s" % (k, s) if k in row_steps else "nullptr" for k, s in symbols))
    n_in, n_out = len(manifest["inputs"]), len(manifest["outputs"])
    code.append("  std::vector<void *> inputs(%d), outputs(%d);" % (max(n_in, 1), max(n_out, 1)))
    code.append("  auto slurp = [](const char *path, size_t bytes) {")
    code.append("    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);")
    code.append("    FILE *f = fopen(path, \"rb\");")
    code.append("    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, \"cannot read %s\\n\", path); exit(2); }")
    code.append("    fclose(f); return p; };")
    for i, spec in enumerate(manifest["inputs"]):
        nbytes = SIZES[spec["dtype"]] * int(np.prod(spec["shape"], dtype=np.int64))
        code.append("  inputs[%d] = slurp(argv[%d], %d);" % (i, 1 + i, nbytes))
    out_bytes = []
    for i, spec in enumerate(manifest["outputs"]):
        nbytes = SIZES[spec["dtype"]] * int(np.prod(spec["shape"], dtype=np.int64))
        out_bytes.append(nbytes)
        code.append("  outputs[%d] = aligned_alloc(64, %d);" % (i, (nbytes + 63) // 64 * 64 + 64))
        code.append("  memset(outputs[%d], 0xff, %d);" % (i, nbytes))
    arena = int(manifest.get("arena_bytes", 0))
    weights = manifest["weights"]["bytes"]
    code.append("  unsigned char *arena = (unsigned char *)aligned_alloc(64, %d);" % ((arena + 63) // 64 * 64 + 64))
    code.append("  const unsigned char *weights = %s;" % (
        "(const unsigned char *)slurp(argv[%d], %d)" % (1 + n_in, weights) if weights else "nullptr"))
    code.append("  SluiceRunArgs a{inputs.data(), outputs.data(), arena, weights, nullptr};")
    code.append("  if (run(&a)) { fprintf(stderr, \"the run failed\\n\"); return 1; }")
    code.append("  for (int i = 0; i < %d; ++i) {" % n_out)
    code.append("    static const size_t bytes[] = {%s};" % ", ".join(str(b) for b in out_bytes or [0]))
    code.append("    FILE *f = fopen(argv[%d + i], \"wb\");" % (1 + n_in + (1 if weights else 0)))
    code.append("    fwrite(outputs[i], 1, bytes[i], f); fclose(f);")
    code.append("  }")
    code.append("  return 0;\n}")
    harness = os.path.join(args.work, "harness.cpp")
    with open(harness, "w") as f:
        f.write("\n".join(code) + "\n")
    exe = os.path.join(args.work, "harness")
    subprocess.run([args.cxx, "-std=c++17", "-O1", "-w", harness, "-o", exe] +
                   ["-I" + d for d in args.include], check=True)
    out_files = [os.path.join(args.work, "out%d.bin" % i) for i in range(n_out)]
    argv = [exe] + [raw for _, raw in input_files]
    if weights:
        argv.append(os.path.join(bundle, "weights.bin"))
    subprocess.run(argv + out_files, check=True)

    failures = 0
    compared = 0
    for i, spec in enumerate(manifest["outputs"]):
        if i in skipped_outputs:
            print("%s: not a row group's output, skipped" % spec["name"])
            continue
        with open(out_files[i], "rb") as f:
            got = to_numpy(f.read(), spec["dtype"], spec["shape"]).astype(np.float64)
        want = load_npy(os.path.join(ref, spec["name"] + ".npy"), spec["dtype"],
                        spec["shape"]).astype(np.float64)
        rtol, atol = args.rtol, args.atol
        if spec["dtype"] in ("int64", "int32"):
            rtol, atol = 0, 0
        ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        err = float(np.max(np.abs(got - want))) if got.size else 0.0
        print("%s: %s (%s %s, max abs error %.3g)" % (spec["name"], "ok" if ok else "MISMATCH",
                                                     spec["dtype"], spec["shape"], err))
        failures += not ok
        compared += 1
    print("%d row steps emulated, %d outputs compared, %d mismatched" %
          (len(row_steps), compared, failures))
    return 0 if failures == 0 and len(row_steps) >= args.min_steps else 1


if __name__ == "__main__":
    sys.exit(main())
