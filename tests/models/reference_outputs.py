#!/usr/bin/env python3
"""Computes the expected outputs of an exported test model with onnxruntime, the fp32 reference.

Run with the interpreter that has the pip packages onnxruntime and numpy:
    python3 tests/models/reference_outputs.py WORK_DIR MODEL

Reads WORK_DIR/<model>.onnx and WORK_DIR/<model>/inputs/<name>.npy, runs onnxruntime's CPU
execution provider with every graph optimization disabled (no fusions, no layout changes: plain
fp32 kernels, one per ONNX node), and writes each output to
WORK_DIR/<model>/expected/<output name>.npy, with every character of the output name that is
not a letter or digit replaced by '_' (the naming `kiln run --output-dir` uses).
"""
import argparse
import os
import re
import sys
import time

import numpy as np
import onnxruntime


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9]", "_", name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work_dir")
    parser.add_argument("model")
    args = parser.parse_args()

    model_path = os.path.join(args.work_dir, f"{args.model}.onnx")
    model_dir = os.path.join(args.work_dir, args.model)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(
        model_path, options, providers=["CPUExecutionProvider"])

    feeds = {}
    for model_input in session.get_inputs():
        path = os.path.join(model_dir, "inputs", f"{sanitize(model_input.name)}.npy")
        if not os.path.exists(path):
            sys.exit(f"reference_outputs: no input file {path} for input '{model_input.name}'")
        feeds[model_input.name] = np.load(path)

    start = time.time()
    outputs = session.run(None, feeds)
    seconds = time.time() - start

    expected_dir = os.path.join(model_dir, "expected")
    os.makedirs(expected_dir, exist_ok=True)
    for meta, value in zip(session.get_outputs(), outputs):
        np.save(os.path.join(expected_dir, f"{sanitize(meta.name)}.npy"), value)
        print(f"  {meta.name}: {value.dtype}{list(value.shape)}, "
              f"max |value| {float(np.abs(value).max()):.4g}")
    print(f"onnxruntime {args.model}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
