#!/usr/bin/env python3
"""Sluice's cuda kernels one at a time against PyTorch's on the same GPU, each
judged against its target (see README.md here, "Kernel benchmark").

Cases (all fp16; each a small ONNX model built here, compiled with
`sluice-compile --target=cuda --precision=fp16 --gpu-arch=ARCH`):

  attention  Q K^T * 1/sqrt(D) + constant causal mask, Softmax, * V: one
             op that the recognize phase fuses into sluice.attention (the
             bundle is checked to hold one attention step and nothing else).
             B8 H12 S1024 D64 and B4 H16 S4096 D128, causal. Against torch
             SDPA with each backend this torch has (flash, cuDNN, efficient,
             math). TFLOP/s as FlashAttention counts them: 4*B*H*S*S*D,
             halved for causal.
  gemm       the BERT-base batch-32 seq-128 GEMMs, X[4096,K] W[K,N] + bias:
             QKV 4096x2304x768, output projection 4096x768x768, FF1
             4096x3072x768 (+ GELU, erf form, as BERT exports it), FF2
             4096x768x3072. COPIES independent GEMMs per bundle (separate
             inputs, so nothing merges them). Against torch.matmul (plain
             cuBLAS) and torch.addmm (+ gelu), TFLOP/s of 2*M*N*K.
  row        layer_norm over rows of 768 (BERT b32 s128: 4096 rows; GPT-2 b8
             s1024: 8192 rows) and softmax over the last axis ([32,12,128,128]
             and [8,12,1024,1024]), COPIES ops chained. Bytes moved (input
             read + output written, 2 bytes an element; scale and bias left
             out) / time, against a device-to-device copy of 1 GiB
             (bench_gpu.copy_bandwidth) and a copy of the op's own size; torch's
             F.layer_norm / softmax alongside.

Sluice's times: `sluice-run BUNDLE --random-inputs --warmup=W --iters=N
--profile=all --json=F`: the CUDA graph replay's compute time per run (CUDA
events around the graph, the input and output copies outside) / COPIES, and
each step's time in the traced (eager) runs. Row cases also go through
`sluice-run --trace` and bench_gpu.step_bandwidth (the bench's own
trace-to-bandwidth code, ONNX boundary bytes). PyTorch's: CUDA events around
REPEAT back-to-back calls / REPEAT, median of --iters such timings.

`--dry-run` prints the plan, builds every ONNX model and compiles every bundle
(nvcc, no GPU needed) and checks what each bundle holds; it fails when a
compile fails or a case's op was not fused as expected. Results go to
--results (JSON, rewritten after each case).
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_gpu  # noqa: E402  (copy_bandwidth, step_bandwidth, run, LATENCY)

OPSET = 17
# Independent copies of a GEMM / chained row ops per bundle: the graph
# replay's compute time / COPIES is one op's time with the launch gaps of
# back-to-back kernels, not a lone launch's.
COPIES = {"gemm": 4, "row": 4, "attention": 1}

CASES = {
    # attention: (B, H, S, D, causal)
    "attention-b8-h12-s1024-d64": ("attention", (8, 12, 1024, 64, True)),
    "attention-b4-h16-s4096-d128": ("attention", (4, 16, 4096, 128, True)),
    # gemm: (M, N, K, epilogue)
    "gemm-qkv-4096x2304x768": ("gemm", (4096, 2304, 768, "bias")),
    "gemm-out-4096x768x768": ("gemm", (4096, 768, 768, "bias")),
    "gemm-ff1-4096x3072x768": ("gemm", (4096, 3072, 768, "bias+gelu")),
    "gemm-ff2-4096x768x3072": ("gemm", (4096, 768, 3072, "bias")),
    # row: (op, shape)
    "layernorm-bert-b32-s128": ("row", ("layernorm", (32, 128, 768))),
    "layernorm-gpt2-b8-s1024": ("row", ("layernorm", (8, 1024, 768))),
    "softmax-bert-b32-s128": ("row", ("softmax", (32, 12, 128, 128))),
    "softmax-gpt2-b8-s1024": ("row", ("softmax", (8, 12, 1024, 1024))),
}
GROUPS = {"all": list(CASES)}
GROUPS.update({kind: [n for n in CASES if CASES[n][0] == kind]
               for kind in ("attention", "gemm", "row")})
SDPA_BACKENDS = ["flash", "cudnn", "efficient", "math"]


def log(msg):
    bench_gpu.log(msg, tool="kernels-bench")


def select_cases(spec):
    return bench_gpu.select_names(spec, GROUPS, CASES, "kernels_bench", "case")


# ------------------------------------------------------------- models


def attention_flops(b, h, s, d, causal):
    flops = 4.0 * b * h * s * s * d
    return flops / 2 if causal else flops


def case_work(name):
    """(FLOPs, bytes moved) of one op of the case; either may be None."""
    kind, p = CASES[name]
    if kind == "attention":
        return attention_flops(*p), None
    if kind == "gemm":
        m, n, k, _ = p
        return 2.0 * m * n * k, None
    _, shape = p
    return None, 2 * 2 * math.prod(shape)


def build_model(name, path):
    """Writes the case's ONNX model (fp16 inputs, outputs and weights)."""
    import numpy as np  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    kind, p = CASES[name]
    copies = COPIES[kind]
    rng = np.random.default_rng(0)
    f16 = TensorProto.FLOAT16
    nodes, inputs, outputs, inits = [], [], [], []

    def const(cname, array):
        inits.append(numpy_helper.from_array(np.asarray(array), cname))
        return cname

    if kind == "attention":
        b, h, s, d, causal = p
        for c in range(copies):
            q, k, v, y = f"q{c}", f"k{c}", f"v{c}", f"y{c}"
            for t in (q, k, v):
                inputs.append(helper.make_tensor_value_info(t, f16, [b, h, s, d]))
            outputs.append(helper.make_tensor_value_info(y, f16, [b, h, s, d]))
            nodes += [
                helper.make_node("Transpose", [k], [f"kt{c}"], perm=[0, 1, 3, 2]),
                helper.make_node("MatMul", [q, f"kt{c}"], [f"s{c}"]),
                helper.make_node("Mul", [f"s{c}", const(f"scale{c}", np.array(
                    1 / math.sqrt(d), np.float16))], [f"ss{c}"]),
            ]
            scores = f"ss{c}"
            if causal:
                mask = np.triu(np.full((s, s), -np.inf, np.float16), 1)
                nodes.append(helper.make_node("Add", [scores, const(f"mask{c}", mask)],
                                              [f"sm{c}"]))
                scores = f"sm{c}"
            nodes += [helper.make_node("Softmax", [scores], [f"p{c}"], axis=-1),
                      helper.make_node("MatMul", [f"p{c}", v], [y])]
    elif kind == "gemm":
        m, n, k, epilogue = p
        for c in range(copies):
            x, y = f"x{c}", f"y{c}"
            inputs.append(helper.make_tensor_value_info(x, f16, [m, k]))
            outputs.append(helper.make_tensor_value_info(y, f16, [m, n]))
            w = const(f"w{c}", (rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float16))
            bias = const(f"b{c}", (0.1 * rng.standard_normal(n)).astype(np.float16))
            nodes += [helper.make_node("MatMul", [x, w], [f"mm{c}"]),
                      helper.make_node("Add", [f"mm{c}", bias],
                                       [y if epilogue == "bias" else f"a{c}"])]
            if epilogue == "bias+gelu":
                # x * 0.5 * (1 + erf(x / sqrt(2))), as transformers' BERT exports it.
                a = f"a{c}"
                nodes += [
                    helper.make_node("Div", [a, const(f"sqrt2_{c}", np.array(
                        math.sqrt(2), np.float16))], [f"g0{c}"]),
                    helper.make_node("Erf", [f"g0{c}"], [f"g1{c}"]),
                    helper.make_node("Add", [f"g1{c}", const(f"one{c}", np.array(
                        1, np.float16))], [f"g2{c}"]),
                    helper.make_node("Mul", [a, f"g2{c}"], [f"g3{c}"]),
                    helper.make_node("Mul", [f"g3{c}", const(f"half{c}", np.array(
                        0.5, np.float16))], [y]),
                ]
    else:
        op, shape = p
        inputs.append(helper.make_tensor_value_info("x", f16, list(shape)))
        outputs.append(helper.make_tensor_value_info("y", f16, list(shape)))
        prev = "x"
        for c in range(copies):
            out = "y" if c == copies - 1 else f"t{c}"
            if op == "layernorm":
                width = shape[-1]
                gamma = const(f"g{c}", (1 + 0.1 * rng.standard_normal(width)).astype(np.float16))
                beta = const(f"be{c}", (0.1 * rng.standard_normal(width)).astype(np.float16))
                nodes.append(helper.make_node("LayerNormalization", [prev, gamma, beta], [out],
                                              name=f"ln{c}", axis=-1, epsilon=1e-5))
            else:
                nodes.append(helper.make_node("Softmax", [prev], [out], name=f"softmax{c}",
                                              axis=-1))
            prev = out
    for i, node in enumerate(nodes):
        if not node.name:
            node.name = f"{node.op_type.lower()}_{i}"
    graph = helper.make_graph(nodes, name.replace("-", "_"), inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="kernels_bench")
    onnx.checker.check_model(model)
    onnx.save(model, path)


