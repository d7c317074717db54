#!/usr/bin/env python3
"""Runs the ONNX backend test cases of Debian's libonnx-testdata through Sluice.

Each case (a folder with model.onnx and test_data_set_N/) runs on one or more
targets and is classified as passed, failed (ran, wrong numbers or an error
while compiling or running) or unsupported (an op the importer or the target
refuses):

- reference: `sluice-run MODEL --reference INPUTS --expect OUTPUTS`
- cpu: `sluice-compile MODEL -o BUNDLE --shape=NAME=DIMS...` with the data
  set's input shapes, then `sluice-run BUNDLE NAME=FILE... --expect OUTPUTS`.
  A sequence input's SequenceProto file gives its element shapes
  (`--shape=NAME=3x4,2x4`, `NAME=empty`); the bundle takes the elements as
  tensors, and sluice-run reads and compares sequences from the manifest.
  Bundles are static: where a case feeds a shape tensor (a Reshape target,
  Slice bounds, TopK's k, Resize's scales, Range's limits...) as a graph
  input, the first compile fails and the case is compiled again with its
  shape-like inputs (integer tensors, and tensors of rank <= 1 with at most
  16 elements) bound to the data set's values (`--bind`), as TensorRT needs
  shape-tensor values at build time; such cases are counted and reported as
  "bound".

Results go to a JSON file; --write-doc renders docs/onnx-coverage.md (one
column per target); --baseline fails (exit 1) when the first target's pass
count drops below the committed baseline, so coverage can only go up.

Usage: run_conformance.py --bin BUILD/bin [--targets reference,cpu] [--data DIR]
                          [--jobs N] [--results FILE.json] [--write-doc FILE.md]
                          [--baseline FILE] [--update-baseline] [--filter SUBSTR]
                          [--shard K/N]
"""
import argparse
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402

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


def tensor_info(path):
    """(dims, onnx data type) of a TensorProto file, or None (sequences,
    optionals and unreadable files)."""
    try:
        import onnx  # noqa: PLC0415
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        if not t.data_type:
            return None
        return list(t.dims), t.data_type
    except Exception:  # noqa: BLE001
        return None


def sequence_shapes(path):
    """The element shapes of a SequenceProto file as sluice-compile's
    --shape spells them ("3x4,2x4", "scalar" for rank 0, "empty" for no
    elements), or None (not a sequence of tensors, unreadable)."""
    try:
        import onnx  # noqa: PLC0415
        seq = onnx.SequenceProto()
        with open(path, "rb") as f:
            seq.ParseFromString(f.read())
        if seq.elem_type != onnx.SequenceProto.TENSOR and seq.tensor_values:
            return None
        shapes = ["x".join(map(str, t.dims)) or "scalar" for t in seq.tensor_values]
        return ",".join(shapes) or "empty"
    except Exception:  # noqa: BLE001
        return None


def optional_shape(path):
    """The --shape of an OptionalProto file's input: "none" when empty, the
    held tensor's dims, or a held sequence's element shapes; None when
    unreadable."""
    try:
        import onnx  # noqa: PLC0415
        opt = onnx.OptionalProto()
        with open(path, "rb") as f:
            opt.ParseFromString(f.read())
        if opt.elem_type == onnx.OptionalProto.TENSOR and opt.HasField("tensor_value"):
            return "x".join(map(str, opt.tensor_value.dims)) or "scalar"
        if opt.elem_type == onnx.OptionalProto.SEQUENCE and opt.HasField("sequence_value"):
            shapes = ["x".join(map(str, t.dims)) or "scalar"
                      for t in opt.sequence_value.tensor_values]
            return ",".join(shapes) or "empty"
        return "none"
    except Exception:  # noqa: BLE001
        return None


def input_names(model_path):
    try:
        import onnx  # noqa: PLC0415
        model = onnx.load(model_path, load_external_data=False)
        init = {x.name for x in model.graph.initializer}
        return [i.name for i in model.graph.input if i.name not in init]
    except Exception:  # noqa: BLE001
        return []


