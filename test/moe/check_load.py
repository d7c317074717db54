#!/usr/bin/env python3
"""The expert-load profile of a mixture-of-experts test model against a
count done by hand (docs/parallel.md, "The expert-load profile").

Compiles MODEL_DIR/model.onnx for the cpu target (extra sluice-compile
flags after --), runs the bundle once on MODEL_DIR/inputs with
`sluice-run --report` (checking the output against MODEL_DIR/expected) and
compares the report's "expert_load" with two counts made without Sluice:

- MODEL_DIR/expected_load.json, the hand count export_moe.py recorded when
  it wrote the inputs (so this also checks that the file belongs to them);
- a numpy count from the router itself: for top-k gating the router logits
  that the ONNX model computes (ONNX Runtime on the model with the Softmax's
  input made a graph output), softmax and top-k with ties to the lower
  expert; for hard gating the expert index input, each sample's tokens
  counted for its expert.

With --lib, the C API too (through ctypes): counters summed over a
context's runs, reset, one set per context, bad arguments refused.

Then tokens_per_rank must be the sums of blocks of experts_per_rank experts
and imbalance their max over mean (over the experts when one rank holds
them all). Exit 0 when everything agrees, 1 with the differences otherwise.

Usage: check_load.py --bin BUILD/bin [--lib BUILD/lib] MODEL_DIR [--ranks N] [-- COMPILE_FLAGS...]
"""
import argparse
import ctypes
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sluice_test as st  # noqa: E402


