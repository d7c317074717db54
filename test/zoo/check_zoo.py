#!/usr/bin/env python3
"""Checks one zoo architecture (a folder written by make_zoo.py) on the
compiled targets, and writes the zoo's table (docs/zoo.md).

For NAME it
1. compiles ZOO_DIR/NAME/model.onnx for the cpu target (a bundle, at the
   manifest's static shapes), runs it on the recorded inputs with sluice-run
   and compares every output with ONNX Runtime's (expected/*.npy) at rtol 1e-3
   / atol 1e-4 (|got - want| <= atol + rtol |want|);
2. compiles it for the cuda target up to source (--emit=source: no nvcc, no
   GPU) with --report, and records its launches and host steps (the report's
   steps of kind host: groups the cuda target has no kernel for).
It exits 0 only when both succeed and the outputs match. With --results DIR it
also writes DIR/NAME.json (compile times, max error, launches, host steps, or
the error) for --write-doc.

--write-doc DOC reads every DIR/NAME.json (--results) and the manifests and
writes the table of docs/zoo.md; architectures listed in known_failures.txt
beside this script (NAME: cause) are listed with their cause.

Usage: check_zoo.py --bin BUILD/bin [--results DIR] ZOO_DIR NAME
       check_zoo.py --write-doc docs/zoo.md --results DIR ZOO_DIR
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import sluice_test as st  # noqa: E402


def known_failures():
    """NAME -> cause, from known_failures.txt (the ctest entries of these run
    under the label zoo-known-failures instead of zoo)."""
    causes = {}
    with open(os.path.join(HERE, "known_failures.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, cause = line.split(":", 1)
                causes[name.strip()] = cause.strip()
    return causes


def run(cmd):
    """Runs a tool, echoing it and its output; returns (status, seconds, output)."""
    r = st.run(cmd, echo=True, show=True)
    return r.rc, r.seconds, r.out


def first_error(output):
    """The line of a tool's output that says what went wrong."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    return lines[-1] if lines else "failed without a message"


def check(args):
    folder = os.path.join(args.zoo_dir, args.name)
    manifest = st.read_manifest(folder)
    model = os.path.join(folder, "model.onnx")
    shapes = [f"--shape={s}" for s in manifest["shapes"]]
    compile_tool = st.tool(args.bin, "sluice-compile")
    result = {"name": args.name}
    work = tempfile.TemporaryDirectory()

    # cpu: compile, run, compare with ONNX Runtime.
    bundle = os.path.join(work.name, "model.sluice")
    report_path = os.path.join(work.name, "cpu.json")
    status, seconds, output = run([compile_tool, model, "-o", bundle, "--target=cpu",
                                   *shapes, "--report", report_path])
    result["cpu_compile_seconds"] = round(seconds, 1)
    if status:
        result["cpu_error"] = first_error(output)
    else:
        with open(report_path) as f:
            report = json.load(f)
        result["cpu_launches"] = report["launches"]
        out_dir = os.path.join(work.name, "outputs")
        inputs = st.tensor_args(folder, "inputs", manifest["inputs"])
        status, _, output = run([st.tool(args.bin, "sluice-run"), bundle, *inputs,
                                 f"--save-outputs={out_dir}"])
        if status:
            result["cpu_error"] = first_error(output)
        else:
            worst, mismatched = 0.0, []
            for n in manifest["outputs"]:
                want = np.load(st.tensor_path(folder, "expected", n))
                got = np.load(os.path.join(out_dir, n + ".npy"))
                if got.shape != want.shape:
                    mismatched.append(f"{n}: shape {got.shape}, ONNX Runtime {want.shape}")
                    continue
                bad, err = st.outside(got, want, args.rtol, args.atol)
                worst = max(worst, float(err.max()))
                print(f"{n} {want.shape}: max abs error {float(err.max()):.2e}, "
                      f"{int(bad.sum())} elements outside rtol {args.rtol} / atol {args.atol}")
                if bad.any():
                    mismatched.append(f"{n}: {int(bad.sum())} of {bad.size} elements differ "
                                      f"(max abs error {float(err.max()):.2e})")
            result["cpu_max_error"] = worst
            if mismatched:
                result["cpu_error"] = "; ".join(mismatched)

    # cuda: up to source; launches and host steps from the report.
    report_path = os.path.join(work.name, "cuda.json")
    status, seconds, output = run([compile_tool, model, "-o", os.path.join(work.name, "cuda"),
                                   "--target=cuda", "--emit=source", *shapes,
                                   "--report", report_path])
    result["cuda_compile_seconds"] = round(seconds, 1)
    if status:
        result["cuda_error"] = first_error(output)
    else:
        with open(report_path) as f:
            report = json.load(f)
        host = [s for s in report["steps"] if s.get("kind") == "host"]
        result["cuda_launches"] = report["launches"]
        result["cuda_host_steps"] = len(host)
        result["cuda_host_ops"] = sorted({s.get("op", "?") for s in host})
        # Why each host step runs there ("no cuda kernel for sluice.pad"),
        # with how many steps share the reason.
        reasons = {}
        for remark in report.get("remarks", []):
            if "runs on the host" in remark:
                print("  " + remark)
                reason = remark.split("runs on the host:", 1)[1].strip()
                reasons[reason] = reasons.get(reason, 0) + 1
        result["cuda_host_reasons"] = reasons
        print(f"cuda: {report['launches']} launches, {len(host)} host steps "
              f"{result['cuda_host_ops'] or ''}")

    if args.results:
        os.makedirs(args.results, exist_ok=True)
        with open(os.path.join(args.results, args.name + ".json"), "w") as f:
            json.dump(result, f, indent=1)
    for key in ("cpu_error", "cuda_error"):
        if key in result:
            print(f"FAIL ({key[:-6]}): {result[key]}")
    return 1 if "cpu_error" in result or "cuda_error" in result else 0


