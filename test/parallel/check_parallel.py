#!/usr/bin/env python3
"""The check of tensor and sequence parallelism (docs/parallel.md) for one
exported test model (a test/models folder) and one parallel configuration.

--mode=run (the default):
  1. compiles the single-device bundle and the parallel one (--tp=N, --sp
     with --sp) at the same shapes (PARALLEL_SHAPES below: sequence lengths
     that 2 and 4 divide), each with --report; with --sp also the plain
     --tp=N bundle, to compare the bytes the two move;
  2. writes deterministic random inputs (token ids within the vocabulary of
     the embedding that reads them; a padding mask of ones but for the last
     quarter of the second row, so that a mask that does not reach every
     rank shows; standard normal floats) as .npy;
  3. runs the single bundle (sluice-run --save-outputs) and the parallel
     one as N ranks (sluice-run P.sluice --ranks=N ... --expect NAME=FILE
     --rtol=1e-3 --atol=1e-4);
  4. checks the report contract (check_reports): world_size, parallel
     {tp, sp, layers}, weights_bytes_per_rank (each at most 0.65x the single
     bundle's weights_bytes at tp=2, 0.4x at tp=4), collectives (TP: at most
     2 all-reduces per layer plus embedding and head; SP: at most 2
     all-reduces, none inside a layer, and no more bytes than TP);
  and prints a table of what it measured.

--mode=errors: the bad inputs give one clear error each, never a hang or a
  crash: --tp=3 on a 4-head model (must name the op and the sizes),
  --ranks=3 on a tp=2 bundle and --ranks=2 on a single-device bundle (one
  error line naming both world sizes), a tp=2 bundle without
  weights.rank1.bin (must name the file).

--self-test: runs check_reports on hand-made reports, a good set and one
  mutation per rule, and the bad-input judgments on made-up tool outputs, so
  that neither can pass by seeing nothing (needs no compiler).

--pp=P [--micro-batches=M] (pipeline parallelism): the same run
  check for a tp x P bundle (--tp=1 for a pure pipeline) run as tp*P ranks,
  and the pipeline report (check_pipeline_report): world_size, parallel
  {tp, pp, micro_batches, grid, axes}, one "pipeline" stage per rank group
  with its predicted time, the bubble fraction (P-1)/(M+P-1), each rank's
  weights at most 0.75x the single bundle's (a stage holds its own layers'
  weights), send/recv of the activations and the outputs' broadcast.

Usage: check_parallel.py --bin BUILD/bin [--tp N] [--sp] [--pp P [--micro-batches M]]
                         [--mode run|errors] [--keep DIR] MODEL_DIR
       check_parallel.py --self-test
"""
import argparse
import copy
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402

# Shapes of the parallel runs: batch 2, a sequence of 16 (2 and 4 divide it;
# the ViT's 16 tokens are cls + 3x5 patches of its 24x40 image).
PARALLEL_SHAPES = {
    "bert_encoder": {"input_ids": [2, 16], "attention_mask": [2, 16]},
    "gpt_decoder": {"input_ids": [2, 16]},
    "llama_block": {"input_ids": [2, 16]},
    "t5_block": {"input_ids": [2, 16]},
    "vit": {"pixel_values": [2, 3, 24, 40]},
}
# Transformer layers of each test model (the report's parallel.layers).
LAYERS = {name: 2 for name in PARALLEL_SHAPES}
# The widths --tp splits (export_models.py): attention heads, hidden size,
# FFN width (LLaMA's gate and up alike), vocabulary (0: no embedding).
SIZES = {
    "bert_encoder": {"heads": 4, "hidden": 64, "ffn": 128, "vocab": 96},
    "gpt_decoder": {"heads": 4, "hidden": 64, "ffn": 256, "vocab": 96},
    "llama_block": {"heads": 4, "hidden": 64, "ffn": 176, "vocab": 96},
    "t5_block": {"heads": 4, "hidden": 64, "ffn": 256, "vocab": 96},
    "vit": {"heads": 4, "hidden": 64, "ffn": 256, "vocab": 0},
}

# Per-rank weights against the single bundle's, per world size
# (`weights_bytes_per_rank`, docs/parallel.md "What the report says").
WEIGHT_RATIO = {2: 0.65, 4: 0.4}
COLLECTIVE_OPS = {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send", "recv",
                  "broadcast"}
RTOL, ATOL = "1e-3", "1e-4"
# Seconds a run that must fail may take: a rank that cannot start makes the
# others exit within 30 s (docs/parallel.md, "Faults"), plus mpirun's start
# and teardown.
RUN_ERROR_TIMEOUT = 60
SEED = 14


# ---------------------------------------------------------------------------
# The report contract.


def collective_totals(report):
    """{op: (count, bytes)} summed over the report's collectives entries."""
    totals = {}
    for entry in report.get("collectives", []):
        count, nbytes = totals.get(entry["op"], (0, 0))
        totals[entry["op"]] = (count + entry["count"], nbytes + entry["bytes"])
    return totals


