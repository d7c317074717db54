#!/usr/bin/env python3
"""Sluice's cuda target against PyTorch on the same GPU (see README.md here).

For each configuration (BERT-base at seq 128, batch 1 and 32; GPT-2 small at
seq 128 and 1024, batch 1 and 8) the script, on a machine with a GPU:

  1. builds the model from its transformers config alone (BertConfig(),
     GPT2Config(): random weights, nothing downloaded) and exports it once per
     model with torch.onnx.export (opset 17, dynamic batch and sequence);
  2. compiles it per configuration with `sluice-compile --target=cuda
     --precision=fp16 --gpu-arch=ARCH --shape=input_ids=BxS --report` (all
     configurations' compiles run in parallel before any timing);
  3. times the bundle with `sluice-run BUNDLE input_ids=FILE --warmup --iters`
     (its median and p90; each run copies the inputs in and the output out),
     then runs it once more with --trace and --save-outputs;
  4. times PyTorch fp16 on the same input: eager, torch.compile() and
     torch.compile(mode="reduce-overhead"), each run including the output's
     copy to the host as sluice-run's does; medians of per-run CUDA-event
     times;
  5. reports Sluice / best torch.compile and Sluice / eager (ratios of
     medians, below 1: Sluice is faster), the output's relative L2 error
     against PyTorch fp32, and for the memory-bound steps of the trace
     (layer_norm and softmax groups) the achieved bandwidth, bytes moved /
     step time, as a fraction of a measured device-to-device copy
     (torch copy of a 1 GiB tensor, bytes read + written). Bytes moved are
     the step's boundary tensors (inputs its ONNX nodes read from outside
     the step, outputs read outside it), each counted once, at 2 bytes per
     float element (fp16 bundle).

Results go to --results (JSON, rewritten after each configuration so that a
run stopped at its time limit keeps what it measured). `--from-results A.json
[B.json ...] --write-doc docs/benchmarks.md` rewrites only the section
between `<!-- bench-gpu:begin -->` and `<!-- bench-gpu:end -->`. `--dry-run`
prints the plan and which optional imports (torch, transformers, onnx, numpy)
are present; it needs none of them and no GPU. `--export-only DIR [--layers
N]` only exports the models (no GPU): check-export.sh compiles and checks them.
"""
import argparse
import concurrent.futures
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BEGIN, END = "<!-- bench-gpu:begin -->", "<!-- bench-gpu:end -->"

# name -> (model, batch, sequence)
CONFIGS = {
    "bert-b1-s128": ("bert", 1, 128),
    "bert-b32-s128": ("bert", 32, 128),
    "gpt2-b1-s128": ("gpt2", 1, 128),
    "gpt2-b8-s128": ("gpt2", 8, 128),
    "gpt2-b1-s1024": ("gpt2", 1, 1024),
    "gpt2-b8-s1024": ("gpt2", 8, 1024),
}
GROUPS = {"all": list(CONFIGS), "quick": ["bert-b1-s128", "gpt2-b1-s128"],
          "bert": [c for c in CONFIGS if c.startswith("bert")],
          "gpt2": [c for c in CONFIGS if c.startswith("gpt2")]}
MODES = ["eager", "compile", "reduce-overhead"]
# Steps whose time is memory-bound: their ops (manifest "op"/"ops").
MEMORY_BOUND = {"layernorm": re.compile(r"layer_?norm", re.I),
                "softmax": re.compile(r"softmax", re.I)}
NOT_MEMORY_BOUND = re.compile(r"matmul|gemm|attention|conv", re.I)


