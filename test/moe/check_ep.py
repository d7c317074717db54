#!/usr/bin/env python3
"""The check of expert parallelism (docs/parallel.md) for MoE test models (test/moe
folders) at --ep=N, as real MPI ranks on the cpu target, or with --target
cuda on the machine's GPU (the ranks share it: the host-staged transport;
exits 77 where nvidia-smi lists no GPU). For each MODEL_DIR:

1. Compiles the single-device bundle and the --ep=N one, each with --report.
2. Runs the single bundle on the model's inputs against the ONNX Runtime
   outputs in expected/ (rtol 1e-4 / atol 1e-5, --save-outputs, --report),
   then the --ep bundle as N ranks (sluice-run --ranks=N) against the single
   device's outputs at rtol 1e-3 / atol 1e-4, with --report.
3. Checks the compile report: world_size N, parallel {ep: N, grid [N],
   axes ["ep"], tp 1, pp 1}, moe [{experts E, experts_per_rank E/N, top_k,
   gating}] (the single bundle's too: the block was recognized as one
   sluice.moe), one all_reduce per MoE layer of the layer's output bytes,
   and each rank's weights equal to the single bundle's less (N-1)/N of the
   expert weights (expected_load.json's expert_weight_bytes, or the
   initializers of model.onnx whose dim 0 is E), within 64-byte alignment
   per tensor.
4. Checks the run-time expert-load profile (sluice-run --report, key
   expert_load) of both runs against the hand count in expected_load.json
   (made by the exporter in numpy from the router's own outputs):
   tokens_per_expert equal, tokens_per_rank the sums of blocks of E/N
   experts, imbalance = max / mean of tokens_per_rank (of tokens_per_expert
   for the single device).
5. With --cuda-source, also writes the cuda target's source of the single
   bundle (--emit=source) and checks that the block runs as the cuda MoE
   kernel (sluice_cuda_moe), not as its dense form.

usage: check_ep.py --bin BUILD/bin --ep N [--target cpu|cuda [--gpu-arch SM]] [--cuda-source]
                   MODEL_DIR...
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


def compile_bundles(tools, model, work, n):
    """{single, ep}: (bundle path, compile report), or a failure message."""
    bundles, reports = {}, {}
    for key, flags in (("single", []), ("ep", [f"--ep={n}"])):
        bundles[key] = os.path.join(work, key + ".sluice")
        rc, out, _ = tools.call([tools.compile, model, "-o", bundles[key], "--quiet",
                                 f"--report={bundles[key]}.json", *tools.target_flags, *flags])
        if rc != 0:
            sys.stdout.write(out)
            return None, f"sluice-compile {' '.join(flags)} failed"
        with open(bundles[key] + ".json") as f:
            reports[key] = json.load(f)
    return (bundles, reports), None


def check_compile_report(single, par, n, experts, out_bytes, expert_bytes, tensors):
    """Failures of the --ep compile report against the single one."""
    failures = []
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
    # A ring all-reduce sends 2 (N-1)/N of the tensor per rank.
    ring = out_bytes * 2 * (n - 1) // n
    if totals.get("all_reduce", (0, 0)) != (1, ring) or set(totals) != {"all_reduce"}:
        failures.append(f"collectives {totals}: expected one all_reduce of the MoE layer's "
                        f"{out_bytes}-byte output ({ring} bytes sent per rank)")
    expected = single["weights_bytes"] - expert_bytes * (n - 1) / n
    per_rank = par.get("weights_bytes_per_rank", [])
    if len(per_rank) != n or any(abs(b - expected) > 64 * (tensors + 1) for b in per_rank):
        failures.append(f"weights_bytes_per_rank {per_rank}: expected {expected:.0f} each "
                        f"(single {single['weights_bytes']} less {n - 1}/{n} of the "
                        f"{expert_bytes} expert bytes)")
    return failures, f"weights per rank {per_rank} (single {single['weights_bytes']}), " \
                     f"collectives {totals}"


def check_runs(tools, bundles, model_dir, manifest, work, n):
    """Runs the single bundle against ONNX Runtime and the --ep one as n
    ranks against the single bundle: (failures, reports by run, seconds)."""
    failures = []
    inputs = st.tensor_paths(model_dir, "inputs", manifest["inputs"])
    saved = os.path.join(work, "single-outputs")
    paths = {"single": os.path.join(work, "single-run.json"),
             "ep": os.path.join(work, "ep-run.json")}
    rc, out, _ = tools.call([tools.run_tool, bundles["single"], *inputs, "--expect",
                             *st.tensor_paths(model_dir, "expected", manifest["outputs"]),
                             "--rtol=1e-4", "--atol=1e-5",
                             f"--save-outputs={saved}", f"--report={paths['single']}"])
    sys.stdout.write(out)
    if rc != 0:
        return ["the single-device bundle failed or differs from ONNX Runtime"], {}, 0.0
    expect = []
    for o in manifest["outputs"]:
        expect += ["--expect", f"{o}={os.path.join(saved, o + '.npy')}"]
    rc, out, seconds = tools.call([tools.run_tool, bundles["ep"], f"--ranks={n}", *inputs,
                                   *expect, f"--rtol={RTOL}", f"--atol={ATOL}",
                                   "--threads=1", f"--report={paths['ep']}"])
    sys.stdout.write(out)
    if rc != 0:
        failures.append(f"the {n} ranks' outputs differ from the single device's or the run "
                        f"failed (exit {rc})")
    reports = {}
    for key, path in paths.items():
        if os.path.exists(path):
            with open(path) as f:
                reports[key] = json.load(f)
    return failures, reports, seconds


def check_cuda_source(tools, model, work):
    """Failures of the cuda source of `model`: the MoE must run as the
    device MoE kernel."""
    source = os.path.join(work, "model.cu")
    rc, out, _ = tools.call([tools.compile, model, "--target=cuda", "--emit=source", "-o", source])
    if rc != 0:
        sys.stdout.write(out)
        return ["sluice-compile --target=cuda --emit=source failed"]
    with open(source) as f:
        text = f.read()
    if "sluice_cuda_moe<" not in text:
        return ["the cuda source does not run the block as the MoE kernel (sluice_cuda_moe)"]
    return []


def check_model(args, tools, model_dir):
    """Every check of one model folder: its failures and a summary line."""
    name = os.path.basename(model_dir)
    model = os.path.join(model_dir, "model.onnx")
    manifest = st.read_manifest(model_dir)
    with open(os.path.join(model_dir, "expected_load.json")) as f:
        load = json.load(f)
    hand, n = load["tokens_per_expert"], args.ep
    experts = len(hand)
    if "expert_weight_bytes" in load:
        # Experts written as a list have no stacked initializers; the bundle
        # stacks them into at most six tensors (w1, b1, w2, b2, w3, b3).
        expert_bytes, tensors = load["expert_weight_bytes"], 6
    else:
        expert_bytes, tensors = expert_weight_bytes(model, experts)
    out_bytes = int(np.load(st.tensor_path(model_dir, "expected",
                                           manifest["outputs"][0])).nbytes)
    with tempfile.TemporaryDirectory() as work:
        compiled, error = compile_bundles(tools, model, work, n)
        if error:
            return [error], f"{name}: not compiled"
        bundles, reports = compiled
        failures, summary = check_compile_report(reports["single"], reports["ep"], n, experts,
                                                 out_bytes, expert_bytes, tensors)
        run_failures, run_reports, seconds = check_runs(tools, bundles, model_dir, manifest,
                                                        work, n)
        failures += run_failures
        for key, where, ranks in (("single", "single run", 1), ("ep", f"--ep={n} run", n)):
            if key not in run_reports:
                failures.append(f"{where}: sluice-run --report wrote nothing")
                continue
            failures += check_load(run_reports[key], where, hand, ranks)
        if args.cuda_source:
            failures += check_cuda_source(tools, model, work)
    return [f"{name}: {f}" for f in failures], \
        f"{name} --ep={n} ({args.target}): {summary}, {n}-rank run {seconds:.2f} s"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--ep", type=int, required=True)
    parser.add_argument("--target", choices=["cpu", "cuda"], default="cpu",
                        help="the bundles' target (cuda: the ranks share the machine's GPUs)")
    parser.add_argument("--gpu-arch", help="cuda: sluice-compile --gpu-arch")
    parser.add_argument("--cuda-source", action="store_true",
                        help="also check the cuda source of each model (--emit=source)")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("model_dirs", nargs="+")
    args = parser.parse_args()
    if args.target == "cuda" and not st.gpu_present():
        print(st.NO_GPU)
        return st.SKIPPED
    target_flags = [f"--target={args.target}"]
    if args.gpu_arch:
        target_flags.append(f"--gpu-arch={args.gpu_arch}")
    tools = Tools(args.bin, args.timeout, target_flags)
    failures, summaries = [], []
    for model_dir in args.model_dirs:
        model_failures, summary = check_model(args, tools, os.path.normpath(model_dir))
        failures += model_failures
        summaries.append(summary)
    for summary in summaries:
        print(summary)
    return st.finish(failures, "check_ep: ok", "check_ep: FAILED")


if __name__ == "__main__":
    sys.exit(main())
