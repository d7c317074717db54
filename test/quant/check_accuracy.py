#!/usr/bin/env python3
"""The real-task accuracy check of quantization (docs/quantization.md): compiles one of the
digits classifiers of test/quant/digits (make_digits_models.py) with the given
extra sluice-compile flags, runs the bundle on the 600 test images and judges
its top-1 against the numbers the manifest recorded when the models were made.

  1. sluice-compile MODEL --shape=image=Bx1x8x8 --report=... FLAGS, where B is
     the manifest's batch (50): the calibration sets have that shape, and the
     compiler requires calibration sets to have the compile shapes. FLAGS may
     name the data folder as {data}, e.g.
     --flags="--quantize=int8 --calibration={data}/calibration".
  2. sluice-run BUNDLE image=CHUNK.npy --save-outputs=DIR --threads=T (1 by
     default) for each batch of B test images (600 / B runs), then top-1 of the saved logits against
     test_labels.npy.
  3. The bounds, in percentage points of top-1:
       --max-drop=P   fp32 top-1 (ONNX Runtime on the fp32 model, from the
                      manifest) minus the bundle's top-1 at most P (a bundle
                      may do better);
       --match-ort=P  |bundle top-1 - ONNX Runtime's top-1 of the same model
                      file| at most P (for a QDQ model: ORT's QDQ top-1).
     ONNX Runtime also runs the model now, for the table: its top-1 here and
     how many predictions the bundle shares with it.
  4. From the compile --report: every GEMM/conv step (a step whose op is one
     of GEMM_OPS) is listed with its "compute". With --require-int8 (or
     --require-compute=KIND) each one must have "compute": "int8" (KIND)
     unless one of its ONNX nodes is kept in higher precision by
     quantization.layers (an entry whose "node"/"nodes" names it with a
     "precision" other than KIND). Without it a missing "compute" is shown
     as "-". --max-weights-ratio=X compiles the fp32 model too and bounds
     the bundle's weights_bytes by X times the fp32 bundle's.
     Pruning (docs/pruning.md, test/prune): --min-sparse-gemms=N needs the
     report's
     sparsity.gemms_2_4 >= N, --min-sparse-share=X at least the share X of
     all GEMMs 2:4 (gemms_2_4 / (gemms_2_4 + gemms_dense)), --min-spared=N
     at least N pruning.layers whose reason says the guard spared them,
     --min-achieved=R every kind's pruning.achieved_fraction at least R
     times its asked_fraction; the pruning/sparsity layers are shown.
     --require-metric=M: every guard of the report (quantization, pruning,
     sparsity) judged the outputs by --accuracy-metric M (the resolved one).
  5. Warnings: --expect-warning=TEXT needs a "sluice-compile: warning:" line
     of the compile containing TEXT; without it the compile must print no
     warning at all (a warning is a request the compiler did not carry out).
  6. --expect-compile-error=TEXT: the compile must fail with TEXT in its
     output (a known import failure kept as a test that notices the fix).

--check-data checks the assets themselves (calibration format, test split,
the models' input and output, ONNX Runtime's top-1 against the manifest)
without the compiler; --self-test runs the judgments on made-up reports.

Prints a table; exit 0 when every bound holds, 1 otherwise (77, ctest's
skip, for --target=cuda where no GPU is visible).

Usage: check_accuracy.py --bin BUILD/bin --model NAME [--data DIR]
                         [--target cpu|cuda] [--flags="..."] [--threads=T] [--max-drop=P]
                         [--match-ort=P] [--require-int8] [--max-weights-ratio=X]
                         [--expect-compile-error=TEXT] [--keep DIR]
       check_accuracy.py --check-data [--data DIR]
       check_accuracy.py --self-test
"""
import argparse
import json
import os
import shlex
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import sluice_test as st  # noqa: E402

# Ops of a report step that make it a GEMM or convolution launch: the ones the
# int8 modes must run in integer arithmetic. sluice.attention is not among
# them (its batched products stay in the attention kernel's precision).
GEMM_OPS = ("sluice.matmul", "sluice.conv", "sluice.conv_transpose", "sluice.matmul_integer",
            "sluice.conv_integer")