def log(msg, tool="bench-gpu"):
    print(f"[{tool} {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def select_names(spec, groups, items, tool="bench_gpu", what="configuration"):
    """The items a comma-separated spec names (group names expand), in order,
    each once; exits naming an unknown part."""
    names = []
    for part in [p for p in spec.split(",") if p]:
        if part in groups:
            names += groups[part]
        elif part in items:
            names.append(part)
        else:
            sys.exit(f"{tool}: unknown {what} '{part}' (one of: "
                     f"{', '.join(list(groups) + list(items))})")
    return list(dict.fromkeys(names))


def select_configs(spec):
    return select_names(spec, GROUPS, CONFIGS)


# ------------------------------------------------------------- models


def build_model(kind, attn, layers=None):
    """A transformers model from its default config (random weights), its
    forward wrapped to take input_ids and return the last hidden state;
    `layers` overrides the config's number of layers (the export check)."""
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415

    torch.manual_seed(0)
    if kind == "bert":
        config = transformers.BertConfig(attn_implementation=attn)
        if layers:
            config.num_hidden_layers = layers
        model = transformers.BertModel(config, add_pooling_layer=False)
    else:
        config = transformers.GPT2Config(attn_implementation=attn)
        if layers:
            config.n_layer = layers
        model = transformers.GPT2Model(config)
    config.use_cache = False

    class LastHidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids):
            return self.inner(input_ids=input_ids, use_cache=False).last_hidden_state \
                if kind == "gpt2" else self.inner(input_ids=input_ids).last_hidden_state

    return LastHidden(model).eval(), config.vocab_size


def export(kind, path, layers=None):
    """Exports `kind` (eager attention: plain MatMul/Softmax, which Sluice's
    recognize phase turns into its attention op) with dynamic batch and
    sequence; the TorchScript exporter, else the dynamo one (torch.onnx.export
    has a `dynamo` argument from torch 2.5 on; before, TorchScript only)."""
    import inspect  # noqa: PLC0415

    import torch  # noqa: PLC0415

    model, vocab = build_model(kind, "eager", layers)
    ids = torch.randint(0, vocab, (2, 16), dtype=torch.int64)
    axes = {"input_ids": {0: "batch", 1: "sequence"},
            "last_hidden_state": {0: "batch", 1: "sequence"}}
    errors = []
    has_dynamo = "dynamo" in inspect.signature(torch.onnx.export).parameters
    for dynamo in ((False, True) if has_dynamo else (False,)):
        try:
            extra = {"dynamo": dynamo} if has_dynamo else {}
            with torch.no_grad():
                torch.onnx.export(model, (ids,), path, opset_version=17,
                                  input_names=["input_ids"], output_names=["last_hidden_state"],
                                  dynamic_axes=axes, **extra)
            return "dynamo" if dynamo else "torchscript"
        except Exception as e:  # noqa: BLE001
            errors.append(f"dynamo={dynamo}: {type(e).__name__}: {str(e)[:300]}")
    raise RuntimeError("torch.onnx.export failed: " + " | ".join(errors))


def boundary_bytes(onnx_path, shapes):
    """The graph's nodes by name, each tensor's consumers, the graph outputs
    and each tensor's bytes (2 per float element: an fp16 bundle) with the
    graph inputs bound to `shapes` (name -> dims), from shape inference."""
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, shape_inference  # noqa: PLC0415

    model = onnx.load(onnx_path)
    for inp in model.graph.input:
        if inp.name not in shapes:
            continue
        dims = inp.type.tensor_type.shape.dim
        if len(dims) != len(shapes[inp.name]):
            raise ValueError(f"input {inp.name}: rank {len(dims)}, given {shapes[inp.name]}")
        for d, v in zip(dims, shapes[inp.name]):
            d.ClearField("dim_param")
            d.dim_value = v
    for out in model.graph.output:
        out.type.tensor_type.ClearField("shape")  # inferred again below
    model = shape_inference.infer_shapes(model, data_prop=True)
    sizes = {}

    def record(name, ttype, dims):
        if any(d <= 0 for d in dims):
            return
        n = 1
        for d in dims:
            n *= d
        floating = ttype in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16,
                             TensorProto.DOUBLE)
        width = 2 if floating else {TensorProto.INT64: 8, TensorProto.INT32: 4,
                                    TensorProto.BOOL: 1}.get(ttype, 4)
        sizes[name] = n * width

    for vi in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            record(vi.name, t.elem_type,
                   [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim])
    for init in model.graph.initializer:
        record(init.name, init.data_type, list(init.dims))
    nodes = {n.name: n for n in model.graph.node}
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, set()).add(n.name)
    outputs = {o.name for o in model.graph.output}
    return nodes, consumers, outputs, sizes