def expected_steps(name):
    """What the compiled case must hold: (pattern the manifest's steps' ops
    must match, how many such steps, whether other steps may exist)."""
    kind, p = CASES[name]
    copies = COPIES[kind]
    if kind == "attention":
        return re.compile(r"attention"), copies
    if kind == "gemm":
        return re.compile(r"matmul|gemm"), copies
    return re.compile(r"layer_?norm" if p[0] == "layernorm" else r"softmax"), copies


def check_bundle(name, bundle):
    """The bundle's steps, checked against expected_steps: a list of
    problems (empty when it holds what the case measures)."""
    with open(os.path.join(bundle, "manifest.json")) as f:
        kernels = json.load(f)["kernels"]
    pattern, count = expected_steps(name)
    ops = [" ".join([k.get("op", "")] + k.get("ops", [])) for k in kernels]
    matching = [o for o in ops if pattern.search(o)]
    problems = []
    if len(matching) != count:
        problems.append(f"{len(matching)} steps match /{pattern.pattern}/, expected {count} "
                        f"(steps: {ops})")
    if len(kernels) != count:
        problems.append(f"{len(kernels)} steps in all, expected {count} (steps: {ops})")
    return problems


# ------------------------------------------------------------- sluice


def compile_bundle(args, name, onnx_path):
    bundle = os.path.join(args.out, f"{name}.sluice")
    report = os.path.join(args.out, f"{name}.report.json")
    cmd = [os.path.join(args.bin, "sluice-compile"), onnx_path, "-o", bundle, "--quiet",
           "--target=cuda", f"--precision={args.precision}", f"--gpu-arch={args.gpu_arch}",
           f"--report={report}"]
    if not args.dry_run:
        cmd.append("--no-cache")  # compile_s is a compile's time, not a cache hit's
    t0 = time.time()
    rc, out = bench_gpu.run(cmd)
    built = {"cmd": " ".join(cmd), "rc": rc, "log": out[-3000:],
             "seconds": round(time.time() - t0, 1), "bundle": bundle}
    if rc == 0:
        built["problems"] = check_bundle(name, bundle)
    if rc == 0 and CASES[name][0] == "attention" and CASES[name][1][4]:
        # The constant mask must have become the op's causal flag (a masked
        # attention would measure another kernel).
        rc2, ir = bench_gpu.run(cmd[:2] + [f"--precision={args.precision}", "--target=cuda",
                                           "--stop-after=recognize", "--emit=mlir"])
        if rc2 != 0 or not re.search(r"sluice\.attention [^\n]*causal = true", ir):
            built["problems"].append("the attention is not causal = true after recognize")
    return built


