#!/usr/bin/env python3
"""bench/cpu/quant_bench.py: int8 against fp32 on the BERT-base-sized encoder.

One run, one machine, one thread count: Sluice's fp32 bundle, Sluice's
`--quantize=int8` bundle (calibrated on token sets made here), ONNX
Runtime fp32 and ONNX Runtime's own int8 (`quantize_dynamic`: int8 MatMuls
with activations quantized at run time, its usual recipe for BERT on the
CPU), all on the same inputs. Prints median latencies, each one's speed-up
over Sluice fp32, and each int8 variant's relative L2 error against its
fp32 model's outputs. A program, not a test: nothing asserts timings.

  .venv/bin/python bench/cpu/quant_bench.py [--threads T] [--iters N]
        [--calibration-sets S] [--bin build/bin] [--out build/bench]

The model export (bench_cpu.py's `bert`, cached in OUT/bert) and the
calibration table (OUT/bert/int8.sluice.quantization.json) are reused by
later runs; the first int8 compile calibrates with the reference evaluator
(minutes on a 2-core machine).
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import bench_cpu as bc  # noqa: E402


def rel_l2(got, ref):
    got = got.astype(np.float64)
    ref = ref.astype(np.float64)
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def make_calibration(folder, stamp, sets):
    """SETS token sets shaped like the bench input (random ids, the same
    padding pattern): calibration/setK/NAME.npy."""
    cal = os.path.join(folder, "calibration")
    rng = np.random.default_rng(1)
    shapes = stamp["shapes"]
    for k in range(sets):
        d = os.path.join(cal, f"set{k}")
        os.makedirs(d, exist_ok=True)
        ids = rng.integers(0, 30522, size=shapes["input_ids"], dtype=np.int64)
        mask = np.ones(shapes["attention_mask"], dtype=np.int64)
        mask[..., 112:] = 0
        np.save(os.path.join(d, "input_ids.npy"), ids)
        np.save(os.path.join(d, "attention_mask.npy"), mask)
    return cal


def run_outputs(binary, bundle, inputs, names, out_dir, threads):
    cmd = [os.path.join(binary, "sluice-run"), bundle] + \
          [f"{n}={os.path.join(inputs, n + '.npy')}" for n in ("input_ids", "attention_mask")] + \
          [f"--save-outputs={out_dir}", f"--threads={threads}"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return {n: np.load(os.path.join(out_dir, n + ".npy")) for n in names}


def time_ort_model(path, feeds, threads, iters, warmup):
    session = bc.ort_session(path, threads)
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        outs = session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return bc.median_p90(times)[0], outs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--calibration-sets", type=int, default=2)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("--skip-ort", action="store_true", help="time Sluice only")
    args = ap.parse_args()

    stamp = bc.export_model("bert", args.out, args.threads, False)
    p = bc.model_paths(args.out, "bert")
    cal = make_calibration(p["folder"], stamp, args.calibration_sets)
    names = stamp["outputs"]
    feeds = {n: np.load(os.path.join(p["inputs"], n + ".npy")) for n in stamp["inputs"]}

    rows = []
    common = argparse.Namespace(bin=args.bin, compile_timeout=7200, run_timeout=3600,
                                iters=args.iters, warmup=args.warmup, threads=args.threads,
                                rtol=1e9, atol=1e9)
    outputs = {}
    for label, extra in (("fp32", []),
                         ("int8", ["--quantize=int8", f"--calibration={cal}"])):
        common.label, common.compile_arg = label, extra
        comp = bc.compile_sluice("bert", args.out, stamp, common)
        if not comp["ok"]:
            bc.log(f"sluice {label}: {comp['status']}")
            rows.append((f"Sluice {label}", None, None, comp["status"]))
            continue
        timing = bc.time_sluice("bert", args.out, stamp, comp, common)
        outputs[label] = run_outputs(args.bin, comp["bundle"], p["inputs"], names,
                                     os.path.join(p["folder"], f"{label}.outputs"), args.threads)
        report = json.load(open(os.path.join(p["folder"], f"{label}.report.json")))
        computes = {}
        for st in report.get("steps", []):
            if st.get("op") in ("sluice.matmul", "sluice.matmul_integer", "sluice.conv",
                                "sluice.conv_integer"):
                computes[st.get("compute", "-")] = computes.get(st.get("compute", "-"), 0) + 1
        note = f"{report.get('launches')} launches, weights {report.get('weights_bytes', 0) / 2**20:.0f} MiB, GEMMs {computes}"
        rows.append((f"Sluice {label}", timing.get("median_ms"), label, note))

    if not args.skip_ort:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
        ms, ort_fp32 = time_ort_model(p["onnx"], feeds, args.threads, args.iters, args.warmup)
        rows.append((f"ONNX Runtime {ort.__version__} fp32", ms, "ort-fp32", ""))
        q_path = os.path.join(p["folder"], "model.int8-dynamic.onnx")
        if not os.path.exists(q_path):
            bc.log("ONNX Runtime quantize_dynamic (int8 weights, QInt8) ...")
            quantize_dynamic(p["onnx"], q_path, weight_type=QuantType.QInt8)
        ms, ort_int8 = time_ort_model(q_path, feeds, args.threads, args.iters, args.warmup)
        rows.append(("ONNX Runtime int8 (quantize_dynamic)", ms, "ort-int8", ""))
        outputs["ort-fp32"] = dict(zip(names, ort_fp32))
        outputs["ort-int8"] = dict(zip(names, ort_int8))

    base = next((r[1] for r in rows if r[0] == "Sluice fp32" and r[1]), None)
    print()
    print(f"BERT-base-sized encoder (seq 128, batch 1), {args.threads} threads, "
          f"median of {args.iters} runs after {args.warmup} warm-up")
    print("| variant | median ms | speed-up vs Sluice fp32 | rel L2 vs its fp32 (last_hidden_state / pooled) | notes |")
    print("|---|---|---|---|---|")
    for name, ms, key, note in rows:
        ref = {"int8": "fp32", "ort-int8": "ort-fp32"}.get(key)
        err = "-"
        if ref and key in outputs and ref in outputs:
            err = " / ".join(f"{rel_l2(outputs[key][n], outputs[ref][n]):.4f}" for n in names)
        speed = f"{base / ms:.2f}x" if base and ms else "-"
        print(f"| {name} | {bc.fmt_ms(ms) if ms else '-'} | {speed} | {err} | {note} |")


if __name__ == "__main__":
    main()
