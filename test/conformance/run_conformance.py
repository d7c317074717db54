#!/usr/bin/env python3
"""Runs the ONNX backend test cases of Debian's libonnx-testdata through Sluice.

Each case (a folder with model.onnx and test_data_set_N/) is run with
`sluice-run MODEL --reference INPUTS --expect OUTPUTS` and classified as
passed, failed (ran, wrong numbers or an error while running) or unsupported
(the importer refused an op). Results go to a JSON file; --write-doc renders
docs/onnx-coverage.md from them; --baseline fails (exit 1) when the pass count
drops below the committed baseline, so coverage can only go up.

Usage: run_conformance.py --bin BUILD/bin [--data DIR] [--jobs N]
                          [--results FILE.json] [--write-doc FILE.md]
                          [--baseline FILE] [--update-baseline] [--filter SUBSTR]
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import time

SUITES = ["node", "pytorch-converted", "pytorch-operator", "simple"]
DEFAULT_DATA = "/usr/share/libonnx-testdata/data"


def list_cases(data):
    cases = []
    for suite in SUITES:
        for path in sorted(glob.glob(os.path.join(data, suite, "*"))):
            if os.path.isfile(os.path.join(path, "model.onnx")):
                cases.append((suite, path))
    return cases


def op_types(model_path):
    """Op types of the model's top-level graph, read without onnx (varint scan
    would be fragile), via the onnx package if present."""
    try:
        import onnx  # noqa: PLC0415
        model = onnx.load(model_path, load_external_data=False)
        return [n.op_type for n in model.graph.node]
    except Exception:  # noqa: BLE001
        return []


def snake(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def all_op_names():
    """Every ONNX op name known to the onnx package (for naming _expanded
    cases, whose models hold the op's function body instead of the op)."""
    try:
        import onnx.defs  # noqa: PLC0415
        return sorted({s.name for s in onnx.defs.get_all_schemas_with_history()})
    except Exception:  # noqa: BLE001
        return []


ALL_OPS = all_op_names()
# Test-name spellings that follow neither snake_case nor lowercase op names.
ALIASES = {"NegativeLogLikelihoodLoss": ("nllloss",),
           "SoftmaxCrossEntropyLoss": ("sce",),
           "MeanVarianceNormalization": ("mvn",)}


def primary_op(suite, case_name, ops):
    """The op a node test is about: the op whose snake_case name the test name
    starts with (longest wins, among the model's ops and then all ONNX ops),
    else the model's only op."""
    if suite != "node":
        return None
    distinct = sorted(set(ops))
    name = case_name[len("test_"):] if case_name.startswith("test_") else case_name
    for candidates in (distinct, ALL_OPS):
        best, best_len = None, 0
        for op in candidates:
            for key in (snake(op), op.lower(), *ALIASES.get(op, ())):
                if (name == key or name.startswith(key + "_")) and len(key) > best_len:
                    best, best_len = op, len(key)
        if best:
            return best
    if len(distinct) == 1:
        return distinct[0]
    return "(multi-op)"


def run_case(binary, suite, path, timeout):
    name = os.path.basename(path)
    model = os.path.join(path, "model.onnx")
    ops = op_types(model)
    result = {"suite": suite, "case": name, "op": primary_op(suite, name, ops),
              "ops": sorted(set(ops))}
    sets = sorted(glob.glob(os.path.join(path, "test_data_set_*")))
    if not sets:
        result.update(status="failed", message="no test data sets")
        return result
    for data_set in sets:
        inputs = sorted(glob.glob(os.path.join(data_set, "input_*.pb")),
                        key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0]))
        outputs = sorted(glob.glob(os.path.join(data_set, "output_*.pb")),
                         key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0]))
        cmd = [binary, model, "--reference", *inputs, "--expect", *outputs]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            result.update(status="failed", message=f"timeout after {timeout}s")
            return result
        if proc.returncode != 0:
            err = (proc.stderr.strip().splitlines() or [""])[-1]
            out = [l for l in proc.stdout.splitlines() if "MISMATCH" in l]
            message = err or (out[0] if out else f"exit {proc.returncode}")
            status = "unsupported" if "unsupported ops" in message else "failed"
            if proc.returncode not in (0, 1, 2):
                message = f"crashed (exit {proc.returncode}): {message}"
                status = "failed"
            result.update(status=status, message=message[:300])
            return result
    result.update(status="passed", message="")
    return result