def check_shape_of_report(report, where, n):
    """Failures of the keys' presence and types in one parallel report."""
    failures = []
    for key in ("world_size", "parallel", "weights_bytes_per_rank", "collectives",
                "weights_bytes"):
        if key not in report:
            failures.append(f"{where}: no '{key}' key (the --tp report holds world_size, "
                            "parallel, weights_bytes_per_rank, collectives, weights_bytes)")
    if failures:
        return failures
    if report["world_size"] != n:
        failures.append(f"{where}: world_size is {report['world_size']!r}, expected {n}")
    parallel = report["parallel"]
    if not isinstance(parallel, dict):
        failures.append(f"{where}: 'parallel' is {parallel!r}, not an object")
    else:
        for key, kind in (("tp", int), ("sp", bool), ("layers", int)):
            if key not in parallel:
                failures.append(f"{where}: parallel has no '{key}' key")
            elif type(parallel[key]) is not kind:  # bool is an int: compare types
                failures.append(f"{where}: parallel.{key} is {parallel[key]!r}, "
                                f"not {'a bool' if kind is bool else 'an integer'}")
    per_rank = report["weights_bytes_per_rank"]
    if (not isinstance(per_rank, list) or len(per_rank) != n
            or not all(type(b) is int and b >= 0 for b in per_rank)):
        failures.append(f"{where}: weights_bytes_per_rank is {per_rank!r}, expected a list of "
                        f"{n} byte counts (one per rank)")
    collectives = report["collectives"]
    if not isinstance(collectives, list):
        failures.append(f"{where}: collectives is {collectives!r}, not a list")
        return failures
    for entry in collectives:
        if (not isinstance(entry, dict) or not {"op", "count", "bytes"} <= set(entry)
                or type(entry.get("count")) is not int or type(entry.get("bytes")) is not int):
            failures.append(f"{where}: collectives entry {entry!r} is not "
                            "{\"op\": ..., \"count\": n, \"bytes\": b}")
        elif entry["op"] not in COLLECTIVE_OPS:
            failures.append(f"{where}: collectives entry with unknown op {entry['op']!r} "
                            f"(known: {', '.join(sorted(COLLECTIVE_OPS))})")
        elif entry["count"] < 0 or entry["bytes"] < 0 or (entry["count"] == 0) != (
                entry["bytes"] == 0):
            failures.append(f"{where}: collectives entry {entry!r}: count and bytes must be "
                            "non-negative and zero together")
    return failures


def check_reports(single, par, n, sp, layers, tp_report=None):
    """Checks the parallel bundle's report `par` (compiled with --tp=n and
    --sp when `sp`) against the single bundle's `single` and, for --sp, the
    plain --tp=n bundle's `tp_report`. Returns (failures, measured): a list
    of messages (empty when all holds) and the numbers for the table."""
    measured = {}
    failures = []
    if "weights_bytes" not in single or type(single["weights_bytes"]) is not int:
        failures.append("single report: no integer 'weights_bytes'")
    if single.get("world_size", 1) != 1:
        failures.append(f"single report: world_size is {single['world_size']!r}, expected 1")
    failures += check_shape_of_report(par, "parallel report", n)
    if sp:
        if tp_report is None:
            failures.append("--sp: no report of the --tp bundle to compare bytes with")
        else:
            failures += check_shape_of_report(tp_report, "tp report", n)
    if failures:
        return failures, measured

    parallel = par["parallel"]
    if parallel["tp"] != n:
        failures.append(f"parallel report: parallel.tp is {parallel['tp']}, expected {n}")
    if parallel["sp"] != sp:
        failures.append(f"parallel report: parallel.sp is {parallel['sp']}, expected {sp}")
    if parallel["layers"] != layers:
        failures.append(f"parallel report: parallel.layers is {parallel['layers']}: the compiler "
                        f"split {parallel['layers']} transformer layers, the model has {layers}")

    full = single["weights_bytes"]
    limit = WEIGHT_RATIO.get(n)
    ratios = [b / full if full else float("inf") for b in par["weights_bytes_per_rank"]]
    measured["weights"] = (full, par["weights_bytes_per_rank"], ratios, limit)
    if limit is not None:
        for rank, (nbytes, ratio) in enumerate(zip(par["weights_bytes_per_rank"], ratios)):
            if ratio > limit:
                failures.append(f"rank {rank} holds {nbytes} B of weights, {ratio:.3f}x the single "
                                f"bundle's {full} B (at most {limit}x at tp={n})")

    totals = collective_totals(par)
    measured["collectives"] = totals
    all_reduces = totals.get("all_reduce", (0, 0))[0]
    if not totals or sum(c for c, _ in totals.values()) == 0:
        failures.append(f"parallel report: no collectives at tp={n}: the ranks never "
                        "communicate, so the model is not split")
    if sp:
        measured["all_reduce_budget"] = 2
        if all_reduces > 2:
            failures.append(f"--sp: {all_reduces} all-reduces (at most 2, embedding and head: "
                            "none inside a layer)")
        sp_bytes = sum(b for _, b in totals.values())
        tp_totals = collective_totals(tp_report)
        tp_bytes = sum(b for _, b in tp_totals.values())
        measured["tp_bytes"] = tp_bytes
        if sp_bytes > tp_bytes:
            failures.append(f"--sp moves {sp_bytes} B per run of rank 0, more than --tp's "
                            f"{tp_bytes} B at tp={n}")
    else:
        budget = 2 * layers + 2
        measured["all_reduce_budget"] = budget
        if all_reduces > budget:
            failures.append(f"{all_reduces} all-reduces for {layers} layers (at most {budget}: "
                            "2 per layer plus embedding and head)")
    return failures, measured


# Per-rank weights of a pipeline bundle against the single bundle's: each
# stage holds its own layers (a 2-layer test model at --pp=2: one layer and
# the embedding or the head each).
PIPELINE_WEIGHT_RATIO = 0.75


