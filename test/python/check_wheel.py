#!/usr/bin/env python3
"""Builds the `sluice` wheel with pip (pyproject.toml, scikit-build-core),
installs it into a fresh virtual environment and uses it there: the package
imports from the wheel (not the build's development copy), carries the
runtime library, compiles examples/mlp.onnx through SLUICE_COMPILE and runs
it against the recorded outputs.

Usage: check_wheel.py --source ROOT --work DIR [--compiler BUILD/bin/sluice-compile]
Exit 0 on success, 1 on a failed check.
"""
import argparse
import os
import shutil
import subprocess
import sys

USE = r"""
import os, sys
import numpy as np
import sluice
package = os.path.dirname(sluice.__file__)
assert package.startswith(sys.prefix), (package, sys.prefix)
assert os.path.isfile(os.path.join(package, "libsluice_runtime.so")), os.listdir(package)
examples = os.path.join(sys.argv[1], "examples")
x = np.load(os.path.join(examples, "mlp_input.npy"))
model = sluice.compile(os.path.join(examples, "mlp.onnx"), sys.argv[2],
                       shapes={"features": x.shape})
got = model.run({"features": x})["probabilities"]
np.testing.assert_allclose(got, np.load(os.path.join(examples, "mlp_expected.npy")),
                           rtol=1e-3, atol=1e-6)
print("wheel: sluice", sluice.__version__, "from", package, "runs", model.path)
"""


def run(command, **kwargs):
    print("+", " ".join(c if len(c) < 200 else "<script>" for c in command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--compiler")
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    dist, venv = os.path.join(a.work, "dist"), os.path.join(a.work, "venv")
    # The .venv's nanobind and scikit-build-core (no fetch from an index);
    # the CMake build folder under --work, not in the source tree.
    settings = ["--config-settings=build-dir=" + os.path.join(a.work, "build")]
    if shutil.which("ccache"):  # as scripts/build.sh: rebuilds cost little
        settings.append("--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache")
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
         "--disable-pip-version-check", "-q", a.source, "-w", dist] + settings)
    wheels = [f for f in os.listdir(dist) if f.startswith("sluice-") and f.endswith(".whl")]
    if len(wheels) != 1:
        print(f"check_wheel: expected one sluice wheel in {dist}, found {wheels}")
        return 1
    # A venv of the base interpreter that sees the system's numpy (Debian's,
    # as the project's .venv does), and nothing of the build's package.
    run([getattr(sys, "_base_executable", sys.executable), "-m", "venv",
         "--system-site-packages", venv])
    python = os.path.join(venv, "bin", "python")
    run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         "--disable-pip-version-check", os.path.join(dist, wheels[0])])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if a.compiler:
        env["SLUICE_COMPILE"] = a.compiler
    try:
        run([python, "-c", USE, a.source, os.path.join(a.work, "mlp.sluice")], env=env,
            cwd=a.work)
    except subprocess.CalledProcessError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
