#!/usr/bin/env python3
"""Sluice's cpu target against ONNX Runtime, on the same inputs and threads.

For each model (a BERT-base-sized encoder and a ResNet-18-style CNN, both with
random weights, exported by torch.onnx at opset 17 with static shapes, batch 1)
the script:

  1. exports it into the cache folder (--out, default build/bench/) unless it
     is already there, with its inputs and ONNX Runtime's outputs on them;
  2. compiles it with `sluice-compile MODEL -o BUNDLE --report REPORT.json`,
     recording the compile time and the report's kernels, library_calls,
     arena_bytes and weights_bytes;
  3. at each thread count of --threads (default 1, 2 and all cores), times
     ONNX Runtime (CPUExecutionProvider, intra-op threads = the count,
     inter-op threads 1, ORT_ENABLE_ALL, sequential execution) and the bundle
     (`sluice-run ... --iters --warmup --threads --expect ORT_OUTPUTS`), the
     same warm-up and timed runs each, in --rounds alternating rounds (ORT,
     Sluice, ORT, ...: a shared machine's slow phases hit both), and reports
     the median over rounds of each round's median and p90 latency, and the
     ratio sluice_median / ort_median (< 1: Sluice is faster);
  4. prints a table and, with --write-doc FILE, writes or updates the section
     "## cpu target vs ONNX Runtime" of FILE (other sections are kept; rows of
     other models or Sluice configurations, --label, are kept too).

A model that Sluice cannot compile (e.g. unsupported ops) is reported as such
in its row; ONNX Runtime is still timed.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECTION = "## cpu target vs ONNX Runtime"
EXPORT_VERSION = 1  # bump when the exported models change, to re-export


def log(msg):
    print(f"[bench-cpu {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------- models


def build_bert():
    import torch

    # The test suite's BERT-style encoder (test/models/export_models.py) at
    # BERT-base size: one definition for the tests and the benchmark.
    sys.path.insert(0, os.path.join(ROOT, "test", "models"))
    from export_models import BertEncoder  # noqa: PLC0415

    model = BertEncoder(vocab=30522, hidden=768, heads=12, layers=12, ffn=3072,
                        max_len=512)
    seq = 128
    ids = torch.randint(0, 30522, (1, seq))
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, 112:] = 0  # some padding, so the mask matters
    return dict(model=model, inputs=(ids, mask), input_names=["input_ids", "attention_mask"],
                output_names=["last_hidden_state", "pooled"],
                description="BERT-base-sized encoder (12 layers, hidden 768, 12 heads, "
                            "FFN 3072, seq 128, batch 1)")


def build_resnet():
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return torch.relu(y + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        """ResNet-18-style: 7x7/2 conv-bn-relu stem and 3x3/2 max pool, four
        stages of two basic blocks (64/128/256/512 channels), global average
        pool, fc 1000."""

        def __init__(self, classes=1000):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            stages, cin = [], 64
            for i, cout in enumerate([64, 128, 256, 512]):
                stride = 1 if i == 0 else 2
                stages += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.stages = nn.Sequential(*stages)
            self.fc = nn.Linear(512, classes)

        def forward(self, image):
            x = self.stages(self.stem(image))
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
            return self.fc(x)

    model = ResNet18()
    for m in model.modules():  # fresh BatchNorm statistics are 0/1: give them real values
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return dict(model=model, inputs=(torch.randn(1, 3, 224, 224),), input_names=["image"],
                output_names=["logits"],
                description="ResNet-18-style CNN (input 1x3x224x224, BatchNorm folded)")


def build_mlp():
    """A tiny MLP (MatMul/Add/ReLU only): a smoke test of the script itself,
    compilable by the earliest cpu target."""
    import torch
    from torch import nn
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))
    return dict(model=model, inputs=(torch.randn(8, 256),), input_names=["features"],
                output_names=["out"], description="smoke-test MLP (8x256 -> 1024 -> 256)")


MODELS = {"bert": build_bert, "resnet": build_resnet, "mlp": build_mlp}


# ---------------------------------------------------------------- export


def model_paths(out, name):
    folder = os.path.join(out, name)
    return dict(folder=folder, onnx=os.path.join(folder, "model.onnx"),
                inputs=os.path.join(folder, "inputs"), expected=os.path.join(folder, "expected"),
                stamp=os.path.join(folder, "export.json"))


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def export_model(name, out, threads, force):
    """Exports model NAME into OUT/NAME unless already there; returns its
    manifest (the stamp written last, so an interrupted export is redone)."""
    p = model_paths(out, name)
    if not force and os.path.exists(p["stamp"]):
        with open(p["stamp"]) as f:
            stamp = json.load(f)
        if stamp.get("version") == EXPORT_VERSION and os.path.exists(p["onnx"]):
            log(f"{name}: using cached export {p['onnx']}")
            return stamp
    import warnings
    import torch
    warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
    torch.manual_seed(0)
    np.random.seed(0)
    if os.path.exists(p["folder"]):
        shutil.rmtree(p["folder"])
    os.makedirs(p["inputs"])
    os.makedirs(p["expected"])
    spec = MODELS[name]()
    model = spec["model"].eval()
    params = sum(t.numel() for t in model.parameters())
    log(f"{name}: exporting {spec['description']}, {params / 1e6:.1f}M parameters, "
        f"to {p['onnx']} (opset 17) ...")
    start = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(model, spec["inputs"], p["onnx"], input_names=spec["input_names"],
                          output_names=spec["output_names"], opset_version=17,
                          do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
        torch_outputs = model(*spec["inputs"])
    if not isinstance(torch_outputs, (tuple, list)):
        torch_outputs = (torch_outputs,)
    log(f"{name}: exported in {time.perf_counter() - start:.1f} s, "
        f"{os.path.getsize(p['onnx']) / 2**20:.0f} MiB")
    feeds = {n: t.numpy() for n, t in zip(spec["input_names"], spec["inputs"])}
    for n, a in feeds.items():
        np.save(os.path.join(p["inputs"], f"{n}.npy"), a)
    log(f"{name}: running ONNX Runtime for the reference outputs ...")
    ort_outputs = ort_session(p["onnx"], threads).run(spec["output_names"], feeds)
    for n, t, o in zip(spec["output_names"], torch_outputs, ort_outputs):
        np.save(os.path.join(p["expected"], f"{n}.npy"), o)
        diff = float(np.max(np.abs(t.numpy() - o)))
        log(f"{name}: output {n} {list(o.shape)}: torch vs onnxruntime max abs diff {diff:.2e}")
    stamp = dict(version=EXPORT_VERSION, description=spec["description"], parameters=params,
                 inputs=spec["input_names"], outputs=spec["output_names"],
                 shapes={n: list(a.shape) for n, a in feeds.items()})
    with open(p["stamp"], "w") as f:
        json.dump(stamp, f, indent=1)
    return stamp


# ---------------------------------------------------------------- timing


def median_p90(times):
    """As sluice-run computes them: sorted[n/2] and sorted[min(n-1, n*0.9)]."""
    t = sorted(times)
    return t[len(t) // 2], t[min(len(t) - 1, int(len(t) * 0.9))]


def time_ort(name, out, stamp, threads, iters, warmup, session=None):
    """`session`: one made by ort_session for `threads` (a round reuses its
    row's), else a new one."""
    p = model_paths(out, name)
    import onnxruntime as ort
    session = session or ort_session(p["onnx"], threads)
    feeds = {n: np.load(os.path.join(p["inputs"], f"{n}.npy")) for n in stamp["inputs"]}
    log(f"{name}: timing ONNX Runtime {ort.__version__} ({threads} threads, "
        f"{warmup} warm-up + {iters} runs) ...")
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    med, p90 = median_p90(times)
    log(f"{name}: ONNX Runtime median {med:.3f} ms, p90 {p90:.3f} ms")
    return dict(median_ms=med, p90_ms=p90)


def unsupported_summary(stderr):
    ops = []
    for op in re.findall(r"\((\w+), opset \d+\)", stderr):
        if op not in ops:
            ops.append(op)
    return "unsupported ops: " + ", ".join(ops) if ops else "unsupported ops"


def compile_sluice(name, out, stamp, args):
    p = model_paths(out, name)
    bundle = os.path.join(p["folder"], f"{args.label}.sluice")
    report = os.path.join(p["folder"], f"{args.label}.report.json")
    for stale in (report,):
        if os.path.exists(stale):
            os.remove(stale)
    if os.path.exists(bundle):
        shutil.rmtree(bundle)
    # --no-cache: the compile time recorded is a compile's, not a cache hit's.
    cmd = [os.path.join(args.bin, "sluice-compile"), p["onnx"], "-o", bundle,
           f"--report={report}", "--no-cache"]
    cmd += [f"--shape={n}={'x'.join(map(str, s))}" for n, s in stamp["shapes"].items()]
    cmd += args.compile_arg
    log(f"{name}: compiling: {' '.join(cmd)}")
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)
    except OSError as e:
        return dict(ok=False, status=f"cannot run sluice-compile: {e}")
    # Stream sluice-compile's progress lines (a big model's build takes minutes).
    timer = threading.Timer(args.compile_timeout, proc.kill)
    timer.start()
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        log(f"{name}:   {lines[-1]}")
    proc.wait()
    timed_out = not timer.is_alive()
    timer.cancel()
    seconds = time.perf_counter() - start
    if timed_out and proc.returncode != 0:
        return dict(ok=False, status=f"compile timed out after {args.compile_timeout} s")
    if proc.returncode != 0:
        err = "\n".join(lines).strip()
        if "unsupported ops" in err:
            status = unsupported_summary(err)
        else:
            lines = [l for l in err.splitlines() if "error" in l] or err.splitlines() or [""]
            status = f"compile failed (exit {proc.returncode}): {lines[-1][:200]}"
        return dict(ok=False, status=status, failed_after_s=seconds)
    with open(report) as f:
        rep = json.load(f)
    log(f"{name}: compiled in {seconds:.1f} s: {rep.get('kernels')} kernels, "
        f"{rep.get('library_calls')} library calls, arena {rep.get('arena_bytes')} B, "
        f"weights {rep.get('weights_bytes')} B")
    return dict(ok=True, bundle=bundle, compile_s=seconds,
                **{k: rep.get(k) for k in ("kernels", "library_calls", "arena_bytes",
                                           "weights_bytes", "phases")})