def check_pipeline_report(single, par, tp, pp, micro):
    """Checks a --tp=tp --pp=pp --micro-batches=micro bundle's report `par`
    against the single bundle's `single`. Returns (failures, measured)."""
    world = tp * pp
    failures = check_shape_of_report(par, "pipeline report", world)
    measured = {}
    if failures:
        return failures, measured
    parallel = par["parallel"]
    expected = {"tp": tp, "pp": pp, "micro_batches": micro,
                "grid": [pp] + ([tp] if tp > 1 else []),
                "axes": ["pp"] + (["tp"] if tp > 1 else [])}
    for key, value in expected.items():
        if parallel.get(key) != value:
            failures.append(f"pipeline report: parallel.{key} is {parallel.get(key)!r}, "
                            f"expected {value!r}")
    pipeline = par.get("pipeline")
    if not isinstance(pipeline, dict) or not isinstance(pipeline.get("stages"), list):
        failures.append("pipeline report: no 'pipeline' object with a 'stages' list")
        return failures, measured
    stages = pipeline["stages"]
    if [entry.get("stage") for entry in stages] != list(range(pp)):
        failures.append(f"pipeline report: stages {[entry.get('stage') for entry in stages]!r}, "
                        f"expected 0..{pp - 1}")
    for entry in stages:
        for key in ("ops", "first_node", "last_node", "flops", "bytes", "predicted_ms",
                    "weights_bytes"):
            if key not in entry:
                failures.append(f"pipeline report: stage {entry.get('stage')} has no '{key}'")
        if not (isinstance(entry.get("ops"), int) and entry["ops"] > 0
                and isinstance(entry.get("predicted_ms"), (int, float))
                and entry["predicted_ms"] > 0):
            failures.append(f"pipeline report: stage {entry.get('stage')} is empty or has no "
                            f"predicted time: {entry!r}")
    bubble = (pp - 1) / (micro + pp - 1)
    if abs(pipeline.get("bubble_fraction", -1) - bubble) > 1e-9:
        failures.append(f"pipeline report: bubble_fraction {pipeline.get('bubble_fraction')!r}, "
                        f"expected (P-1)/(M+P-1) = {bubble}")
    if pipeline.get("micro_batches") != micro:
        failures.append(f"pipeline report: pipeline.micro_batches is "
                        f"{pipeline.get('micro_batches')!r}, expected {micro}")
    full = single["weights_bytes"]
    ratios = [b / full if full else float("inf") for b in par["weights_bytes_per_rank"]]
    measured["weights"] = (full, par["weights_bytes_per_rank"], ratios, PIPELINE_WEIGHT_RATIO)
    for rank, (nbytes, ratio) in enumerate(zip(par["weights_bytes_per_rank"], ratios)):
        if ratio > PIPELINE_WEIGHT_RATIO:
            failures.append(f"rank {rank} holds {nbytes} B of weights, {ratio:.3f}x the single "
                            f"bundle's {full} B (at most {PIPELINE_WEIGHT_RATIO}x: a stage holds "
                            "its own layers)")
    totals = collective_totals(par)
    measured["collectives"] = totals
    for op in ("send", "recv", "broadcast"):
        if totals.get(op, (0, 0))[0] == 0:
            failures.append(f"pipeline report: no '{op}' collectives (activations go between "
                            "stages, outputs from the last stage to every rank)")
    sends = totals.get("send", (0, 0))[0]
    if sends % micro:
        failures.append(f"pipeline report: {sends} sends is not a multiple of the {micro} "
                        "micro-batches")
    measured["stages"] = [(s.get("stage"), s.get("ops"), s.get("predicted_ms"),
                           s.get("weights_bytes")) for s in stages]
    measured["bubble"] = pipeline.get("bubble_fraction")
    return failures, measured


def format_table(model, n, sp, measured, run_seconds=None):
    """A short table of what was measured, one line per quantity."""
    config = f"tp={n}{' sp' if sp else ''}"
    lines = [f"{model} {config}:"]
    if "weights" in measured:
        full, per_rank, ratios, limit = measured["weights"]
        shown = ", ".join(f"{b} B ({r:.3f}x)" for b, r in zip(per_rank, ratios))
        lines.append(f"  weights        single {full} B; per rank {shown}"
                     + (f"; limit {limit}x" if limit else ""))
    if "collectives" in measured:
        totals = measured["collectives"]
        for op in sorted(totals):
            count, nbytes = totals[op]
            lines.append(f"  {op:<14} {count:>3} x, {nbytes} B")
        total = sum(b for _, b in totals.values())
        extra = f" (tp alone: {measured['tp_bytes']} B)" if "tp_bytes" in measured else ""
        lines.append(f"  total bytes    {total} B{extra}; all-reduce budget "
                     f"{measured.get('all_reduce_budget')}")
    for stage, ops, ms, wbytes in measured.get("stages", []):
        lines.append(f"  stage {stage}        {ops} ops, {ms:.5f} ms predicted, {wbytes} B weights")
    if "bubble" in measured:
        lines.append(f"  bubble         {measured['bubble']:.3f}")
    if run_seconds is not None:
        lines.append(f"  ranks run      {run_seconds:.1f} s")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Running the tools.