def bench_sluice(args, name, built, onnx_path, copy_gbs):
    kind, p = CASES[name]
    copies = COPIES[kind]
    sluice_run = os.path.join(args.bin, "sluice-run")
    report = os.path.join(args.out, f"{name}.run.json")
    iters = args.attention_iters if kind == "attention" else args.iters
    cmd = [sluice_run, built["bundle"], "--random-inputs", f"--warmup={args.warmup}",
           f"--iters={iters}", "--profile=all", f"--json={report}"]
    rc, out = bench_gpu.run(cmd)
    log_path = os.path.join(args.out, f"{name}.sluice-run.log")
    with open(log_path, "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    if rc != 0:
        raise RuntimeError(f"sluice-run failed (exit {rc}): {out[-600:]}")
    with open(report) as f:
        run = json.load(f)
    split = run.get("split_ms") or {}
    row = {"sluice_run": " ".join(cmd[1:]), "cuda_graph": run.get("cuda_graph"),
           "device": run.get("device"), "copies": copies,
           "graph_compute_ms": split.get("compute"),
           "latency_median_ms": run["latency_ms"]["median"]}
    if split.get("compute"):
        row["sluice_ms"] = split["compute"] / copies
    pattern, _ = expected_steps(name)
    steps = [s for s in (run.get("profile") or {}).get("steps", [])
             if pattern.search(s.get("op", "") + " " + s.get("compute", ""))]
    if steps:
        per_call = [s["ms_per_call"] for s in steps]
        row["traced_step_ms"] = statistics.median(per_call)
        row["traced_step_ms_each"] = per_call
    if kind == "row":
        trace = os.path.join(args.out, f"{name}.trace.json")
        rc, out = bench_gpu.run([sluice_run, built["bundle"], "--random-inputs",
                                 f"--trace={trace}"])
        if rc != 0:
            raise RuntimeError(f"sluice-run --trace failed (exit {rc}): {out[-600:]}")
        shape = list(p[1])
        row["trace_bandwidth"] = bench_gpu.step_bandwidth(built["bundle"], trace, onnx_path,
                                                          {"x": shape}, copy_gbs)
    return row


# ------------------------------------------------------------- torch


def time_repeat(fn, warmup, iters, repeat):
    """Median and spread (min, max) of iters timings of `repeat` back-to-back
    calls, per call, in ms."""
    import torch  # noqa: PLC0415

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeat):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / repeat)
    return {"ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times)}


def sdpa_contexts():
    """backend name -> a context manager factory that allows only it (the
    torch.nn.attention API, else torch.backends.cuda.sdp_kernel)."""
    import torch  # noqa: PLC0415

    out = {}
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: PLC0415

        names = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION",
                 "efficient": "EFFICIENT_ATTENTION", "math": "MATH"}
        for b, attr in names.items():
            if hasattr(SDPBackend, attr):
                out[b] = (lambda a=attr: sdpa_kernel(getattr(SDPBackend, a)))
        return out
    except ImportError:
        pass
    flags = {"flash": "enable_flash", "efficient": "enable_mem_efficient", "math": "enable_math"}
    for b, flag in flags.items():
        kwargs = {f: f == flag for f in flags.values()}
        out[b] = (lambda k=kwargs: torch.backends.cuda.sdp_kernel(**k))
    return out