def write_doc(results, path):
    total = len(results)
    passed = sum(r["status"] == "passed" for r in results)
    by_suite = {}
    for r in results:
        s = by_suite.setdefault(r["suite"], [0, 0, 0])
        s[["passed", "failed", "unsupported"].index(r["status"])] += 1
    by_op = {}
    for r in results:
        if r["op"] is None:
            continue
        s = by_op.setdefault(r["op"], [0, 0, 0, []])
        s[["passed", "failed", "unsupported"].index(r["status"])] += 1
        if r["status"] != "passed":
            s[3].append(r["case"])
    lines = [
        "# ONNX backend test coverage",
        "",
        "Generated by `test/conformance/run_conformance.py --write-doc` from the "
        "1072 cases of Debian's `libonnx-testdata` (ONNX 1.12: `data/node`, "
        "`data/pytorch-converted`, `data/pytorch-operator`, `data/simple`). "
        "Do not edit by hand.",
        "",
        f"**Reference evaluator: {passed} of {total} cases pass "
        f"({100.0 * passed / max(total, 1):.1f}%).**",
        "",
        "| suite | passed | failed | unsupported |",
        "|---|---:|---:|---:|",
    ]
    for suite in SUITES:
        if suite in by_suite:
            p, f, u = by_suite[suite]
            lines.append(f"| {suite} | {p} | {f} | {u} |")
    lines += ["", "## Per op (node tests)", "",
              "| op | passed | failed | unsupported | not passing |",
              "|---|---:|---:|---:|---|"]
    for op in sorted(by_op, key=str.lower):
        p, f, u, bad = by_op[op]
        shown = ", ".join(bad[:6]) + (f", … (+{len(bad) - 6})" if len(bad) > 6 else "")
        lines.append(f"| {op} | {p} | {f} | {u} | {shown} |")
    lines += ["", "## Model suites (pytorch-converted, pytorch-operator, simple)", "",
              "| case | status | ops | message |", "|---|---|---|---|"]
    for r in results:
        if r["op"] is None:
            msg = r["message"].replace("|", "\\|")
            lines.append(f"| {r['suite']}/{r['case']} | {r['status']} | "
                         f"{' '.join(r['ops'])} | {msg} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with sluice-run")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--results", help="write per-case results as JSON")
    ap.add_argument("--write-doc", help="render the coverage table (markdown)")
    ap.add_argument("--baseline", help="file holding the minimum pass count")
    ap.add_argument("--update-baseline", action="store_true")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    binary = os.path.join(args.bin, "sluice-run")
    if not os.access(binary, os.X_OK):
        sys.exit(f"run_conformance: {binary} not found (build first)")
    cases = [c for c in list_cases(args.data) if args.filter in os.path.basename(c[1])]
    if not cases:
        sys.exit(f"run_conformance: no test cases under {args.data} "
                 "(install libonnx-testdata: scripts/setup.sh)")
    start = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, binary, s, p, args.timeout) for s, p in cases]
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results.append(fut.result())
            if i % 100 == 0 or i == len(futures):
                print(f"[conformance] {i}/{len(futures)} cases, "
                      f"{time.time() - start:.0f}s", flush=True)
    results.sort(key=lambda r: (SUITES.index(r["suite"]), r["case"]))
    passed = sum(r["status"] == "passed" for r in results)
    failed = sum(r["status"] == "failed" for r in results)
    unsupported = sum(r["status"] == "unsupported" for r in results)
    if args.verbose:
        for r in results:
            if r["status"] != "passed":
                print(f"  {r['status']:11} {r['suite']}/{r['case']}: {r['message']}")
    print(f"[conformance] reference evaluator: {passed} passed, {failed} failed, "
          f"{unsupported} unsupported of {len(results)} cases")
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)
    if args.write_doc:
        write_doc(results, args.write_doc)
    if args.baseline:
        minimum = 0
        if os.path.exists(args.baseline):
            with open(args.baseline) as f:
                minimum = int(f.read().split()[0])
        if args.update_baseline and passed >= minimum:
            with open(args.baseline, "w") as f:
                f.write(f"{passed}\n")
            print(f"[conformance] baseline set to {passed}")
        else:
            if passed < minimum:
                print(f"[conformance] FAIL: {passed} passed, below the baseline {minimum}")
                return 1
            print(f"[conformance] ok: {passed} passed >= baseline {minimum}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
