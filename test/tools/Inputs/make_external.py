"""Writes models whose weights live in external data files, for the
bad-input tests: ok.onnx (valid), missing.onnx (file absent),
escape.onnx (location '../outside.bin'), absolute.onnx, short.onnx
(file shorter than the tensor)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "models"), exist_ok=True)
weights = np.arange(16, dtype=np.float32)
with open(os.path.join(out, "models", "w.bin"), "wb") as f:
    f.write(weights.tobytes())
with open(os.path.join(out, "outside.bin"), "wb") as f:
    f.write(weights.tobytes())
with open(os.path.join(out, "models", "short.bin"), "wb") as f:
    f.write(weights.tobytes()[:10])


def model(name, location):
    w = TensorProto()
    w.name = "w"
    w.data_type = TensorProto.FLOAT
    w.dims.extend([16])
    w.data_location = TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", location
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add_w")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(out, "models", name), "wb") as f:
        f.write(m.SerializeToString())


model("ok.onnx", "w.bin")
model("missing.onnx", "nothere.bin")
model("escape.onnx", "../outside.bin")
model("absolute.onnx", os.path.abspath(os.path.join(out, "outside.bin")))
model("short.onnx", "short.bin")
np.save(os.path.join(out, "x.npy"), np.ones(16, dtype=np.float32))
np.save(os.path.join(out, "y.npy"), weights + 1)
np.save(os.path.join(out, "x_i64.npy"), np.ones(16, dtype=np.int64))
np.save(os.path.join(out, "x_short.npy"), np.ones(8, dtype=np.float32))