def bench_torch(args, name):
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415

    kind, p = CASES[name]
    dev, f16 = "cuda", torch.float16
    g = torch.Generator(device=dev).manual_seed(0)
    res = {}
    if kind == "attention":
        b, h, s, d, causal = p
        q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=f16, generator=g)
                   for _ in range(3))
        iters = args.attention_iters
        for backend, ctx in sdpa_contexts().items():
            if backend not in args.sdpa:
                continue
            try:
                with ctx():
                    res[backend] = time_repeat(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                        3, iters, 3)
            except Exception as e:  # noqa: BLE001  (backend unavailable for the shape)
                res[backend] = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
            torch.cuda.empty_cache()
    elif kind == "gemm":
        m, n, k, epilogue = p
        x = torch.randn(m, k, device=dev, dtype=f16, generator=g)
        w = torch.randn(k, n, device=dev, dtype=f16, generator=g) / math.sqrt(k)
        bias = torch.randn(n, device=dev, dtype=f16, generator=g)
        res["matmul"] = time_repeat(lambda: torch.matmul(x, w), 10, args.iters, 20)
        if epilogue == "bias+gelu":
            res["addmm+gelu"] = time_repeat(lambda: F.gelu(torch.addmm(bias, x, w)), 10,
                                            args.iters, 20)
        else:
            res["addmm"] = time_repeat(lambda: torch.addmm(bias, x, w), 10, args.iters, 20)
    else:
        op, shape = p
        x = torch.randn(*shape, device=dev, dtype=f16, generator=g)
        if op == "layernorm":
            gamma = torch.ones(shape[-1], device=dev, dtype=f16)
            beta = torch.zeros(shape[-1], device=dev, dtype=f16)
            res["layer_norm"] = time_repeat(
                lambda: F.layer_norm(x, (shape[-1],), gamma, beta, 1e-5), 10, args.iters, 20)
        else:
            res["softmax"] = time_repeat(lambda: torch.softmax(x, -1), 10, args.iters, 20)
        y = torch.empty_like(x)
        res["copy_same_size"] = time_repeat(lambda: y.copy_(x), 10, args.iters, 20)
    return res