def kept_nodes(report, compute):
    """ONNX node names that the report's quantization.layers keep in a
    precision other than `compute` (absent keys: none)."""
    layers = (report.get("quantization") or {}).get("layers") or []
    kept = set()
    for layer in layers:
        precision = layer.get("precision", layer.get("compute"))
        if precision is None or precision == compute:
            continue
        names = layer.get("nodes") or [layer.get("node")]
        kept.update(n for n in names if n)
    return kept


def gemm_steps(report, compute):
    """(step name, compute or None, kept) of each GEMM/conv step in run order."""
    kept = kept_nodes(report, compute)
    return [(s["name"], s.get("compute"), bool(kept & set(s.get("nodes", []))))
            for s in report.get("steps", []) if s.get("op") in GEMM_OPS]


def check_compute(report, compute):
    """Problems (strings) with the rule: every GEMM/conv step computes in
    `compute` unless quantization.layers keeps one of its nodes."""
    steps = gemm_steps(report, compute)
    if not steps:
        return ["the report lists no GEMM/conv step"]
    problems = []
    for name, got, kept in steps:
        if got is None:
            problems.append(f"step {name}: no \"compute\" in the report")
        elif got != compute and not kept:
            problems.append(f"step {name}: computes in {got}, not {compute}, and no "
                            "quantization.layers entry keeps it")
    return problems


def check_layer_compute(report, precision):
    """Problems with the rule: every quantization.layers entry in
    `precision` (not kept by the guard) runs in a GEMM/conv step that
    computes in `precision` (a target that emulates the mode fails it)."""
    layers = (report.get("quantization") or {}).get("layers") or []
    steps = [s for s in report.get("steps", []) if s.get("op") in GEMM_OPS]
    problems = []
    for layer in layers:
        if layer.get("precision") != precision or "reason" in layer:
            continue
        names = set(layer.get("nodes") or [layer.get("node")])
        hits = [s for s in steps if names & set(s.get("nodes", []))]
        if not hits:
            problems.append(f"layer {layer.get('node')}: no GEMM/conv step holds it")
        for s in hits:
            if s.get("compute") != precision:
                problems.append(f"layer {layer.get('node')}: step {s['name']} computes in "
                                f"{s.get('compute')}, not {precision}")
    return problems


def check_layers(report, precision):
    """Problems with the rule: quantization.layers lists the quantized GEMMs,
    each in `precision` or kept in float by the guard (a "reason"), at least
    one in `precision`. For modes a target emulates (fp8 on the cpu), whose
    launches compute in f32, the layers say what the arithmetic means."""
    layers = (report.get("quantization") or {}).get("layers") or []
    if not layers:
        return ["the report's quantization lists no layer"]
    problems = []
    for layer in layers:
        got = layer.get("precision")
        if got != precision and "reason" not in layer:
            problems.append(f"layer {layer.get('node')}: precision {got}, not {precision}, "
                            "and no reason the guard kept it")
    if not any(layer.get("precision") == precision for layer in layers):
        problems.append(f"no layer in {precision}")
    return problems


def check_remark(report, text):
    """A problem when no remark of the report contains `text`."""
    if any(text in r for r in report.get("remarks", [])):
        return []
    return [f"no remark says {text!r}"]


def top1(logits, labels):
    """(correct count, top-1 in percent, predictions)."""
    predictions = np.argmax(logits, axis=1)
    correct = int((predictions == labels).sum())
    return correct, 100.0 * correct / len(labels), predictions