def input_kinds(model_path):
    """Graph input name -> "tensor_type", "sequence_type", "optional_type" ..."""
    try:
        import onnx  # noqa: PLC0415
        model = onnx.load(model_path, load_external_data=False)
        return {i.name: i.type.WhichOneof("value") for i in model.graph.input}
    except Exception:  # noqa: BLE001
        return {}


def shape_flags(model, names, inputs):
    """(--shape flags, per-input tensor info) for a data set's input files:
    a tensor input's dims, a sequence input's element shapes from its
    SequenceProto file (the bundle takes the elements as inputs); an
    optional input's from its OptionalProto file (none when empty)."""
    kinds = input_kinds(model)
    infos = [tensor_info(p) if kinds.get(name, "tensor_type") == "tensor_type" else None
             for name, p in zip(names, inputs)]
    shapes = [f"--shape={name}=" + ("x".join(map(str, info[0])) or "scalar")
              for name, info in zip(names, infos) if info is not None]
    shapes += [f"--shape={name}={spec}" for name, spec in
               ((name, sequence_shapes(p)) for name, p in zip(names, inputs)
                if kinds.get(name) == "sequence_type") if spec is not None]
    # An optional input is compiled present (its value's shape) or absent.
    shapes += [f"--shape={name}={spec}" for name, spec in
               ((name, optional_shape(p)) for name, p in zip(names, inputs)
                if kinds.get(name) == "optional_type") if spec is not None]
    return shapes, infos


def numbered(folder, prefix):
    return sorted(glob.glob(os.path.join(folder, f"{prefix}_*.pb")),
                  key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0]))


def classify(proc, prefix=""):
    """(status, message) of a failed sluice-compile / sluice-run."""
    err = (proc.stderr.strip().splitlines() or [""])[-1]
    out = [l for l in proc.stdout.splitlines() if "MISMATCH" in l]
    message = prefix + (err or (out[0] if out else f"exit {proc.returncode}"))
    status = "unsupported" if "unsupported ops" in message else "failed"
    if proc.returncode not in (0, 1, 2):
        message = f"crashed (exit {proc.returncode}): {message}"
        status = "failed"
    return status, message[:300]


# ONNX TensorProto integer data types (shape tensors are int64 or int32).
INTEGER_TYPES = {6, 7}