# ------------------------------------------------------------- ratios


def summarize(name, row, copy_gbs):
    """Rates (TFLOP/s or GB/s and fraction of the copy) and ratios of the
    measured times (below 1: Sluice is faster)."""
    flops, nbytes = case_work(name)
    torch_res = row.get("torch", {})
    ms = row.get("sluice_ms")

    def rate(t):
        if not t:
            return None
        if flops:
            return flops / (t * 1e-3) / 1e12
        return nbytes / (t * 1e-3) / 1e9

    unit = "tflops" if flops else "gbs"
    row["unit"] = unit
    if ms:
        row["sluice_" + unit] = rate(ms)
        if row.get("traced_step_ms"):
            row["sluice_traced_" + unit] = rate(row["traced_step_ms"])
    for peer, t in torch_res.items():
        if "ms" in t:
            t[unit] = rate(t["ms"])
            if ms:
                t["sluice_over_peer"] = ms / t["ms"]
    if nbytes and ms:
        row["copy_fraction"] = rate(ms) / copy_gbs if copy_gbs else None
        same = torch_res.get("copy_same_size", {}).get("ms")
        if same:
            row["same_size_copy_fraction"] = same / ms
    return row


def format_row(name, row):
    if "error" in row:
        return f"{name}: ERROR {row['error'][:300]}"
    unit = row.get("unit", "")
    parts = [f"sluice {bench_gpu.fmt(row.get('sluice_ms'))} ms"]
    if row.get("sluice_" + unit) is not None:
        parts[-1] += f" ({row['sluice_' + unit]:.0f} {'TFLOP/s' if unit == 'tflops' else 'GB/s'})"
    if row.get("copy_fraction") is not None:
        parts.append(f"{100 * row['copy_fraction']:.0f}% of the 1 GiB copy")
    if row.get("same_size_copy_fraction") is not None:
        parts.append(f"{100 * row['same_size_copy_fraction']:.0f}% of a same-size copy")
    for peer, t in row.get("torch", {}).items():
        if "ms" in t:
            parts.append(f"torch {peer} {t['ms']:.4g} ms (sluice/peer "
                         f"{t.get('sluice_over_peer', float('nan')):.2f})")
        else:
            parts.append(f"torch {peer}: {t.get('error', '?')[:80]}")
    return f"{name}: " + "; ".join(parts)


# The targets of these cases (README.md here, "Kernel benchmark"): level with
# or faster than PyTorch's best, and near the hardware's rate.
ATTENTION_D128_TFLOPS = 350.0
GEMM_AVERAGE_TFLOPS = 600.0
ROW_COPY_FRACTION = 0.85


