#!/usr/bin/env python3
"""The check of expert parallelism (docs/parallel.md) for one MoE test
model (a test/moe folder) at --ep=N, as real MPI ranks on the cpu target,
or with --target cuda on the machine's GPU (the ranks share it: the
host-staged transport; exits 77 where nvidia-smi lists no GPU).

1. Compiles the single-device bundle and the --ep=N one, each with --report.
2. Runs the single bundle on the model's inputs (--save-outputs, and its
   --report), then the --ep bundle as N ranks (sluice-run --ranks=N) against
   the single device's outputs at rtol 1e-3 / atol 1e-4 (and the ONNX Runtime
   outputs in expected/), with --report.
3. Checks the compile report: world_size N, parallel {ep: N, grid [N],
   axes ["ep"], tp 1, pp 1}, moe [{experts E, experts_per_rank E/N, top_k,
   gating}], one all_reduce per MoE layer of the layer's output bytes, and
   each rank's weights equal to the single bundle's less (N-1)/N of the
   stacked expert weights (read from model.onnx: initializers whose dim 0 is
   E), within 64-byte alignment per tensor.
4. Checks the run-time expert-load profile (sluice-run --report, key
   expert_load) of both runs against the hand count in expected_load.json
   (made by export_moe.py in numpy from the router's own outputs):
   tokens_per_expert equal, tokens_per_rank the sums of blocks of E/N
   experts, imbalance = max / mean of tokens_per_rank (of tokens_per_expert
   for the single device).

usage: check_ep.py --bin BUILD/bin --ep N [--target cpu|cuda [--gpu-arch SM]] MODEL_DIR
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402
from check_parallel import ATOL, RTOL, Tools, collective_totals  # noqa: E402


def expert_weight_bytes(model_path, experts):
    """Bytes and count of the stacked expert initializers ([E, ...])."""
    model = onnx.load(model_path)
    total, count = 0, 0
    for init in model.graph.initializer:
        if len(init.dims) >= 2 and init.dims[0] == experts:
            total += numpy_helper.to_array(init).nbytes
            count += 1
    return total, count


def check_load(report, where, hand, ranks):
    """Failures of the expert_load profile in a sluice-run report."""
    failures = []
    loads = report.get("expert_load")
    if not isinstance(loads, list) or len(loads) != 1:
        return [f"{where}: expert_load is {loads!r}, expected one entry (one MoE layer)"]
    load = loads[0]
    per_expert = load.get("tokens_per_expert")
    if per_expert != hand:
        failures.append(f"{where}: tokens_per_expert {per_expert} != the hand count {hand}")
    block = len(hand) // ranks
    per_rank = [sum(hand[r * block:(r + 1) * block]) for r in range(ranks)]
    if load.get("tokens_per_rank") != per_rank:
        failures.append(f"{where}: tokens_per_rank {load.get('tokens_per_rank')} != {per_rank} "
                        f"({block} experts per rank)")
    # Over ranks when there are several, over experts for one rank.
    over, counts = ("ranks", per_rank) if ranks > 1 else ("experts", hand)
    imbalance = max(counts) / (sum(counts) / len(counts)) if sum(counts) else 1.0
    if not isinstance(load.get("imbalance"), (int, float)) or abs(
            load["imbalance"] - imbalance) > 1e-6 or load.get("imbalance_over") != over:
        failures.append(f"{where}: imbalance {load.get('imbalance')!r} over "
                        f"{load.get('imbalance_over')!r} != max/mean of tokens_per_{over[:-1]} "
                        f"{imbalance:.6f}")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--ep", type=int, required=True)
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu",
                        help="the bundles' target (cuda: the ranks share the machine's GPUs)")
    parser.add_argument("--gpu-arch", help="cuda: sluice-compile --gpu-arch")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("model_dir")
    args = parser.parse_args()
    if args.target == "cuda" and not st.gpu_present():
        print(st.NO_GPU)
        return st.SKIPPED
    model_dir = os.path.normpath(args.model_dir)
    name = os.path.basename(model_dir)
    model = os.path.join(model_dir, "model.onnx")
    manifest = st.read_manifest(model_dir)
    with open(os.path.join(model_dir, "expected_load.json")) as f:
        hand = json.load(f)["tokens_per_expert"]
    experts, n = len(hand), args.ep
    target_flags = [f"--target={args.target}"]
    if args.gpu_arch:
        target_flags.append(f"--gpu-arch={args.gpu_arch}")
    tools = Tools(args.bin, args.timeout, target_flags)
    inputs = st.tensor_paths(model_dir, "inputs", manifest["inputs"])
    failures = []

    with tempfile.TemporaryDirectory() as work:
        bundles, reports = {}, {}
        for key, flags in (("single", []), ("ep", [f"--ep={n}"])):
            bundles[key] = os.path.join(work, key + ".sluice")
            rc, out, _ = tools.call([tools.compile, model, "-o", bundles[key], "--quiet",
                                     f"--report={bundles[key]}.json", *tools.target_flags,
                                     *flags])
            if rc != 0:
                sys.stdout.write(out)
                print(f"FAIL: sluice-compile {' '.join(flags)} {name} failed")
                return 1
            with open(bundles[key] + ".json") as f:
                reports[key] = json.load(f)
        single, par = reports["single"], reports["ep"]

        # The compile report.
        if par.get("world_size") != n:
            failures.append(f"world_size {par.get('world_size')} != {n}")
        parallel = par.get("parallel", {})
        want = {"tp": 1, "pp": 1, "ep": n, "grid": [n], "axes": ["ep"]}
        for key, value in want.items():
            if parallel.get(key) != value:
                failures.append(f"parallel.{key} is {parallel.get(key)!r}, expected {value!r}")
        moe = par.get("moe")
        if not isinstance(moe, list) or len(moe) != 1:
            failures.append(f"moe is {moe!r}, expected one MoE layer")
        else:
            entry = moe[0]
            if (entry.get("experts"), entry.get("experts_per_rank")) != (experts, experts // n):
                failures.append(f"moe entry {entry} (expected experts {experts}, "
                                f"experts_per_rank {experts // n})")
        if (single.get("moe") or [{}])[0].get("experts_per_rank") != experts:
            failures.append(f"single report's moe {single.get('moe')!r}: experts_per_rank "
                            f"should be {experts}")
        totals = collective_totals(par)
        out_bytes = int(np.load(st.tensor_path(model_dir, "expected",
                                               manifest["outputs"][0])).nbytes)
        # A ring all-reduce sends 2 (N-1)/N of the tensor per rank.
        ring = out_bytes * 2 * (n - 1) // n
        if totals.get("all_reduce", (0, 0)) != (1, ring) or set(totals) != {"all_reduce"}:
            failures.append(f"collectives {totals}: expected one all_reduce of the MoE layer's "
                            f"{out_bytes}-byte output ({ring} bytes sent per rank)")
        expert_bytes, tensors = expert_weight_bytes(model, experts)
        expected = single["weights_bytes"] - expert_bytes * (n - 1) / n
        per_rank = par.get("weights_bytes_per_rank", [])
        if len(per_rank) != n or any(abs(b - expected) > 64 * (tensors + 1) for b in per_rank):
            failures.append(f"weights_bytes_per_rank {per_rank}: expected {expected:.0f} each "
                            f"(single {single['weights_bytes']} less {n - 1}/{n} of the "
                            f"{expert_bytes} expert bytes)")

        # The runs: single, then N ranks against it and against ONNX Runtime.
        saved = os.path.join(work, "single-outputs")
        single_run = os.path.join(work, "single-run.json")
        rc, out, _ = tools.call([tools.run_tool, bundles["single"], *inputs,
                                 f"--save-outputs={saved}", f"--report={single_run}"])
        if rc != 0:
            sys.stdout.write(out)
            print("FAIL: the single-device bundle did not run")
            return 1
        expect = []
        for o in manifest["outputs"]:
            expect += ["--expect", f"{o}={os.path.join(saved, o + '.npy')}"]
        ep_run = os.path.join(work, "ep-run.json")
        rc, out, seconds = tools.call([tools.run_tool, bundles["ep"], f"--ranks={n}", *inputs,
                                       *expect, f"--rtol={RTOL}", f"--atol={ATOL}",
                                       "--threads=1", f"--report={ep_run}"])
        sys.stdout.write(out)
        if rc != 0:
            failures.append(f"the {n} ranks' outputs differ from the single device's or the run "
                            f"failed (exit {rc})")
        rc, out, _ = tools.call([tools.run_tool, bundles["ep"], f"--ranks={n}", *inputs,
                                 "--threads=1", "--expect",
                                 *st.tensor_paths(model_dir, "expected", manifest["outputs"]),
                                 f"--rtol={RTOL}", f"--atol={ATOL}"])
        sys.stdout.write(out)
        if rc != 0:
            failures.append(f"the {n} ranks' outputs differ from ONNX Runtime's (exit {rc})")

        # The expert-load profile, by hand.
        for where, path, ranks in (("single run", single_run, 1), (f"--ep={n} run", ep_run, n)):
            if not os.path.exists(path):
                failures.append(f"{where}: sluice-run --report wrote nothing")
                continue
            with open(path) as f:
                report = json.load(f)
            failures += check_load(report, where, hand, ranks)
            if ranks == n:
                print(f"expert load: {json.dumps(report.get('expert_load'))}")

    print(f"{name} --ep={n} ({args.target}): weights per rank {per_rank} (single {single['weights_bytes']}), "
          f"collectives {totals}, {n}-rank run {seconds:.2f} s")
    return st.finish(failures, "check_ep: ok", "check_ep: FAILED")


if __name__ == "__main__":
    sys.exit(main())