LATENCY_RE = re.compile(r"latency over (\d+) runs \(cpu target, (\d+) threads\): "
                        r"median ([0-9.eE+-]+) ms, p90 ([0-9.eE+-]+) ms")
OUTPUT_RE = re.compile(r"output '([^']*)' .*max abs err ([0-9.eE+-]+|nan|inf), "
                       r"max rel err ([0-9.eE+-]+|nan|inf)")


def time_sluice(name, out, stamp, comp, args):
    p = model_paths(out, name)
    cmd = [os.path.join(args.bin, "sluice-run"), comp["bundle"]]
    cmd += [f"{n}={os.path.join(p['inputs'], n + '.npy')}" for n in stamp["inputs"]]
    cmd += ["--expect"] + [f"{n}={os.path.join(p['expected'], n + '.npy')}"
                           for n in stamp["outputs"]]
    cmd += [f"--rtol={args.rtol}", f"--atol={args.atol}", f"--iters={args.iters}",
            f"--warmup={args.warmup}", f"--threads={args.threads}"]
    log(f"{name}: timing Sluice: {' '.join(cmd)}")
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=args.run_timeout)
    except subprocess.TimeoutExpired:
        return dict(status=f"sluice-run timed out after {args.run_timeout} s")
    for line in (proc.stdout + proc.stderr).strip().splitlines():
        log(f"{name}:   {line}")
    res = {}
    m = LATENCY_RE.search(proc.stdout)
    if m:
        res.update(median_ms=float(m.group(3)), p90_ms=float(m.group(4)),
                   threads=int(m.group(2)))
    errs = [(float(a), float(r)) for _, a, r in OUTPUT_RE.findall(proc.stdout)]
    if errs:
        res["max_abs_err"] = max(a for a, _ in errs)
        res["max_rel_err"] = max(r for _, r in errs)
    if proc.returncode == 0:
        res["status"] = "match"
    elif proc.returncode == 1:
        res["status"] = "MISMATCH"
    else:
        err = proc.stderr.strip().splitlines() or [""]
        res["status"] = f"run failed (exit {proc.returncode}): {err[-1][:200]}"
    return res