def step_bytes(step_nodes, graph):
    """Bytes a step must move: tensors its nodes read that none of them
    writes, and tensors they write that a node outside (or the graph's
    output) reads. None when a size is unknown."""
    nodes, consumers, outputs, sizes = graph
    inside = [nodes[n] for n in step_nodes if n in nodes]
    if not inside:
        return None
    names = {n.name for n in inside}
    produced = {o for n in inside for o in n.output if o}
    total = 0
    for n in inside:
        for t in n.input:
            if t and t not in produced:
                if t not in sizes:
                    return None
                total += sizes[t]
    for t in produced:
        if t in outputs or consumers.get(t, set()) - names:
            if t not in sizes:
                return None
            total += sizes[t]
    return total


# ------------------------------------------------------------- timing


def time_torch(fn, warmup, iters):
    import torch  # noqa: PLC0415

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def copy_bandwidth():
    """Device-to-device copy bandwidth in GB/s (bytes read + written) of a
    1 GiB fp16 tensor: the ceiling memory-bound steps are compared with."""
    import torch  # noqa: PLC0415

    x = torch.randn(2**29, dtype=torch.float16, device="cuda")
    y = torch.empty_like(x)
    median, _ = time_torch(lambda: y.copy_(x), 5, 30)
    nbytes = 2 * x.numel() * x.element_size()
    x = y = None
    torch.cuda.empty_cache()
    return nbytes / (median * 1e-3) / 1e9


def run(cmd, timeout=None):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


# sluice-run's timing line; the device reads "NVIDIA H100 80GB HBM3 (sm_90)".
LATENCY = re.compile(r"latency over \d+ runs \(cuda target on (.*)\): median ([0-9.e+-]+) ms, "
                     r"p90 ([0-9.e+-]+) ms; cuda graph: (.*)")


def compile_bundle(args, name, onnx_path, work):
    model, batch, seq = CONFIGS[name]
    bundle = os.path.join(work, f"{name}.sluice")
    report = os.path.join(work, f"{name}.report.json")
    # --no-cache: compile_s is a compile's time, not a cache hit's.
    cmd = [os.path.join(args.bin, "sluice-compile"), onnx_path, "-o", bundle, "--quiet",
           "--no-cache",
           "--target=cuda", f"--precision={args.precision}", f"--gpu-arch={args.gpu_arch}",
           f"--shape=input_ids={batch}x{seq}", f"--report={report}"]
    t0 = time.time()
    rc, out = run(cmd)
    return {"cmd": cmd, "rc": rc, "log": out[-2000:], "seconds": time.time() - t0,
            "bundle": bundle, "report": report}


def bench_sluice(args, name, built, ids_path, onnx_path, copy_gbs, work):
    import numpy as np  # noqa: PLC0415

    model, batch, seq = CONFIGS[name]
    row = {"compile_s": round(built["seconds"], 1)}
    with open(built["report"]) as f:
        report = json.load(f)
    row.update(kernels=report.get("kernels"), library_calls=report.get("library_calls"),
               host_steps=report.get("host_steps", 0))
    sluice_run = os.path.join(args.bin, "sluice-run")
    rc, out = run([sluice_run, built["bundle"], f"input_ids={ids_path}",
                   f"--warmup={args.warmup}", f"--iters={args.iters}"])
    m = LATENCY.search(out)
    if rc != 0 or not m:
        raise RuntimeError(f"sluice-run failed (exit {rc}): {out[-600:]}")
    row.update(device=m.group(1), sluice_ms=float(m.group(2)), sluice_p90_ms=float(m.group(3)),
               cuda_graph=m.group(4).strip())
    trace = os.path.join(work, f"{name}.trace.json")
    saved = os.path.join(work, f"{name}.outputs")
    rc, out = run([sluice_run, built["bundle"], f"input_ids={ids_path}", f"--trace={trace}",
                   f"--save-outputs={saved}"])
    if rc != 0:
        raise RuntimeError(f"sluice-run --trace failed (exit {rc}): {out[-600:]}")
    row["output"] = np.load(os.path.join(saved, "last_hidden_state.npy")).astype(np.float64)
    row["bandwidth"] = step_bandwidth(built["bundle"], trace, onnx_path,
                                      {"input_ids": [batch, seq]}, copy_gbs)
    return row