def router_count(model_dir, inputs):
    """Tokens per expert from the ONNX model's own router, and top_k."""
    model = onnx.load(os.path.join(model_dir, "model.onnx"))
    graph = model.graph
    softmax = [n for n in graph.node if n.op_type == "Softmax"]
    topk = [n for n in graph.node if n.op_type == "TopK"]
    if softmax and topk:
        logits_name = softmax[0].input[0]
        k = None
        # TopK's k: a constant (initializer or Constant node).
        k_name = topk[0].input[1]
        for init in graph.initializer:
            if init.name == k_name:
                k = int(onnx.numpy_helper.to_array(init).reshape(-1)[0])
        for node in graph.node:
            if node.op_type == "Constant" and node.output[0] == k_name:
                k = int(onnx.numpy_helper.to_array(node.attribute[0].t).reshape(-1)[0])
        if k is None:
            sys.exit(f"{model_dir}: cannot read TopK's k")
        graph.output.append(onnx.helper.make_tensor_value_info(logits_name, onnx.TensorProto.FLOAT, None))
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        logits = session.run([logits_name], inputs)[0].astype(np.float64)
        experts = logits.shape[-1]
        logits = logits.reshape(-1, experts)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        chosen = np.argsort(-p, axis=-1, kind="stable")[:, :k]
        return np.bincount(chosen.ravel(), minlength=experts), k
    # Hard gating: the integer input is the expert of each sample.
    index = [v for v in inputs.values() if np.issubdtype(v.dtype, np.integer)]
    tokens = [v for v in inputs.values() if np.issubdtype(v.dtype, np.floating)]
    if len(index) != 1 or len(tokens) != 1:
        sys.exit(f"{model_dir}: neither a top-k router nor one expert index input")
    index, tokens = index[0].reshape(-1), tokens[0]
    per_sample = (tokens.size // tokens.shape[-1]) // index.size
    return np.bincount(np.repeat(index, per_sample)), 1


def check_c_api(lib_dir, bundle, manifest, inputs, hand):
    """The C API on the bundle through ctypes: the counters of a context add
    up over its runs (two runs: twice the hand count), a reset zeroes them,
    a second context counts on its own, and bad arguments are refused."""
    rt = ctypes.CDLL(os.path.join(lib_dir, "libsluice_runtime.so"))
    rt.sluice_last_error.restype = ctypes.c_char_p
    errors = []

    def call(name, *call_args):
        status = getattr(rt, name)(*call_args)
        if status != 0:
            raise RuntimeError(f"{name}: {rt.sluice_last_error().decode()}")

    model, contexts = ctypes.c_void_p(), [ctypes.c_void_p(), ctypes.c_void_p()]
    call("sluice_model_load", bundle.encode(), ctypes.byref(model))
    count = ctypes.c_size_t()
    call("sluice_model_num_moe", model, ctypes.byref(count))
    if count.value != 1:
        errors.append(f"sluice_model_num_moe: {count.value}, not 1")
    experts = len(hand)
    counts = (ctypes.c_int64 * experts)()

    def load(context):
        call("sluice_context_expert_load", context, ctypes.c_size_t(0), counts, ctypes.c_size_t(experts))
        return list(counts)

    arrays = [np.ascontiguousarray(inputs[name]) for name in manifest["inputs"]]
    for context in contexts:
        call("sluice_context_create", model, ctypes.byref(context))
        for i, a in enumerate(arrays):
            call("sluice_context_set_input", context, ctypes.c_size_t(i), a.ctypes.data_as(ctypes.c_void_p),
                 ctypes.c_size_t(a.nbytes))
    first, second = contexts
    if load(first) != [0] * experts:
        errors.append(f"a new context's counters are {load(first)}, not zero")
    call("sluice_context_run", first)
    call("sluice_context_run", first)
    if load(first) != [2 * c for c in hand]:
        errors.append(f"after two runs the counters are {load(first)}, not twice {hand}")
    call("sluice_context_run", second)
    if load(second) != hand:
        errors.append(f"a second context's one run counted {load(second)}, not {hand}")
    call("sluice_context_reset_expert_load", first)
    if load(first) != [0] * experts:
        errors.append(f"after a reset the counters are {load(first)}")
    call("sluice_context_run", first)
    if load(first) != hand:
        errors.append(f"a run after the reset counted {load(first)}, not {hand}")
    # Refusals: an index past the moe ops, a buffer shorter than the experts.
    if rt.sluice_context_expert_load(first, ctypes.c_size_t(1), counts, ctypes.c_size_t(experts)) == 0:
        errors.append("sluice_context_expert_load accepted moe index 1 of 1")
    elif b"no index 1" not in rt.sluice_last_error():
        errors.append(f"index 1: unexpected message {rt.sluice_last_error()}")
    if rt.sluice_context_expert_load(first, ctypes.c_size_t(0), counts, ctypes.c_size_t(experts - 1)) == 0:
        errors.append("sluice_context_expert_load accepted a buffer shorter than the experts")
    for context in contexts:
        call("sluice_context_free", context)
    call("sluice_model_free", model)
    if not errors:
        print("C API: counters add over runs, reset, per context, bad arguments refused")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", required=True, help="the folder of sluice-compile and sluice-run")
    parser.add_argument("--ranks", type=int, default=1, help="sluice-run --ranks (a multi-rank bundle)")
    parser.add_argument("--lib", help="the folder of libsluice_runtime.so: also check the C API")
    parser.add_argument("model_dir")
    parser.add_argument("compile_flags", nargs="*")
    args = parser.parse_args()
    manifest = st.read_manifest(args.model_dir)
    inputs = st.load_tensors(args.model_dir, "inputs", manifest["inputs"])
    hand = json.load(open(os.path.join(args.model_dir, "expected_load.json")))
    counted, top_k = router_count(args.model_dir, inputs)

    errors = []
    if hand["tokens_per_expert"] != counted.tolist() or hand["top_k"] != top_k:
        errors.append(f"expected_load.json {hand} is not the count of these inputs "
                      f"({counted.tolist()}, top_k {top_k}): re-run export_moe.py")
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "model.sluice")
        report = os.path.join(tmp, "report.json")
        st.compile_bundle(args.bin, os.path.join(args.model_dir, "model.onnx"), bundle,
                          ["--quiet"] + args.compile_flags, show=True, check=True)
        run = [st.tool(args.bin, "sluice-run"), bundle]
        run += st.tensor_paths(args.model_dir, "inputs", manifest["inputs"])
        run += ["--expect"] + st.tensor_paths(args.model_dir, "expected", manifest["outputs"])
        run += ["--rtol=1e-4", "--atol=1e-5", "--report=" + report, "--iters=2"]
        if args.ranks > 1:
            run.append(f"--ranks={args.ranks}")
        result = st.run(run)
        if result.rc != 0:
            sys.exit(f"sluice-run failed ({result.rc}):\n{result.out}")
        loads = json.load(open(report))["expert_load"]

        if args.ranks == 1 and args.lib:
            errors += check_c_api(args.lib, bundle, manifest, inputs, hand["tokens_per_expert"])

    if len(loads) != 1:
        errors.append(f"the report has {len(loads)} expert_load entries, the model one moe op")
    else:
        load = loads[0]
        per_expert, per_rank = load["tokens_per_expert"], load["tokens_per_rank"]
        # One run (the timed runs after it do not count): the hand count.
        if per_expert != hand["tokens_per_expert"]:
            errors.append(f"tokens_per_expert {per_expert} != the hand count {hand['tokens_per_expert']}")
        if per_expert != counted.tolist():
            errors.append(f"tokens_per_expert {per_expert} != the router's count {counted.tolist()}")
        if load["top_k"] != top_k:
            errors.append(f"top_k {load['top_k']} != {top_k}")
        block = load["experts_per_rank"]
        sums = [sum(per_expert[r * block:(r + 1) * block]) for r in range(len(per_expert) // block)]
        if per_rank != sums:
            errors.append(f"tokens_per_rank {per_rank} are not the sums of {block} experts: {sums}")
        over = per_rank if len(per_rank) > 1 else per_expert
        want = max(over) * len(over) / sum(over) if sum(over) else 1.0
        if abs(load["imbalance"] - want) > 1e-9:
            errors.append(f"imbalance {load['imbalance']} != max/mean {want}")
        if load["imbalance_over"] != ("ranks" if len(per_rank) > 1 else "experts"):
            errors.append(f"imbalance_over {load['imbalance_over']} for {len(per_rank)} ranks")
        print(f"{args.model_dir}: tokens per expert {per_expert}, per rank {per_rank}, "
              f"imbalance {load['imbalance']:.3f} over the {load['imbalance_over']}")
    return st.finish(errors, "expert load matches the hand count and the router's count")


if __name__ == "__main__":
    sys.exit(main())