def judge(top1_bundle, fp32_top1, model_ort_top1, max_drop, match_ort):
    """Problems with the top-1 bounds (percentage points)."""
    problems = []
    drop = fp32_top1 - top1_bundle
    if max_drop is not None and drop > max_drop + 1e-9:
        problems.append(f"top-1 {top1_bundle:.2f}% is {drop:.2f} points below fp32 "
                        f"({fp32_top1:.2f}%), more than --max-drop={max_drop}")
    gap = abs(top1_bundle - model_ort_top1)
    if match_ort is not None and gap > match_ort + 1e-9:
        problems.append(f"top-1 {top1_bundle:.2f}% is {gap:.2f} points from ONNX Runtime's "
                        f"{model_ort_top1:.2f}% on the same model, more than "
                        f"--match-ort={match_ort}")
    return problems


def run(cmd):
    """Runs a tool (at most 600 s); returns (exit status, stdout + stderr)."""
    return st.run(cmd, timeout=600)[:2]


def compile_bundle(args, model_path, bundle, report_path, flags):
    return st.compile_bundle(args.bin, model_path, bundle,
                             [f"--shape=image={args.batch}x1x8x8", f"--target={args.target}",
                              f"--report={report_path}", "--quiet", *flags],
                             echo=True, timeout=600)[:2]


