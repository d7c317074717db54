"""Writes conv_epilogues.onnx: a small residual CNN whose float convolutions
take their epilogues on the cpu target (codegen/cpu/groups/Conv.cpp), and an
input for it:

  - a 7x7/2 stem conv + bias + ReLU (post-op: eltwise ReLU), then a 3x3/2
    max pool (a boundary: not a conv);
  - a basic block: conv + bias + ReLU, conv + bias + residual Add + ReLU
    (post-ops: sum then ReLU);
  - a downsampling block: 3x3/2 conv + ReLU, 3x3 conv, a 1x1/2 conv without
    bias, their sum and ReLU (one conv takes the other's result as its
    residual);
  - a residual Add without ReLU (post-op: sum alone), a graph output;
  - a grouped (4 groups) 3x3 conv with dilation 2 and asymmetric pads + ReLU,
    and a depthwise 3x3/2 conv without bias + ReLU;
  - epilogues that are no post-ops and run as a loop after the conv: Clip
    (ReLU6), x * sigmoid(x), and a conv whose result is an output and is
    also read by its ReLU;
  - GlobalAveragePool, Flatten and Gemm at the end (boundaries).

Usage: make_conv_epilogues.py OUT_DIR
"""
import sys

import numpy as np

from conv_graph import ConvGraph

out = sys.argv[1]
g = ConvGraph(11)
const, conv, node = g.const, g.conv, g.node

p1 = dict(pads=[1, 1, 1, 1])
x = "image"
stem = node("Relu", [conv(x, "stem", 3, 16, 7, strides=[2, 2], pads=[3, 3, 3, 3])], "stem_r")
pool = node("MaxPool", [stem], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
a = node("Relu", [conv(pool, "b1", 16, 16, 3, **p1)], "b1_r")
blk = node("Relu", [node("Add", [conv(a, "b2", 16, 16, 3, **p1), pool], "res")], "blk")
d1 = node("Relu", [conv(blk, "d1", 16, 32, 3, strides=[2, 2], **p1)], "d1_r")
d2 = conv(d1, "d2", 32, 32, 3, **p1)
sc = conv(blk, "sc", 16, 32, 1, bias=False, strides=[2, 2])
down = node("Relu", [node("Add", [sc, d2], "dres")], "down")
plain = node("Add", [down, conv(down, "pl", 32, 32, 3, **p1)], "plain")
grp = node("Relu", [conv(blk, "g", 16, 32, 3, group=4, dilations=[2, 2], pads=[2, 1, 2, 3])],
           "grp")
dw = node("Relu", [conv(blk, "dwc", 16, 16, 3, group=16, bias=False, strides=[2, 2], **p1)],
          "dw")
g.init("zero", np.array(0, np.float32))
g.init("six", np.array(6, np.float32))
relu6 = node("Clip", [conv(down, "r6", 32, 16, 3, **p1), "zero", "six"], "relu6")
sx = conv(down, "sx", 32, 16, 1)
silu = node("Mul", [sx, node("Sigmoid", [sx], "sig")], "silu")
both = conv(down, "both", 32, 8, 3, **p1)
both_r = node("Relu", [both], "both_r")
gap = node("Flatten", [node("GlobalAveragePool", [plain], "gap4")], "gap")
logits = node("Gemm", [gap, const("fc_w", [10, 32]), const("fc_b", [10])], "logits", transB=1)

outputs = [(logits, [1, 10]), (plain, [1, 32, 4, 4]), (grp, [1, 32, 8, 8]), (dw, [1, 16, 4, 4]),
           (relu6, [1, 16, 4, 4]), (silu, [1, 16, 4, 4]), (both, [1, 8, 4, 4]),
           (both_r, [1, 8, 4, 4])]
g.save(out, "conv_epilogues", x, [1, 3, 32, 32], outputs)
