"""Writes gemm_weights.onnx: f32 GEMMs whose weights the cpu target stores
packed into its micro-kernel's column panels (codegen/cpu/groups/Gemm.cpp),
and inputs for it:

  - x [3, 5, 70] x W1 [70, 45] + b1, ReLU: batches stacked into M = 15,
    N not a multiple of any panel width, K not a multiple of 8;
  - sigmoid(x) x W1 with another epilogue (x 0.5 + b1): two groups reading
    one weight, stored packed once;
  - h [3, 5, 45] x W2 [45, 300] + b2 then GELU-like tanh: several panels,
    columns split over threads;
  - v [1, 600] x W3 [600, 40] + b3: one row, K over three K slices;
  - y [2, 33] x W4 + b4 where W4 is also a graph output: a weight read raw
    elsewhere stays raw, and the GEMM reads it in place;
  - -y x W5 alone (a lone MatMul, no epilogue): the library call, raw.

Usage: make_gemm_weights.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def weight(name, *shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.2, name)


inits = [weight("W1", 70, 45), weight("b1", 45), weight("W2", 45, 300), weight("b2", 300),
         weight("W3", 600, 40), weight("b3", 40), weight("W4", 33, 20), weight("b4", 20),
         weight("W5", 33, 17), numpy_helper.from_array(np.array(0.5, np.float32), "half")]
N = helper.make_node
nodes = [
    N("MatMul", ["x", "W1"], ["m1"]), N("Add", ["m1", "b1"], ["a1"]), N("Relu", ["a1"], ["r1"]),
    N("Sigmoid", ["x"], ["xs"]),
    N("MatMul", ["xs", "W1"], ["m1b"]), N("Mul", ["m1b", "half"], ["s1"]),
    N("Add", ["s1", "b1"], ["o1b"]),
    N("MatMul", ["r1", "W2"], ["m2"]), N("Add", ["m2", "b2"], ["a2"]), N("Tanh", ["a2"], ["o2"]),
    N("MatMul", ["v", "W3"], ["m3"]), N("Add", ["m3", "b3"], ["o3"]),
    N("MatMul", ["y", "W4"], ["m4"]), N("Add", ["m4", "b4"], ["o4"]),
    N("Identity", ["W4"], ["w4_out"]),
    N("Neg", ["y"], ["yn"]), N("MatMul", ["yn", "W5"], ["o5"]),
]
f32 = TensorProto.FLOAT
graph = helper.make_graph(
    nodes, "gemm_weights",
    [helper.make_tensor_value_info("x", f32, [3, 5, 70]),
     helper.make_tensor_value_info("v", f32, [1, 600]),
     helper.make_tensor_value_info("y", f32, [2, 33])],
    [helper.make_tensor_value_info("o1b", f32, [3, 5, 45]),
     helper.make_tensor_value_info("o2", f32, [3, 5, 300]),
     helper.make_tensor_value_info("o3", f32, [1, 40]),
     helper.make_tensor_value_info("o4", f32, [2, 20]),
     helper.make_tensor_value_info("w4_out", f32, [33, 20]),
     helper.make_tensor_value_info("o5", f32, [2, 17])],
    inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "gemm_weights.onnx"))
for name, shape in (("x", (3, 5, 70)), ("v", (1, 600)), ("y", (2, 33))):
    np.save(os.path.join(out, name + ".npy"), rng.standard_normal(shape).astype(np.float32))
