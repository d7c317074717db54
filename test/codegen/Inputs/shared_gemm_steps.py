#!/usr/bin/env python3
"""Counts the quantized GEMM steps of a cuda bundle's model.cu that run
another step's device namespace: steps alike but for their names (a
transformer's repeated layers) share the first one's kernels and epilogue
functor, so the step's host code must name nothing after its own kernel.

  shared_gemm_steps.py MODEL.cu

Prints "quantized GEMM steps: N, sharing another's device code: S" and
exits 1 when S is 0 (the model does not exercise the sharing)."""
import re
import sys

CALLS = ("sluice_int8_gemm(", "sluice_int8_conv(", "sluice_wonly_gemm(", "sluice_fp8_gemm_epi(")


def main():
    with open(sys.argv[1]) as f:
        source = f.read()
    steps = re.finditer(r"static int32_t (k\w+)\(void \*const \*b, const SluiceRunArgs \*args\) "
                        r"\{\n(.*?)\n\}\n", source, re.S)
    gemm, shared = 0, 0
    for step in steps:
        name, body = step.group(1), step.group(2)
        if not any(call in body for call in CALLS):
            continue
        gemm += 1
        space = re.search(r"using namespace (\w+);", body)
        shared += bool(space) and space.group(1) != name + "_k"
    print(f"quantized GEMM steps: {gemm}, sharing another's device code: {shared}")
    return 0 if shared else 1


if __name__ == "__main__":
    sys.exit(main())
