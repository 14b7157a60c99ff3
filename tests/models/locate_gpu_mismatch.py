#!/usr/bin/env python3
"""Finds where kiln's GPU program of a model first departs from onnxruntime: the first node, in
graph order, whose output differs.

    python3 tests/models/locate_gpu_mismatch.py MODEL.onnx INPUTS_DIR --kiln build/bin/kiln \
        --work-dir DIR [--no-fusion] [--ops BatchNormalization,Clip,Relu,Add] [--atol 1e-4] \
        [--rtol 1e-3]

The outputs of every node of the --ops types become graph outputs too (a probe model written to
DIR/probed.onnx, types from ONNX shape inference). By default those are the ops whose outputs
stay kernel outputs after kiln's BatchNormalization folding, so the probes leave the kernels as
they are; other ops' outputs may change what kiln fuses or folds. onnxruntime (optimizations
off) computes the probe model's outputs from INPUTS_DIR/<input>.npy; `kiln compile --arch native`
and `kiln run --device gpu` compute kiln's. Prints each probe in graph order with its max abs
error and whether it is within |got - want| <= atol + rtol * |want|, then the first one that is
not. Exit status: 0 all within, 1 a mismatch or a failed step.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime


def kiln_file_name(value_name):
    """The file name `kiln run --output-dir` writes a value to (tools/tensor_files.cc)."""
    return (re.sub(r"[^A-Za-z0-9_.-]", "_", value_name) or "_") + ".npy"


def probe_model(model_path, ops, probed_path):
    """Writes the model with every float output of an --ops node added as a graph output;
    returns [(node name, op type, value name)] in graph order."""
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    types = {info.name: info for info in model.graph.value_info}
    existing = {output.name for output in model.graph.output}
    probes = []
    for node in model.graph.node:
        if node.op_type not in ops:
            continue
        for value in node.output:
            info = types.get(value)
            if value in existing or info is None:
                continue
            if info.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
                continue
            model.graph.output.append(info)
            probes.append((node.name, node.op_type, value))
    onnx.save(model, probed_path)
    return probes


def run(command):
    print("$ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout[-2000:] + result.stderr[-2000:])
        sys.exit(f"failed (exit status {result.returncode})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("inputs_dir", help="holds <input name>.npy for each model input")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--no-fusion", action="store_true", help="kiln compile --no-fusion")
    parser.add_argument("--ops", default="BatchNormalization,Clip,Relu,Add")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-3)
    args = parser.parse_args()

    os.makedirs(args.work_dir, exist_ok=True)
    probed_path = os.path.join(args.work_dir, "probed.onnx")
    probes = probe_model(args.model, set(args.ops.split(",")), probed_path)
    print(f"{len(probes)} probes")

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(probed_path, options,
                                           providers=["CPUExecutionProvider"])
    feeds = {i.name: np.load(os.path.join(args.inputs_dir, f"{i.name}.npy"))
             for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, feeds)))

    program = os.path.join(args.work_dir, "probed.kiln")
    got_dir = os.path.join(args.work_dir, "got")
    for stale in glob.glob(os.path.join(got_dir, "*.npy")):
        os.remove(stale)
    run([args.kiln, "compile", probed_path, "--arch", "native", "-o", program,
         *(["--no-fusion"] if args.no_fusion else [])])
    run([args.kiln, "run", program, "--device", "gpu", "--output-dir", got_dir,
         *[f"--input={name}={os.path.join(args.inputs_dir, name + '.npy')}" for name in feeds]])

    first_bad = None
    for node_name, op_type, value in probes:
        want = expected[value].astype(np.float64)
        got = np.load(os.path.join(got_dir, kiln_file_name(value))).astype(np.float64)
        error = np.abs(got - want)
        bad = int(np.count_nonzero(~(error <= args.atol + args.rtol * np.abs(want))))
        print(f"  {'ok ' if bad == 0 else 'BAD'} {op_type:<20} {node_name}: max abs error "
              f"{error.max(initial=0):.3g} (max |want| {np.abs(want).max(initial=0):.3g}), "
              f"{bad}/{want.size} out of tolerance")
        if bad and first_bad is None:
            first_bad = (node_name, op_type, value)
    if first_bad is None:
        print("every probe is within tolerance")
        return 0
    print(f"first mismatch: {first_bad[1]} node {first_bad[0]} (value {first_bad[2]})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
