#!/usr/bin/env python3
"""Writes the ONNX backend node tests, in the backend-test layout, from the installed onnx package.

`python3 -m onnx.backend.test.cmd_tools generate-data` writes only the model tests in recent onnx
releases (1.23 collects `case.model` alone), so this script collects the node test cases
(`onnx.backend.test.case.node`) and writes each as DIR/node/<test>/model.onnx plus
test_data_set_N/input_K.pb and output_K.pb, exactly as generate-data does for models.

usage: generate_node_tests.py OUTPUT_DIR
"""
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def write_tensor(path, value, name):
    if isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "node")
    if os.path.exists(root):
        shutil.rmtree(root)
    written = 0
    for case in node_cases.collect_testcases():
        graph = case.model.graph
        # Sequences, maps and optionals are not tensors: kiln has no such values, skip the case.
        if any(not v.type.HasField("tensor_type") for v in list(graph.input) + list(graph.output)):
            continue
        case_dir = os.path.join(root, case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            data_dir = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(data_dir)
            for j, value in enumerate(inputs):
                write_tensor(os.path.join(data_dir, f"input_{j}.pb"), value, graph.input[j].name)
            for j, value in enumerate(outputs):
                write_tensor(os.path.join(data_dir, f"output_{j}.pb"), value, graph.output[j].name)
        written += 1
    print(f"wrote {written} node tests to {root}")


if __name__ == "__main__":
    main()
