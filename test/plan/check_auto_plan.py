#!/usr/bin/env python3
"""The automatic plan's check on a test model (docs/parallel.md, "Automatic plan").

1. With no memory pressure, `--devices=4 --auto` picks world size 1 and
   says why; the bundle runs on one rank and matches the model's expected
   outputs.
2. With `--device-memory` at 60% of the model's weights, it picks world
   size >= 2 whose largest rank holds at most that of weights, and the
   bundle runs as that many MPI ranks (sluice-run --ranks) and matches
   the expected outputs at rtol 1e-3 / atol 1e-4.

With --axis=pp|ep (and --cluster, --devices, --memory): one compile under
that cluster file and memory limit must choose a plan that uses the axis
(pp: with micro-batches, so that the driver re-imports the model at the
micro-batch's shapes; ep: experts spread over the ranks), every rank's
weights under the limit, and the bundle must match the expected outputs as
that many ranks.

usage: check_auto_plan.py --bin BUILD/bin MODEL_DIR
       check_auto_plan.py --bin BUILD/bin --axis=pp|ep --devices=N --memory=BYTES
                          [--cluster=FILE.json] MODEL_DIR
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402


def compile_auto(bin_dir, model_dir, shape, out, extra, devices=4):
    report = out + ".json"
    flags = ["--devices=%d" % devices, "--auto", "--quiet", "--report=" + report] + extra
    if shape:
        flags.append("--shape=" + shape)
    st.compile_bundle(bin_dir, os.path.join(model_dir, "model.onnx"), out, flags, show=True,
                      check=True)
    with open(report) as f:
        return json.load(f)


def run(bin_dir, model_dir, bundle, ranks, manifest):
    cmd = [st.tool(bin_dir, "sluice-run"), bundle]
    if ranks > 1:
        cmd.append("--ranks=%d" % ranks)
    cmd += st.tensor_paths(model_dir, "inputs", manifest["inputs"])
    for path in st.tensor_paths(model_dir, "expected", manifest["outputs"]):
        cmd += ["--expect", path]
    cmd += ["--rtol=1e-3", "--atol=1e-4"]
    result = st.run(cmd)
    sys.stdout.write(result.out)
    return result.rc == 0


def check_axis(args, manifest, shape):
    """The --axis case: the plan under the given cluster and limit uses the
    axis, fits, and its bundle runs correctly. Returns the failures."""
    failures = []
    extra = ["--device-memory=%d" % args.memory]
    if args.cluster:
        extra.append("--cluster=" + args.cluster)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "axis.sluice")
        report = compile_auto(args.bin, args.model_dir, shape, out, extra, args.devices)
        parallel, world = report["parallel"], report["world_size"]
        largest = max(report["weights_bytes_per_rank"])
        print("limit %d bytes: world size %d, parallel %s, largest rank %d bytes: %s"
              % (args.memory, world, json.dumps(parallel), largest, report["plan"]["reason"]))
        if parallel.get(args.axis, 1) < 2:
            failures.append("expected a plan with %s >= 2, got %s" % (args.axis, parallel))
        if args.axis == "pp" and parallel.get("micro_batches", 1) < 2:
            failures.append("expected micro-batches >= 2 (the re-import), got %s" % parallel)
        if args.axis in parallel and args.axis not in parallel.get("axes", []):
            failures.append("parallel.axes %s does not name %s" % (parallel.get("axes"), args.axis))
        if largest > args.memory:
            failures.append("largest rank holds %d bytes > limit %d" % (largest, args.memory))
        if not run(args.bin, args.model_dir, out, world, manifest):
            failures.append("the %d-rank bundle does not match" % world)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--axis", choices=["pp", "ep"])
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--memory", type=int, default=0)
    parser.add_argument("--cluster")
    parser.add_argument("model_dir")
    args = parser.parse_args()
    manifest = st.read_manifest(args.model_dir)
    shape = manifest["shapes"][0] if manifest.get("shapes") else None
    if args.axis:
        return st.finish(check_axis(args, manifest, shape), "check_auto_plan: ok",
                         "check_auto_plan: FAILED")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        free = compile_auto(args.bin, args.model_dir, shape, os.path.join(tmp, "free.sluice"), [])
        reason = free["plan"]["reason"]
        print("no limit:", free["world_size"], reason)
        if free["world_size"] != 1 or "splitting does not pay" not in reason:
            failures.append("no memory pressure: expected world size 1 and why, got %d (%s)"
                            % (free["world_size"], reason))
        if not run(args.bin, args.model_dir, os.path.join(tmp, "free.sluice"), 1, manifest):
            failures.append("the world-size-1 bundle does not match")

        weights = free["weights_bytes_per_rank"][0]
        limit = int(weights * 0.6)
        tight = compile_auto(args.bin, args.model_dir, shape, os.path.join(tmp, "tight.sluice"),
                             ["--device-memory=%d" % limit])
        world = tight["world_size"]
        largest = max(tight["weights_bytes_per_rank"])
        print("limit %d bytes (weights %d): world size %d, largest rank %d bytes: %s"
              % (limit, weights, world, largest, tight["plan"]["reason"]))
        if world < 2:
            failures.append("limit %d below the weights %d: world size %d" % (limit, weights, world))
        if largest > limit:
            failures.append("largest rank holds %d bytes > limit %d" % (largest, limit))
        if not run(args.bin, args.model_dir, os.path.join(tmp, "tight.sluice"), world, manifest):
            failures.append("the %d-rank bundle does not match" % world)
    return st.finish(failures, "check_auto_plan: ok", "check_auto_plan: FAILED")


if __name__ == "__main__":
    sys.exit(main())