def main_check(args):
    data = os.path.abspath(args.data)
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    if args.model not in manifest["models"]:
        print(f"unknown model {args.model!r}; the manifest has {sorted(manifest['models'])}")
        return 1
    entry = manifest["models"][args.model]
    fp32_name = entry.get("fp32_model", args.model)
    model_path = os.path.join(data, entry["file"])
    args.batch = args.batch or manifest["batch"]
    images = np.load(os.path.join(data, manifest["test_images"]))
    labels = np.load(os.path.join(data, manifest["test_labels"]))
    # Percentages from the recorded counts (the manifest's top1_* are rounded).
    fp32_top1 = 100.0 * manifest["models"][fp32_name]["correct_ort"] / len(labels)
    model_ort_top1 = 100.0 * entry["correct_ort"] / len(labels)
    if len(images) % args.batch:
        print(f"--batch={args.batch} does not divide the {len(images)} test images")
        return 1
    flags = [f.replace("{data}", data) for f in shlex.split(args.flags)]
    if args.target == "cuda" and not args.expect_compile_error and not st.gpu_present():
        print(st.NO_GPU)
        return st.SKIPPED

    work_holder = None if args.keep else tempfile.TemporaryDirectory()
    work = args.keep or work_holder.name
    os.makedirs(work, exist_ok=True)
    bundle = os.path.join(work, "model.sluice")
    report_path = os.path.join(work, "report.json")
    start = time.time()
    rc, out = compile_bundle(args, model_path, bundle, report_path, flags)
    compile_s = time.time() - start
    if args.expect_compile_error:
        if rc == 0:
            print(f"FAIL: {args.model} compiles now; it was expected to fail with "
                  f"{args.expect_compile_error!r}: drop --expect-compile-error")
            return 1
        if args.expect_compile_error not in out:
            print(out)
            print(f"FAIL: the compile failed, but not with {args.expect_compile_error!r}")
            return 1
        print(out.strip())
        print(f"known failure reproduced: {args.expect_compile_error!r}")
        return 0
    if rc:
        print(out)
        print(f"FAIL: sluice-compile exited {rc}")
        return 1
    with open(report_path) as f:
        report = json.load(f)
    warnings = [l for l in out.splitlines() if l.startswith("sluice-compile: warning:")]
    for line in warnings:
        print(line)

    # Run the bundle one compile-shaped batch at a time.
    start = time.time()
    logits = []
    sluice_run = st.tool(args.bin, "sluice-run")
    for i in range(0, len(images), args.batch):
        chunk = os.path.join(work, f"chunk{i // args.batch}.npy")
        saved = os.path.join(work, f"out{i // args.batch}")
        np.save(chunk, images[i:i + args.batch])
        rc, out = run([sluice_run, bundle, f"{manifest['input']}={chunk}",
                       f"--save-outputs={saved}", f"--threads={args.threads}"])
        if rc:
            print(out)
            print(f"FAIL: sluice-run exited {rc} on test images {i}..{i + args.batch - 1}")
            return 1
        logits.append(np.load(os.path.join(saved, manifest["output"] + ".npy")))
    run_s = time.time() - start
    logits = np.concatenate(logits)
    correct, bundle_top1, predictions = top1(logits, labels)

    import onnxruntime as ort  # noqa: PLC0415
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    ort_logits = session.run([manifest["output"]], {manifest["input"]: images})[0]
    ort_correct, ort_now, ort_predictions = top1(ort_logits, labels)
    agree = int((ort_predictions == predictions).sum())

    weights_ratio = None
    if args.max_weights_ratio is not None:
        fp32_report = os.path.join(work, "fp32-report.json")
        rc, out = compile_bundle(args, os.path.join(data, manifest["models"][fp32_name]["file"]),
                                 os.path.join(work, "fp32.sluice"), fp32_report, [])
        if rc:
            print(out)
            print("FAIL: the fp32 bundle (for --max-weights-ratio) does not compile")
            return 1
        with open(fp32_report) as f:
            weights_ratio = report["weights_bytes"] / json.load(f)["weights_bytes"]

    compute = args.require_compute or ("int8" if args.require_int8 else None)
    steps = gemm_steps(report, compute or args.require_layers or "int8")
    print()
    print("| model | flags | sluice top-1 | ORT top-1 (manifest / now) | fp32 top-1 | "
          "drop | agrees with ORT |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.model} | {' '.join(shlex.split(args.flags)) or '-'} | "
          f"{bundle_top1:.2f}% ({correct}/{len(labels)}) | {model_ort_top1:.2f}% / "
          f"{ort_now:.2f}% | {fp32_top1:.2f}% | {fp32_top1 - bundle_top1:+.2f} | "
          f"{agree}/{len(labels)} |")
    print()
    counts = {}
    for _, got, _ in steps:
        counts[got or "-"] = counts.get(got or "-", 0) + 1
    print(f"bundle: {report['launches']} launches, {len(steps)} GEMM/conv steps by compute "
          f"{counts}, weights {report['weights_bytes']} B"
          + (f" ({weights_ratio:.2f}x fp32)" if weights_ratio is not None else "")
          + f"; compile {compile_s:.1f} s, {len(images) // args.batch} runs {run_s:.1f} s")
    for name, got, kept in steps:
        print(f"  {name}: {got or '-'}{' (kept)' if kept else ''}")
    if ort_correct != entry["correct_ort"]:
        # ONNX Runtime's int8 kernels differ between processors and versions.
        print(f"note: ONNX Runtime {ort.__version__} gives {ort_now:.2f}% here, the manifest "
              f"{model_ort_top1:.2f}% (made with {manifest['versions']['onnxruntime']})")

    problems = judge(bundle_top1, fp32_top1, model_ort_top1, args.max_drop, args.match_ort)
    if compute:
        problems += check_compute(report, compute)
    if args.require_layers:
        problems += check_layers(report, args.require_layers)
    if args.require_layer_compute:
        problems += check_layer_compute(report, args.require_layer_compute)
    if args.require_remark:
        problems += check_remark(report, args.require_remark)
    if weights_ratio is not None and weights_ratio > args.max_weights_ratio:
        problems.append(f"weights are {weights_ratio:.2f}x the fp32 bundle's, more than "
                        f"--max-weights-ratio={args.max_weights_ratio}")
    problems += show_pruning(report, args.min_sparse_gemms, args.min_spared,
                             args.min_sparse_share, args.min_achieved)
    problems += check_warnings(warnings, args.expect_warning)
    if args.require_metric:
        problems += check_metric(report, args.require_metric)
    return st.finish(problems)


