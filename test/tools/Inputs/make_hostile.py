#!/usr/bin/env python3
"""Writes the hostile models of test/tools/hostile-attributes.test into
argv[1]: attributes and declarations that once crashed the importer (a zero
stride under auto_pad, an empty kernel_shape, an opset-6 broadcast axis far
out of range, a negative input dim, an opset past int's range), and axes
out of range, repeated or meaningless across ops (their messages printed a
negative axis as 2^64 minus it; a repeated reduce axis and an LRN size of
-4 were accepted). Binary .onnx, because the textual format cannot write
some of them."""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save


def model(name, node, inputs, outputs, opset=17, ir=8, inits=()):
    graph = helper.make_graph([node], name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir
    save(m, os.path.join(sys.argv[1], name + ".onnx"))


def value(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


os.makedirs(sys.argv[1], exist_ok=True)
x = value("x", [1, 3, 8, 8])
model("conv-zero-stride",
      helper.make_node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[0, 0]),
      [x, value("w", [4, 3, 3, 3])], [value("y", [1, 4, 8, 8])])
model("conv-zero-dilation",
      helper.make_node("Conv", ["x", "w"], ["y"], dilations=[1, 0]),
      [x, value("w", [4, 3, 3, 3])], [value("y", None)])
model("conv-kernel-rank",
      helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3, 3]),
      [x, value("w", [4, 3, 3, 3])], [value("y", None)])
empty = helper.make_node("MaxPool", ["x"], ["y"])
empty.attribute.append(
    helper.make_attribute("kernel_shape", [], attr_type=helper.AttributeProto.INTS))
model("maxpool-empty-kernel", empty, [x], [value("y", None)])
model("maxpool-negative-pad",
      helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[0, -5, 0, 0]),
      [x], [value("y", None)])
model("add6-axis",
      helper.make_node("Add", ["a", "b"], ["y"], broadcast=1, axis=-9000000000),
      [value("a", [2, 3]), value("b", [3])], [value("y", [2, 3])], opset=6, ir=3)
model("negative-dim", helper.make_node("Relu", ["a"], ["y"]),
      [value("a", [2, -3])], [value("y", None)])
# A Reshape whose shape input declares a billion elements (the fuzzer's
# find: type inference once allocated a billion-dim type).
model("reshape-huge-shape", helper.make_node("Reshape", ["a", "s"], ["y"]),
      [value("a", [2, 3]),
       helper.make_tensor_value_info("s", TensorProto.INT64, [1000000000])],
      [value("y", None)])
model("huge-opset", helper.make_node("Relu", ["a"], ["y"]),
      [value("a", [2, 3])], [value("y", [2, 3])], opset=2**32 + 17)

# Tensor files whose headers claim more than they hold: a .npy whose shape's
# product wraps int64, one that claims 2^33 floats in a few bytes, a .pb
# with dims whose byte count wraps, and a model input to feed them to.
model("relu16", helper.make_node("Relu", ["x"], ["y"]), [value("x", [16])], [value("y", [16])])


def npy(name, shape_text, payload=b"\0" * 64):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + payload)


npy("wraps.npy", "(4611686018427387904, 8)")
npy("huge.npy", "(8589934592,)")
t = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[2**62, 4], raw_data=b"\0" * 16)
with open(os.path.join(sys.argv[1], "wraps.pb"), "wb") as f:
    f.write(t.SerializeToString())
t = TensorProto(name="x", data_type=TensorProto.FLOAT, dims=[2**16, 2**16], float_data=[1.0, 2.0])
with open(os.path.join(sys.argv[1], "huge.pb"), "wb") as f:
    f.write(t.SerializeToString())

# A rank-40 input, and If branches nested 20 deep (the importer allows 16).
model("rank40", helper.make_node("Relu", ["a"], ["y"]), [value("a", [1] * 40)], [value("y", None)])


def nested_if(depth):
    """A graph computing y = x through `depth` nested If nodes."""
    if depth == 0:
        return helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "leaf", [],
                                 [value("y", [2])])
    # Nested in the then-branch only: the file stays linear in the depth.
    node = helper.make_node("If", ["c"], ["y"], then_branch=nested_if(depth - 1),
                            else_branch=nested_if(0))
    return helper.make_graph([node], "level%d" % depth, [], [value("y", [2])])


top = nested_if(20)
graph = helper.make_graph(list(top.node), "nested", [helper.make_tensor_value_info(
    "c", TensorProto.BOOL, []), value("x", [2])], [value("y", [2])])
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
save(m, os.path.join(sys.argv[1], "nested-if.onnx"))


# Axes out of range (-4 of a rank-3 input), repeated, or meaningless.
def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


x3, y = value("x", [2, 3, 4]), value("y", None)
model("axis-concat", helper.make_node("Concat", ["x", "x"], ["y"], axis=-4), [x3], [y])
model("axis-gather", helper.make_node("Gather", ["x", "i"], ["y"], axis=-4), [x3], [y],
      inits=[i64("i", [0])])
model("axis-gather-elements",
      helper.make_node("GatherElements", ["x", "i"], ["y"], axis=-4), [x3], [y],
      inits=[i64("i", np.zeros((2, 3, 4)))])
model("axis-scatter-elements",
      helper.make_node("ScatterElements", ["x", "i", "x"], ["y"], axis=-4), [x3], [y],
      inits=[i64("i", np.zeros((2, 3, 4)))])
model("axis-split", helper.make_node("Split", ["x"], ["y", "z"], axis=-4, num_outputs=2),
      [x3], [y, value("z", None)], opset=18)
model("axis-split-to-sequence", helper.make_node("SplitToSequence", ["x"], ["y"], axis=-4),
      [x3], [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)])
model("axis-layer-norm", helper.make_node("LayerNormalization", ["x", "g"], ["y"], axis=-4),
      [x3, value("g", [4])], [y])
model("axis-compress", helper.make_node("Compress", ["x", "c"], ["y"], axis=-4), [x3], [y],
      inits=[numpy_helper.from_array(np.array([True]), "c")])
model("axis-one-hot", helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=-3), [], [y],
      inits=[i64("i", [0, 1]), i64("d", [3]),
             numpy_helper.from_array(np.array([0.0, 1.0], dtype=np.float32), "v")])
model("axis-flatten", helper.make_node("Flatten", ["x"], ["y"], axis=-4), [x3], [y])
model("axis-pad", helper.make_node("Pad", ["x", "p", "", "a"], ["y"]), [x3], [y], opset=18,
      inits=[i64("p", [1, 1]), i64("a", [3])])
model("axis-softmax", helper.make_node("Softmax", ["x"], ["y"], axis=3), [x3], [y])
model("axis-reduce-repeated", helper.make_node("ReduceSum", ["x", "a"], ["y"]), [x3], [y],
      inits=[i64("a", [1, -2])])
model("axis-mvn", helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0, 5]),
      [x3], [y])
model("axis-transpose", helper.make_node("Transpose", ["x"], ["y"], perm=[0, 0, 1]), [x3], [y])
model("axis-unsqueeze", helper.make_node("Unsqueeze", ["x", "a"], ["y"]), [x3], [y],
      inits=[i64("a", [-5])])
model("lrn-size", helper.make_node("LRN", ["x"], ["y"], size=-4), [value("x", [1, 4, 2, 2])],
      [y])
# Inputs the op's schema requires, missing (the first crashed the importer).
model("pow-one-input", helper.make_node("Pow", ["x"], ["y"]), [value("x", [2])], [y])
model("gemm-empty-input", helper.make_node("Gemm", ["x", ""], ["y"]), [value("x", [2, 2])], [y])
