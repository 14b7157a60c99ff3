#!/usr/bin/env python3
"""Runs the kernels kiln generates for a graph on the CPU CUDA emulator (cuda_emulator.h) and
checks the outputs against kiln's CPU reference interpreter, so the tensor-core contraction and
tiled attention kernels are tested without a GPU.

    run_emulated.py --kiln KILN --cxx CXX --work-dir DIR [--precision P] GRAPH.kir...

For each graph, in DIR/<graph>_<precision>: `kiln compile --emit-cuda` (sm_80) in the precision;
the steps and buffers from `kiln inspect`; every kernel, without kiln's device-function library
(the emulator reimplements the kiln_* functions these kernels call; another one is a compile
error naming it), compiled with the C++ compiler against the emulator into one library; seeded
standard normal inputs; the steps run in order, output and intermediates starting as NaN; then
`kiln run --device cpu` in the same precision on the same inputs. Graphs have one
output, which must have NaN where the reference has NaN and be finite where it is finite. Where
the kernels compute in f32 (precision fp32, every buffer f32, no mma) each element must lie
within 1e-4 + 1e-3·|want|; otherwise (16-bit buffers, f16/bf16/TF32 mma operands) the cosine
similarity must be at least 0.9999. Prints one line per graph; exit status 1 when one fails.
"""
import argparse
import ctypes
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


class Failed(Exception):
    pass


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failed(f"{' '.join(command)} exited {result.returncode}:\n"
                     f"{result.stdout}{result.stderr}")
    return result.stdout


def inspect(kiln, program):
    """The program's steps (kernel, grid, threads, argument buffers) and buffers (kind, dtype,
    shape), from `kiln inspect`."""
    steps, buffers, section = [], {}, None
    for line in run([kiln, "inspect", program]).splitlines():
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
    for name, (kind, dtype, _) in buffers.items():
        if kind not in ("input", "output", "intermediate") or dtype not in STORAGE:
            raise Failed(f"{program}: buffer '{name}' is a {dtype} {kind}; the emulated run "
                         f"takes f32, f16 or bf16 inputs, outputs and intermediates")
    if [kind for kind, _, _ in buffers.values()].count("output") != 1:
        raise Failed(f"{program}: the emulated run takes graphs of one output")
    return steps, buffers


def as_float(array, dtype):
    if dtype == "bf16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def build(cxx, work, kernels):
    """One shared library with every kernel, each in its own namespace (their vector structs
    share names), and a run_<kernel>(void** args) entry for each; and whether any uses mma."""
    sources, uses_mma = ['#include "cuda_emulator.h"'], False
    for name in kernels:
        with open(os.path.join(work, "cu", name + ".cu")) as file:
            text = file.read()
        uses_mma |= "kiln_mma_" in text
        starts = [at for at in (text.find("struct __align__"), text.find('extern "C"')) if at >= 0]
        kernel = text[min(starts):]
        signature = re.search(re.escape(name) + r"\((.*?)\) \{", kernel).group(1)
        types = [param.rsplit("*", 1)[0].replace("const ", "") + "*"
                 for param in signature.split(", ")]
        call = ", ".join(f"({t})args[{i}]" for i, t in enumerate(types))
        sources += [f"namespace {name} {{", kernel,
                    f'extern "C" void run_{name}(void** args) {{ {name}({call}); }}', "}"]
    source = os.path.join(work, "kernels.cc")
    with open(source, "w") as file:
        file.write("\n".join(sources) + "\n")
    library = os.path.join(work, "kernels.so")
    run([cxx, "-O1", "-std=c++17", "-w", "-shared", "-fPIC", f"-I{HERE}",
         os.path.join(HERE, "cuda_emulator.cc"), source, "-o", library])
    return ctypes.CDLL(library), uses_mma


def judge(got, want, reduced):
    """'' when got matches want, else what is wrong; and a summary of the errors."""
    finite = np.isfinite(want) & np.isfinite(got)
    errors = np.abs(got[finite] - want[finite])
    norms = np.linalg.norm(got[finite]) * np.linalg.norm(want[finite])
    cosine = float(np.dot(got[finite], want[finite]) / norms) if norms else 1.0
    summary = f"cosine {cosine:.7f}, max abs error {float(errors.max(initial=0)):.3g}"
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return f"NaN at {np.isnan(got).sum()} places, the reference at {np.isnan(want).sum()}", \
            summary
    if not np.array_equal(np.isfinite(got), np.isfinite(want)):
        return "infinite where the reference is finite, or the other way round", summary
    if reduced:
        return ("cosine below 0.9999" if cosine < 0.9999 else ""), summary
    bad = int((errors > 1e-4 + 1e-3 * np.abs(want[finite])).sum())
    return (f"{bad} elements beyond 1e-4 + 1e-3·|want|" if bad else ""), summary


def check(kiln, cxx, graph, precision, work):
    """Prints a line for the graph's output and returns whether it matches the reference."""
    program = os.path.join(work, "program.kiln")
    run([kiln, "compile", graph, "--precision", precision, "--arch", "sm_80", "--emit-cuda",
         os.path.join(work, "cu"), "-o", program, "--cache-dir", os.path.join(work, "cache")])
    steps, buffers = inspect(kiln, program)
    rng = np.random.default_rng(1)
    arrays, feeds = {}, []
    for name, (kind, dtype, shape) in buffers.items():
        if kind == "input":
            values = rng.standard_normal(shape).astype(np.float32)
            arrays[name] = ((values.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bf16"
                            else values.astype(STORAGE[dtype]))
            path = os.path.join(work, name + ".npy")
            np.save(path, as_float(arrays[name], dtype) if dtype == "bf16" else arrays[name])
            feeds.append(f"--input={name}={path}")
        else:  # outputs and intermediates start as garbage: NaN
            arrays[name] = (np.full(shape, 0x7fc0, np.uint16) if dtype == "bf16"
                            else np.full(shape, np.nan, STORAGE[dtype]))
    library, uses_mma = build(cxx, work, sorted({step[0] for step in steps}))
    for kernel, grid, threads, args in steps:
        pointers = (ctypes.c_void_p * len(args))(*[arrays[a].ctypes.data for a in args])
        library.emu_launch(getattr(library, "run_" + kernel), pointers, *grid, threads)
    reference = os.path.join(work, "reference")
    run([kiln, "run", graph, "--device", "cpu", "--precision", precision, "--output-dir",
         reference, *feeds])
    reduced = (precision != "fp32" or uses_mma
               or any(dtype != "f32" for _, dtype, _ in buffers.values()))
    (output,) = [name for name, (kind, _, _) in buffers.items() if kind == "output"]
    (expected,) = os.listdir(reference)  # named after the graph's output value
    want = np.load(os.path.join(reference, expected)).astype(np.float32)
    got = as_float(arrays[output], buffers[output][1]).reshape(want.shape)
    problem, summary = judge(got, want, reduced)
    print(f"{'WRONG' if problem else 'ok   '} {os.path.basename(graph)} {precision}: "
          f"{len(steps)} steps, {summary}{'; ' + problem if problem else ''}", flush=True)
    return not problem


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32")
    args = parser.parse_args()
    passed = True
    for graph in args.graphs:
        name = f"{os.path.splitext(os.path.basename(graph))[0]}_{args.precision}"
        work = os.path.join(os.path.abspath(args.work_dir), name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            passed &= check(args.kiln, args.cxx, graph, args.precision, work)
        except Failed as error:
            print(f"FAIL {name}: {error}", flush=True)
            passed = False
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
