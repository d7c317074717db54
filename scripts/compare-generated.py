#!/usr/bin/env python3
"""Snapshots the code Sluice generates, and compares two snapshots.

A refactoring of the compiler must not change what it writes. This script
compiles a fixed set of models up to their generated source
(`sluice-compile --emit=source`: the emit phase without the C++ compiler or
nvcc) for every target and precision, keeps each source and the launch count
of its report, and compares two such snapshots file by file.

  compare-generated.py snapshot --bin BUILD/bin --out DIR [--suites LIST]
                                [--zoo ZOO_DIR] [--jobs N] [--filter TEXT]
  compare-generated.py compare BEFORE AFTER [--show N] [--ignore-includes]

Suites (default: all):
  models        test/models/*, test/moe/*: every target x precision
  quant         the digits classifiers (test/quant/digits): float, int8, fp8,
                w8a16, w4a16 (calibrated), the QDQ models; both targets
  zoo           the zoo's architectures (made by test/zoo/make_zoo.py into
                ZOO_DIR, default build/test/zoo): every target x precision
  conformance   every ONNX backend test case the cpu target takes (shapes
                from its first data set, as test/conformance does): every
                target x precision

A snapshot folder holds SUITE/CASE/TARGET-PRECISION[-MODE].src (the generated
source, several files concatenated with a header line each) and .launches
(the report's `launches`); a compile that fails keeps its first error line in
.error instead, so that refusals are compared too.

`compare` classifies every case present in either snapshot as
byte-identical, whitespace-only (equal once runs of blanks and blank lines
are folded), include-only (equal once `#include` lines are dropped, with
--ignore-includes), other (the first differing lines are shown), launches
changed, or only in one snapshot, and prints the counts. Exit 0 when every
case is byte-identical or whitespace-only (or include-only where allowed)
with unchanged launch counts.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ("cpu", "cuda")
PRECISIONS = ("fp32", "fp16", "bf16")
QUANT_MODES = ("int8", "fp8", "w8a16", "w4a16")


def jobs_for_models():
    """(suite, case, model path, shape flags) of test/models and test/moe."""
    out = []
    for folder in sorted(glob.glob(os.path.join(ROOT, "test", "models", "*", "manifest.json")) +
                         glob.glob(os.path.join(ROOT, "test", "moe", "*", "manifest.json"))):
        folder = os.path.dirname(folder)
        with open(os.path.join(folder, "manifest.json")) as f:
            shapes = [f"--shape={s}" for s in json.load(f).get("shapes", [])]
        out.append(("models", os.path.basename(folder), os.path.join(folder, "model.onnx"),
                    shapes))
    return out


def jobs_for_zoo(zoo_dir):
    out = []
    for manifest in sorted(glob.glob(os.path.join(zoo_dir, "*", "manifest.json"))):
        folder = os.path.dirname(manifest)
        with open(manifest) as f:
            shapes = [f"--shape={s}" for s in json.load(f).get("shapes", [])]
        out.append(("zoo", os.path.basename(folder), os.path.join(folder, "model.onnx"), shapes))
    return out


def jobs_for_conformance(data):
    sys.path.insert(0, os.path.join(ROOT, "test", "conformance"))
    import run_conformance as conf  # noqa: E402
    out = []
    for suite, path in conf.list_cases(data):
        model = os.path.join(path, "model.onnx")
        sets = sorted(glob.glob(os.path.join(path, "test_data_set_*")))
        if not sets:
            continue
        try:
            names = conf.input_names(model)
            shapes, _ = conf.shape_flags(model, names, conf.numbered(sets[0], "input"))
        except Exception:  # a case the conformance run cannot read either
            continue
        out.append(("conformance", f"{suite}-{os.path.basename(path)}", model, shapes))
    return out


def variants(suite):
    """(file stem, extra flags) per compile of a case of `suite`."""
    if suite == "quant":
        return []  # made per model in quant_compiles
    return [(f"{t}-{p}", [f"--target={t}", f"--precision={p}"])
            for t in TARGETS for p in PRECISIONS]


def quant_compiles():
    """(suite, case, model, flags, stem) of the digits models."""
    digits = os.path.join(ROOT, "test", "quant", "digits")
    with open(os.path.join(digits, "manifest.json")) as f:
        manifest = json.load(f)
    shape = f"--shape={manifest['input']}={manifest['batch']}x1x8x8"
    calibration = f"--calibration={os.path.join(digits, manifest['calibration'])}"
    out = []
    for name in ("digits_cnn", "digits_transformer", "digits_cnn_qdq", "digits_transformer_qdq"):
        model = os.path.join(digits, name + ".onnx")
        modes = [("float", [])]
        if not name.endswith("_qdq"):
            modes += [(m, [f"--quantize={m}", calibration, "--quantization-cache=none"])
                      for m in QUANT_MODES]
        for target in TARGETS:
            for mode, flags in modes:
                out.append(("quant", name, model, [shape, f"--target={target}", *flags],
                            f"{target}-{mode}"))
    return out


def compile_one(bindir, out, suite, case, model, flags, stem, timeout):
    folder = os.path.join(out, suite, case)
    os.makedirs(folder, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        source = os.path.join(work, "source")
        report = os.path.join(work, "report.json")
        cmd = [os.path.join(bindir, "sluice-compile"), model, "--emit=source", "-o", source,
               "--quiet", f"--report={report}", *flags]
        env = dict(os.environ, SLUICE_CACHE_DIR="none")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            with open(os.path.join(folder, stem + ".error"), "w") as f:
                f.write("timed out\n")
            return
        if proc.returncode != 0:
            lines = [l for l in proc.stderr.splitlines() if l.strip()]
            # Temporary paths vary between runs; the message does not.
            msg = (lines[0] if lines else f"exit {proc.returncode}").replace(work, "<work>")
            with open(os.path.join(folder, stem + ".error"), "w") as f:
                f.write(msg + "\n")
            return
        files = [source] if os.path.isfile(source) else sorted(
            p for p in glob.glob(os.path.join(source, "**"), recursive=True) if os.path.isfile(p))
        with open(os.path.join(folder, stem + ".src"), "w") as f:
            for path in files:
                f.write(f"//==== {os.path.relpath(path, work)}\n")
                with open(path, errors="replace") as src:
                    f.write(src.read().replace(work, "<work>"))
        launches = "?"
        if os.path.exists(report):
            with open(report) as r:
                launches = str(json.load(r).get("launches", "?"))
        with open(os.path.join(folder, stem + ".launches"), "w") as f:
            f.write(launches + "\n")


def snapshot(args):
    suites = args.suites.split(",")
    compiles = []
    for suite in suites:
        if suite == "models":
            cases = jobs_for_models()
        elif suite == "zoo":
            cases = jobs_for_zoo(args.zoo)
        elif suite == "conformance":
            cases = jobs_for_conformance(args.data)
        elif suite == "quant":
            compiles += [c for c in quant_compiles() if args.filter in c[1]]
            continue
        else:
            sys.exit(f"unknown suite '{suite}' (models, quant, zoo, conformance)")
        for s, case, model, shapes in cases:
            if args.filter not in case:
                continue
            for stem, flags in variants(s):
                compiles.append((s, case, model, [*shapes, *flags], stem))
    print(f"{len(compiles)} compiles into {args.out}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(compile_one, args.bin, args.out, s, c, m, f, stem, args.timeout)
                   for s, c, m, f, stem in compiles]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            future.result()
            if done % 200 == 0 or done == len(futures):
                print(f"  {done}/{len(futures)}", flush=True)
    return 0


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def folded(text):
    return "\n".join(re.sub(r"\s+", " ", l).strip() for l in text.splitlines() if l.strip())


def without_includes(text):
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#include"))


def first_difference(a, b):
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return f"line {i + 1}:\n    - {x[:200]}\n    + {y[:200]}"
    return ""


def compare(args):
    def stems(root):
        out = set()
        for path in glob.glob(os.path.join(root, "*", "*", "*")):
            rel = os.path.relpath(path, root)
            out.add(os.path.splitext(rel)[0])
        return out

    before, after = stems(args.before), stems(args.after)
    counts = {k: 0 for k in ("byte-identical", "whitespace-only", "include-only", "other",
                             "launches changed", "only before", "only after")}
    shown = 0
    for key in sorted(before | after):
        if key not in after or key not in before:
            counts["only before" if key not in after else "only after"] += 1
            continue
        parts = {}
        for side, root in (("a", args.before), ("b", args.after)):
            src = read(os.path.join(root, key + ".src"))
            err = read(os.path.join(root, key + ".error"))
            parts[side] = (src if src is not None else "ERROR " + (err or "").strip(),
                           read(os.path.join(root, key + ".launches")))
        (a, la), (b, lb) = parts["a"], parts["b"]
        if a == b:
            kind = "byte-identical"
        elif folded(a) == folded(b):
            kind = "whitespace-only"
        elif args.ignore_includes and folded(without_includes(a)) == folded(without_includes(b)):
            kind = "include-only"
        else:
            kind = "other"
        counts[kind] += 1
        if la != lb:
            counts["launches changed"] += 1
            if shown < args.show:
                print(f"{key}: launches {(la or '').strip()} -> {(lb or '').strip()}")
                shown += 1
        if kind == "other" and shown < args.show:
            print(f"{key}: {first_difference(a, b)}")
            shown += 1
    total = sum(v for k, v in counts.items() if k != "launches changed")
    print(f"{total} cases: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    bad = counts["other"] + counts["launches changed"] + counts["only before"] + \
        counts["only after"] + (0 if args.ignore_includes else counts["include-only"])
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot", help="compile every case up to its source")
    s.add_argument("--bin", required=True, help="the build's bin folder")
    s.add_argument("--out", required=True, help="the snapshot folder (created)")
    s.add_argument("--suites", default="models,quant,zoo,conformance")
    s.add_argument("--zoo", default=os.path.join(ROOT, "build", "test", "zoo"))
    s.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    s.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    s.add_argument("--timeout", type=int, default=600)
    s.add_argument("--filter", default="", help="only cases whose name contains this")
    c = sub.add_parser("compare", help="classify the differences of two snapshots")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--show", type=int, default=20, help="differences printed (default 20)")
    c.add_argument("--ignore-includes", action="store_true",
                   help="count sources that differ only in #include lines as include-only")
    args = ap.parse_args()
    return snapshot(args) if args.command == "snapshot" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
