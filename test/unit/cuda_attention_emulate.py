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
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_emulate_common as common  # noqa: E402


def token_ids(array, spec):
    """int64 inputs are the small models' token ids."""
    return np.abs(array) % 16 if spec["dtype"] == "int64" else array


def main():
    args = common.arguments(lambda parser: parser.add_argument("--shape", action="append", default=[]))
    shapes = ["--shape=" + s for s in args.shape]
    bundle, manifest, source = common.compile_bundle(args, shapes)
    inputs = common.reference_run(args, manifest, shapes, token_ids)

    steps, run = common.step_functions(source)
    launch = re.compile(r"(sluice_attn_(?:mma|fma)<[^>]*>)<<<(.*?), 128, 0, stream>>>\((.*?)\);")
    attention = [k for k, body in steps.items() if launch.search(body)]

    code = ['#include "CudaAttentionEmulation.h"', common.PRELUDE]
    for k in attention:
        code.append("namespace %s_k {}" % k)
        code.append(launch.sub(r"sluice_emu::launch(\2, 128, [&] { \1(\3); });", steps[k]))
    run_code, skipped = common.run_function(run, attention)
    code.append(run_code)
    code.append(common.harness_main(manifest))
    out_files = common.build_and_run(args, code, bundle, manifest, inputs, ["-fno-strict-aliasing"])
    compared, failures = common.compare(args, manifest, out_files, skipped, "an attention group")
    print("%d attention steps emulated, %d outputs compared, %d mismatched" %
          (len(attention), compared, failures))
    return 0 if failures == 0 and compared and len(attention) >= args.min_steps else 1


if __name__ == "__main__":
    sys.exit(main())
