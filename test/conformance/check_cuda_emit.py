#!/usr/bin/env python3
"""The cuda target compiles what the cpu target compiles, checked without a GPU.

For every ONNX backend test case, compiles the model for the cpu target up to
its generated source (`sluice-compile --emit=source`: the emit phase without
the C++ compiler) and, where that succeeds, for the cuda target the same way
(no nvcc). Fails, listing each case and the cuda emitter's first error line,
when the cuda target refuses a model the cpu target takes. Shapes and shape
tensors are bound from each case's first data set as run_conformance.py does.
"""

import argparse
import concurrent.futures
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_conformance as conf  # noqa: E402


def emit(bindir, model, target, shapes, binds, timeout):
    cmd = [os.path.join(bindir, "sluice-compile"), model, "--emit=source", "-o", os.devnull,
           "--quiet", f"--target={target}", *shapes, *binds]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def check_case(bindir, suite, path, timeout):
    """('skipped' | 'passed' | 'failed', message) for one case."""
    model = os.path.join(path, "model.onnx")
    data_sets = sorted(glob.glob(os.path.join(path, "test_data_set_*")))
    if not data_sets:
        return "skipped", "no data set"
    names = conf.input_names(model)
    inputs = conf.numbered(data_sets[0], "input")
    shapes, infos = conf.shape_flags(model, names, inputs)
    # Shape tensors fed as graph inputs: bound when the plain compile fails,
    # as the conformance run does.
    bound = {name for name, info in zip(names, infos)
             if info is not None and (info[1] in conf.INTEGER_TYPES or
                                      (len(info[0]) <= 1 and (info[0] or [1])[0] <= 16))}
    binds = [f"--bind={name}={p}" for name, p in zip(names, inputs) if name in bound]
    try:
        cpu = emit(bindir, model, "cpu", shapes, [], timeout)
        used = []
        if cpu.returncode != 0 and binds and "unsupported ops" not in cpu.stderr:
            cpu = emit(bindir, model, "cpu", shapes, binds, timeout)
            used = binds
        if cpu.returncode != 0:
            return "skipped", "cpu target refuses it"
        cuda = emit(bindir, model, "cuda", shapes, used, timeout)
    except subprocess.TimeoutExpired:
        return "failed", "timed out"
    if cuda.returncode != 0:
        lines = [l for l in cuda.stderr.splitlines() if l.strip()]
        return "failed", lines[0] if lines else f"exit {cuda.returncode}"
    return "passed", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with sluice-compile")
    ap.add_argument("--data", default=conf.DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    args = ap.parse_args()

    cases = [(s, p) for s, p in conf.list_cases(args.data) if args.filter in os.path.basename(p)]
    if not cases:
        print(f"no ONNX backend test cases under {args.data}", file=sys.stderr)
        return 1
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(check_case, args.bin, s, p, args.timeout): (s, p) for s, p in cases}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            suite, path = futures[future]
            status, message = future.result()
            counts[status] += 1
            if status == "failed":
                failures.append(f"{suite}/{os.path.basename(path)}: {message}")
            if done % 100 == 0:
                print(f"[cuda-emit] {done}/{len(cases)}", file=sys.stderr, flush=True)
    for line in sorted(failures):
        print("cuda refuses:", line)
    print(f"cuda emitter: {counts['passed']} of {counts['passed'] + counts['failed']} cases the "
          f"cpu target compiles ({counts['skipped']} the cpu target refuses)")
    print(f"{counts['passed']} passed, {counts['failed']} failed")
    if counts["passed"] == 0:
        print("no case compiled for the cpu target: nothing was checked", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