def acceptance(cases):
    """The kernel targets judged over a results file's cases: a list of
    {item, value, target, met} (met None where a figure is missing)."""
    items = []

    def item(what, value, target, met):
        items.append({"item": what, "value": value, "target": target, "met": met})

    for name, row in cases.items():
        kind = row.get("kind")
        peers = row.get("torch", {})
        ms = row.get("sluice_ms")
        if kind == "attention":
            cudnn = peers.get("cudnn", {}).get("ms")
            item(f"{name}: Sluice / torch SDPA cuDNN time", ms / cudnn if ms and cudnn else None,
                 "<= 1", ms <= cudnn if ms and cudnn else None)
            if CASES.get(name, (None, (0, 0, 0, 0)))[1][3] == 128:
                t = row.get("sluice_tflops")
                item(f"{name}: Sluice TFLOP/s", t, f">= {ATTENTION_D128_TFLOPS:.0f}",
                     t >= ATTENTION_D128_TFLOPS if t else None)
        elif kind == "gemm":
            plain = peers.get("matmul", {}).get("ms")
            item(f"{name}: Sluice / torch.matmul time", ms / plain if ms and plain else None,
                 "<= 1", ms <= plain if ms and plain else None)
        elif kind == "row":
            f = row.get("copy_fraction")
            item(f"{name}: share of the device copy's bandwidth", f,
                 f">= {ROW_COPY_FRACTION:.2f}", f >= ROW_COPY_FRACTION if f else None)
    gemms = [n for n in CASES if CASES[n][0] == "gemm"]
    if all(cases.get(n, {}).get("sluice_ms") for n in gemms):
        flops = sum(case_work(n)[0] for n in gemms)
        seconds = sum(cases[n]["sluice_ms"] for n in gemms) * 1e-3
        avg = flops / seconds / 1e12
        item("BERT-b32 GEMMs: Sluice TFLOP/s, by FLOPs", avg,
             f">= {GEMM_AVERAGE_TFLOPS:.0f}", avg >= GEMM_AVERAGE_TFLOPS)
    return items


def format_acceptance(items):
    lines = ["kernel targets (this run):"]
    for i in items:
        state = {True: "met", False: "NOT met", None: "no figure"}[i["met"]]
        value = "-" if i["value"] is None else f"{i['value']:.3g}"
        lines.append(f"  {state:9} {i['item']}: {value} (target {i['target']})")
    return "\n".join(lines)


def environment(args):
    env = bench_gpu.device_environment(args.bin)
    env.update({"precision": args.precision, "gpu_arch": args.gpu_arch,
                "iters": args.iters, "attention_iters": args.attention_iters,
                "warmup": args.warmup, "copies": COPIES})
    return env


# ------------------------------------------------------------- driver


def build_and_compile(args, names):
    """Builds every case's model and compiles its bundle (in parallel);
    name -> the compile's record."""
    os.makedirs(args.out, exist_ok=True)
    paths = {}
    for n in names:
        paths[n] = os.path.join(args.out, f"{n}.onnx")
        t0 = time.time()
        build_model(n, paths[n])
        log(f"built {paths[n]} ({os.path.getsize(paths[n]) / 2**20:.1f} MiB) in "
            f"{time.time() - t0:.1f}s")
    builds = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(compile_bundle, args, n, paths[n]): n for n in names}
        for fut in concurrent.futures.as_completed(futures):
            n = futures[fut]
            b = builds[n] = fut.result()
            b["onnx"] = paths[n]
            state = "ok" if b["rc"] == 0 and not b.get("problems") else "FAILED"
            log(f"compiled {n}: exit {b['rc']} in {b['seconds']:.0f}s, {state}"
                + "".join(f"\n    {p}" for p in b.get("problems", []))
                + (f"\n{b['log']}" if b["rc"] != 0 else ""))
    return builds


def dry_run(args, names):
    print("kernels_bench dry run: models built and compiled, nothing timed")
    for module in ("torch", "onnx", "numpy"):
        try:
            __import__(module)
            print(f"  import {module}: available")
        except Exception as e:  # noqa: BLE001
            print(f"  import {module}: missing ({type(e).__name__}) - needed")
    for n in names:
        kind, p = CASES[n]
        flops, nbytes = case_work(n)
        work = f"{flops / 1e9:.1f} GFLOP" if flops else f"{nbytes / 2**20:.1f} MiB moved"
        peers = {"attention": "torch SDPA " + "/".join(args.sdpa),
                 "gemm": "torch.matmul, torch.addmm (+gelu)",
                 "row": "torch F.layer_norm / softmax, a same-size copy"}[kind]
        print(f"  {n}: {kind} {p}, {COPIES[kind]} per bundle, {work} an op; vs {peers}")
    print(f"  sluice-run --random-inputs --warmup={args.warmup} --iters={args.iters} "
          f"(attention: {args.attention_iters}) --profile=all --json; row cases also --trace")
    print("  copy bandwidth: bench_gpu.copy_bandwidth (1 GiB fp16 device-to-device copy)")
    if args.results:
        print(f"  results -> {args.results}")
    builds = build_and_compile(args, names)
    bad = [n for n in names if builds[n]["rc"] != 0 or builds[n].get("problems")]
    for n in names:
        print(f"  compiled {n}: {builds[n]['seconds']:.0f}s, "
              f"{'FAILED' if n in bad else 'ok'}")
    return 1 if bad else 0


