#!/usr/bin/env python3
"""Writes the hostile models of test/tools/hostile-attributes.test into
argv[1]: attributes and declarations that once crashed the importer (a zero
stride under auto_pad, an empty kernel_shape, an opset-6 broadcast axis far
out of range, a negative input dim, an opset past int's range). Binary
.onnx, because the textual format cannot write some of them."""
import os
import sys

from onnx import TensorProto, helper, save


def model(name, node, inputs, outputs, opset=17, ir=8):
    graph = helper.make_graph([node], name, inputs, outputs)
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
