#!/usr/bin/env python3
"""Writes a float ONNX model of four identical layers, its calibration set
and ONNX Runtime's QDQ quantization of it, for the cuda bundles of every
quantization mode whose repeated layers share device code
(test/codegen/cuda-quant-repeated.test).

Each layer is MatMul (a [64, 64] weight of its own) -> Add (the same bias)
-> Relu -> Clip(0, 2). The calibration input is large enough that every
Clip saturates, so every layer's input spans [0, 2] exactly, and every
weight column holds +-0.5 as its largest magnitude: the calibrated scales
(per tensor for activations, per column for weights, in the compiler's
int8 and fp8 modes and in ONNX Runtime's quantize_static) are equal from
layer to layer. The layers then differ in their weights alone, which live
in weights.bin, and the steps of the middle layers are alike but for their
names (as a transformer's blocks).

usage: make_repeated_layers.py OUT
writes OUT/model.onnx, OUT/qdq.onnx, OUT/calibration/x.npy
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

ROWS, WIDTH, LAYERS = 32, 64, 4


class OneSet(CalibrationDataReader):
    def __init__(self, x):
        self.items = iter([{"x": x}])

    def get_next(self):
        return next(self.items, None)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "calibration"), exist_ok=True)
    rng = np.random.default_rng(36)
    bias = rng.uniform(-0.1, 0.1, WIDTH).astype(np.float32)
    inits = [numpy_helper.from_array(bias, "bias"),
             numpy_helper.from_array(np.array(0, np.float32), "lo"),
             numpy_helper.from_array(np.array(2, np.float32), "hi")]
    nodes, h = [], "x"
    for i in range(LAYERS):
        w = rng.uniform(-0.4, 0.4, (WIDTH, WIDTH)).astype(np.float32)
        w[i % WIDTH, :] = 0.5 * np.where(np.arange(WIDTH) % 2, 1.0, -1.0)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"mm{i}"], name=f"layer{i}/fc"),
                  helper.make_node("Add", [f"mm{i}", "bias"], [f"add{i}"], name=f"layer{i}/bias"),
                  helper.make_node("Relu", [f"add{i}"], [f"relu{i}"], name=f"layer{i}/relu"),
                  helper.make_node("Clip", [f"relu{i}", "lo", "hi"], [f"h{i}"],
                                   name=f"layer{i}/clip")]
        h = f"h{i}"
    graph = helper.make_graph(
        nodes, "repeated_layers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, WIDTH])],
        [helper.make_tensor_value_info(h, TensorProto.FLOAT, [ROWS, WIDTH])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = os.path.join(out, "model.onnx")
    onnx.save(model, path)
    # Large inputs: every layer's Clip saturates on the calibration set.
    x = (rng.standard_normal((ROWS, WIDTH)) * 8).astype(np.float32)
    np.save(os.path.join(out, "calibration", "x.npy"), x)
    # Q/DQ on the GEMMs' inputs only (TensorRT's placement): the
    # activations' ranges are the Clips' [0, 2].
    quantize_static(path, os.path.join(out, "qdq.onnx"), OneSet(x), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                    extra_options={"OpTypesToExcludeOutputQuantization": ["MatMul"]})


if __name__ == "__main__":
    main()
