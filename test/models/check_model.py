#!/usr/bin/env python3
"""Checks one exported model (a folder written by export_models.py) on a target
(the reference evaluator, or the cpu target: compiled to a bundle, then run by
sluice-run): against torch's recorded outputs and against ONNX
Runtime run now on the same inputs, both at rtol 1e-4 (atol 1e-5 for values
near zero). Input shapes differ from the export shapes, so the dynamic axes
are specialized with --shape.

Usage: check_model.py --bin BUILD/bin [--target reference|cpu] MODEL_DIR
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    return proc.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rtol", default="1e-4")
    ap.add_argument("--atol", default="1e-5")
    ap.add_argument("--target", default="reference", choices=["reference", "cpu"])
    ap.add_argument("model_dir")
    args = ap.parse_args()
    with open(os.path.join(args.model_dir, "manifest.json")) as f:
        manifest = json.load(f)
    model = os.path.join(args.model_dir, "model.onnx")
    inputs = [f"{n}={os.path.join(args.model_dir, 'inputs', n + '.npy')}"
              for n in manifest["inputs"]]
    shapes = [f"--shape={s}" for s in manifest["shapes"]]
    tolerances = [f"--rtol={args.rtol}", f"--atol={args.atol}"]
    sluice_run = os.path.join(args.bin, "sluice-run")

    work = tempfile.TemporaryDirectory()
    if args.target == "cpu":
        bundle = os.path.join(work.name, "model.sluice")
        if run([os.path.join(args.bin, "sluice-compile"), model, "-o", bundle, *shapes,
                "--report", os.path.join(work.name, "report.json")]):
            return 1
        with open(os.path.join(work.name, "report.json")) as f:
            report = json.load(f)
        print(f"cpu bundle: {report['kernels']} kernels, {report['library_calls']} "
              f"library calls, arena {report['arena_bytes']} B, weights "
              f"{report['weights_bytes']} B")
        target_args = [bundle]
    else:
        target_args = [model, "--reference", *shapes]

    torch_expected = [f"{n}={os.path.join(args.model_dir, 'expected', n + '.npy')}"
                      for n in manifest["outputs"]]
    status = run([sluice_run, *target_args, *inputs,
                  "--expect", *torch_expected, *tolerances])

    import onnxruntime as ort  # noqa: PLC0415
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = {n: np.load(os.path.join(args.model_dir, "inputs", n + ".npy"))
             for n in manifest["inputs"]}
    with tempfile.TemporaryDirectory() as tmp:
        ort_expected = []
        for n, value in zip(manifest["outputs"], session.run(manifest["outputs"], feeds)):
            path = os.path.join(tmp, n + ".npy")
            np.save(path, value)
            ort_expected.append(f"{n}={path}")
        print("against ONNX Runtime:")
        status |= run([sluice_run, *target_args, *inputs,
                       "--expect", *ort_expected, *tolerances])
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main())