def show_pruning(report, min_sparse_gemms, min_spared=None, min_sparse_share=None,
                 min_achieved=None):
    """Prints the report's pruning and sparsity outcome; the problems with
    --min-sparse-gemms, --min-spared, --min-sparse-share and
    --min-achieved."""
    problems = []
    pruning = report.get("pruning")
    if pruning:
        print(f"pruning: params {pruning['params_before']} -> {pruning['params_after']} "
              f"({pruning['params_after'] / max(pruning['params_before'], 1):.2f}x), flops "
              f"{pruning['flops_before']} -> {pruning['flops_after']} "
              f"({pruning['flops_after'] / max(pruning['flops_before'], 1):.2f}x); "
              f"{pruning.get('metric')} budget {pruning.get('budget')}; asked "
              f"{pruning.get('asked_fraction')}, achieved {pruning.get('achieved_fraction')}")
        for e in pruning.get("layers", []):
            print(f"  {e['node']}: {e['kind']} kept {e['kept']}/{e['original']} "
                  f"sensitivity {e.get('sensitivity', float('nan')):.4f} ({e.get('reason', '')})")
    sparsity = report.get("sparsity")
    if sparsity:
        print(f"sparsity {sparsity.get('pattern')}: {sparsity.get('gemms_2_4')} GEMMs 2:4, "
              f"{sparsity.get('gemms_dense')} dense")
    if min_spared is not None:
        spared = [e for e in (pruning or {}).get("layers", [])
                  if e.get("reason", "").startswith("spared")]
        if len(spared) < min_spared:
            problems.append(f"{len(spared)} pruning groups were spared by the guard, fewer "
                            f"than --min-spared={min_spared}")
    if min_sparse_gemms is not None:
        got = (sparsity or {}).get("gemms_2_4", 0)
        if got < min_sparse_gemms:
            problems.append(f"{got} GEMMs are 2:4, fewer than --min-sparse-gemms="
                            f"{min_sparse_gemms}")
    if min_sparse_share is not None:
        sparse = (sparsity or {}).get("gemms_2_4", 0)
        total = sparse + (sparsity or {}).get("gemms_dense", 0)
        if not total or sparse < min_sparse_share * total - 1e-9:
            problems.append(f"{sparse} of {total} GEMMs are 2:4, less than "
                            f"--min-sparse-share={min_sparse_share}")
    if min_achieved is not None:
        asked = (pruning or {}).get("asked_fraction") or {}
        achieved = (pruning or {}).get("achieved_fraction") or {}
        if not asked:
            problems.append("the report has no pruning.asked_fraction")
        for kind, fraction in asked.items():
            got = achieved.get(kind)
            if got is None or got < min_achieved * fraction - 1e-9:
                problems.append(f"pruning removed {got} of the {kind} units, asked {fraction}: "
                                f"less than --min-achieved={min_achieved} of the request")
    return problems


def check_warnings(warnings, expected):
    """--expect-warning: a warning line with the text; else no warning."""
    if expected is None:
        return [f"the compile warned: {w}" for w in warnings]
    if not any(expected in w for w in warnings):
        return [f"no warning line of the compile contains {expected!r}"]
    return []


def check_metric(report, metric):
    """Every guard section of the report judged by `metric`."""
    sections = [k for k in ("quantization", "pruning", "sparsity") if "metric" in report.get(k, {})]
    if not sections:
        return ["no quantization/pruning/sparsity section of the report names its metric"]
    return [f"{k}.metric is {report[k]['metric']!r}, not {metric!r}" for k in sections
            if report[k]["metric"] != metric]


