#!/usr/bin/env python3
"""sluice-compile's compile cache (docs/tools.md, "Compile cache").

A repeated compile of the same model and flags is a hit that takes under a
quarter of the first compile's time (two timings of this run: a ratio, not
a number of seconds) and gives the same bundle and report; changing a
flag, a weight byte, a byte of the external data or the C++ compiler's
--version output is a miss; flag order and the model's folder are not part
of the key; --no-cache and SLUICE_CACHE_DIR=none never write; the default
folder follows $XDG_CACHE_HOME; sluice.compile passes cache_dir= and
no_cache= through; an entry whose files were written in place (through a
bundle's hard link) is removed, not used.

Each run uses its own folders under --work (ctest runs tests in parallel).
Exit 0 when every check holds, 1 with the failed checks listed.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def entries(cache):
    """The cache's complete entries (partial ones and .digests start with a
    dot)."""
    if not os.path.isdir(cache):
        return []
    return sorted(e for e in os.listdir(cache) if not e.startswith("."))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin", required=True, help="the build's bin folder")
    parser.add_argument("--model", required=True, help="an ONNX model (examples/mlp.onnx)")
    parser.add_argument("--input", required=True, help="its input (examples/mlp_input.npy)")
    parser.add_argument("--expected", required=True, help="its output (examples/mlp_expected.npy)")
    parser.add_argument("--shape", required=True, help="--shape for the compile")
    parser.add_argument("--work", required=True, help="a scratch folder (emptied)")
    parser.add_argument("--suite-env", action="store_true",
                        help="also check that ctest set SLUICE_CACHE_DIR=none")
    args = parser.parse_args()
    compiler = os.path.join(args.bin, "sluice-compile")
    runner = os.path.join(args.bin, "sluice-run")
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if args.suite_env:
        check(os.environ.get("SLUICE_CACHE_DIR") == "none",
              "ctest runs every test with SLUICE_CACHE_DIR=none (no test writes ~/.cache)")
    # Every compile below names its cache, or sets the variables it tests.
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("SLUICE_CACHE_DIR", "XDG_CACHE_HOME")}
    base_env["HOME"] = os.path.join(work, "home")

    def compile(model, out, *flags, env=None):
        start = time.monotonic()
        done = subprocess.run([compiler, model, "-o", os.path.join(work, out), *flags],
                              capture_output=True, text=True, env=env or base_env)
        seconds = time.monotonic() - start
        if done.returncode != 0:
            print(done.stdout + done.stderr)
        check(done.returncode == 0, f"compile {os.path.basename(model)} -> {out} {' '.join(flags)}")
        return done.stderr, seconds

    def runs(out):
        done = subprocess.run([runner, os.path.join(work, out), args.input,
                               "--expect", args.expected], capture_output=True, text=True)
        return done.returncode == 0

    cache = os.path.join(work, "cache")
    shape = f"--shape={args.shape}"
    first, t_first = compile(args.model, "a.sluice", shape, f"--cache-dir={cache}",
                             f"--report={work}/a.json")
    check("cached as" in first and len(entries(cache)) == 1, "a first compile stores one entry")
    second, t_second = compile(args.model, "b.sluice", shape, f"--cache-dir={cache}",
                               f"--report={work}/b.json")
    check("cache hit" in second, "the same model and flags again: a hit")
    check("building" not in second, "a hit builds nothing")
    check(t_second < t_first / 4,
          f"the hit takes under a quarter of the first compile ({t_second:.3f} s vs {t_first:.3f} s)")
    check(runs("b.sluice"), "the bundle from the cache runs and matches the expected output")
    with open(f"{work}/a.json") as f:
        report_a = json.load(f)
    with open(f"{work}/b.json") as f:
        report_b = json.load(f)
    check(report_b.get("cache", {}).get("hit") is True and report_a["cache"]["hit"] is False,
          "the reports say miss, then hit")
    check(report_b.get("bundle") == os.path.join(work, "b.sluice") and
          report_b.get("steps") == report_a.get("steps") and
          report_b.get("kernels") == report_a.get("kernels"),
          "the hit's report is the cached one, with this compile's bundle path")
    same = all(open(os.path.join(work, "a.sluice", n), "rb").read() ==
               open(os.path.join(work, "b.sluice", n), "rb").read()
               for n in os.listdir(os.path.join(work, "a.sluice")))
    check(same and sorted(os.listdir(f"{work}/a.sluice")) == sorted(os.listdir(f"{work}/b.sluice")),
          "the hit's bundle has the first bundle's files, byte for byte")
    # A hit replaces an old bundle in place, keeping the user's own files.
    with open(f"{work}/b.sluice/notes.txt", "w") as f:
        f.write("mine")
    again, _ = compile(args.model, "b.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" in again and os.path.exists(f"{work}/b.sluice/notes.txt") and
          runs("b.sluice"), "a hit over an old bundle replaces it and keeps other files")

    # The bundle's files are hard links of the entry's: a write into one in
    # place changes the entry, which the next hit finds and removes.
    with open(f"{work}/b.sluice/weights.bin", "r+b") as f:
        first_byte = f.read(1)
        f.seek(0)
        f.write(bytes([first_byte[0] ^ 0xFF]))
    out, _ = compile(args.model, "m.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" not in out and "changed since it was stored" in out and
          "cached as" in out and runs("m.sluice"),
          "an entry whose file was written in place is removed and compiled again")
    out, _ = compile(args.model, "m2.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" in out and runs("m2.sluice"), "the new entry is a hit")

    # The key: flags (in any order) and the model's bytes, not its folder.
    out, _ = compile(args.model, "c.sluice", shape, "--fusion=none", f"--cache-dir={cache}")
    check("cache hit" not in out and len(entries(cache)) == 2, "another --fusion: a miss")
    out, _ = compile(args.model, "c.sluice", "--no-recognize", shape, f"--cache-dir={cache}")
    check("cache hit" not in out and len(entries(cache)) == 3, "--no-recognize: a miss")
    out, _ = compile(args.model, "d.sluice", f"--cache-dir={cache}", "--shape", args.shape,
                     "--no-recognize")
    check("cache hit" in out, "the same flags in another order (and --shape X apart): a hit")
    name, dims = args.shape.split("=")
    batch = dims.split("x")
    batch[0] = str(int(batch[0]) * 2)
    out, _ = compile(args.model, "e.sluice", f"--shape={name}={'x'.join(batch)}",
                     f"--cache-dir={cache}")
    check("cache hit" not in out, "another --shape: a miss")

    os.makedirs(f"{work}/copy")
    copy = os.path.join(work, "copy", os.path.basename(args.model))
    shutil.copy(args.model, copy)
    out, _ = compile(copy, "f.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" in out, "the same model bytes in another folder: a hit")
    model = onnx.load(args.model)
    weight = model.graph.initializer[0]
    values = numpy_helper.to_array(weight).copy()
    values.flat[0] += 1.0
    weight.CopyFrom(numpy_helper.from_array(values, weight.name))
    os.makedirs(f"{work}/changed")
    changed = os.path.join(work, "changed", os.path.basename(args.model))
    onnx.save(model, changed)
    count = len(entries(cache))
    out, _ = compile(changed, "g.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" not in out and len(entries(cache)) == count + 1,
          "one weight changed: a miss")

    # External data: the key covers the files the model names.
    os.makedirs(f"{work}/external")
    external = os.path.join(work, "external", "mlp.onnx")
    model = onnx.load(args.model)
    onnx.save(model, external, save_as_external_data=True, all_tensors_to_one_file=True,
              location="mlp.data", size_threshold=0)
    # Older than two seconds: the key remembers the files' digests by their
    # stat stamps (DIR/.digests), and an edit in place must still show.
    time.sleep(2.5)
    out, _ = compile(external, "h.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" not in out, "a model with external data: a miss (new model bytes)")
    out, _ = compile(external, "h2.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" in out, "the same model with external data again: a hit")
    check(len(os.listdir(os.path.join(cache, ".digests"))) > 0,
          "the digests of settled files are remembered")
    with open(f"{work}/external/mlp.data", "r+b") as f:
        data = bytearray(f.read())
        data[0] ^= 0x01
        f.seek(0)
        f.write(data)
    out, _ = compile(external, "h3.sluice", shape, f"--cache-dir={cache}")
    check("cache hit" not in out,
          "one byte of the remembered external data changed in place: a miss")

    # The toolchain: the C++ compiler's --version output is in the key, so
    # an upgraded compiler at the same path is a miss.
    wrapper = os.path.join(work, "cxx")
    version = os.path.join(work, "cxx-version.txt")
    with open(version, "w") as f:
        f.write("c++ 1.0\n")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\n[ "$1" = --version ] && exec cat {version}\nexec c++ "$@"\n')
    os.chmod(wrapper, 0o755)
    env = dict(base_env, SLUICE_CXX=wrapper)
    out, _ = compile(args.model, "t1.sluice", shape, f"--cache-dir={cache}", env=env)
    check("cache hit" not in out, "another C++ compiler (SLUICE_CXX): a miss")
    out, _ = compile(args.model, "t2.sluice", shape, f"--cache-dir={cache}", env=env)
    check("cache hit" in out, "the same C++ compiler again: a hit")
    with open(version, "w") as f:
        f.write("c++ 2.0\n")
    out, _ = compile(args.model, "t3.sluice", shape, f"--cache-dir={cache}", env=env)
    check("cache hit" not in out, "the same compiler path with another --version: a miss")

    # Off: --no-cache and SLUICE_CACHE_DIR=none write nothing anywhere.
    unused = os.path.join(work, "unused")
    out, _ = compile(args.model, "i.sluice", shape, f"--cache-dir={unused}", "--no-cache")
    check(not os.path.exists(unused) and "cached as" not in out, "--no-cache never writes")
    env = dict(base_env, SLUICE_CACHE_DIR="none", XDG_CACHE_HOME=os.path.join(work, "xdg0"))
    compile(args.model, "j.sluice", shape, env=env)
    check(not os.path.exists(os.path.join(work, "xdg0")) and
          not os.path.exists(os.path.join(work, "home")),
          "SLUICE_CACHE_DIR=none never writes")
    # On by default: $XDG_CACHE_HOME/sluice, else ~/.cache/sluice.
    env = dict(base_env, XDG_CACHE_HOME=os.path.join(work, "xdg"))
    compile(args.model, "k.sluice", shape, "--quiet", env=env)
    check(len(entries(os.path.join(work, "xdg", "sluice"))) == 1,
          "the default cache is $XDG_CACHE_HOME/sluice")
    compile(args.model, "l.sluice", shape, "--quiet", env=base_env)
    check(len(entries(os.path.join(work, "home", ".cache", "sluice"))) == 1,
          "without XDG_CACHE_HOME it is ~/.cache/sluice")

    # Python: sluice.compile(cache_dir=, no_cache=) pass through.
    try:
        import sluice
    except ImportError as e:
        sluice = None
        print(f"skip sluice.compile (no Python package: {e})")
    if sluice is not None:
        os.environ.pop("SLUICE_CACHE_DIR", None)
        os.environ["HOME"] = base_env["HOME"]
        py_cache = os.path.join(work, "py-cache")
        start = time.monotonic()
        sluice.compile(args.model, shapes={name: dims}, cache_dir=py_cache)
        t_py_first = time.monotonic() - start
        start = time.monotonic()
        loaded = sluice.compile(args.model, shapes={name: dims}, cache_dir=py_cache)
        t_py_second = time.monotonic() - start
        got = loaded.run({name: np.load(args.input)})
        want = np.load(args.expected)
        check(len(entries(py_cache)) == 1 and t_py_second < t_py_first / 4 and
              np.allclose(list(got.values())[0], want, rtol=1e-3, atol=1e-6),
              f"sluice.compile(cache_dir=): one entry, a hit ({t_py_second:.3f} s vs "
              f"{t_py_first:.3f} s), outputs as expected")
        py_none = os.path.join(work, "py-none")
        sluice.compile(args.model, shapes={name: dims}, cache_dir=py_none, no_cache=True)
        check(not os.path.exists(py_none), "sluice.compile(no_cache=True) never writes")

    if failures:
        print(f"{len(failures)} check(s) failed:\n  " + "\n  ".join(failures))
        return 1
    print("all compile cache checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
