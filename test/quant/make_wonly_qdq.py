#!/usr/bin/env python3
"""Makes the weight-only QDQ test models of test/quant/wonly (docs/quantization.md):
a small MLP (x[4, 96] -> MatMul 96x80 -> +bias -> Relu -> MatMul 80x48)
with fixed random weights, quantized by ONNX Runtime's weight-only quantizer
in QDQ format (onnxruntime.quantization.matmul_nbits_quantizer.
MatMulNBitsQuantizer, 4 bits, symmetric, block 32 along K: DequantizeLinear
of a blocked INT4 initializer with f32 scales -> MatMul, opset 21:
mlp_q4.onnx), which is Form W (docs/quantization.md) as ONNX Runtime writes it, and
its default asymmetric form (UINT4 with a zero point per block:
mlp_q4_asym.onnx). Its 8-bit quantizer writes QDQ for Gather only. K = 80 is not a multiple of the block. Also writes
the input x.npy.

The outputs are committed; rerun only to change them (needs onnx_ir, which
ONNX Runtime's quantizer imports: pip install onnx-ir).

Usage: make_wonly_qdq.py [--out test/quant/wonly]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp():
    rng = np.random.default_rng(15)
    w1 = rng.normal(0, 0.1, (96, 80)).astype(np.float32)
    b1 = rng.normal(0, 0.1, (80,)).astype(np.float32)
    w2 = rng.normal(0, 0.1, (80, 48)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "B1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "W2"], ["y"], name="fc2")]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 96])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 48])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(b1, "B1"),
         numpy_helper.from_array(w2, "W2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "wonly"))
    args = ap.parse_args()
    from onnxruntime.quantization import QuantFormat  # noqa: PLC0415
    from onnxruntime.quantization.matmul_nbits_quantizer import (  # noqa: PLC0415
        MatMulNBitsQuantizer)
    os.makedirs(args.out, exist_ok=True)
    # Symmetric (INT4, no zero point) and ONNX Runtime's default asymmetric
    # form (UINT4 with a UINT4 zero point per block).
    for symmetric, name in ((True, "mlp_q4.onnx"), (False, "mlp_q4_asym.onnx")):
        quantizer = MatMulNBitsQuantizer(mlp(), bits=4, block_size=32, is_symmetric=symmetric,
                                         quant_format=QuantFormat.QDQ)
        quantizer.process()
        onnx.save(quantizer.model.model, os.path.join(args.out, name))
    x = np.random.default_rng(16).normal(0, 1, (4, 96)).astype(np.float32)
    np.save(os.path.join(args.out, "x.npy"), x)


if __name__ == "__main__":
    main()
