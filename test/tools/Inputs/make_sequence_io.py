"""Writes seqio.onnx, a model whose sequence output is built from computed
tensors: y = SequenceConstruct(x + x, Relu(x)), z = Identity(s) (a sequence
input returned as it is) and m = x * x; and its data: x.npy, s.pb (two
elements, 3 and 1x2), y.pb, z.pb (the expected sequences), m.npy."""
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
    [helper.make_node("Add", ["x", "x"], ["twice"]),
     helper.make_node("Relu", ["x"], ["relu"]),
     helper.make_node("SequenceConstruct", ["twice", "relu"], ["y"]),
     helper.make_node("Identity", ["s"], ["z"]),
     helper.make_node("Mul", ["x", "x"], ["m"])],
    "seqio",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
     helper.make_value_info("s", seq_type)],
    [helper.make_value_info("y", seq_type), helper.make_value_info("z", seq_type),
     helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, 3])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]),
          os.path.join(out, "seqio.onnx"))

x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
s = [np.array([1, 2, 3], dtype=np.float32), np.array([[7, 8]], dtype=np.float32)]
np.save(os.path.join(out, "x.npy"), x)
write("s.pb", sequence("s", s))
write("y.pb", sequence("y", [x + x, np.maximum(x, 0)]))
write("z.pb", sequence("z", s))
np.save(os.path.join(out, "m.npy"), x * x)
