#!/usr/bin/env python3
"""Fusion microbenchmarks on the GPU host: kiln fused and unfused against PyTorch eager and
torch.compile, each as a fraction of the card's measured device-to-device copy bandwidth.

usage: bench/microbench.py KILN OUT_DIR [--iters 100] [--warmup 20] [--quick]

Workloads (fp16, as in ../shared/gpu/README.md):
  elementwise  gelu(a * 0.5 + b) * b + 1          a, b: [64M]
  layernorm    gelu(layernorm(x))                  x: [8192, 4096] (last-axis LayerNorm)
  softmax      softmax(x, axis=-1)                 x: [8192, 4096]
Each workload is also written as an ONNX model (opset 20) and run by `kiln bench` (which reports
its own median with CUDA events and checks against kiln's CPU reference). Bytes moved are the
ideal ones (every input read once, every output written once); "of copy" is that traffic per
second over the copy's (bytes read plus written per second). Correctness first: torch.compile's
output is compared with eager's before it is timed. Prints a table and writes OUT_DIR/microbench.json.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from cuda_timing import time_cuda
from kiln_bench import run_kiln_bench


def copy_bandwidth(iters, warmup):
    """Device-to-device copy of 1 GiB: (bytes read + bytes written) / second."""
    src = torch.randn(1 << 28, device="cuda")  # 1 GiB of f32
    dst = torch.empty_like(src)
    median_ms, _ = time_cuda(lambda: dst.copy_(src), iters, warmup)
    return 2 * src.numel() * src.element_size() / (median_ms * 1e-3)


def onnx_model(name, inputs, nodes, output_shape):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT16, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, output_shape)],
        initializer=[])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def half_scalar(name, value):
    return helper.make_node("Constant", [], [name],
                            value=numpy_helper.from_array(np.array(value, np.float16), name))


def workloads(quick):
    n = (1 << 22) if quick else (1 << 26)
    rows, cols = (1024, 4096) if quick else (8192, 4096)
    elementwise = onnx_model("elementwise", [("a", [n]), ("b", [n])], [
        half_scalar("half", 0.5), half_scalar("one", 1.0),
        helper.make_node("Mul", ["a", "half"], ["t0"]),
        helper.make_node("Add", ["t0", "b"], ["t1"]),
        helper.make_node("Gelu", ["t1"], ["t2"]),
        helper.make_node("Mul", ["t2", "b"], ["t3"]),
        helper.make_node("Add", ["t3", "one"], ["y"]),
    ], [n])
    gamma = numpy_helper.from_array(np.ones(cols, np.float16), "gamma")
    beta = numpy_helper.from_array(np.zeros(cols, np.float16), "beta")
    layernorm = onnx_model("layernorm", [("x", [rows, cols])], [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["t0"], axis=-1),
        helper.make_node("Gelu", ["t0"], ["y"]),
    ], [rows, cols])
    layernorm.graph.initializer.extend([gamma, beta])
    softmax = onnx_model("softmax", [("x", [rows, cols])], [
        helper.make_node("Softmax", ["x"], ["y"], axis=-1),
    ], [rows, cols])
    return [
        ("elementwise", elementwise, {"a": [n], "b": [n]},
         lambda a, b: torch.nn.functional.gelu(a * 0.5 + b) * b + 1),
        ("layernorm", layernorm, {"x": [rows, cols]},
         lambda x: torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (cols,)))),
        ("softmax", softmax, {"x": [rows, cols]}, lambda x: torch.softmax(x, dim=-1)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("out_dir")
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: microbench skipped")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    # Models and inputs (hundreds of MB) go to a scratch folder; OUT_DIR gets the figures.
    work_dir = os.path.join(tempfile.gettempdir(), "kiln-microbench")
    os.makedirs(work_dir, exist_ok=True)
    torch.manual_seed(0)
    copy = copy_bandwidth(args.iters, args.warmup)
    report = {"card": torch.cuda.get_device_name(), "torch": torch.__version__,
              "copy_bytes_per_s": copy, "workloads": {}}
    print(f"{report['card']}: device-to-device copy {copy / 1e9:.0f} GB/s (read + write)")
    for name, model, shapes, fn in workloads(args.quick):
        inputs = {k: torch.randn(s, device="cuda", dtype=torch.float16) for k, s in shapes.items()}
        moved = sum(t.numel() * 2 for t in inputs.values()) + fn(*inputs.values()).numel() * 2
        entry = {"bytes": moved}
        eager = fn(*inputs.values())
        compiled_fn = torch.compile(fn)
        compiled = compiled_fn(*inputs.values())
        entry["compile_max_abs_vs_eager"] = float((compiled - eager).abs().max())
        for label, f in [("eager", fn), ("torch.compile", compiled_fn)]:
            median, p90 = time_cuda(lambda: f(*inputs.values()), args.iters, args.warmup)
            entry[label] = {"median_ms": median, "p90_ms": p90,
                            "of_copy": moved / (median * 1e-3) / copy}
        model_path = os.path.join(work_dir, f"{name}.onnx")
        onnx.save(model, model_path)
        input_paths = {}
        for k, t in inputs.items():
            input_paths[k] = os.path.join(work_dir, f"{name}_{k}.npy")
            np.save(input_paths[k], t.cpu().numpy())
        input_args = [arg for k, path in input_paths.items() for arg in ("--input", f"{k}={path}")]
        kiln_result = run_kiln_bench(args.kiln, model_path,
                                     os.path.join(args.out_dir, f"{name}_kiln.json"), args.iters,
                                     args.warmup, input_args)
        for label in ("unfused", "fused"):
            if label in kiln_result:
                median = kiln_result[label]["median_ms"]
                entry[f"kiln {label}"] = dict(kiln_result[label],
                                              of_copy=moved / (median * 1e-3) / copy)
        if "error" in kiln_result:
            entry["kiln error"] = kiln_result["error"]
        report["workloads"][name] = entry

    columns = ["eager", "torch.compile", "kiln unfused", "kiln fused"]
    print(f"\n{'workload':<12} {'MB moved':>9} " + " ".join(f"{c:>22}" for c in columns))
    for name, entry in report["workloads"].items():
        cells = []
        for c in columns:
            cells.append(f"{entry[c]['median_ms']:8.3f} ms {100 * entry[c]['of_copy']:5.1f}%"
                         if c in entry else f"{'—':>22}")
        print(f"{name:<12} {entry['bytes'] / 1e6:9.1f} " + " ".join(f"{c:>22}" for c in cells))
    with open(os.path.join(args.out_dir, "microbench.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