def step_bandwidth(bundle, trace, onnx_path, shapes, copy_gbs):
    """Per memory-bound class: steps, total bytes, total time, achieved GB/s
    and its fraction of the copy bandwidth, from the trace's step times."""
    with open(os.path.join(bundle, "manifest.json")) as f:
        kernels = {k["name"]: k for k in json.load(f)["kernels"]}
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("cat") != "run"]
    graph = boundary_bytes(onnx_path, shapes)
    classes = {}
    for e in events:
        k = kernels.get(e["name"])
        if not k or e.get("cat") != "kernel":
            continue
        ops = " ".join([k.get("op", "")] + k.get("ops", []))
        if NOT_MEMORY_BOUND.search(ops):
            continue
        cls = next((c for c, pattern in MEMORY_BOUND.items() if pattern.search(ops)), None)
        if not cls:
            continue
        nbytes = step_bytes(k.get("nodes", []), graph)
        c = classes.setdefault(cls, {"steps": 0, "bytes": 0, "us": 0.0, "unsized": 0})
        if nbytes is None or e["dur"] <= 0:
            # A tensor shape inference leaves unsized (a shape computed at
            # run time that Sluice folded): left out rather than guessed.
            c["unsized"] += 1
            continue
        c["steps"] += 1
        c["bytes"] += nbytes
        c["us"] += e["dur"]
    for cls in list(classes):
        c = classes[cls]
        if not c["steps"]:
            del classes[cls]
            continue
        c["gbs"] = c["bytes"] / (c["us"] * 1e-6) / 1e9
        c["fraction"] = c["gbs"] / copy_gbs if copy_gbs else None
    return classes


def bench_torch(args, name, ids_np):
    """PyTorch fp16 (eager, compile, reduce-overhead) medians and the fp32
    reference output."""
    import torch  # noqa: PLC0415

    kind = CONFIGS[name][0]
    ids = torch.from_numpy(ids_np).cuda()
    model, _ = build_model(kind, "sdpa")
    model = model.cuda()
    with torch.inference_mode():
        reference = model(ids).double().cpu().numpy()
        model = model.half()
        row = {}
        for mode in args.modes:
            try:
                if mode == "eager":
                    fn = model
                elif mode == "compile":
                    fn = torch.compile(model)
                else:
                    fn = torch.compile(model, mode="reduce-overhead")
                t0 = time.time()
                fn(ids)
                torch.cuda.synchronize()
                warm = time.time() - t0
                median, p90 = time_torch(lambda: fn(ids).cpu(), args.warmup, args.iters)
                row[mode] = {"ms": median, "p90_ms": p90, "first_run_s": round(warm, 1)}
            except Exception as e:  # noqa: BLE001
                row[mode] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            torch._dynamo.reset()  # noqa: SLF001
    del model
    torch.cuda.empty_cache()
    return row, reference


def rel_l2(got, want):
    import numpy as np  # noqa: PLC0415

    if got.shape != want.shape:
        return float("inf")
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def summarize(row):
    """Ratios of medians (Sluice / torch)."""
    torch_ms = {m: v["ms"] for m, v in row.get("torch", {}).items() if "ms" in v}
    compiled = [torch_ms[m] for m in ("compile", "reduce-overhead") if m in torch_ms]
    if "sluice_ms" in row:
        if compiled:
            row["vs_best_compile"] = row["sluice_ms"] / min(compiled)
        if "eager" in torch_ms:
            row["vs_eager"] = row["sluice_ms"] / torch_ms["eager"]
    return row


