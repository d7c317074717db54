#!/usr/bin/env python3
"""Checks one exported model (a folder written by export_models.py) on a target
(the reference evaluator, or the cpu target: compiled to a bundle, then run by
sluice-run): against torch's recorded outputs and against ONNX
Runtime run now on the same inputs, both at rtol 1e-4 (atol 1e-5 for values
near zero). Input shapes differ from the export shapes, so the dynamic axes
are specialized with --shape.

On the cpu target it also counts the launches (kernels + library calls) of
each transformer layer from --report's steps and fails above the layer's
budget (LAYERS below): a layer spans the steps from one that holds its first
node (`start`, a regex over ONNX node names) to the step before the next
layer's start, or before the first step matching `end` for the last layer
(the last step with `to_end`). A manifest's "layers" entry overrides LAYERS.

On the cuda target the same checks run on the GPU (exit 77, ctest's skip, where
there is none); --compile-only builds the bundle with nvcc and checks the launch
budget without running it. On either target, --precision=fp16|bf16 compiles in
half precision (inputs and outputs stay f32) and checks outputs by relative L2
error (sluice-run --max-rel-l2, 1e-2 by default) against both references; the
launch budgets are the same.

Usage: check_model.py --bin BUILD/bin [--target reference|cpu|cuda]
                      [--precision fp32|fp16|bf16] [--compile-only] MODEL_DIR
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402


# Per-model layer spans and launch budgets (docs/architecture.md, "What it
# gives": BERT and GPT-2 layers at most 8 launches, a LLaMA block at most 10).
LAYERS = {
    "bert_encoder": {"layers": 2, "start": r"^/qkv(_\d+)?/MatMul$", "end": r"^/Gather_3$|^/pool/",
                     "max_launches": 8},
    "gpt_decoder": {"layers": 2, "start": r"^/ln1(_\d+)?/", "end": r"^/ln_f/", "max_launches": 8},
    # From the (horizontally fused) q projection to the next one: the window
    # holds one RMSNorm per layer, as the layer itself does.
    "llama_block": {"layers": 2, "start": r"^/q(_\d+)?/MatMul$", "end": r"^/lm_head/",
                    "max_launches": 10},
    # From the q projection to the next one, as LLaMA; the last layer runs
    # to the end, so it holds the final RMS norm as the others hold the next
    # layer's first.
    "t5_block": {"layers": 2, "start": r"^/q(_\d+)?/MatMul$", "end": None, "to_end": True,
                 "max_launches": 8},
    "vit": {"layers": 2, "start": r"^/ln1(_\d+)?/", "end": r"^/ln/", "max_launches": 8},
}


def layer_launches(steps, spec):
    """Launch counts of each layer, from the report's steps in run order."""
    import re  # noqa: PLC0415
    start, end = re.compile(spec["start"]), re.compile(spec.get("end") or "$^")
    starts = [i for i, s in enumerate(steps) if any(start.search(n) for n in s["nodes"])]
    # A layer starts at the first step of a run of steps holding its start nodes.
    starts = [i for k, i in enumerate(starts) if k == 0 or starts[k - 1] != i - 1]
    ends = [i for i, s in enumerate(steps)
            if any(end.search(n) for n in s["nodes"]) and starts and i > starts[-1]]
    if spec.get("to_end"):  # the last layer ends with the graph
        ends = [len(steps)] if starts else []
    if len(starts) != spec["layers"] or not ends:
        return None
    bounds = starts + [ends[0]]
    return [bounds[k + 1] - bounds[k] for k in range(spec["layers"])]


