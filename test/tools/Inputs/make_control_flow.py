"""Writes control-flow.onnx: an If on a runtime condition with compute in
both branches, and a Loop with a runtime trip count whose body computes its
own condition (it stops after 6 iterations), plus inputs for two runs.

Usage: make_control_flow.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
f4 = [4]

then_g = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["t0"]), helper.make_node("Mul", ["t0", "x"], ["t"])],
    "then_g", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, f4)])
else_g = helper.make_graph(
    [helper.make_node("Neg", ["x"], ["e"])],
    "else_g", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, f4)])

half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
five = helper.make_tensor("five", TensorProto.INT64, [], [5])
one = helper.make_tensor("one", TensorProto.INT64, [], [1])
body = helper.make_graph(
    [
        helper.make_node("Constant", [], ["h"], value=half),
        helper.make_node("Constant", [], ["lim"], value=five),
        helper.make_node("Constant", [], ["inc"], value=one),
        helper.make_node("Mul", ["y_in", "h"], ["y_half"]),
        helper.make_node("Add", ["y_half", "x"], ["y_out"]),
        helper.make_node("Add", ["count_in", "inc"], ["count_out"]),
        helper.make_node("Less", ["i", "lim"], ["cond_out"]),
    ],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_in", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("count_in", TensorProto.INT64, [])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_out", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("count_out", TensorProto.INT64, [])])

zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
graph = helper.make_graph(
    [
        helper.make_node("If", ["c"], ["branch"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Constant", [], ["count0"], value=zero),
        helper.make_node("Loop", ["n", "", "x", "count0"], ["looped", "iters"], body=body),
    ],
    "control_flow",
    [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
     helper.make_tensor_value_info("n", TensorProto.INT64, []),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, f4)],
    [helper.make_tensor_value_info("branch", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("looped", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("iters", TensorProto.INT64, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "control-flow.onnx"))

# A loop with a runtime trip count and a scan output: the output's length is
# the trip count, which a static bundle cannot plan.
scan_body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Add", ["y_in", "x"], ["y_out"]),
     helper.make_node("Identity", ["y_out"], ["scan"])],
    "scan_body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_in", TensorProto.FLOAT, f4)],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("y_out", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("scan", TensorProto.FLOAT, f4)])
scan_graph = helper.make_graph(
    [helper.make_node("Loop", ["n", "", "x"], ["y", "rows"], body=scan_body)],
    "scan_loop",
    [helper.make_tensor_value_info("n", TensorProto.INT64, []),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, f4)],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, f4),
     helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["N", 4])])
scan_model = helper.make_model(scan_graph, opset_imports=[helper.make_opsetid("", 17)])
scan_model.ir_version = 8
onnx.save(scan_model, os.path.join(out, "scan-loop.onnx"))

# A Scan longer than the unrolling budget (3000 x 2 ops > 4096): it runs
# as a runtime loop; the input is read from the end, the output stacked
# along axis 1.
long_body = helper.make_graph(
    [helper.make_node("Add", ["sum_in", "next"], ["sum_out"]),
     helper.make_node("Mul", ["sum_out", "next"], ["scan_out"])],
    "long_body",
    [helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("next", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [2])])
long_graph = helper.make_graph(
    [helper.make_node("Scan", ["init", "xs"], ["total", "trace"], body=long_body,
                      num_scan_inputs=1, scan_input_directions=[1], scan_output_axes=[1])],
    "long_scan",
    [helper.make_tensor_value_info("init", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("xs", TensorProto.FLOAT, [3000, 2])],
    [helper.make_tensor_value_info("total", TensorProto.FLOAT, [2]),
     helper.make_tensor_value_info("trace", TensorProto.FLOAT, [2, 3000])])
long_model = helper.make_model(long_graph, opset_imports=[helper.make_opsetid("", 17)])
long_model.ir_version = 8
onnx.save(long_model, os.path.join(out, "long-scan.onnx"))
rng = np.random.default_rng(0)
np.save(os.path.join(out, "init.npy"), rng.standard_normal(2).astype(np.float32))
np.save(os.path.join(out, "xs.npy"), (rng.standard_normal((3000, 2)) * 0.01).astype(np.float32))

x = np.array([-1.5, 0.25, 2.0, -3.0], np.float32)
np.save(os.path.join(out, "x.npy"), x)
for name, value in [("c_true", True), ("c_false", False)]:
    np.save(os.path.join(out, name + ".npy"), np.array(value))
for name, value in [("n3", 3), ("n10", 10)]:
    np.save(os.path.join(out, name + ".npy"), np.array(value, np.int64))