def bench(args, names):
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        log("no GPU (torch.cuda.is_available() is False): skipped")
        return 77
    results = {"env": environment(args), "cases": {}}
    results["env"]["copy_gbs"] = copy_gbs = bench_gpu.copy_bandwidth()
    log(f"{results['env']['gpu']}: device-to-device copy {copy_gbs:.0f} GB/s")
    builds = build_and_compile(args, names)
    failed = False
    for n in names:
        kind, p = CASES[n]
        row = {"kind": kind, "params": list(p), "compile_s": builds[n]["seconds"]}
        try:
            row["torch"] = bench_torch(args, n)
        except Exception as e:  # noqa: BLE001
            row["torch_error"] = f"{type(e).__name__}: {str(e)[:300]}"
        torch.cuda.empty_cache()
        b = builds[n]
        if b["rc"] != 0:
            row["error"] = f"sluice-compile (exit {b['rc']}): {b['log'][-600:]}"
        elif b.get("problems"):
            row["error"] = "bundle: " + "; ".join(b["problems"])
        else:
            try:
                row.update(bench_sluice(args, n, b, b["onnx"], copy_gbs))
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e)
        failed |= "error" in row
        results["cases"][n] = summarize(n, row, copy_gbs)
        log(format_row(n, row))
        results["acceptance"] = acceptance(results["cases"])
        if args.results:
            bench_gpu.write_results(args.results, results)
    print(format_acceptance(results["acceptance"]))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("SLUICE_BIN", "build/bin"),
                    help="folder with sluice-compile and sluice-run")
    ap.add_argument("--cases", default="all",
                    help="comma-separated cases or groups (" + ", ".join(GROUPS) + ", "
                         + ", ".join(CASES) + ")")
    ap.add_argument("--out", default="build/kernels-bench", help="work folder (models, bundles)")
    ap.add_argument("--results", help="results JSON (rewritten after each case)")
    ap.add_argument("--precision", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--gpu-arch", default=os.environ.get("SLUICE_GPU_ARCH", "sm_90"))
    ap.add_argument("--sdpa", default=",".join(SDPA_BACKENDS),
                    help="torch SDPA backends to time: " + ", ".join(SDPA_BACKENDS))
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--attention-iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=4, help="parallel sluice-compile runs")
    ap.add_argument("--dry-run", action="store_true",
                    help="print the plan, build and compile every case (no GPU), time nothing")
    ap.add_argument("--from-results", metavar="JSON",
                    help="judge the kernel targets on an earlier run's results (no GPU)")
    args = ap.parse_args()
    args.sdpa = [b for b in args.sdpa.split(",") if b]
    for b in args.sdpa:
        if b not in SDPA_BACKENDS:
            sys.exit(f"kernels_bench: unknown SDPA backend '{b}' ({', '.join(SDPA_BACKENDS)})")
    if args.iters < 1 or args.attention_iters < 1 or args.warmup < 0 or args.jobs < 1:
        sys.exit("kernels_bench: --iters, --attention-iters and --jobs must be >= 1, "
                 "--warmup >= 0")
    if args.from_results:
        with open(args.from_results) as f:
            print(format_acceptance(acceptance(json.load(f).get("cases", {}))))
        return 0
    names = select_cases(args.cases)
    if args.dry_run:
        return dry_run(args, names)
    return bench(args, names)


if __name__ == "__main__":
    sys.exit(main())
