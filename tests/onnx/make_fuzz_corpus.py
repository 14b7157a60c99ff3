#!/usr/bin/env python3
"""Writes the seed corpus of the ONNX loader fuzzer (tests/fuzz/corpus_onnx/): a few tiny valid
models that together touch initializers (typed fields and raw_data), Constant nodes, import-time
folding of shape arithmetic, and common elementwise, layout and nn ops.

usage: make_fuzz_corpus.py [OUTPUT_DIR]   (default: tests/fuzz/corpus_onnx next to this script)
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]


def model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=OPSET, ir_version=8)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def elementwise():
    bias = numpy_helper.from_array(np.array([0.5, -1.0, 2.0], np.float32), "bias")  # raw_data
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [3], [2.0, 3.0, 4.0])  # float_data
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["a"]),
        helper.make_node("Mul", ["a", "scale"], ["b"]),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Sigmoid", ["c"], ["y"]),
    ]
    return model(nodes, [f32("x", [2, 3])], [f32("y", [2, 3])], [bias, scale])


def shape_chain():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Constant", [], ["zero"], value_int=0),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Constant", [], ["axes"], value_ints=[0]),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
        helper.make_node("Constant", [], ["rest"], value_ints=[-1]),
        helper.make_node("Concat", ["n1", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    return model(nodes, [f32("x", [2, 3, 4])], [f32("y", [2, 12])])


def conv_block():
    weight = numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Transpose", ["p"], ["t"], perm=[0, 2, 3, 1]),
        helper.make_node("Softmax", ["t"], ["y"], axis=-1),
    ]
    return model(nodes, [f32("x", [1, 1, 4, 4])], [f32("y", [1, 2, 2, 2])], [weight])


def matmul_reduce():
    weight = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("ReduceSum", ["m", "axes"], ["r"], keepdims=1),
        helper.make_node("Sub", ["m", "r"], ["y"]),
    ]
    return model(nodes, [f32("x", [2, 4])], [f32("y", [2, 3])], [weight, axes])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "fuzz", "corpus_onnx")
    os.makedirs(out, exist_ok=True)
    for name, build in [("elementwise", elementwise), ("shape_chain", shape_chain),
                        ("conv_block", conv_block), ("matmul_reduce", matmul_reduce)]:
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(build().SerializeToString())


if __name__ == "__main__":
    main()
