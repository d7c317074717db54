"""Writes shape-variants.test's model and inputs into argv[1]: mlp.onnx, an
MLP over a dynamic batch, y = relu(x @ W1 + b1) @ W2 + s, with inputs
x [batch, 16] and s [batch, 8]; and x_N.npy / s_N.npy for batch N in 1, 8,
32 (the variants) and 4 (a shape the bundle lacks)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.25
b1 = rng.standard_normal(32).astype(np.float32) * 0.1
w2 = rng.standard_normal((32, 8)).astype(np.float32) * 0.25
graph = helper.make_graph(
    [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
        helper.make_node("Add", ["h3", "s"], ["y"], name="residual"),
    ],
    "variants_mlp",
    [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
        helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 8]),
    ],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
    [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(w2, "w2")],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "mlp.onnx"))
for batch in (1, 8, 32, 4):
    np.save(os.path.join(out, f"x_{batch}.npy"), rng.standard_normal((batch, 16)).astype(np.float32))
    np.save(os.path.join(out, f"s_{batch}.npy"), rng.standard_normal((batch, 8)).astype(np.float32))