def check_data(data):
    """Problems with the assets of make_digits_models.py: the calibration sets
    in the compiler's format (one sub-folder per set, each holding exactly one
    .npy per model input, named after it, float32 at the compile shape), the
    test split, every model's single input and output, the size budget, and
    ONNX Runtime's top-1 now against the manifest's counts (exact to one
    image for fp32; six, one point, for QDQ, whose int8 kernels differ
    between processors)."""
    import onnx  # noqa: PLC0415
    import onnxruntime as ort  # noqa: PLC0415
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    problems = []
    batch, name_in, name_out = manifest["batch"], manifest["input"], manifest["output"]
    shape = (batch, 1, 8, 8)
    cal_dir = os.path.join(data, manifest["calibration"])
    sets = sorted(os.listdir(cal_dir))
    if sets != [f"set{i}" for i in range(manifest["calibration_sets"])]:
        problems.append(f"calibration sets {sets}, expected set0..set"
                        f"{manifest['calibration_sets'] - 1}")
    for s in sets:
        files = sorted(os.listdir(os.path.join(cal_dir, s)))
        if files != [name_in + ".npy"]:
            problems.append(f"calibration/{s} holds {files}, expected [{name_in}.npy]")
            continue
        value = np.load(os.path.join(cal_dir, s, files[0]))
        if value.dtype != np.float32 or value.shape != shape:
            problems.append(f"calibration/{s}/{files[0]}: {value.dtype} {value.shape}, "
                            f"expected float32 {shape}")
    images = np.load(os.path.join(data, manifest["test_images"]))
    labels = np.load(os.path.join(data, manifest["test_labels"]))
    count = manifest["split"]["test"]
    if images.dtype != np.float32 or images.shape != (count, 1, 8, 8) or len(labels) != count:
        problems.append(f"test split: images {images.dtype} {images.shape}, {len(labels)} labels")
    if count % batch:
        problems.append(f"the batch {batch} does not divide the {count} test images")
    total = sum(os.path.getsize(os.path.join(root, f))
                for root, _, names in os.walk(data) for f in names)
    if total > 2 * 1024 * 1024:
        problems.append(f"the assets take {total} B, more than 2 MiB")
    for model, entry in manifest["models"].items():
        path = os.path.join(data, entry["file"])
        graph = onnx.load(path).graph
        inputs = [i.name for i in graph.input]
        outputs = [o.name for o in graph.output]
        if inputs != [name_in] or outputs != [name_out]:
            problems.append(f"{model}: inputs {inputs}, outputs {outputs}")
            continue
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        correct, _, _ = top1(session.run([name_out], {name_in: images})[0], labels)
        slack = 1 if entry["kind"] == "fp32" else count // 100
        print(f"{model}: ONNX Runtime {correct}/{count} now, {entry['correct_ort']} in the "
              f"manifest; {entry['bytes']} B")
        if abs(correct - entry["correct_ort"]) > slack:
            problems.append(f"{model}: ONNX Runtime gets {correct} right now, the manifest "
                            f"says {entry['correct_ort']}")
    print(f"{len(sets)} calibration sets of {shape}, {count} test images, {total} B in all")
    return problems


