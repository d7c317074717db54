#!/usr/bin/env python3
"""Writes LLaMA- and GPT-3-shaped ONNX graphs whose weights are absent.

The graphs have the real shapes of LLaMA-7B/13B/70B (70B with grouped-query
attention: 64 query heads, 8 key/value heads) and GPT-3 175B, a loop of
decoder layers at a given batch and sequence, and every weight in external
data (`weights.bin`) that is never written: a few hundred kilobytes on disk
for hundreds of gigabytes of parameters. `sluice-compile --emit=plan`
imports such initializers as shapes only and plans them
(docs/parallel.md, "Automatic plan"); nothing can run them.

usage: gen_llm_shapes.py MODEL OUT.onnx [--batch=1] [--seq=2048]
                         [--layers=N] [--dtype=float16|float32] [--write-weights]
MODEL: llama-7b, llama-13b, llama-70b, gpt3-175b, and for tests llama-gqa-tiny
(2 layers of width 64, 4 query heads, 2 key/value heads), its multi-head twin
llama-mha-tiny (4 key/value heads) and llama-mqa-tiny (1 key/value head).
--write-weights writes weights.bin (random, small models only).

What is kept simple (it changes no weight byte and little time): no rotary
embedding, no attention mask (attention is costed as non-causal), GQA's
key/value heads repeated with Expand + Reshape as exporters write it.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

# hidden, layers, heads, kv heads, MLP width, vocabulary, kind
CONFIGS = {
    "llama-7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008, vocab=32000,
                     kind="llama"),
    "llama-13b": dict(hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13824, vocab=32000,
                      kind="llama"),
    "llama-70b": dict(hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672, vocab=32000,
                      kind="llama"),
    # A two-layer GQA model small enough to run: with --write-weights it is
    # the tp split's differential test of repeat_kv (test/plan).
    "llama-gqa-tiny": dict(hidden=64, layers=2, heads=4, kv_heads=2, ffn=128, vocab=96,
                           kind="llama"),
    "llama-mha-tiny": dict(hidden=64, layers=2, heads=4, kv_heads=4, ffn=128, vocab=96,
                           kind="llama"),
    "llama-mqa-tiny": dict(hidden=64, layers=2, heads=4, kv_heads=1, ffn=128, vocab=96,
                           kind="llama"),
    "gpt3-175b": dict(hidden=12288, layers=96, heads=96, kv_heads=96, ffn=4 * 12288, vocab=50257,
                      kind="gpt"),
}


class Graph:
    def __init__(self, dtype):
        self.nodes, self.inits, self.offset, self.count = [], [], 0, 0
        self.dtype = dtype
        self.np_dtype = np.float16 if dtype == TensorProto.FLOAT16 else np.float32

    def weight(self, name, dims):
        """An initializer in external data that is not written."""
        t = TensorProto()
        t.name, t.data_type = name, self.dtype
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        size = int(np.prod(dims)) * np.dtype(self.np_dtype).itemsize
        for key, value in (("location", "weights.bin"), ("offset", str(self.offset)),
                           ("length", str(size))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.offset += size
        self.inits.append(t)
        return name

    def const(self, name, values, dtype=None):
        array = np.array(values, dtype=dtype or self.np_dtype)
        self.inits.append(onnx.numpy_helper.from_array(array, name))
        return name

    def op(self, op_type, inputs, **attrs):
        self.count += 1
        out = "%s_%d" % (op_type.lower(), self.count)
        self.nodes.append(helper.make_node(op_type, inputs, [out], name="/%s_%d" % (op_type,
                                                                                   self.count),
                                           **attrs))
        return out


def attention(g, x, p, c, batch, seq, bias):
    d, h, hkv = c["hidden"], c["heads"], c["kv_heads"]
    dh = d // h

    def project(name, width, source=x):
        y = g.op("MatMul", [source, g.weight(p + name, [d, width])])
        return g.op("Add", [y, g.weight(p + name + "_bias", [width])]) if bias else y

    def heads(y, n):
        y = g.op("Reshape", [y, g.const(p + "shape%d" % n, [batch, seq, n, dh], np.int64)])
        return g.op("Transpose", [y], perm=[0, 2, 1, 3])

    q = heads(project("q", d), h)
    k = heads(project("k", hkv * dh), hkv)
    v = heads(project("v", hkv * dh), hkv)
    if hkv != h:
        # repeat_kv: [B, Hkv, S, Dh] -> [B, Hkv, H/Hkv, S, Dh] -> [B, H, S, Dh]
        axes = g.const(p + "kv_axis", [2], np.int64)
        expand = g.const(p + "kv_expand", [batch, hkv, h // hkv, seq, dh], np.int64)
        merged = g.const(p + "kv_merged", [batch, h, seq, dh], np.int64)
        k = g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [k, axes]), expand]), merged])
        v = g.op("Reshape", [g.op("Expand", [g.op("Unsqueeze", [v, axes]), expand]), merged])
    scores = g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = g.op("Div", [scores, g.const(p + "scale", float(np.sqrt(dh)))])
    probs = g.op("Softmax", [scores], axis=-1)
    out = g.op("Transpose", [g.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    out = g.op("Reshape", [out, g.const(p + "shape_out", [batch, seq, d], np.int64)])
    return project("o", d, out)


def rms_norm(g, x, p, d):
    # x * 1 / Sqrt(ReduceMean(x^2) + eps) * weight, as LLaMA exports write it
    mean = g.op("ReduceMean", [g.op("Pow", [x, g.const(p + "two", 2.0)]),
                               g.const(p + "axes", [-1], np.int64)], keepdims=1)
    root = g.op("Sqrt", [g.op("Add", [mean, g.const(p + "eps", 1e-5)])])
    normed = g.op("Mul", [x, g.op("Div", [g.const(p + "one", 1.0), root])])
    return g.op("Mul", [normed, g.weight(p + "weight", [d])])


def layer_norm(g, x, p, d):
    return g.op("LayerNormalization", [x, g.weight(p + "weight", [d]), g.weight(p + "bias", [d])],
                axis=-1, epsilon=1e-5)


def build(name, batch, seq, layers, dtype):
    c = dict(CONFIGS[name])
    if layers:
        c["layers"] = layers
    g = Graph(dtype)
    d, f, llama = c["hidden"], c["ffn"], c["kind"] == "llama"
    x = g.op("Gather", [g.weight("embed", [c["vocab"], d]), "input_ids"], axis=0)
    if not llama:
        x = g.op("Add", [x, g.weight("positions", [seq, d])])
    norm = rms_norm if llama else layer_norm
    for i in range(c["layers"]):
        p = "layers.%d." % i
        x = g.op("Add", [x, attention(g, norm(g, x, p + "attn_norm.", d), p + "attn.", c, batch,
                                      seq, bias=not llama)])
        n = norm(g, x, p + "mlp_norm.", d)
        if llama:
            gate = g.op("MatMul", [n, g.weight(p + "mlp.gate", [d, f])])
            up = g.op("MatMul", [n, g.weight(p + "mlp.up", [d, f])])
            hidden = g.op("Mul", [g.op("Mul", [gate, g.op("Sigmoid", [gate])]), up])
            down = g.op("MatMul", [hidden, g.weight(p + "mlp.down", [f, d])])
        else:
            up = g.op("Add", [g.op("MatMul", [n, g.weight(p + "mlp.up", [d, f])]),
                              g.weight(p + "mlp.up_bias", [f])])
            down = g.op("Add", [g.op("MatMul", [g.op("Gelu", [up]),
                                                g.weight(p + "mlp.down", [f, d])]),
                                g.weight(p + "mlp.down_bias", [d])])
        x = g.op("Add", [x, down])
    x = norm(g, x, "final_norm.", d)
    logits = g.op("MatMul", [x, g.weight("lm_head", [d, c["vocab"]])])
    g.nodes[-1].output[0] = "logits"
    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq])],
        [helper.make_tensor_value_info("logits", dtype, [batch, seq, c["vocab"]])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    return model, g.offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", choices=sorted(CONFIGS))
    parser.add_argument("out")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=0, help="fewer layers (0: the model's)")
    parser.add_argument("--dtype", choices=["float16", "float32"], default="float16")
    parser.add_argument("--write-weights", action="store_true",
                        help="write weights.bin with random values (at most 64 MB)")
    args = parser.parse_args()
    dtype = TensorProto.FLOAT16 if args.dtype == "float16" else TensorProto.FLOAT
    model, weight_bytes = build(args.model, args.batch, args.seq, args.layers, dtype)
    onnx.save(model, args.out)
    if args.write_weights:
        if weight_bytes > 64 << 20:
            sys.exit("--write-weights: %.2f GB is too much; it is for small test models"
                     % (weight_bytes / 1e9))
        np_dtype = np.float16 if dtype == TensorProto.FLOAT16 else np.float32
        values = np.random.default_rng(0).normal(
            0, 0.1, weight_bytes // np.dtype(np_dtype).itemsize).astype(np_dtype)
        values.tofile(os.path.join(os.path.dirname(os.path.abspath(args.out)), "weights.bin"))
        print("wrote weights.bin (%d bytes)" % weight_bytes)
        return 0
    print("%s: %s at batch %d, sequence %d: %.2f GB of weights in absent external data"
          % (args.out, args.model, args.batch, args.seq, weight_bytes / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main())
