"""Writes a model with a sequence input and output (libonnx 1.12's textual
parser has no seq(...) types) and its data: seq.onnx appends x to s;
s.pb (SequenceProto of 2 tensors), x.npy, want.pb (the 3-element result),
short.pb (2 elements: a length mismatch), off.pb (one value off), and
none.onnx, whose output is an empty optional, with none.pb."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def sequence(name, arrays):
    seq = onnx.SequenceProto()
    seq.name = name
    seq.elem_type = onnx.SequenceProto.TENSOR
    for a in arrays:
        seq.tensor_values.append(numpy_helper.from_array(a))
    return seq


def write(path, proto):
    with open(os.path.join(out, path), "wb") as f:
        f.write(proto.SerializeToString())


seq_type = helper.make_sequence_type_proto(
    helper.make_tensor_type_proto(TensorProto.FLOAT, None))
graph = helper.make_graph(
    [helper.make_node("SequenceInsert", ["s", "x"], ["out"]),
     helper.make_node("SequenceLength", ["out"], ["n"])],
    "seq",
    [helper.make_value_info("s", seq_type),
     helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    [helper.make_value_info("out", seq_type),
     helper.make_tensor_value_info("n", TensorProto.INT64, [])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
          os.path.join(out, "seq.onnx"))

a = np.array([1, 2, 3], dtype=np.float32)
b = np.array([4], dtype=np.float32)
x = np.array([5, 6], dtype=np.float32)
write("s.pb", sequence("s", [a, b]))
np.save(os.path.join(out, "x.npy"), x)
write("want.pb", sequence("out", [a, b, x]))
write("short.pb", sequence("out", [a, b]))
write("off.pb", sequence("out", [a, b, x + np.array([0, 1], dtype=np.float32)]))
write("n.pb", numpy_helper.from_array(np.array(3, dtype=np.int64), "n"))

opt_type = helper.make_optional_type_proto(
    helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))
none_graph = helper.make_graph(
    [helper.make_node("Optional", [], ["o"],
                      type=helper.make_tensor_type_proto(TensorProto.FLOAT, [2]))],
    "none", [], [helper.make_value_info("o", opt_type)])
onnx.save(helper.make_model(none_graph, opset_imports=[helper.make_opsetid("", 16)]),
          os.path.join(out, "none.onnx"))
empty = onnx.OptionalProto()
empty.name = "o"
empty.elem_type = onnx.OptionalProto.TENSOR
write("none.pb", empty)