class Tools:
    def __init__(self, bin_dir, timeout, target_flags=()):
        self.compile = st.tool(bin_dir, "sluice-compile")
        # --target=cuda (and --gpu-arch): every bundle of the check for it.
        self.target_flags = list(target_flags)
        self.run_tool = st.tool(bin_dir, "sluice-run")
        self.timeout = timeout

    def call(self, cmd, timeout=None):
        """(exit code, stdout + stderr, seconds); exit code None on a timeout.
        The command runs in its own process group, killed whole on a
        timeout: sluice-run --ranks starts mpirun and the ranks under it."""
        return st.run(cmd, echo=True, timeout=timeout or self.timeout, group=True)


def shape_flags(shapes):
    return [f"--shape={name}={'x'.join(map(str, dims))}" for name, dims in shapes.items()]


def embedding_rows(model_path, input_name):
    """Rows of the table a Gather indexes with `input_name` (the vocabulary),
    or None where no initializer is gathered by it directly."""
    import onnx  # noqa: PLC0415
    from onnx import numpy_helper  # noqa: PLC0415
    graph = onnx.load(model_path).graph
    tables = {i.name: i for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Gather" and len(node.input) == 2 and node.input[1] == input_name:
            if node.input[0] in tables:
                return int(numpy_helper.to_array(tables[node.input[0]]).shape[0])
    return None


def write_inputs(model_dir, manifest, shapes, folder):
    """Deterministic inputs at `shapes`, as NAME=PATH arguments."""
    import numpy as np  # noqa: PLC0415
    rng = np.random.default_rng(SEED)
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(model_dir, "model.onnx")
    args = []
    for name in manifest["inputs"]:
        # The check inputs the exporter wrote give the element type.
        dtype = np.load(os.path.join(model_dir, "inputs", name + ".npy")).dtype
        dims = shapes[name]
        if "mask" in name:
            value = np.ones(dims, dtype=dtype)
            if dims[0] > 1:
                value[1, -dims[-1] // 4:] = 0  # one padded row: the mask has to reach every rank
        elif np.issubdtype(dtype, np.integer):
            vocab = embedding_rows(model_path, name)
            if vocab is None:
                raise SystemExit(f"{name}: an integer input that no embedding Gather reads; "
                                 "cannot tell its range")
            value = rng.integers(0, vocab, size=dims).astype(dtype)
        else:
            value = rng.standard_normal(dims).astype(dtype)
        path = os.path.join(folder, name + ".npy")
        np.save(path, value)
        args.append(f"{name}={path}")
    return args


def compile_bundle(tools, model, shapes, bundle, report, extra=()):
    """(report dict, None) or (None, failure message)."""
    rc, out, _ = tools.call([tools.compile, model, "-o", bundle, *shape_flags(shapes),
                             f"--report={report}", "--quiet", *tools.target_flags, *extra])
    if rc != 0:
        sys.stdout.write(out)
        what = "timed out" if rc is None else f"exit {rc}"
        unknown = re.search(r"unknown option '(--(?:tp|sp)[^']*)'", out)
        if unknown:
            what += f", it does not take {unknown.group(1)} (the parallel flags)"
        return None, f"sluice-compile {' '.join(extra) or '(single device)'}: {what}"
    with open(report) as f:
        return json.load(f), None


def load_manifest(model_dir):
    with open(os.path.join(model_dir, "manifest.json")) as f:
        return json.load(f)


def mode_run(args, tools, work):
    model_dir = os.path.normpath(args.model_dir)
    name = os.path.basename(model_dir)
    manifest = load_manifest(model_dir)
    shapes, layers = PARALLEL_SHAPES[name], LAYERS[name]
    model = os.path.join(model_dir, "model.onnx")
    n = args.tp
    pipelined = args.pp > 1
    if SIZES[name]["heads"] % n:
        print(f"FAIL: --tp={n} does not divide the {SIZES[name]['heads']} heads of {name}: "
              "not a configuration to check (--mode=errors checks the refusal)")
        return 1
    par_flags = [f"--tp={n}"] + (["--sp"] if args.sp else [])
    if pipelined:
        par_flags += [f"--pp={args.pp}", f"--micro-batches={args.micro_batches}"]

    single, err = compile_bundle(tools, model, shapes, os.path.join(work, "single.sluice"),
                                 os.path.join(work, "single.json"))
    if err:
        print("FAIL:", err)
        return 1
    par, err = compile_bundle(tools, model, shapes, os.path.join(work, "parallel.sluice"),
                              os.path.join(work, "parallel.json"), par_flags)
    if err:
        print(f"FAIL: {err}: the {' '.join(par_flags)} bundle of {name} does not compile")
        return 1
    tp_report = None
    if args.sp:
        tp_report, err = compile_bundle(tools, model, shapes, os.path.join(work, "tp.sluice"),
                                        os.path.join(work, "tp.json"), [f"--tp={n}"])
        if err:
            print(f"FAIL: {err}: the --tp={n} bundle (the bytes --sp is compared with) does not "
                  "compile")
            return 1

    if pipelined:
        failures, measured = check_pipeline_report(single, par, n, args.pp, args.micro_batches)
        n = n * args.pp  # the ranks to run
    else:
        failures, measured = check_reports(single, par, n, args.sp, layers, tp_report)

    inputs = write_inputs(model_dir, manifest, shapes, os.path.join(work, "inputs"))
    outputs = os.path.join(work, "single-outputs")
    rc, out, _ = tools.call([tools.run_tool, os.path.join(work, "single.sluice"), *inputs,
                             f"--save-outputs={outputs}"])
    if rc != 0:
        sys.stdout.write(out)
        print("FAIL: the single-device bundle did not run")
        return 1
    expect = [f"{o}={os.path.join(outputs, o + '.npy')}" for o in manifest["outputs"]]
    # One OpenMP thread per rank: the ranks already oversubscribe the cores.
    rc, out, seconds = tools.call([tools.run_tool, os.path.join(work, "parallel.sluice"),
                                   f"--ranks={n}", *inputs, "--expect", *expect,
                                   f"--rtol={RTOL}", f"--atol={ATOL}", "--threads=1"])
    sys.stdout.write(out)
    if rc is None:
        failures.append(f"sluice-run --ranks={n} did not finish in {tools.timeout} s")
    elif rc == 1:
        failures.append(f"the {n} ranks' outputs differ from the single device's "
                        f"(rtol {RTOL}, atol {ATOL})")
    elif rc != 0:
        unknown = re.search(r"unknown option '(--ranks[^']*)'", out)
        failures.append(f"sluice-run --ranks={n} failed (exit {rc})" + (
            f": it does not take {unknown.group(1)} (the multi-rank runtime)" if unknown else ""))
    else:
        missing = [o for o in manifest["outputs"] if not re.search(
            rf"output '{re.escape(o)}' .*: ok", out)]
        if missing:
            failures.append(f"sluice-run --ranks={n} exited 0 without checking "
                            f"{', '.join(missing)}")

    table = format_table(name, n, args.sp, measured, seconds if rc is not None else None)
    if pipelined:
        table = table.replace(f"tp={n}", f"tp={args.tp} pp={args.pp} "
                              f"micro-batches={args.micro_batches}", 1)
    print(table)
    return st.finish(failures, passed=None)


# ---------------------------------------------------------------------------
# Bad inputs.

# Not mpirun's "the job has been aborted" notice: a process that aborted.
CRASH = re.compile(r"Assertion|Stack dump|PLEASE submit|Segmentation fault|core dumped|"
                   r"^Aborted\b|exited on signal|Traceback", re.IGNORECASE | re.MULTILINE)


def error_lines(out):
    return [line for line in out.splitlines() if re.search(r"\berror\b", line, re.IGNORECASE)]


def names_sizes(line, sizes):
    """Whether `line` names every number of `sizes` as a number of its own
    (not the digits of a path, a node name like /MatMul_3 or a flag like
    tp2)."""
    numbers = set(re.findall(r"(?<![\w.])(\d+)(?!\w)", line))
    return all(str(s) in numbers for s in sizes)


def expect_clear_failure(what, rc, out, timeout, one_line=True):
    """Failures of a command that must fail with a clear error."""
    if rc is None:
        return [f"{what}: no answer in {timeout} s (a hang, not an error)"]
    if rc == 0:
        return [f"{what}: exit 0, expected an error"]
    unknown = re.search(r"unknown option '(--(?:tp|sp|ranks)[^']*)'", out)
    if unknown:  # the failure is not the one under test
        return [f"{what}: the tool does not take {unknown.group(1)} (the parallel flags)"]
    failures = []
    if rc < 0 or CRASH.search(out):
        failures.append(f"{what}: crashed (exit {rc}) instead of an error")
    lines = error_lines(out)
    if not lines:
        failures.append(f"{what}: exit {rc} without an error line")
    elif one_line and len(lines) > 1:
        failures.append(f"{what}: {len(lines)} error lines, expected one")
    return failures


def judge_tp_refusal(rc, out, n, node_names, sizes, timeout):
    """Failures of `sluice-compile --tp=n` on a model whose heads n does not
    divide: it must fail, naming the op and the sizes."""
    what = f"--tp={n} on a {sizes['heads']}-head model"
    found = expect_clear_failure(what, rc, out, timeout, one_line=False)
    if found:
        return found
    lines = error_lines(out)
    if not any(re.search(r"'sluice\.\w+'", line) or any(f"'{name}'" in line for name in node_names)
               for line in lines):
        found.append(f"{what}: the error names no op ('sluice.OP' (node 'NAME'))")
    # The first op that n does not divide may be the attention (its heads)
    # or a projection (hidden, FFN width): that size and the n ranks.
    widths = sorted({sizes["heads"], sizes["hidden"], sizes["ffn"]} - {0})
    if not any(names_sizes(line, [n]) and any(names_sizes(line, [w]) for w in widths)
               for line in lines):
        found.append(f"{what}: no error line names the sizes ({n} ranks and the width {n} does "
                     f"not divide: {sizes['heads']} heads, hidden {sizes['hidden']} or FFN "
                     f"{sizes['ffn']})")
    return found


def judge_wrong_ranks(rc, out, ranks, world, timeout):
    """Failures of `sluice-run B --ranks=ranks` on a bundle of world size
    `world`: one error line that names both."""
    what = f"--ranks={ranks} on a world_size {world} bundle"
    found = expect_clear_failure(what, rc, out, timeout)
    if not found and not names_sizes(error_lines(out)[0], [ranks, world]):
        found.append(f"{what}: the error does not name both sizes ({ranks} and {world})")
    return found


def judge_missing_weights(rc, out, file_name, timeout):
    """Failures of running a bundle without one rank's weights file: an
    error (from that rank, perhaps one more from the others) naming it."""
    what = f"a tp=2 bundle without {file_name}"
    found = expect_clear_failure(what, rc, out, timeout, one_line=False)
    if not found and not any(file_name in line for line in error_lines(out)):
        found.append(f"{what}: no error line names {file_name}")
    return found


def mode_errors(args, tools, work):
    model_dir = os.path.normpath(args.model_dir)
    name = os.path.basename(model_dir)
    manifest = load_manifest(model_dir)
    shapes = PARALLEL_SHAPES[name]
    model = os.path.join(model_dir, "model.onnx")
    import onnx  # noqa: PLC0415
    node_names = {node.name for node in onnx.load(model).graph.node if node.name}
    failures = []

    def report(found, out):
        if found:
            sys.stdout.write(out)
        failures.extend(found)

    # --tp=3: the 4 heads (and the model's widths) do not divide by 3.
    rc, out, _ = tools.call([tools.compile, model, "-o", os.path.join(work, "tp3.sluice"),
                             *shape_flags(shapes), "--tp=3", "--quiet"])
    report(judge_tp_refusal(rc, out, 3, node_names, SIZES[name], tools.timeout), out)

    # A single-device bundle and a tp=2 one run with the wrong rank counts
    # (each check needs only its own bundle).
    inputs = write_inputs(model_dir, manifest, shapes, os.path.join(work, "inputs"))
    par = os.path.join(work, "tp2.sluice")
    single = os.path.join(work, "single.sluice")
    built = set()
    for bundle, extra, ranks, world in ((single, [], 2, 1), (par, ["--tp=2"], 3, 2)):
        rc, out, _ = tools.call([tools.compile, model, "-o", bundle, *shape_flags(shapes),
                                 "--quiet", *extra])
        if rc != 0:
            report([f"sluice-compile {' '.join(extra) or '(single device)'}: exit {rc}; the "
                    f"--ranks={ranks} check needs the bundle"], out)
            continue
        built.add(bundle)
        rc, out, _ = tools.call([tools.run_tool, bundle, f"--ranks={ranks}", *inputs],
                                timeout=RUN_ERROR_TIMEOUT)
        report(judge_wrong_ranks(rc, out, ranks, world, RUN_ERROR_TIMEOUT), out)

    # A rank's weights file missing.
    if par not in built:
        pass  # reported above: no tp=2 bundle
    elif not os.path.exists(os.path.join(par, "weights.rank1.bin")):
        failures.append(f"the tp=2 bundle holds no weights.rank1.bin (it holds "
                        f"{', '.join(sorted(os.listdir(par)))}): per-rank weights are "
                        "weights.rank<R>.bin")
    else:
        broken = os.path.join(work, "tp2-no-rank1.sluice")
        shutil.copytree(par, broken)
        os.remove(os.path.join(broken, "weights.rank1.bin"))
        rc, out, _ = tools.call([tools.run_tool, broken, "--ranks=2", *inputs],
                                timeout=RUN_ERROR_TIMEOUT)
        report(judge_missing_weights(rc, out, "weights.rank1.bin", RUN_ERROR_TIMEOUT), out)

    return st.finish(failures, f"{name}: the bad inputs give clear errors")


# ---------------------------------------------------------------------------
# Self-test of the contract check.


def good_reports():
    """A single report and tp=2 / tp=2 sp reports of a 2-layer model that
    keep the contract."""
    single = {"weights_bytes": 400000, "kernels": 10}
    tp = {"weights_bytes": 400000, "world_size": 2,
          "parallel": {"tp": 2, "sp": False, "layers": 2},
          "weights_bytes_per_rank": [220000, 220000],
          "collectives": [{"op": "all_reduce", "count": 6, "bytes": 6 * 8192}]}
    sp = copy.deepcopy(tp)
    sp["parallel"]["sp"] = True
    sp["collectives"] = [{"op": "all_reduce", "count": 2, "bytes": 2 * 8192},
                         {"op": "reduce_scatter", "count": 4, "bytes": 4 * 4096},
                         {"op": "all_gather", "count": 4, "bytes": 4 * 4096}]
    return single, tp, sp


def self_test():
    """check_reports on the good reports (no failure) and on one broken rule
    at a time (a failure with the expected words)."""
    problems = []
    checked = []

    def expect(label, args, words):
        checked.append(label)
        failures, _ = check_reports(*args)
        text = "\n".join(failures)
        if words is None and failures:
            problems.append(f"{label}: unexpected failures: {failures}")
        elif words is not None and not (failures and all(w in text for w in words)):
            problems.append(f"{label}: expected a failure with {words}, got {failures}")

    single, tp, sp = good_reports()
    expect("good tp", (single, tp, 2, False, 2), None)
    expect("good sp", (single, sp, 2, True, 2, tp), None)

    def mutated(report, change):
        report = copy.deepcopy(report)
        change(report)
        return report

    cases = [
        ("no world_size", lambda r: r.pop("world_size"), ["no 'world_size' key"]),
        ("no collectives", lambda r: r.pop("collectives"), ["no 'collectives' key"]),
        ("wrong world", lambda r: r.update(world_size=4), ["world_size is 4, expected 2"]),
        ("tp", lambda r: r["parallel"].update(tp=4), ["parallel.tp is 4, expected 2"]),
        ("sp flag", lambda r: r["parallel"].update(sp=True), ["parallel.sp is True"]),
        ("sp not bool", lambda r: r["parallel"].update(sp=0), ["parallel.sp is 0, not a bool"]),
        ("no layers", lambda r: r["parallel"].pop("layers"), ["no 'layers' key"]),
        ("layers", lambda r: r["parallel"].update(layers=1), ["split 1 transformer layers"]),
        ("per-rank length", lambda r: r.update(weights_bytes_per_rank=[1]),
         ["expected a list of 2 byte counts"]),
        ("heavy rank", lambda r: r["weights_bytes_per_rank"].__setitem__(1, 270000),
         ["rank 1 holds 270000 B", "0.675x", "at most 0.65x"]),
        ("all-reduces", lambda r: r["collectives"][0].update(count=7),
         ["7 all-reduces for 2 layers (at most 6"]),
        ("silent", lambda r: r.update(collectives=[]), ["no collectives at tp=2"]),
        ("bad entry", lambda r: r["collectives"].append({"op": "all_reduce", "count": 1}),
         ["is not {\"op\""]),
        ("unknown op", lambda r: r["collectives"].append(
            {"op": "allreduce", "count": 1, "bytes": 4}), ["unknown op 'allreduce'"]),
        ("count without bytes", lambda r: r["collectives"].append(
            {"op": "all_gather", "count": 1, "bytes": 0}), ["zero together"]),
    ]
    for label, change, words in cases:
        expect(label, (single, mutated(tp, change), 2, False, 2), words)
    expect("tp=4 limit", (single, mutated(tp, lambda r: r.update(
        world_size=4, parallel={"tp": 4, "sp": False, "layers": 2},
        weights_bytes_per_rank=[100000, 100000, 170000, 100000])), 4, False, 2),
        ["rank 2 holds 170000 B", "at most 0.4x at tp=4"])
    expect("sp all-reduce in a layer", (single, mutated(
        sp, lambda r: r["collectives"][0].update(count=3, bytes=3 * 8192)), 2, True, 2, tp),
        ["--sp: 3 all-reduces"])
    expect("sp more bytes", (single, mutated(
        sp, lambda r: r["collectives"][1].update(bytes=4 * 8192)), 2, True, 2, tp),
        ["--sp moves", "more than --tp's 49152 B"])
    expect("sp without tp report", (single, sp, 2, True, 2, None), ["no report of the --tp"])
    expect("single without weights", ({}, tp, 2, False, 2), ["single report: no integer"])
    # The table shows what was measured.
    _, measured = check_reports(single, sp, 2, True, 2, tp)
    table = format_table("model", 2, True, measured, 1.5)
    for words in ("tp=2 sp", "220000 B (0.550x)", "reduce_scatter", "tp alone: 49152 B"):
        if words not in table:
            problems.append(f"table: no {words!r} in\n{table}")

    # The pipeline report (--pp=2 --micro-batches=2, tp=1).
    stage = {"ops": 25, "first_node": "/wte/Gather", "last_node": "/Add_4", "flops": 1.0,
             "bytes": 1.0, "predicted_ms": 0.06, "weights_bytes": 200000}
    pipe = {"weights_bytes": 400000, "world_size": 2, "weights_bytes_per_rank": [210000, 200000],
            "parallel": {"tp": 1, "sp": False, "pp": 2, "micro_batches": 2, "ep": 1,
                         "grid": [2], "axes": ["pp"], "layers": 2},
            "pipeline": {"stages": [dict(stage, stage=0), dict(stage, stage=1)],
                         "micro_batches": 2, "bubble_fraction": 1 / 3},
            "collectives": [{"op": "send", "count": 2, "bytes": 8192},
                            {"op": "recv", "count": 2, "bytes": 8192},
                            {"op": "broadcast", "count": 1, "bytes": 12288}]}
    pipe_cases = [
        ("pipeline good", lambda r: None, None),
        ("pipeline grid", lambda r: r["parallel"].update(grid=[1, 2]),
         ["parallel.grid is [1, 2], expected [2]"]),
        ("pipeline no stages", lambda r: r.pop("pipeline"), ["no 'pipeline' object"]),
        ("pipeline one stage", lambda r: r["pipeline"]["stages"].pop(), ["expected 0..1"]),
        ("pipeline empty stage", lambda r: r["pipeline"]["stages"][1].update(ops=0),
         ["stage 1 is empty"]),
        ("pipeline bubble", lambda r: r["pipeline"].update(bubble_fraction=0.5),
         ["bubble_fraction 0.5"]),
        ("pipeline heavy rank", lambda r: r["weights_bytes_per_rank"].__setitem__(0, 390000),
         ["rank 0 holds 390000 B", "at most 0.75x"]),
        ("pipeline no send", lambda r: r["collectives"].pop(0), ["no 'send' collectives"]),
        ("pipeline no broadcast", lambda r: r["collectives"].pop(2),
         ["no 'broadcast' collectives"]),
        ("pipeline sends", lambda r: r["collectives"][0].update(count=3, bytes=12288),
         ["3 sends is not a multiple of the 2"]),
    ]
    for label, change, words in pipe_cases:
        checked.append(label)
        failures, _ = check_pipeline_report(single, mutated(pipe, change), 1, 2, 2)
        text = "\n".join(failures)
        if words is None and failures:
            problems.append(f"{label}: unexpected failures: {failures}")
        elif words is not None and not (failures and all(w in text for w in words)):
            problems.append(f"{label}: expected a failure with {words}, got {failures}")

    # The bad-input judgments on made-up tool outputs.
    sizes = SIZES["gpt_decoder"]
    nodes = {"/MatMul_1", "/attn/MatMul"}
    judged = [
        ("tp=3 refused", judge_tp_refusal(2, "sluice-compile: error: m.onnx: 'sluice.attention' "
                                          "(node '/MatMul_1'): --tp=3 does not divide its 4 "
                                          "heads\n", 3, nodes, sizes, 9), None),
        ("tp=3 by node", judge_tp_refusal(1, "error: node '/attn/MatMul': 256 columns do not "
                                          "split 3 ways\n", 3, nodes, sizes, 9), None),
        ("tp=3 accepted", judge_tp_refusal(0, "", 3, nodes, sizes, 9), ["exit 0"]),
        ("tp=3 no flag", judge_tp_refusal(2, "sluice-compile: error: unknown option '--tp=3' "
                                          "(see --help)\n", 3, nodes, sizes, 9),
         ["does not take --tp=3"]),
        ("tp=3 no op", judge_tp_refusal(1, "error: 4 heads do not split 3 ways\n", 3, nodes,
                                        sizes, 9), ["names no op"]),
        ("tp=3 no sizes", judge_tp_refusal(1, "error: 'sluice.attention' (node '/MatMul_1') "
                                           "cannot be split\n", 3, nodes, sizes, 9),
         ["no error line names the sizes"]),
        ("tp=3 crash", judge_tp_refusal(-6, "sluice-compile: error: x\nAssertion `a' failed\n",
                                        3, nodes, sizes, 9), ["crashed (exit -6)"]),
        ("ranks one line", judge_wrong_ranks(2, "sluice-run: error: /tmp/tmp5x/tp2.sluice: "
                                             "world_size is 2, --ranks=3\n", 3, 2, 9), None),
        ("ranks path digits", judge_wrong_ranks(2, "sluice-run: error: /tmp/tmp3x/tp2.sluice: "
                                                "bad world size\n", 3, 2, 9),
         ["does not name both sizes (3 and 2)"]),
        ("ranks per rank", judge_wrong_ranks(2, "rank 0: error: world_size 2, 3 ranks\n"
                                             "rank 1: error: world_size 2, 3 ranks\n", 3, 2, 9),
         ["2 error lines, expected one"]),
        ("ranks hang", judge_wrong_ranks(None, "", 3, 2, 9), ["no answer in 9 s"]),
        ("weights named", judge_missing_weights(1, "sluice-run: error: rank 1: /b/weights.rank1"
                                                ".bin: cannot open\nsluice-run: error: rank 0: "
                                                "rank 1 failed\n", "weights.rank1.bin", 9), None),
        ("weights unnamed", judge_missing_weights(1, "sluice-run: error: rank 1 failed\n",
                                                  "weights.rank1.bin", 9),
         ["no error line names weights.rank1.bin"]),
        ("weights silent", judge_missing_weights(1, "", "weights.rank1.bin", 9),
         ["without an error line"]),
    ]
    for label, failures, words in judged:
        checked.append(label)
        text = "\n".join(failures)
        if words is None and failures:
            problems.append(f"{label}: unexpected failures: {failures}")
        elif words is not None and not (failures and all(w in text for w in words)):
            problems.append(f"{label}: expected a failure with {words}, got {failures}")

    verdict = f"self-test: {len(checked)} cases, {len(problems)} problems"
    return st.finish(problems, verdict, verdict)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", help="the build's bin folder (sluice-compile, sluice-run)")
    ap.add_argument("--tp", type=int, default=2, help="tensor-parallel world size")
    ap.add_argument("--target", choices=["cpu", "cuda"], default="cpu",
                    help="the bundles' target (cuda: the ranks share the machine's GPUs; "
                         "two ranks on one GPU use the host-staged transport)")
    ap.add_argument("--gpu-arch", help="cuda: sluice-compile --gpu-arch")
    ap.add_argument("--sp", action="store_true", help="with sequence parallelism")
    ap.add_argument("--pp", type=int, default=1, help="pipeline stages (world size tp x pp)")
    ap.add_argument("--micro-batches", type=int, default=1, help="with --pp: micro-batches")
    ap.add_argument("--mode", choices=["run", "errors"], default="run")
    ap.add_argument("--timeout", type=int, default=300,
                    help="seconds each compile or run may take")
    ap.add_argument("--keep", help="work in this folder and keep it (default: a temporary one)")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("model_dir", nargs="?")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.bin or not args.model_dir:
        ap.error("--bin and MODEL_DIR are required (or --self-test)")
    if args.tp < 2 and args.pp < 2:
        ap.error(f"--tp={args.tp}: a parallel check needs at least 2 ranks")
    if not os.path.isfile(os.path.join(args.model_dir, "manifest.json")):
        ap.error(f"{args.model_dir}: no manifest.json (a test/models folder)")
    name = os.path.basename(os.path.normpath(args.model_dir))
    if name not in PARALLEL_SHAPES:
        ap.error(f"{name}: no parallel shapes for it (PARALLEL_SHAPES: "
                 f"{', '.join(sorted(PARALLEL_SHAPES))})")
    target_flags = [f"--target={args.target}"]
    if args.gpu_arch:
        target_flags.append(f"--gpu-arch={args.gpu_arch}")
    tools = Tools(args.bin, args.timeout, target_flags)
    if args.keep:
        shutil.rmtree(args.keep, ignore_errors=True)
        os.makedirs(args.keep)
        work = args.keep
    else:
        tmp = tempfile.TemporaryDirectory()
        work = tmp.name
    return (mode_errors if args.mode == "errors" else mode_run)(args, tools, work)


if __name__ == "__main__":
    sys.exit(main())