def write_doc(args):
    causes = known_failures()
    names = sorted(d for d in os.listdir(args.zoo_dir)
                   if os.path.isfile(os.path.join(args.zoo_dir, d, "manifest.json")))
    rows, passed, export_seconds, model_bytes = [], 0, 0.0, 0
    for name in names:
        with open(os.path.join(args.zoo_dir, name, "manifest.json")) as f:
            manifest = json.load(f)
        export_seconds += manifest["export_seconds"]
        model_bytes += manifest["model_bytes"]
        path = os.path.join(args.results, name + ".json")
        if not os.path.exists(path):
            sys.exit(f"no result for {name} in {args.results}: run the zoo's ctest entries first")
        with open(path) as f:
            r = json.load(f)
        if "cpu_error" in r:
            cpu = "fails (known)" if name in causes else "FAILS"
        else:
            cpu = f"{r['cpu_max_error']:.1e}"
        if "cuda_error" in r:
            cuda, host = ("fails (known)" if name in causes else "FAILS"), ""
        else:
            cuda = str(r["cuda_launches"])
            host = str(r["cuda_host_steps"])
            if r["cuda_host_ops"]:
                host += " (" + ", ".join(o.removeprefix("sluice.") for o in r["cuda_host_ops"]) + ")"
        ok = "cpu_error" not in r and "cuda_error" not in r
        passed += ok
        rows.append(f"| {name} | {manifest['source']} | {manifest['covers']} | "
                    f"{' '.join(s.split('=')[1] for s in manifest['shapes'])} | {cpu} | "
                    f"{r.get('cpu_launches', '')} | {cuda} | {host} | "
                    f"{r['cpu_compile_seconds']} | {r['cuda_compile_seconds']} |")
    lines = [
        "# The zoo: real architectures in the tests",
        "",
        "Generated by `scripts/gen-docs.sh --zoo` (`test/zoo/check_zoo.py --write-doc` over "
        "a check of every architecture, known failures included). Do not edit by hand.",
        "",
        "`test/zoo/make_zoo.py` builds each architecture at test-data time with random weights "
        "and no downloads (torchvision constructors with `weights=None`, Hugging Face "
        "transformers models from tiny configs), exports it with torch.onnx (opset 17, static "
        "shapes) and records ONNX Runtime's outputs. `test/zoo/check_zoo.py` compiles each for "
        "the cpu target and compares with ONNX Runtime at rtol 1e-3 / atol 1e-4, and compiles "
        "it for the cuda target up to source (`--emit=source --report`), counting launches "
        "(kernels and library calls) and host steps (groups the cuda target runs on the host).",
        "",
        f"**{passed} of {len(names)} architectures pass on both targets.**",
        "",
        "| name | source | covers | inputs | cpu max abs error | cpu launches | cuda launches "
        "| cuda host steps | cpu compile (s) | cuda source (s) |",
        "|---|---|---|---|---:|---:|---:|---|---:|---:|",
        *rows,
        "",
        "Compile times are wall-clock on the machine that generated the table (the cpu column "
        "includes building the bundle's library with the C++ compiler). Making the zoo took "
        f"{export_seconds:.0f} s of export and ONNX Runtime time there, for "
        f"{model_bytes / 2**20:.0f} MiB of models.",
        "",
        "## zoo-known-failures",
        "",
        "These fail for causes outside the zoo's reach; their ctest entries carry the label "
        "`zoo-known-failures` instead of `zoo` (`test/zoo/known_failures.txt`), so the `zoo` "
        "label stays green. They are disabled in a default ctest run; configure with "
        "`-DSLUICE_ZOO_KNOWN_FAILURES=ON` to run them. Each moves back when its cause is fixed.",
        "",
    ]
    if causes:
        lines += ["| name | cause |", "|---|---|"]
        lines += [f"| {n} | {c} |" for n, c in sorted(causes.items())]
    else:
        lines.append("None.")
    lines += ["", "## Host steps on the cuda target", "",
              "Groups the cuda emitter has no kernel for run on the host (the cpu target's "
              "kernel, with copies to and from the device). The aim is none; these remain:",
              ""]
    host_lines = []
    for name in names:
        with open(os.path.join(args.results, name + ".json")) as f:
            r = json.load(f)
        for reason, count in sorted(r.get("cuda_host_reasons", {}).items()):
            host_lines.append(f"- {name}: {count} step{'s' if count > 1 else ''}, {reason}")
    lines += host_lines or ["None."]
    with open(args.write_doc, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.write_doc}: {passed} of {len(names)} pass")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="the build's bin folder (sluice-compile, sluice-run)")
    ap.add_argument("--results", help="folder for NAME.json results (read by --write-doc)")
    ap.add_argument("--write-doc", help="write the table from --results to this file")
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("zoo_dir")
    ap.add_argument("name", nargs="?")
    args = ap.parse_args()
    if args.write_doc:
        if not args.results:
            ap.error("--write-doc needs --results")
        return write_doc(args)
    if not args.bin or not args.name:
        ap.error("checking needs --bin and NAME")
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