def self_test():
    """The judgments on made-up numbers and hand-made reports: a passing case
    and one failing case per rule, so that no rule passes by seeing nothing."""
    failures = []

    def expect(label, problems, words):
        ok = all(any(w in p for p in problems) for w in words) if words else not problems
        print(f"{'ok' if ok else 'WRONG'}: {label}: {problems or 'no problems'}")
        if not ok:
            failures.append(label)

    def step(name, op, compute=None, nodes=()):
        s = {"name": name, "kind": "library", "op": op, "ops": [op], "nodes": list(nodes)}
        if compute is not None:
            s["compute"] = compute
        return s

    int8 = {"steps": [step("k0_conv", "sluice.conv", "int8", ["/conv1/Conv"]),
                      step("k1_pool", "sluice.pool", "f32", ["/MaxPool"]),
                      step("k2_attention", "sluice.attention", "f32", ["/MatMul"]),
                      step("k3_matmul", "sluice.matmul", "int8", ["/fc1/Gemm"])]}
    expect("all GEMM/conv steps int8", check_compute(int8, "int8"), [])
    f32 = json.loads(json.dumps(int8))
    f32["steps"][3]["compute"] = "f32"
    expect("an f32 GEMM not kept", check_compute(f32, "int8"), ["k3_matmul: computes in f32"])
    f32["quantization"] = {"layers": [{"node": "/fc1/Gemm", "precision": "f32"},
                                      {"node": "/conv1/Conv", "precision": "int8"}]}
    expect("an f32 GEMM kept by quantization.layers", check_compute(f32, "int8"), [])
    f32["quantization"]["layers"][0]["precision"] = "int8"
    expect("a layer listed as int8 keeps nothing", check_compute(f32, "int8"), ["k3_matmul"])
    f32["quantization"]["layers"] = [{"nodes": ["/x", "/fc1/Gemm"], "compute": "f16"}]
    expect("a kept layer given as nodes/compute", check_compute(f32, "int8"), [])
    missing = {"steps": [step("k0_conv", "sluice.conv", None, ["/conv1/Conv"])]}
    expect("no compute key", check_compute(missing, "int8"), ["k0_conv: no \"compute\""])
    expect("no GEMM/conv step", check_compute({"steps": [step("k0", "sluice.pool", "f32")]},
                                              "int8"), ["no GEMM/conv step"])
    w4 = {"steps": [step("k0_matmul", "sluice.matmul", "int4w", ["/fc/MatMul"])]}
    expect("--require-compute=int4w", check_compute(w4, "int4w"), [])
    expect("int4w is not int8", check_compute(w4, "int8"), ["computes in int4w"])

    fp8 = {"quantization": {"layers": [{"node": "/fc1/Gemm", "precision": "fp8"},
                                       {"node": "/fc2/Gemm", "precision": "f32",
                                        "reason": "kept in f32 by the accuracy guard"}]},
           "remarks": ["--quantize=fp8: fp8 emulated on cpu (...)"]}
    expect("fp8 layers, one kept", check_layers(fp8, "fp8"), [])
    expect("the remark", check_remark(fp8, "fp8 emulated on cpu"), [])
    fp8["steps"] = [step("k1_matmul", "sluice.matmul", "fp8", ["/fc1/Gemm"]),
                    step("k2_matmul", "sluice.matmul", "f32", ["/fc2/Gemm"]),
                    step("k3_matmul", "sluice.matmul", "f32", ["/attn/MatMul"])]
    expect("fp8 layers in fp8 steps", check_layer_compute(fp8, "fp8"), [])
    fp8["steps"][0]["compute"] = "f32"
    expect("an emulated fp8 layer", check_layer_compute(fp8, "fp8"), ["computes in f32"])
    expect("no such remark", check_remark({"remarks": []}, "fp8 emulated"), ["no remark says"])
    unkept = json.loads(json.dumps(fp8))
    del unkept["quantization"]["layers"][1]["reason"]
    expect("an f32 layer without a reason", check_layers(unkept, "fp8"), ["/fc2/Gemm"])
    expect("int8 layers are not fp8", check_layers(int8 | {"quantization": {"layers": [
        {"node": "/fc1/Gemm", "precision": "int8"}]}}, "fp8"), ["no layer in fp8"])
    expect("no layers", check_layers({}, "fp8"), ["lists no layer"])

    expect("within both bounds", judge(97.5, 98.0, 97.0, 1.0, 1.0), [])
    expect("better than fp32", judge(99.0, 98.0, 99.0, 0.0, 0.0), [])
    expect("drop too large", judge(96.5, 98.0, 96.5, 1.0, 1.0), ["below fp32"])
    expect("far from ORT", judge(98.0, 98.0, 96.5, 1.0, 1.0), ["from ONNX Runtime"])
    expect("far from ORT above it", judge(98.0, 98.0, 99.5, None, 1.0), ["from ONNX Runtime"])
    expect("no bounds given", judge(50.0, 98.0, 98.0, None, None), [])
    correct, percent, _ = top1(np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), np.array([1, 1, 1]))
    expect("top-1 of three", [] if (correct, round(percent, 2)) == (2, 66.67) else
           [f"got {correct}, {percent}"], [])
    pruned = {"pruning": {"asked_fraction": {"heads": 0.25, "ffn": 0.5},
                          "achieved_fraction": {"heads": 0.25, "ffn": 0.45},
                          "metric": "top1-agreement", "params_before": 10, "params_after": 8,
                          "flops_before": 10, "flops_after": 8, "layers": []},
              "sparsity": {"gemms_2_4": 3, "gemms_dense": 3, "metric": "top1-agreement"}}
    expect("achieved 0.9 of the request", show_pruning(pruned, None, None, 0.5, 0.5), [])
    expect("achieved too little", show_pruning(pruned, None, None, None, 0.95), ["of the ffn"])
    expect("no asked_fraction", show_pruning({}, None, None, None, 0.5), ["no pruning.asked"])
    expect("half of the GEMMs 2:4", show_pruning(pruned, None, None, 0.6, None), ["3 of 6"])
    expect("the metric", check_metric(pruned, "top1-agreement"), [])
    expect("another metric", check_metric(pruned, "rel-l2"), ["pruning.metric", "sparsity.metric"])
    expect("no warning", check_warnings([], None), [])
    expect("an unexpected warning", check_warnings(["sluice-compile: warning: x"], None),
           ["the compile warned"])
    expect("the expected warning", check_warnings(["sluice-compile: warning: a b c"], "b c"), [])
    expect("a missing warning", check_warnings([], "removed only"), ["no warning line"])
    print("self-test:", "FAILED " + ", ".join(failures) if failures else "passed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", help="the folder of sluice-compile and sluice-run")
    ap.add_argument("--data", default=os.path.join(HERE, "digits"),
                    help="the folder make_digits_models.py wrote (default: %(default)s)")
    ap.add_argument("--model", help="a model of the manifest: digits_cnn, digits_cnn_qdq, ...")
    ap.add_argument("--target", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--flags", default="", help="extra sluice-compile flags; {data} is "
                    "replaced by the data folder")
    ap.add_argument("--batch", type=int, help="compile batch (default: the manifest's)")
    # Top-1 does not depend on the thread count, and under ctest -j2 on a
    # small machine OpenMP threads that wait for each other make the runs
    # ten times slower.
    ap.add_argument("--threads", type=int, default=1,
                    help="sluice-run --threads (default: %(default)s)")
    ap.add_argument("--max-drop", type=float, help="points of top-1 below fp32 allowed")
    ap.add_argument("--match-ort", type=float, help="points of top-1 from ONNX Runtime's on "
                    "the same model allowed")
    ap.add_argument("--require-int8", action="store_true",
                    help="every GEMM/conv step must compute in int8 unless kept")
    ap.add_argument("--require-compute", help="as --require-int8 with another compute kind "
                    "(int8w, int4w, fp8)")
    ap.add_argument("--min-spared", type=int,
                    help="at least this many pruning groups spared by the guard")
    ap.add_argument("--min-sparse-gemms", type=int,
                    help="the report's sparsity.gemms_2_4 at least this")
    ap.add_argument("--require-layers", help="every entry of the report's "
                    "quantization.layers in this precision (fp8) or kept by the guard")
    ap.add_argument("--require-layer-compute", help="every quantization.layers entry in this "
                    "precision (fp8) runs in a GEMM step computing in it (a real fp8 GEMM, not "
                    "an emulation)")
    ap.add_argument("--require-remark", help="a remark of the report contains this text")
    ap.add_argument("--max-weights-ratio", type=float,
                    help="weights_bytes at most this times the fp32 bundle's")
    ap.add_argument("--min-sparse-share", type=float,
                    help="at least this share of all GEMMs 2:4")
    ap.add_argument("--min-achieved", type=float, help="every kind's achieved pruning "
                    "fraction at least this times the asked one")
    ap.add_argument("--require-metric", help="the guards' resolved --accuracy-metric")
    ap.add_argument("--expect-warning", help="a compile warning contains this text (without "
                    "it: no warning allowed)")
    ap.add_argument("--expect-compile-error", help="the compile must fail with this text")
    ap.add_argument("--keep", help="keep the bundle, report and outputs in this folder")
    ap.add_argument("--check-data", action="store_true",
                    help="check the assets and the manifest (no compiler)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.check_data:
        return st.finish(check_data(os.path.abspath(args.data)))
    if not args.bin or not args.model:
        ap.error("--bin and --model are required (or --check-data, --self-test)")
    return main_check(args)


if __name__ == "__main__":
    sys.exit(main())
