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
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_emulate_common as common  # noqa: E402

PRELUDE = [
    '#include "CudaRowEmulation.h"',
    "#define __align__(n) alignas(n)",
    '#include "sluice_gen/scalar.h"',
    '#include "sluice_gen/cuda_reduce.h"',
    common.PRELUDE,
    "static unsigned sluice_grid(int64_t n, int block, int per = 1) {",
    "  int64_t blocks = (n + (int64_t)block * per - 1) / ((int64_t)block * per);",
    "  return (unsigned)(blocks < 1 ? 1 : blocks > 65535LL * 32 ? 65535LL * 32 : blocks);",
    "}",
    "static int32_t sluice_fail(const SluiceRunArgs *, const char *, const char *) { return 1; }"]


def main():
    args = common.arguments()
    bundle, manifest, source = common.compile_bundle(args)
    inputs = common.reference_run(args, manifest)

    # The pieces of model.cu.
    namespaces = {m.group(1): m.group(0) for m in re.finditer(
        r"namespace (k\w+)_k \{\n.*?\n\} // namespace \1_k\n", source, re.S)}
    steps, run = common.step_functions(source)
    symbols = re.findall(r"SLUICE_SYMBOL\((k\w+)_k::(\w+)\);", source)
    row_steps = [k for k, ns in namespaces.items()
                 if re.search(r"__global__ void __launch_bounds__\(\d+\) row\(", ns)]

    launch = re.compile(r"row<<<(.*?), (\d+), 0, stream>>>\((.*?)\);")
    code = list(PRELUDE)
    for k in row_steps:
        code.append(namespaces[k])
    for k in row_steps:
        code.append(launch.sub(r"sluice_emu::launch(\1, \2, [&] { row(\3); });", steps[k]))
    run_code, skipped = common.run_function(run, row_steps)
    code.append(run_code)
    code.append(common.harness_main(manifest, ["  the_state.symbols = {%s};" % ", ".join(
        "(void *)%s_k::%s" % (k, s) if k in row_steps else "nullptr" for k, s in symbols)]))
    out_files = common.build_and_run(args, code, bundle, manifest, inputs)
    compared, failures = common.compare(args, manifest, out_files, skipped, "a row group")
    print("%d row steps emulated, %d outputs compared, %d mismatched" %
          (len(row_steps), compared, failures))
    return 0 if failures == 0 and len(row_steps) >= args.min_steps else 1


if __name__ == "__main__":
    sys.exit(main())
