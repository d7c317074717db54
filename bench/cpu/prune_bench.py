#!/usr/bin/env python3
"""bench/cpu/prune_bench.py: structured pruning against the dense model on the
BERT-base-sized encoder (docs/pruning.md).

One run, one machine, one thread count: Sluice's fp32 bundle, the same model
compiled with `--prune=heads=0.25,ffn=0.4` (a quarter of every layer's heads
and 40% of every MLP's units removed, chosen by importance on token sets
made here), optionally that pruned model in int8 too (`--with-int8`: prune
first, then quantize), and ONNX Runtime fp32 on the dense model, all on the
same inputs. Prints median latencies, the speed-up over Sluice fp32, the
pruned bundle's parameters and FLOPs from its report, and the relative L2
change of the outputs. The encoder's weights are random (the export needs
no download), so the error column says how much the function changed, not
how much accuracy a trained BERT would lose: the guard is run with a budget
that lets every layer be pruned as requested (--accuracy-budget, default
1e9); the digits tests (test/prune) measure accuracy on a real task. A
program, not a test: nothing asserts timings.

  .venv/bin/python bench/cpu/prune_bench.py [--threads T] [--iters N] [--rounds R]
        [--heads F] [--ffn F] [--with-int8] [--reuse] [--bin build/bin] [--out build/bench]

The variants are timed in R alternating rounds (fp32, pruned, ..., fp32,
pruned, ...) and each one's median over its rounds is reported, so that a
machine that gets busier or quieter during the run does not favour one.
`--reuse` keeps bundles a previous run compiled with the same flags (the
pruned compile runs the guard's 24 trials on BERT-base: minutes).
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench_cpu as bc  # noqa: E402
from quant_bench import make_calibration, rel_l2, run_outputs, time_ort_model  # noqa: E402


def reused(p, label, extra):
    """The bundle an earlier run compiled for `label` with the same flags,
    as compile_sluice describes one; None when there is none."""
    bundle = os.path.join(p["folder"], f"{label}.sluice")
    try:
        with open(os.path.join(bundle, "bench-flags.json")) as f:
            if json.load(f) != extra:
                return None
        with open(os.path.join(p["folder"], f"{label}.report.json")) as f:
            json.load(f)
    except (OSError, ValueError):
        return None
    bc.log(f"bert: reusing {bundle}")
    return dict(ok=True, bundle=bundle)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reuse", action="store_true",
                    help="reuse bundles compiled by an earlier run with the same flags")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--heads", type=float, default=0.25)
    ap.add_argument("--ffn", type=float, default=0.4)
    ap.add_argument("--accuracy-budget", default="1e9")
    ap.add_argument("--calibration-sets", type=int, default=1)
    ap.add_argument("--with-int8", action="store_true", help="also the pruned model in int8")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--skip-ort", action="store_true", help="time Sluice only")
    args = ap.parse_args()

    stamp = bc.export_model("bert", args.out, args.threads, False)
    p = bc.model_paths(args.out, "bert")
    cal = make_calibration(p["folder"], stamp, args.calibration_sets)
    names = stamp["outputs"]
    feeds = {n: np.load(os.path.join(p["inputs"], n + ".npy")) for n in stamp["inputs"]}
    prune = [f"--prune=heads={args.heads},ffn={args.ffn}", f"--calibration={cal}",
             f"--accuracy-budget={args.accuracy_budget}"]
    variants = [("fp32", []), ("pruned", prune)]
    if args.with_int8:
        variants.append(("pruned-int8", prune + ["--quantize=int8", "--quantization-cache=none"]))

    common = argparse.Namespace(bin=args.bin, compile_timeout=7200, run_timeout=3600,
                                iters=args.iters, warmup=args.warmup, threads=args.threads,
                                rtol=1e9, atol=1e9)
    rows, outputs, compiled = [], {}, []
    for label, extra in variants:
        common.label, common.compile_arg = label, extra
        comp = reused(p, label, extra) if args.reuse else None
        comp = comp or bc.compile_sluice("bert", args.out, stamp, common)
        if not comp["ok"]:
            bc.log(f"sluice {label}: {comp['status']}")
            rows.append((f"Sluice {label}", None, label, comp["status"]))
            continue
        with open(os.path.join(comp["bundle"], "bench-flags.json"), "w") as f:
            json.dump(extra, f)
        compiled.append((label, comp))
    medians = {label: [] for label, _ in compiled}
    for r in range(args.rounds):
        for label, comp in compiled:
            timing = bc.time_sluice("bert", args.out, stamp, comp, common)
            if timing.get("median_ms"):
                medians[label].append(timing["median_ms"])
    for label, comp in compiled:
        outputs[label] = run_outputs(args.bin, comp["bundle"], p["inputs"], names,
                                     os.path.join(p["folder"], f"{label}.outputs"), args.threads)
        report = json.load(open(os.path.join(p["folder"], f"{label}.report.json")))
        note = f"{report.get('launches')} launches, weights {report.get('weights_bytes', 0) / 2**20:.0f} MiB"
        pr = report.get("pruning")
        if pr:
            kinds = {}
            for e in pr.get("layers", []):
                k = kinds.setdefault(e["kind"], [0, 0])
                k[0] += e["kept"]
                k[1] += e["original"]
            note += "; kept " + ", ".join(f"{k} {a}/{b}" for k, (a, b) in sorted(kinds.items()))
            note += (f"; params {pr['params_after'] / pr['params_before']:.2f}x, "
                     f"FLOPs {pr['flops_after'] / pr['flops_before']:.2f}x")
        ms = sorted(medians[label])[len(medians[label]) // 2] if medians[label] else None
        note += "; rounds " + ", ".join(f"{m:.1f}" for m in medians[label]) + " ms"
        rows.append((f"Sluice {label}", ms, label, note))

    if not args.skip_ort:
        import onnxruntime as ort
        ms, _ = time_ort_model(p["onnx"], feeds, args.threads, args.iters, args.warmup)
        rows.append((f"ONNX Runtime {ort.__version__} fp32 (dense)", ms, "ort", ""))

    base = next((r[1] for r in rows if r[2] == "fp32" and r[1]), None)
    print()
    print(f"BERT-base-sized encoder (seq 128, batch 1), {args.threads} threads, "
          f"median over {args.rounds} alternating rounds of the median of {args.iters} runs "
          f"after {args.warmup} warm-up; pruning heads={args.heads}, ffn={args.ffn}")
    print("| variant | median ms | speed-up vs Sluice fp32 | rel L2 vs dense (last_hidden_state / pooled) | notes |")
    print("|---|---|---|---|---|")
    for name, ms, key, note in rows:
        err = "-"
        if key != "fp32" and key in outputs and "fp32" in outputs:
            err = " / ".join(f"{rel_l2(outputs[key][n], outputs['fp32'][n]):.4f}" for n in names)
        speed = f"{base / ms:.2f}x" if base and ms else "-"
        print(f"| {name} | {bc.fmt_ms(ms) if ms else '-'} | {speed} | {err} | {note} |")


if __name__ == "__main__":
    main()