def device_environment(bin_dir):
    """What a GPU run's results record about where they ran: date, GPU, its
    capability and driver, torch and CUDA, cuDNN, the device kind, and the
    Sluice commit (the device bundle's MANIFEST.txt beside `bin_dir`, else
    git). Shared with kernels_bench.py."""
    import torch  # noqa: PLC0415

    env = {"date": datetime.date.today().isoformat(),
           "gpu": torch.cuda.get_device_name(0),
           "capability": "sm_%d%d" % torch.cuda.get_device_capability(0),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "device_kind": os.environ.get("SLUICE_DEVICE_KIND", "")}
    try:
        env["cudnn"] = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001
        pass
    try:
        env["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True).stdout.strip().splitlines()[0]
    except (OSError, IndexError):
        pass
    manifest = os.path.join(os.path.dirname(os.path.abspath(bin_dir)), "MANIFEST.txt")
    if os.path.exists(manifest):
        with open(manifest) as f:
            for line in f:
                if line.startswith("commit:"):
                    env["sluice_commit"] = line.split(":", 1)[1].strip()
    if "sluice_commit" not in env:
        try:
            env["sluice_commit"] = subprocess.run(
                ["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                text=True).stdout.strip()
        except OSError:
            pass
    return env


def environment(args):
    import transformers  # noqa: PLC0415

    env = device_environment(args.bin)
    env.update({"transformers": transformers.__version__, "precision": args.precision,
                "iters": args.iters, "warmup": args.warmup})
    return env


def write_results(path, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def bench(args):
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        log("no GPU (torch.cuda.is_available() is False): skipped")
        return 77
    names = select_configs(args.configs)
    os.makedirs(args.out, exist_ok=True)
    results = {"env": environment(args), "configs": {}}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            previous = json.load(f)
        if previous.get("env", {}).get("gpu") == results["env"]["gpu"]:
            results["configs"] = previous.get("configs", {})
    results["env"]["copy_gbs"] = copy_bandwidth()
    log(f"{results['env']['gpu']}: device-to-device copy {results['env']['copy_gbs']:.0f} GB/s")

    # Export each model once, then compile every configuration in parallel.
    onnx_paths, failures = {}, {}
    for kind in sorted({CONFIGS[n][0] for n in names}):
        path = os.path.join(args.out, f"{kind}.onnx")
        if not os.path.exists(path):
            t0 = time.time()
            try:
                how = export(kind, path)
                log(f"exported {kind} ({how}) in {time.time() - t0:.0f}s")
            except Exception as e:  # noqa: BLE001
                failures[kind] = str(e)
                log(f"{kind}: {e}")
                continue
        onnx_paths[kind] = path
    builds = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(compile_bundle, args, n, onnx_paths[CONFIGS[n][0]], args.out): n
                   for n in names if CONFIGS[n][0] in onnx_paths}
        for fut in concurrent.futures.as_completed(futures):
            n = futures[fut]
            builds[n] = fut.result()
            log(f"compiled {n}: exit {builds[n]['rc']} in {builds[n]['seconds']:.0f}s")

    rng = np.random.default_rng(0)
    for n in names:
        kind, batch, seq = CONFIGS[n]
        row = {"model": kind, "batch": batch, "seq": seq}
        if kind in failures:
            row["error"] = "export: " + failures[kind]
        else:
            vocab = 30522 if kind == "bert" else 50257
            ids = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
            ids_path = os.path.join(args.out, f"{n}.input_ids.npy")
            np.save(ids_path, ids)
            torch_row, reference = bench_torch(args, n, ids)
            row["torch"] = torch_row
            built = builds[n]
            if built["rc"] != 0:
                row["error"] = f"sluice-compile (exit {built['rc']}): {built['log'][-600:]}"
            else:
                try:
                    sluice = bench_sluice(args, n, built, ids_path, onnx_paths[kind],
                                          results["env"]["copy_gbs"], args.out)
                    row["rel_l2_vs_fp32"] = rel_l2(sluice.pop("output"), reference)
                    row.update(sluice)
                except Exception as e:  # noqa: BLE001
                    row["error"] = str(e)
        results["configs"][n] = summarize(row)
        log(f"{n}: " + format_row_text(n, row))
        if args.results:
            write_results(args.results, results)
    print(render_table(results))
    return 0 if all("error" not in results["configs"][n] for n in names) else 1


# ------------------------------------------------------------- reporting


def fmt(v, digits=3):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def format_row_text(name, row):
    if "error" in row:
        return "ERROR " + row["error"][:300]
    return (f"sluice {fmt(row.get('sluice_ms'))} ms, vs best compile "
            f"{fmt(row.get('vs_best_compile'))}, vs eager {fmt(row.get('vs_eager'))}, "
            f"rel L2 {fmt(row.get('rel_l2_vs_fp32'), 2)}")


def bandwidth_cell(row, cls):
    c = row.get("bandwidth", {}).get(cls)
    if not c:
        return "-"
    return f"{c['gbs']:.0f} GB/s ({100 * c['fraction']:.0f}%, {c['steps']} steps)"


def render_table(results):
    env = results.get("env", {})
    lines = [
        f"Last run: {env.get('date', '?')} on {env.get('gpu', '?')}"
        + (f" ({env['device_kind']})" if env.get("device_kind") else "")
        + (f", driver {env['driver']}" if env.get("driver") else "")
        + f", torch {env.get('torch', '?')} (CUDA {env.get('cuda', '?')}), transformers "
        f"{env.get('transformers', '?')}, Sluice commit {env.get('sluice_commit', '?')}, "
        f"--precision={env.get('precision', 'fp16')}, {env.get('iters', '?')} timed runs after "
        f"{env.get('warmup', '?')} warm-up runs. Device-to-device copy: "
        f"{fmt(env.get('copy_gbs'), 4)} GB/s.",
        "",
        "| config | batch | seq | Sluice ms | eager ms | compile ms | reduce-overhead ms "
        "| Sluice / best compile | Sluice / eager | layer_norm bandwidth | softmax bandwidth "
        "| rel L2 vs fp32 | kernels + library calls | compile s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    errors = []
    for name in [n for n in CONFIGS if n in results.get("configs", {})]:
        row = results["configs"][name]
        t = row.get("torch", {})
        ms = [fmt(t.get(m, {}).get("ms")) if "error" not in t.get(m, {}) else "error"
              for m in MODES]
        errors += [f"{name}, torch {m}: {t[m]['error']}" for m in MODES
                   if "error" in t.get(m, {})]
        if "error" in row:
            errors.append(f"{name}: {row['error']}")
            lines.append(f"| {name} | {row.get('batch')} | {row.get('seq')} | error | "
                         + " | ".join(ms) + " |" + " - |" * 7)
            continue
        launches = (f"{row.get('kernels')} + {row.get('library_calls')}"
                    if row.get("kernels") is not None else "-")
        lines.append(
            f"| {name} | {row['batch']} | {row['seq']} | {fmt(row.get('sluice_ms'))} | "
            + " | ".join(ms)
            + f" | {fmt(row.get('vs_best_compile'))} | {fmt(row.get('vs_eager'))} | "
            f"{bandwidth_cell(row, 'layernorm')} | {bandwidth_cell(row, 'softmax')} | "
            f"{fmt(row.get('rel_l2_vs_fp32'), 2)} | {launches} | {fmt(row.get('compile_s'))} |")
    if errors:
        lines += ["", "Errors:", ""]
        lines += ["- " + e[:300].replace("|", "/").replace("\n", " ") for e in errors]
    return "\n".join(lines)


def merge_results(paths):
    merged = {"env": {}, "configs": {}}
    gpus = set()
    for path in paths:
        with open(path) as f:
            r = json.load(f)
        if not isinstance(r.get("configs"), dict):
            sys.exit(f"bench_gpu: {path}: not a bench_gpu.py results file (no 'configs')")
        gpus.add(r.get("env", {}).get("gpu"))
        merged["env"].update(r.get("env", {}))
        merged["configs"].update(r["configs"])
    if len(gpus) > 1:
        sys.exit(f"bench_gpu: results from different GPUs ({', '.join(map(str, gpus))}): "
                 "write them separately")
    for row in merged["configs"].values():
        summarize(row)
    return merged


def write_doc(path, results):
    with open(path) as f:
        text = f.read()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"bench_gpu: {path} needs exactly one {BEGIN} ... {END} section")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    body = render_table(results)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + body + "\n" + END + tail)
    log(f"wrote {path} ({len(results['configs'])} configurations)")


def export_only(args):
    """Exports the models of --configs into DIR with export() (no GPU, no
    compile): what bench/gpu/check-export.sh compiles and checks."""
    os.makedirs(args.export_only, exist_ok=True)
    for kind in sorted({CONFIGS[n][0] for n in select_configs(args.configs)}):
        path = os.path.join(args.export_only, f"{kind}.onnx")
        t0 = time.time()
        how = export(kind, path, args.layers)
        log(f"exported {kind} ({how}, {args.layers or 'all'} layers) to {path} "
            f"in {time.time() - t0:.0f}s")
    return 0


def dry_run(args):
    names = select_configs(args.configs)
    print("bench_gpu dry run: nothing is exported, compiled or timed")
    for module in ("torch", "transformers", "onnx", "numpy"):
        try:
            __import__(module)
            print(f"  import {module}: available")
        except Exception as e:  # noqa: BLE001
            print(f"  import {module}: missing ({type(e).__name__}) - needed on the device")
    for tool in ("sluice-compile", "sluice-run"):
        p = os.path.join(args.bin, tool)
        print(f"  {p}: {'found' if os.access(p, os.X_OK) else 'not found'}")
    print(f"  copy bandwidth: torch copy of a 1 GiB fp16 tensor, {args.precision} bundles, "
          f"{args.warmup} warm-up + {args.iters} timed runs per timing")
    for kind in sorted({CONFIGS[n][0] for n in names}):
        cfg = "BertConfig()" if kind == "bert" else "GPT2Config()"
        print(f"  export {kind}: transformers {cfg}, random weights -> "
              f"{os.path.join(args.out, kind + '.onnx')} (opset 17, dynamic batch x sequence)")
    for n in names:
        kind, batch, seq = CONFIGS[n]
        bundle = os.path.join(args.out, n + ".sluice")
        print(f"  {n}: sluice-compile {kind}.onnx -o {bundle} --target=cuda "
              f"--precision={args.precision} --gpu-arch={args.gpu_arch} "
              f"--shape=input_ids={batch}x{seq}")
        print(f"  {n}: sluice-run {bundle} input_ids=... --warmup={args.warmup} "
              f"--iters={args.iters}; then --trace --save-outputs")
        print(f"  {n}: torch fp16 {', '.join(args.modes)}")
    if args.results:
        print(f"  results -> {args.results}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("SLUICE_BIN", "build/bin"),
                    help="folder with sluice-compile and sluice-run")
    ap.add_argument("--configs", default="all",
                    help="comma-separated configurations or groups (all, quick, bert, gpt2, "
                         + ", ".join(CONFIGS) + ")")
    ap.add_argument("--out", default="build/bench-gpu", help="work folder (models, bundles)")
    ap.add_argument("--results", help="results JSON (kept configurations of the same GPU "
                                      "are updated)")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16", "fp32"])
    ap.add_argument("--gpu-arch", default=os.environ.get("SLUICE_GPU_ARCH", "sm_90"))
    ap.add_argument("--modes", default=",".join(MODES),
                    help="PyTorch timings: " + ", ".join(MODES))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=4, help="parallel sluice-compile runs")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--export-only", metavar="DIR",
                    help="only export the configurations' models to DIR/{bert,gpt2}.onnx")
    ap.add_argument("--layers", type=int,
                    help="with --export-only: layers per model (default: the config's)")
    ap.add_argument("--from-results", nargs="+", metavar="JSON",
                    help="render earlier results (no GPU needed)")
    ap.add_argument("--write-doc", metavar="FILE.md",
                    help="rewrite FILE's bench-gpu section (with --from-results or after a run)")
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    for m in args.modes:
        if m not in MODES:
            sys.exit(f"bench_gpu: unknown mode '{m}' ({', '.join(MODES)})")
    if args.iters < 1 or args.warmup < 0:
        sys.exit("bench_gpu: --iters must be >= 1 and --warmup >= 0")
    if args.from_results:
        results = merge_results(args.from_results)
        print(render_table(results))
        if args.write_doc:
            write_doc(args.write_doc, results)
        return 0
    if args.layers is not None and (args.layers < 1 or not args.export_only):
        sys.exit("bench_gpu: --layers must be >= 1 and goes with --export-only")
    if args.export_only:
        return export_only(args)
    if args.dry_run:
        return dry_run(args)
    status = bench(args)
    if status != 77 and args.write_doc and args.results:
        write_doc(args.write_doc, merge_results([args.results]))
    return status


if __name__ == "__main__":
    sys.exit(main())
