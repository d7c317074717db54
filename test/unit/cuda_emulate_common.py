"""What cuda_row_emulate.py and cuda_attention_emulate.py share.

Both run some steps of a cuda bundle's generated model.cu on the host: random
inputs go through the reference evaluator (sluice-run --reference);
sluice-compile --target=cuda writes model.cu; the chosen step functions and
the run function are taken from model.cu as they are, their launches turned
into sluice_emu::launch by the caller, compiled with the host compiler around
the harness below and run on the same inputs; every output the chosen steps
write is compared with the evaluator's. Steps of other groups do not run;
their outputs are not compared.
"""
import argparse
import json
import os
import re
import subprocess

import numpy as np

SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8,
         "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}

# The host stand-ins for what the steps and the run function of model.cu
# call besides the kernels.
PRELUDE = r'''#include <cstdio>
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


def arguments(extra=None):
    """The command line both scripts take; `extra(parser)` adds options."""
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
    if extra:
        extra(parser)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    return args


def compile_bundle(args, options=()):
    """sluice-compile --target=cuda: the bundle's folder, manifest and model.cu."""
    bundle = os.path.join(args.work, "b.sluice")
    subprocess.run([args.compile, args.model, "--target=cuda", "--gpu-arch=sm_80", "-o", bundle,
                    "--quiet"] + list(options), check=True)
    manifest = json.load(open(os.path.join(bundle, "manifest.json")))
    source = open(os.path.join(bundle, "model.cu")).read()
    return bundle, manifest, source


def reference_run(args, manifest, options=(), adjust=None):
    """Random inputs (fixed seed; `adjust(array, spec)` may change each), as
    .npy for the evaluator and raw for the harness; the evaluator's outputs
    land in WORK/ref. Returns the raw input files."""
    rng = np.random.default_rng(2024)
    input_files = []
    for i, spec in enumerate(manifest["inputs"]):
        array = random_input(rng, spec["dtype"], spec["shape"])
        if adjust:
            array = adjust(array, spec)
        path = os.path.join(args.work, "in%d.npy" % i)
        save_npy(path, array, spec["dtype"])
        raw = os.path.join(args.work, "in%d.bin" % i)
        array.tofile(raw)
        input_files.append((path, raw))
    ref = os.path.join(args.work, "ref")
    subprocess.run([args.run, args.model, "--reference"] + list(options) +
                   [p for p, _ in input_files] + ["--save-outputs=" + ref],
                   check=True, stdout=subprocess.DEVNULL)
    return [raw for _, raw in input_files]


def step_functions(source):
    """model.cu's step functions by name, and the body of its run function."""
    steps = {m.group(1): m.group(0) for m in re.finditer(
        r"static int32_t (k\w+)\(void \*const \*b, const SluiceRunArgs \*args\) \{\n.*?\n\}\n",
        source, re.S)}
    run = re.search(r"extern \"C\" int32_t sluice_model_run\(const SluiceRunArgs \*args\) \{\n(.*?)\n\}\n",
                    source, re.S).group(1)
    return steps, run


def run_function(run, kept):
    """The run function with only the steps in `kept` (and no device state),
    and the indices of the outputs the dropped steps write."""
    body, skipped = [], set()
    for block in re.split(r"\n(?=  \{\n|  SLUICE_CUDA|  if )", "\n" + run):
        m = re.search(r"SLUICE_STEP\(\d+, (k\w+)\(b, args\)\);", block)
        if m and m.group(1) not in kept:
            skipped.update(int(o) for o in re.findall(r"args->outputs\[(\d+)\]", block))
            continue
        if "device_state" in block:
            continue
        body.append(block)
    return ("static int32_t run(const SluiceRunArgs *args) {" + "\n".join(body) +
            "\n  return 0;\n}"), skipped


def nbytes(spec):
    return SIZES[spec["dtype"]] * int(np.prod(spec["shape"], dtype=np.int64))


def harness_main(manifest, setup=()):
    """main(): reads the inputs (and weights.bin) named on its command line,
    runs run() after the lines `setup`, writes each output to a file."""
    n_in, n_out = len(manifest["inputs"]), len(manifest["outputs"])
    weights = manifest["weights"]["bytes"]
    code = ["int main(int argc, char **argv) {\n  (void)argc;"]
    code += list(setup)
    code.append("  std::vector<void *> inputs(%d), outputs(%d);" % (max(n_in, 1), max(n_out, 1)))
    code.append("  auto slurp = [](const char *path, size_t bytes) {\n"
                "    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);\n"
                "    FILE *f = fopen(path, \"rb\");\n"
                "    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, \"cannot read %s\\n\", path); exit(2); }\n"
                "    fclose(f); return p; };")
    for i, spec in enumerate(manifest["inputs"]):
        code.append("  inputs[%d] = slurp(argv[%d], %d);" % (i, 1 + i, nbytes(spec)))
    for i, spec in enumerate(manifest["outputs"]):
        code.append("  outputs[%d] = aligned_alloc(64, %d);" % (i, (nbytes(spec) + 63) // 64 * 64 + 64))
        code.append("  memset(outputs[%d], 0xff, %d);" % (i, nbytes(spec)))
    arena = int(manifest.get("arena_bytes", 0))
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
    return "\n".join(code)


def build_and_run(args, code, bundle, manifest, inputs, flags=()):
    """Compiles the harness `code` with the host compiler, runs it on the raw
    `inputs`; returns the files it wrote the outputs to."""
    harness = os.path.join(args.work, "harness.cpp")
    with open(harness, "w") as f:
        f.write("\n".join(code) + "\n")
    exe = os.path.join(args.work, "harness")
    subprocess.run([args.cxx, "-std=c++17", "-O1", "-w"] + list(flags) + [harness, "-o", exe] +
                   ["-I" + d for d in args.include], check=True)
    out_files = [os.path.join(args.work, "out%d.bin" % i) for i in range(len(manifest["outputs"]))]
    argv = [exe] + list(inputs)
    if manifest["weights"]["bytes"]:
        argv.append(os.path.join(bundle, "weights.bin"))
    subprocess.run(argv + out_files, check=True)
    return out_files


def compare(args, manifest, out_files, skipped, what):
    """Each output not in `skipped` against the evaluator's (|got - want| <=
    atol + rtol |want|, NaN where it has NaN; integers exactly). Returns
    (outputs compared, mismatched)."""
    failures = compared = 0
    for i, spec in enumerate(manifest["outputs"]):
        if i in skipped:
            print("%s: not %s's output, skipped" % (spec["name"], what))
            continue
        with open(out_files[i], "rb") as f:
            got = to_numpy(f.read(), spec["dtype"], spec["shape"]).astype(np.float64)
        want = load_npy(os.path.join(args.work, "ref", spec["name"] + ".npy"), spec["dtype"],
                        spec["shape"]).astype(np.float64)
        rtol, atol = args.rtol, args.atol
        if spec["dtype"] in ("int64", "int32"):
            rtol, atol = 0, 0
        ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        finite = np.isfinite(want) & np.isfinite(got)
        err = float(np.max(np.abs(got - want)[finite])) if finite.any() else 0.0
        print("%s: %s (%s %s, max abs error %.3g)" % (spec["name"], "ok" if ok else "MISMATCH",
                                                     spec["dtype"], spec["shape"], err))
        failures += not ok
        compared += 1
    return compared, failures