def merge_rounds(rounds):
    """One row's numbers from its rounds: the median over rounds of each
    round's median and p90; the worst output error; the first status that is
    not a match (or "match")."""
    res = {"rounds": rounds}
    med = [r["median_ms"] for r in rounds if r.get("median_ms") is not None]
    if med:
        res["median_ms"] = float(np.median(med))
        res["p90_ms"] = float(np.median([r["p90_ms"] for r in rounds
                                         if r.get("p90_ms") is not None]))
    for key in ("max_abs_err", "max_rel_err"):
        errs = [r[key] for r in rounds if key in r]
        if errs:
            res[key] = max(errs)
    statuses = [r["status"] for r in rounds if "status" in r]
    if statuses:
        res["status"] = next((st for st in statuses if st != "match"), "match")
    return res


# ---------------------------------------------------------------- report


def machine_info(args):
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import onnxruntime as ort
    commit = "unknown"
    try:
        commit = subprocess.run(["git", "-C", args.bin if os.path.isdir(args.bin) else ROOT, "rev-parse", "--short", "HEAD"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return dict(cpu=cpu, cores=os.cpu_count(), threads=",".join(map(str, args.thread_counts)),
                rounds=args.rounds, ort=ort.__version__,
                date=datetime.date.today().isoformat(), commit=commit,
                load=os.getloadavg()[0])


def fmt(v, spec=".2f"):
    return "—" if v is None else format(v, spec)


def fmt_ms(v):
    return "—" if v is None else format(v, ".3f" if v < 10 else ".1f")


HEADER = ["model", "Sluice config", "threads", "ORT median ms", "Sluice median ms",
          "Sluice / ORT", "ORT p90 ms", "Sluice p90 ms", "outputs vs ORT", "compile s",
          "kernels", "library calls", "arena MiB", "weights MiB", "date"]


def row_cells(r, info):
    s, o, c = r["sluice"], r["ort"], r["compile"]
    ratio = (s["median_ms"] / o["median_ms"]
             if s.get("median_ms") is not None and o.get("median_ms") else None)
    status = s.get("status") or c.get("status", "")
    if "max_abs_err" in s:
        status += f" (abs {s['max_abs_err']:.1e}, rel {s['max_rel_err']:.1e})"
    mib = lambda b: None if b is None else b / 2**20
    return [r["model"], r["label"], str(r["threads"]), fmt_ms(o.get("median_ms")),
            fmt_ms(s.get("median_ms")), fmt(ratio, ".2f"), fmt_ms(o.get("p90_ms")),
            fmt_ms(s.get("p90_ms")), status, fmt(c.get("compile_s"), ".1f"),
            fmt(c.get("kernels"), "d"), fmt(c.get("library_calls"), "d"),
            fmt(mib(c.get("arena_bytes")), ".1f"), fmt(mib(c.get("weights_bytes")), ".1f"),
            info["date"]]


def print_table(rows):
    widths = [max(len(HEADER[i]), *(len(r[i]) for r in rows)) for i in range(len(HEADER))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))
    print(line(HEADER))
    print(line(["-" * w for w in widths]))
    for r in rows:
        print(line(r))


def md_row(cells):
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


INTRO = """# Benchmarks

Programs under `bench/` print ratios against peers measured in the same run;
tests never assert timings. This file is written by those programs (each owns
one section); do not edit the numbers by hand.
"""


def section_text(rows_md, info):
    return f"""{SECTION}

Latency of one inference (batch 1) of models exported by torch.onnx (opset 17,
random weights, static shapes): a compiled Sluice bundle (`sluice-run`) against
ONNX Runtime (CPUExecutionProvider, ORT_ENABLE_ALL, sequential execution,
inter-op threads 1), with the same inputs, intra-op thread count, warm-up and
timed runs, in alternating rounds (ORT, Sluice, ORT, ...; each number is the
median over rounds of a round's median or p90), at 1, 2 and all threads.
*Sluice / ORT* is the ratio of medians: below 1, Sluice is faster.
*Outputs vs ORT* is `sluice-run --expect` on ONNX Runtime's outputs (max abs
and rel error). *Sluice config* names the compiler configuration (`--label`);
rows of other models or configurations are kept when the section is updated.

Models: `bert` is a BERT-base-sized encoder (12 layers, hidden 768, 12 heads,
FFN 3072, erf GELU, post-LayerNorm, padding mask, seq 128); `resnet` a
ResNet-18-style CNN (input 1x3x224x224, BatchNorm folded into the
convolutions).

Reproduce (exports into `build/bench/` on first use, then compiles and times):

```sh
./scripts/bench-cpu.sh --write-doc docs/benchmarks.md   # --help for options
```

Last run: {info['date']}, CPU {info['cpu']}, {info['cores']} cores, threads {info['threads']},
{info['rounds']} alternating rounds, ONNX Runtime {info['ort']}, Sluice commit {info["commit"]},
load average {info['load']:.2f} at the start.

{md_row(HEADER)}
{md_row(['---'] * len(HEADER))}
""" + "".join(r + "\n" for r in rows_md)


def write_doc(path, new_rows, info):
    text = open(path).read() if os.path.exists(path) else INTRO
    lines = text.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.rstrip() == SECTION), None)
    old_rows = []
    if start is None:
        before, after = text.rstrip("\n") + "\n\n", ""
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
                   len(lines))
        before = "".join(lines[:start])
        after = "".join(lines[end:])
        body = [l.rstrip("\n") for l in lines[start + 1:end] if l.startswith("|")]
        old_rows = body[2:]  # past the header and separator
    key = lambda r: tuple(c.strip() for c in r.strip("|").split("|")[:3])
    merged, new_by_key = [], {key(r): r for r in new_rows}
    for r in old_rows:
        merged.append(new_by_key.pop(key(r), r))
    merged += [r for r in new_rows if key(r) in new_by_key]
    out = before + section_text(merged, info) + ("\n" + after if after else "")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(out)
    log(f"wrote section '{SECTION}' of {path}")


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(
        description="Times Sluice's cpu target against ONNX Runtime on a BERT-base-sized "
                    "encoder and a ResNet-18-style CNN (same inputs, same threads) and "
                    "prints the ratio of median latencies (< 1: Sluice is faster).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--models", default="bert,resnet",
                    help=f"comma-separated, of: {', '.join(MODELS)} (mlp: a tiny smoke test "
                         "of this script)")
    ap.add_argument("--iters", type=int, default=20, help="timed runs")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up runs")
    ap.add_argument("--threads", default="1,2,all",
                    help="intra-op thread counts for both, ORT and Sluice, comma-separated "
                         "(all: the cores); a row per model and count")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating rounds of ORT's and Sluice's timed runs per row")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                    help="folder with sluice-compile and sluice-run")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench"),
                    help="cache folder for exported models and bundles")
    ap.add_argument("--label", default="sluice",
                    help="name of the Sluice configuration (a column of the table; "
                         "rows of other labels are kept in --write-doc)")
    ap.add_argument("--compile-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for sluice-compile, as --compile-arg=--flag (repeatable; "
                         "with --label, to compare configurations)")
    ap.add_argument("--rtol", type=float, default=1e-3, help="output check vs ORT")
    ap.add_argument("--atol", type=float, default=1e-4, help="output check vs ORT")
    ap.add_argument("--write-doc", metavar="FILE",
                    help="write/update the section '%s' of FILE" % SECTION)
    ap.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    ap.add_argument("--force-export", action="store_true", help="re-export cached models")
    ap.add_argument("--skip-sluice", action="store_true",
                    help="time ONNX Runtime only (export and ORT half)")
    ap.add_argument("--compile-timeout", type=int, default=3600, help="seconds")
    ap.add_argument("--run-timeout", type=int, default=3600, help="seconds")
    args = ap.parse_args()

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    for n in names:
        if n not in MODELS:
            ap.error(f"unknown model '{n}' (known: {', '.join(MODELS)})")
    if args.skip_sluice and args.write_doc:
        ap.error("--write-doc records Sluice's numbers: drop --skip-sluice")
    args.thread_counts = []
    for token in args.threads.split(","):
        token = token.strip()
        try:
            count = os.cpu_count() if token == "all" else int(token)
        except ValueError:
            ap.error(f"--threads: '{token}' is not a thread count (an integer or all)")
        if count < 1:
            ap.error("--threads: counts must be >= 1")
        if count not in args.thread_counts:
            args.thread_counts.append(count)
    if args.iters < 1 or args.warmup < 0 or args.rounds < 1:
        ap.error("--iters and --rounds must be >= 1, --warmup >= 0")
    args.bin = os.path.abspath(args.bin)
    args.out = os.path.abspath(args.out)
    if not args.skip_sluice:
        for tool in ("sluice-compile", "sluice-run"):
            if not os.access(os.path.join(args.bin, tool), os.X_OK):
                ap.error(f"{tool} not found in {args.bin} (build first, or pass --bin)")
    os.makedirs(args.out, exist_ok=True)
    info = machine_info(args)
    log(f"CPU {info['cpu']}, {info['cores']} cores, threads {info['threads']}, "
        f"ONNX Runtime {info['ort']}, load average {info['load']:.2f}, bin {args.bin}, "
        f"cache {args.out}")
    if info["load"] > 0.5:
        log(f"note: the machine is busy (load average {info['load']:.2f}): timings are noisy")

    results = []
    for name in names:
        stamp = export_model(name, args.out, args.thread_counts[0], args.force_export)
        comp = {}
        if not args.skip_sluice:
            comp = compile_sluice(name, args.out, stamp, args)
            if not comp["ok"]:
                log(f"{name}: Sluice: {comp['status']}")
        for threads in args.thread_counts:
            targs = argparse.Namespace(**{**vars(args), "threads": threads})
            session = ort_session(model_paths(args.out, name)["onnx"], threads)
            ort_rounds, sl_rounds = [], []
            for r in range(args.rounds):
                ort_rounds.append(time_ort(name, args.out, stamp, threads, args.iters,
                                           args.warmup, session))
                if comp.get("ok"):
                    sl_rounds.append(time_sluice(name, args.out, stamp, comp, targs))
            del session  # its threads stop before the next row's are made
            ort_res = merge_rounds(ort_rounds)
            if args.skip_sluice:
                sl = dict(status="not run (--skip-sluice)")
            else:
                sl = merge_rounds(sl_rounds) if sl_rounds else {}
                if "median_ms" in sl:
                    log(f"{name}, {threads} threads: Sluice median {sl['median_ms']:.3f} ms, "
                        f"p90 {sl['p90_ms']:.3f} ms, {sl['median_ms'] / ort_res['median_ms']:.2f}x "
                        f"ONNX Runtime's median; outputs: {sl['status']}")
            results.append(dict(model=name, label=args.label, threads=threads, ort=ort_res,
                                compile=comp, sluice=sl))

    rows = [row_cells(r, info) for r in results]
    print()
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(machine=info, args=vars(args), results=results), f, indent=1)
    if args.write_doc:
        write_doc(args.write_doc, [md_row(r) for r in rows], info)
    # Exit non-zero when Sluice ran and disagreed with ORT or failed to run a
    # compiled bundle; compile failures (unsupported ops) are reported, not errors.
    bad = [r["model"] for r in results
           if r["compile"].get("ok") and r["sluice"].get("status") != "match"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
