"""A small builder of float CNN test graphs, shared by make_convs.py and
make_conv_epilogues.py: seeded random initializers, Conv nodes with He-scaled
weights, other nodes, and the model and its input written to a folder."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class ConvGraph:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.inits, self.nodes = [], []

    def init(self, name, array):
        """A fixed initializer."""
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def const(self, name, shape, scale=0.2):
        """A random f32 initializer."""
        return self.init(name, (self.rng.standard_normal(shape) * scale).astype(np.float32))

    def conv(self, x, y, cin, cout, k, group=1, bias=True, **attrs):
        """A Conv of kernel k (an int for k x k, or a list of lengths)."""
        ks = list(k) if isinstance(k, (list, tuple)) else [k, k]
        w = self.const(y + "_w", [cout, cin // group] + ks,
                       (2.0 / (cin // group * np.prod(ks))) ** 0.5)
        ins = [x, w] + ([self.const(y + "_b", [cout])] if bias else [])
        self.nodes.append(helper.make_node("Conv", ins, [y], group=group, **attrs))
        return y

    def node(self, op, ins, y, **attrs):
        self.nodes.append(helper.make_node(op, ins, [y], **attrs))
        return y

    def save(self, out, name, x, shape, outputs):
        """Writes OUT/NAME.onnx (opset 17, input x of `shape`, outputs as
        (name, shape) pairs) and a random input OUT/x.npy."""
        os.makedirs(out, exist_ok=True)
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        np.save(os.path.join(out, x + ".npy"),
                self.rng.standard_normal(shape).astype(np.float32))
