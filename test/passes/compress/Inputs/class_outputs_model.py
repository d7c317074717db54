#!/usr/bin/env python3
"""A token classifier for the accuracy-metric lit test: x [2, 4, 16] ->
MatMul [16, 32] -> Relu -> MatMul [32, 5] -> logits [2, 4, 5], a rank-3
output whose last axis is the classes. METADATA (optional) goes into the
model's metadata_props as "sluice.class_outputs".

usage: class_outputs_model.py OUT.onnx [METADATA]
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    rng = np.random.default_rng(36)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 5)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["logits"], name="fc2")]
    graph = helper.make_graph(
        nodes, "token_classifier",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 4, 5])], [w1, w2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if len(sys.argv) > 2:
        helper.set_model_props(model, {"sluice.class_outputs": sys.argv[2]})
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
