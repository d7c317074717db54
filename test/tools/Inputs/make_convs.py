"""Writes convs.onnx: float convolutions of every form the cpu target
distinguishes (oneDNN primitives, the im2col GEMM, the depthwise loops), in
one graph, and an input for it:

  - a 7x7/2 stem conv with bias (pads 3) and ReLU;
  - a ResNet basic block: 3x3 conv + bias + ReLU, 3x3 conv + bias, the
    residual added, ReLU;
  - a depthwise 3x3 conv (group = channels) with stride 2 and no bias;
  - a grouped (4 groups) 3x3 conv with dilation 2 and asymmetric pads;
  - a 1x1 conv with stride 2 (a downsample);
  - a 1-D conv (after a reshape) and a 3-D conv (after another), the forms
    the 2-D primitive does not take directly;
  - an unfolded BatchNormalization after a conv.

Usage: make_convs.py OUT_DIR
"""
import sys

import numpy as np

from conv_graph import ConvGraph

out = sys.argv[1]
g = ConvGraph(7)
const, conv, node = g.const, g.conv, g.node

x = "image"
s = node("Relu", [conv(x, "stem", 3, 16, 7, strides=[2, 2], pads=[3, 3, 3, 3])], "stem_r")
a = node("Relu", [conv(s, "b1", 16, 16, 3, pads=[1, 1, 1, 1])], "b1_r")
b = conv(a, "b2", 16, 16, 3, pads=[1, 1, 1, 1])
blk = node("Relu", [node("Add", [b, s], "res")], "blk")
dw = conv(blk, "dw", 16, 16, 3, group=16, bias=False, strides=[2, 2], pads=[1, 1, 1, 1])
gr = conv(blk, "grp", 16, 32, 3, group=4, dilations=[2, 2], pads=[2, 1, 2, 3])
down = conv(blk, "down", 16, 32, 1, strides=[2, 2])
g.init("bn_v", np.abs(g.rng.standard_normal(8)).astype(np.float32) + 0.5)
bn = node("BatchNormalization",
          [conv(blk, "pre_bn", 16, 8, 3, bias=False, pads=[1, 1, 1, 1]),
           const("bn_s", [8], 1.0), const("bn_b", [8]), const("bn_m", [8]), "bn_v"],
          "bn", epsilon=1e-5)
# 1-D: [1, 16, 16*16] -> conv k=5, stride 3; 3-D: [1, 4, 4, 16, 16] -> 3x3x3.
g.init("shape1d", np.array([1, 16, 256], np.int64))
g.init("shape3d", np.array([1, 4, 4, 16, 16], np.int64))
c1 = conv(node("Reshape", [blk, "shape1d"], "r1d"), "c1d", 16, 8, [5], strides=[3], pads=[2, 1])
c3 = conv(node("Reshape", [blk, "shape3d"], "r3d"), "c3d", 4, 6, [3, 3, 3], pads=[1] * 6)

outputs = [(dw, [1, 16, 8, 8]), (gr, [1, 32, 16, 16]), (down, [1, 32, 8, 8]),
           (bn, [1, 8, 16, 16]), (c1, [1, 8, 85]), (c3, [1, 6, 4, 16, 16])]
g.save(out, "convs", x, [1, 3, 32, 32], outputs)
