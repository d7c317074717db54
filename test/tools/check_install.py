#!/usr/bin/env python3
"""The installed tree (cmake/SluiceInstall.cmake, docs/runtime.md "Installing").

`cmake --install BUILD --prefix WORK/prefix`, then examples/cpp copied to a
clean folder, configured with -DCMAKE_PREFIX_PATH=WORK/prefix (find_package
(Sluice), Sluice::runtime) and built; the INSTALLED sluice-compile compiles
a model (finding the code generator's headers in the prefix, not in the
source tree), the installed sluice-run and the example run the bundle, and
the example's outputs match the expected ones. Exit 0 when all of it holds.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np


def run(command, **kwargs):
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: exit {done.returncode}: {' '.join(command)}")
    return done.stdout + done.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", required=True, help="the Sluice build folder")
    parser.add_argument("--source", required=True, help="the Sluice source folder")
    parser.add_argument("--work", required=True, help="a scratch folder (emptied)")
    args = parser.parse_args()
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    prefix = os.path.join(work, "prefix")
    run(["cmake", "--install", args.build, "--prefix", prefix])
    for path in ["bin/sluice-compile", "bin/sluice-run", "bin/sluice-opt",
                 "lib/libsluice_runtime.so", "include/sluice/runtime.h",
                 "include/sluice/runtime.hpp", "share/sluice/include/sluice_gen/cpu.h",
                 "share/sluice/include/sluice/bundle_abi.h",
                 "lib/cmake/Sluice/SluiceConfig.cmake",
                 "lib/cmake/Sluice/SluiceConfigVersion.cmake"]:
        if not os.path.exists(os.path.join(prefix, path)):
            sys.exit(f"FAIL: the install has no {path}")

    # The example from a clean copy, against the prefix only.
    source = os.path.join(work, "example")
    shutil.copytree(os.path.join(args.source, "examples", "cpp"), source)
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    run(["cmake", *generator, "-S", source, "-B", os.path.join(work, "example-build"),
         f"-DCMAKE_PREFIX_PATH={prefix}"])
    run(["cmake", "--build", os.path.join(work, "example-build")])
    example = os.path.join(work, "example-build", "run_bundle")

    # The installed compiler, without SLUICE_INCLUDE_DIRS: it must find its
    # headers in the prefix (its cache recipe records where it looked).
    env = {k: v for k, v in os.environ.items() if k != "SLUICE_INCLUDE_DIRS"}
    model = os.path.join(args.source, "examples", "mlp.onnx")
    inputs = os.path.join(args.source, "examples", "mlp_input.npy")
    expected = os.path.join(args.source, "examples", "mlp_expected.npy")
    bundle = os.path.join(work, "mlp.sluice")
    cache = os.path.join(work, "cache")
    run([os.path.join(prefix, "bin", "sluice-compile"), model, "--shape=features=4x32",
         "-o", bundle, f"--cache-dir={cache}"], env=env)
    (entry,) = [e for e in os.listdir(cache) if not e.startswith(".")]
    with open(os.path.join(cache, entry, "recipe.txt")) as f:
        recipe = f.read()
    want = f"env: SLUICE_INCLUDE_DIRS={os.path.join(prefix, 'share', 'sluice', 'include')}\n"
    if want not in recipe:
        sys.exit(f"FAIL: the installed sluice-compile did not use the prefix's headers "
                 f"(no '{want.strip()}' in its recipe)")
    run([os.path.join(prefix, "bin", "sluice-run"), bundle, inputs, "--expect", expected])

    # The example: from the .npy input, and with generated inputs.
    saved = os.path.join(work, "outputs")
    os.makedirs(saved)
    out = run([example, bundle, inputs, f"--save={saved}"])
    ldd = run(["ldd", example])
    if os.path.exists(os.path.join(prefix, "include", "sluice_gen")):
        sys.exit("FAIL: the generated-code headers are in PREFIX/include (they belong in "
                 "PREFIX/share/sluice/include)")
    if os.path.join(prefix, "lib", "libsluice_runtime.so") not in ldd:
        sys.exit("FAIL: the example does not load the installed libsluice_runtime.so")
    got = np.load(os.path.join(saved, "probabilities.npy"))
    if not np.allclose(got, np.load(expected), rtol=1e-3, atol=1e-6):
        sys.exit(f"FAIL: the example's output differs from the expected one:\n{got}")
    out = run([example, bundle])
    if "(pattern)" not in out or "output probabilities float32 [4x10]" not in out:
        sys.exit("FAIL: the example did not run on generated inputs")
    print("the installed tree builds examples/cpp and runs a bundle it compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