def run(cmd):
    """Runs a tool, echoing it and its output; returns its exit status."""
    return st.run(cmd, echo=True, show=True).rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rtol", default="1e-4")
    ap.add_argument("--atol", default="1e-5")
    ap.add_argument("--target", default="reference", choices=["reference", "cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                    help="compile with --precision; half precisions are checked by "
                         "relative L2 error (--max-rel-l2) instead of rtol/atol")
    ap.add_argument("--quantize", choices=["w8a16", "w4a16"],
                    help="compile with --quantize (weight-only); checked by relative L2 "
                         "error (--max-rel-l2) like the half precisions")
    ap.add_argument("--max-rel-l2", default="1e-2")
    ap.add_argument("--gpu-arch", help="cuda: sluice-compile --gpu-arch")
    ap.add_argument("--no-launch-budget", action="store_true",
                    help="skip LAYERS' launch budget (a model folder that shares a name with "
                         "one of test/models, e.g. the zoo's vit)")
    ap.add_argument("--compile-only", action="store_true",
                    help="build the bundle (and count launches) but do not run it: "
                         "checks the cuda target's generated code with nvcc where "
                         "there is no GPU")
    ap.add_argument("model_dir")
    args = ap.parse_args()
    if args.target == "cuda" and not args.compile_only and not st.gpu_present():
        print(st.NO_GPU)
        return st.SKIPPED
    manifest = st.read_manifest(args.model_dir)
    model = os.path.join(args.model_dir, "model.onnx")
    inputs = st.tensor_args(args.model_dir, "inputs", manifest["inputs"])
    shapes = [f"--shape={s}" for s in manifest["shapes"]]
    tolerances = ([f"--rtol={args.rtol}", f"--atol={args.atol}"]
                  if args.precision == "fp32" and not args.quantize
                  else [f"--max-rel-l2={args.max_rel_l2}"])
    sluice_run = st.tool(args.bin, "sluice-run")

    budget_failed = False
    work = tempfile.TemporaryDirectory()
    if args.target in ("cpu", "cuda"):
        bundle = os.path.join(work.name, "model.sluice")
        extra = [f"--target={args.target}"]
        if args.precision != "fp32":
            extra.append(f"--precision={args.precision}")
        if args.quantize:
            extra.append(f"--quantize={args.quantize}")
        if args.gpu_arch:
            extra.append(f"--gpu-arch={args.gpu_arch}")
        if st.compile_bundle(args.bin, model, bundle,
                             [*shapes, *extra, "--report", os.path.join(work.name, "report.json")],
                             echo=True, show=True).rc:
            return 1
        with open(os.path.join(work.name, "report.json")) as f:
            report = json.load(f)
        print(f"{args.target} bundle: {report['kernels']} kernels, {report['library_calls']} "
              f"library calls, {report.get('host_steps', 0)} host steps, arena "
              f"{report['arena_bytes']} B, weights {report['weights_bytes']} B")
        for remark in report.get("remarks", []):
            if "runs on the host" in remark:
                print("  " + remark)
        # A model folder's manifest may carry its own span (bench/gpu/check_export.py).
        spec = manifest.get("layers") or (
            None if args.no_launch_budget
            else LAYERS.get(os.path.basename(os.path.normpath(args.model_dir))))
        if spec:
            counts = layer_launches(report["steps"], spec)
            if counts is None:
                print(f"cannot find {spec['layers']} layers (start {spec['start']!r}, "
                      f"end {spec['end']!r}) in the report's steps")
                return 1
            print(f"launches per layer: {counts} (budget {spec['max_launches']}); "
                  f"{report['launches']} launches in all")
            if max(counts) > spec["max_launches"]:
                print("FAIL: a layer takes more launches than its budget")
                budget_failed = True
        target_args = [bundle]
        if args.compile_only:
            return 1 if budget_failed else 0
    else:
        target_args = [model, "--reference", *shapes]

    torch_expected = st.tensor_args(args.model_dir, "expected", manifest["outputs"])
    status = run([sluice_run, *target_args, *inputs,
                  "--expect", *torch_expected, *tolerances])

    import onnxruntime as ort  # noqa: PLC0415
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = st.load_tensors(args.model_dir, "inputs", manifest["inputs"])
    with tempfile.TemporaryDirectory() as tmp:
        ort_expected = []
        for n, value in zip(manifest["outputs"], session.run(manifest["outputs"], feeds)):
            path = os.path.join(tmp, n + ".npy")
            np.save(path, value)
            ort_expected.append(f"{n}={path}")
        print("against ONNX Runtime:")
        status |= run([sluice_run, *target_args, *inputs,
                       "--expect", *ort_expected, *tolerances])
    return 1 if status or budget_failed else 0


if __name__ == "__main__":
    sys.exit(main())
