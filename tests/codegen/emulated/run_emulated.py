#!/usr/bin/env python3
"""Runs kiln's generated contraction kernels on the CPU CUDA emulator (cuda_emulator.h) and checks
their outputs against kiln's CPU reference interpreter, so the tensor-core kernels are tested
without a GPU: for each graph, `kiln compile --emit-cuda`, the steps and buffers from `kiln
inspect`, every kernel compiled with the C++ compiler against the emulator, the steps run in
order on seeded random inputs in [-1, 1), then `kiln run --device cpu` on the same inputs. A
graph passes when each output's cosine similarity to the reference is at least 0.9999 and all
its values are finite. Graphs have one output and only ops the emulator's device functions
cover (no kiln_* helper beyond conversions, cp.async, ldmatrix and mma).

usage: run_emulated.py --kiln KILN --cxx CXX GRAPH.kir...
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def inspect(kiln, program):
    """The program's steps (kernel, grid, threads, argument buffers) and buffers (kind, dtype,
    shape), from `kiln inspect`."""
    text = subprocess.run([kiln, "inspect", program], check=True, capture_output=True,
                          text=True).stdout
    steps, buffers, section = [], {}, None
    for line in text.splitlines():
        if not line.startswith(" "):
            section = line.split(" ")[0]
            continue
        step = re.match(r"\s+\d+\s+(\S+)\s+(\d+)x(\d+)x(\d+)\s+(\d+)x1x1\s+\d+ B\s+(.*)$", line)
        if section == "steps" and step:
            steps.append((step.group(1), [int(step.group(i)) for i in (2, 3, 4)],
                          int(step.group(5)), [a.strip() for a in step.group(6).split(",")]))
        buffer = re.match(r"\s+\d+\s+(\w+)\s+(\S+)\s+(\w+)\[([\d,]*)\]", line)
        if section == "buffers" and buffer:
            shape = [int(d) for d in buffer.group(4).split(",") if d]
            buffers[buffer.group(2)] = (buffer.group(1), buffer.group(3), shape)
    return steps, buffers


def as_float(array, dtype):
    if dtype == "bf16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def build(cxx, work, kernels):
    """One shared library with every kernel and a run_<kernel>(void** args) entry for each."""
    sources = ['#include "cuda_emulator.h"']
    for name in kernels:
        with open(os.path.join(work, "cu", name + ".cu")) as f:
            text = f.read()
        kernel = text[text.index('extern "C" __global__'):]
        signature = re.search(re.escape(name) + r"\((.*?)\) \{", kernel).group(1)
        types = [param.rsplit("*", 1)[0].replace("const ", "") + "*"
                 for param in signature.split(", ")]
        call = ", ".join(f"({t})args[{i}]" for i, t in enumerate(types))
        sources.append(kernel)
        sources.append(f'extern "C" void run_{name}(void** args) {{ {name}({call}); }}')
    source = os.path.join(work, "kernels.cc")
    with open(source, "w") as f:
        f.write("\n".join(sources) + "\n")
    library = os.path.join(work, "kernels.so")
    subprocess.run([cxx, "-O1", "-std=c++17", "-w", "-shared", "-fPIC", f"-I{HERE}",
                    os.path.join(HERE, "cuda_emulator.cc"), source, "-o", library], check=True)
    return ctypes.CDLL(library)


def check(kiln, cxx, graph):
    with tempfile.TemporaryDirectory(prefix="kiln_emulated_") as work:
        return check_in(kiln, cxx, graph, work)


def check_in(kiln, cxx, graph, work):
    program = os.path.join(work, "program.kiln")
    subprocess.run([kiln, "compile", graph, "--arch", "sm_80", "--emit-cuda",
                    os.path.join(work, "cu"), "-o", program, "--cache-dir",
                    os.path.join(work, "cache")], check=True, capture_output=True)
    steps, buffers = inspect(kiln, program)
    rng = np.random.default_rng(1)
    arrays, input_args = {}, []
    for name, (kind, dtype, shape) in buffers.items():
        if kind == "input":
            values = rng.uniform(-1, 1, shape).astype(np.float32)
            arrays[name] = ((values.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bf16"
                            else values.astype(STORAGE[dtype]))
            path = os.path.join(work, name + ".npy")
            np.save(path, as_float(arrays[name], dtype) if dtype == "bf16" else arrays[name])
            input_args.append(f"--input={name}={path}")
        else:  # outputs and workspaces start as garbage: NaN
            arrays[name] = np.full(shape, np.nan, np.float32).astype(STORAGE[dtype]) \
                if dtype != "bf16" else np.full(shape, 0x7fc0, np.uint16)
    library = build(cxx, work, sorted({step[0] for step in steps}))
    for kernel, grid, threads, args in steps:
        pointers = (ctypes.c_void_p * len(args))(*[arrays[a].ctypes.data for a in args])
        library.emu_launch(getattr(library, "run_" + kernel), pointers, *grid, threads)
    reference = os.path.join(work, "reference")
    subprocess.run([kiln, "run", graph, "--device", "cpu", "--output-dir", reference,
                    *input_args], check=True, capture_output=True)
    (output,) = [name for name, (kind, _, _) in buffers.items() if kind == "output"]
    (expected,) = os.listdir(reference)
    got = as_float(arrays[output], buffers[output][1]).ravel()
    want = np.load(os.path.join(reference, expected)).astype(np.float32).ravel()
    cosine = float(np.dot(got, want) / (np.linalg.norm(got) * np.linalg.norm(want)))
    passed = bool(np.isfinite(got).all()) and cosine >= 0.9999
    print(f"{'ok   ' if passed else 'WRONG'} {os.path.basename(graph)}: {len(steps)} steps, "
          f"cosine {cosine:.7f}, max abs error {float(np.max(np.abs(got - want))):.3g}",
          flush=True)
    return passed


def main():
    parser = argparse.ArgumentParser(usage=__doc__)
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("graphs", nargs="+")
    args = parser.parse_args()
    failed = [g for g in args.graphs if not check(args.kiln, args.cxx, g)]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
