#!/usr/bin/env python3
"""Writes an ONNX model with QLinearMatMul (u8 A [16, 64], i8 weight
[64, 96], weight zero point 0) and QLinearConv (u8 x [1, 8, 7, 7], i8
weight [16, 8, 3, 3] with per-channel scales and zero points 0, an int32
bias, pads 1), seeded inputs, and ONNX Runtime's outputs for them:

  make_qlinear.py DIR   ->  DIR/ql.onnx, DIR/a.npy, DIR/x.npy, DIR/y.npy, DIR/yc.npy
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
rng = np.random.default_rng(7)
w = rng.integers(-127, 128, size=(64, 96)).astype(np.int8)
wc = rng.integers(-127, 128, size=(16, 8, 3, 3)).astype(np.int8)
bias = rng.integers(-2000, 2000, size=16).astype(np.int32)
inits = [nh.from_array(w, "w"), nh.from_array(wc, "wc"), nh.from_array(bias, "bias"),
         nh.from_array(np.array(0.05, np.float32), "sa"), nh.from_array(np.array(3, np.uint8), "za"),
         nh.from_array(np.array(0.002, np.float32), "sw"), nh.from_array(np.array(0, np.int8), "zw"),
         nh.from_array((0.003 * (1 + np.arange(16) / 16)).astype(np.float32), "swc"),
         nh.from_array(np.zeros(16, np.int8), "zwc"),
         nh.from_array(np.array(0.7, np.float32), "sy"), nh.from_array(np.array(100, np.uint8), "zy")]
nodes = [h.make_node("QLinearMatMul", ["a", "sa", "za", "w", "sw", "zw", "sy", "zy"], ["y"], name="qmm"),
         h.make_node("QLinearConv", ["x", "sa", "za", "wc", "swc", "zwc", "sy", "zy", "bias"], ["yc"],
                     name="qconv", pads=[1, 1, 1, 1], strides=[1, 1])]
graph = h.make_graph(nodes, "qlinear",
                     [h.make_tensor_value_info("a", T.UINT8, [16, 64]),
                      h.make_tensor_value_info("x", T.UINT8, [1, 8, 7, 7])],
                     [h.make_tensor_value_info("y", T.UINT8, [16, 96]),
                      h.make_tensor_value_info("yc", T.UINT8, [1, 16, 7, 7])], inits)
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "ql.onnx"))
# Activations below 128: on processors without AVX-512 VNNI / AVX-VNNI,
# ONNX Runtime's u8 x s8 kernels multiply with vpmaddubsw, whose int16 sum of
# two products saturates beyond 32767 (255 * 127 * 2 does, 127 * 127 * 2
# does not), so only these inputs have one exact answer on every machine.
a = rng.integers(0, 128, size=(16, 64)).astype(np.uint8)
x = rng.integers(0, 128, size=(1, 8, 7, 7)).astype(np.uint8)
y, yc = ort.InferenceSession(os.path.join(out, "ql.onnx"),
                             providers=["CPUExecutionProvider"]).run(None, {"a": a, "x": x})
for name, value in (("a", a), ("x", x), ("y", y), ("yc", yc)):
    np.save(os.path.join(out, name + ".npy"), value)