def run_reference(bindir, model, data_sets, timeout):
    for data_set in data_sets:
        cmd = [os.path.join(bindir, "sluice-run"), model, "--reference",
               *numbered(data_set, "input"), "--expect", *numbered(data_set, "output")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return (*classify(proc), False)
    return "passed", "", False


def run_compiled(bindir, model, data_sets, timeout, target="cpu"):
    names = input_names(model)
    bound_any = False
    work = tempfile.mkdtemp(prefix="sluice-conf-")
    try:
        for n, data_set in enumerate(data_sets):
            inputs = numbered(data_set, "input")
            shapes, infos = shape_flags(model, names, inputs)
            bundle = os.path.join(work, f"set{n}.sluice")
            compile_cmd = [os.path.join(bindir, "sluice-compile"), model, "-o", bundle,
                           "--quiet", f"--target={target}", *shapes]
            if target == "cuda" and CUDA_ARCH:
                compile_cmd.append(f"--gpu-arch={CUDA_ARCH}")
            proc = subprocess.run(compile_cmd, capture_output=True, text=True,
                                  timeout=timeout)
            bound = set()
            if proc.returncode != 0 and "unsupported ops" not in proc.stderr:
                # Shape tensors fed as graph inputs: bind the integer inputs.
                bound = {name for name, info in zip(names, infos)
                         if info is not None and (info[1] in INTEGER_TYPES or
                                                  (len(info[0]) <= 1 and
                                                   (info[0] or [1])[0] <= 16))}
                if bound:
                    binds = [f"--bind={name}={path}"
                             for name, path in zip(names, inputs) if name in bound]
                    proc = subprocess.run(compile_cmd + binds, capture_output=True,
                                          text=True, timeout=timeout)
            if proc.returncode != 0:
                return (*classify(proc, "compile: "), False)
            bound_any |= bool(bound)
            run_inputs = [f"{name}={path}" for name, path in zip(names, inputs)
                          if name not in bound]
            cmd = [os.path.join(bindir, "sluice-run"), bundle, *run_inputs,
                   "--threads=1", "--expect", *numbered(data_set, "output")]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            if proc.returncode != 0:
                return (*classify(proc), bound_any)
        return "passed", "", bound_any
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_cpu(bindir, model, data_sets, timeout):
    return run_compiled(bindir, model, data_sets, timeout, "cpu")


def run_cuda(bindir, model, data_sets, timeout):
    return run_compiled(bindir, model, data_sets, timeout, "cuda")


# cuda: the architecture to build conformance bundles for (one, to keep
# nvcc's time per case down); set from --gpu-arch.
CUDA_ARCH = ""

RUNNERS = {"reference": run_reference, "cpu": run_cpu, "cuda": run_cuda}


def run_case(bindir, suite, path, timeout, targets):
    name = os.path.basename(path)
    model = os.path.join(path, "model.onnx")
    ops = op_types(model)
    result = {"suite": suite, "case": name, "op": primary_op(suite, name, ops),
              "ops": sorted(set(ops))}
    data_sets = sorted(glob.glob(os.path.join(path, "test_data_set_*")))
    for target in targets:
        if not data_sets:
            status, message, bound = "failed", "no test data sets", False
        else:
            try:
                status, message, bound = RUNNERS[target](bindir, model, data_sets, timeout)
            except subprocess.TimeoutExpired:
                status, message, bound = "failed", f"timeout after {timeout}s", False
        result[target] = {"status": status, "message": message, "bound": bound}
    # The first target's outcome is the case's headline status.
    result.update(status=result[targets[0]]["status"],
                  message=result[targets[0]]["message"])
    return result


TARGET_TITLES = {"reference": "Reference evaluator", "cpu": "cpu target (compiled)",
                 "cuda": "cuda target (compiled, on the GPU)"}


def write_doc(results, path, targets):
    total = len(results)
    lines = [
        "# ONNX backend test coverage",
        "",
        "Generated by `test/conformance/run_conformance.py --write-doc` from the "
        "1072 cases of Debian's `libonnx-testdata` (ONNX 1.12: `data/node`, "
        "`data/pytorch-converted`, `data/pytorch-operator`, `data/simple`). "
        "Do not edit by hand.",
        "",
    ]
    for t in targets:
        passed = sum(r[t]["status"] == "passed" for r in results)
        extra = ""
        if t == "cpu":
            bound = sum(r[t]["status"] == "passed" and r[t]["bound"] for r in results)
            extra = (f" {bound} of them compiled with shape-tensor inputs bound "
                     "to the data set's values (`--bind`).")
        lines.append(f"**{TARGET_TITLES[t]}: {passed} of {total} cases pass "
                     f"({100.0 * passed / max(total, 1):.1f}%).**{extra}")
        lines.append("")
    head = " | ".join(f"{t} passed | {t} failed | {t} unsupported" for t in targets)
    lines += [f"| suite | {head} |", "|---|" + "---:|" * (3 * len(targets))]
    for suite in SUITES:
        rows = [r for r in results if r["suite"] == suite]
        if not rows:
            continue
        cells = []
        for t in targets:
            cells += [str(sum(r[t]["status"] == k for r in rows))
                      for k in ("passed", "failed", "unsupported")]
        lines.append(f"| {suite} | " + " | ".join(cells) + " |")
    by_op = {}
    for r in results:
        if r["op"] is not None:
            by_op.setdefault(r["op"], []).append(r)
    cols = " | ".join(f"{t} passed | {t} not passing" for t in targets)
    lines += ["", "## Per op (node tests)", "",
              f"| op | cases | {cols} |",
              "|---|---:|" + "---:|---|" * len(targets)]
    for op in sorted(by_op, key=str.lower):
        rows = by_op[op]
        cells = []
        for t in targets:
            bad = [r["case"] for r in rows if r[t]["status"] != "passed"]
            shown = ", ".join(bad[:6]) + (f", … (+{len(bad) - 6})" if len(bad) > 6 else "")
            cells += [str(len(rows) - len(bad)), shown]
        lines.append(f"| {op} | {len(rows)} | " + " | ".join(cells) + " |")
    lines += ["", "## Model suites (pytorch-converted, pytorch-operator, simple)", "",
              "| case | ops | " + " | ".join(targets) + " | message |",
              "|---|---|" + "---|" * len(targets) + "---|"]
    for r in results:
        if r["op"] is None:
            msg = next((r[t]["message"] for t in targets if r[t]["message"]), "")
            msg = msg.replace("|", "\\|")
            lines.append(f"| {r['suite']}/{r['case']} | {' '.join(r['ops'])} | " +
                         " | ".join(r[t]["status"] for t in targets) + f" | {msg} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="folder with sluice-run and sluice-compile")
    ap.add_argument("--targets", default="reference",
                    help="comma-separated: reference, cpu, cuda (the first one is checked "
                         "against --baseline)")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--results", help="write per-case results as JSON")
    ap.add_argument("--write-doc", help="render the coverage table (markdown)")
    ap.add_argument("--baseline", help="file holding the minimum pass count")
    ap.add_argument("--update-baseline", action="store_true")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--shard", default="1/1",
                    help="K/N: run only the K-th (1-based) of N interleaved slices of the "
                         "cases, so that a GPU machine can run them in several parts")
    ap.add_argument("--gpu-arch", default="sm_90",
                    help="cuda: the one architecture to build bundles for (sluice-compile "
                         "--gpu-arch); default sm_90 (H100/H200)")
    args = ap.parse_args()
    global CUDA_ARCH
    CUDA_ARCH = args.gpu_arch

    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in RUNNERS:
            sys.exit(f"run_conformance: unknown target '{t}' (targets: reference, cpu, cuda)")
    if "cuda" in targets and not st.gpu_present():
        print("[conformance] cuda target: " + st.NO_GPU)
        return st.SKIPPED
    for tool in ("sluice-run", "sluice-compile"):
        if not os.access(os.path.join(args.bin, tool), os.X_OK):
            sys.exit(f"run_conformance: {os.path.join(args.bin, tool)} not found (build first)")
    shard = re.fullmatch(r"(\d+)/(\d+)", args.shard)
    if not shard or not 1 <= int(shard[1]) <= int(shard[2]):
        sys.exit(f"run_conformance: bad --shard '{args.shard}' (expected K/N, 1 <= K <= N)")
    k, n = int(shard[1]), int(shard[2])
    cases = [c for c in list_cases(args.data) if args.filter in os.path.basename(c[1])]
    cases = cases[k - 1::n]
    if not cases:
        sys.exit(f"run_conformance: no test cases under {args.data} "
                 "(install libonnx-testdata: scripts/setup.sh)")
    start = time.time()
    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, args.bin, s, p, args.timeout, targets) for s, p in cases]
        for i, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results.append(fut.result())
            if i % 100 == 0 or i == len(futures):
                print(f"[conformance] {i}/{len(futures)} cases, "
                      f"{time.time() - start:.0f}s", flush=True)
    results.sort(key=lambda r: (SUITES.index(r["suite"]), r["case"]))
    for t in reversed(targets):
        passed = sum(r[t]["status"] == "passed" for r in results)
        failed = sum(r[t]["status"] == "failed" for r in results)
        unsupported = sum(r[t]["status"] == "unsupported" for r in results)
        if args.verbose:
            for r in results:
                if r[t]["status"] != "passed":
                    print(f"  [{t}] {r[t]['status']:11} {r['suite']}/{r['case']}: "
                          f"{r[t]['message']}")
        print(f"[conformance] {TARGET_TITLES[t]}: {passed} passed, {failed} failed, "
              f"{unsupported} unsupported of {len(results)} cases")
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)
    if args.write_doc:
        write_doc(results, args.write_doc, targets)
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
