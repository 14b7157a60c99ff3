#!/usr/bin/env python3
"""Runs the kernels kiln generates for a graph on the CPU CUDA emulator (cuda_emulator.h) and
checks the outputs against kiln's CPU reference interpreter, so kiln's kernels (tensor-core
contractions, tiled attention, reduction rows, direct conv, LRN, cum_sum) are tested without a GPU.

    run_emulated.py --kiln KILN --cxx CXX --work-dir DIR [--precision P] GRAPH.kir...

For each graph, in DIR/<graph>_<precision>: `kiln compile --emit-cuda` (sm_80) in the precision;
the steps and buffers from `kiln inspect`; every kernel with kiln's device functions less those
the emulator replaces (the PTX ones), compiled with the C++ compiler against the emulator into
one library; seeded inputs (standard normal; integers uniform over a range where sums wrap); the
steps run in order, outputs and intermediates starting as garbage (NaN, or the lowest integer);
then `kiln run --device cpu` in the same precision on the same inputs. Each output must have NaN
where the reference has NaN and be finite where it is finite; integers must be equal; otherwise
the cosine similarity must be at least 0.9999 and, where the kernels compute the output in f32
(precision fp32, an f32 output, no mma), each element must also lie within 1e-4 + 1e-3·|want|.
Prints one line per output; exit status 1 when a graph fails.
"""
import argparse
import ctypes
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i32": np.int32,
           "i64": np.int64}
# Integer inputs are drawn uniformly from these ranges, wide enough for sums to wrap around.
INTEGER_INPUT_RANGE = {"i32": (-2**30, 2**30), "i64": (-2**62, 2**62)}


class Failed(Exception):
    pass


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failed(f"{' '.join(command)} exited {result.returncode}:\n"
                     f"{result.stdout}{result.stderr}")
    return result.stdout


def inspect(kiln, program):
    """The program's steps (kernel, grid, threads, argument buffers, dynamic shared bytes), buffers
    (kind, dtype, shape)
    and output buffers in the graph's order, from `kiln inspect`."""
    steps, buffers, outputs, section = [], {}, {}, None
    for line in run([kiln, "inspect", program]).splitlines():
        if not line.startswith(" "):
            section = line.split(" ")[0]
            continue
        step = re.match(r"\s+\d+\s+(\S+)\s+(\d+)x(\d+)x(\d+)\s+(\d+)x1x1\s+([\d.]+) (B|KiB)\s+"
                        r"(.*)$", line)
        if section == "steps" and step:
            # inspect rounds KiB to a tenth: enough bytes for any value that prints so
            unit = 1 if step.group(7) == "B" else 1024
            shared = math.ceil((float(step.group(6)) + (0.05 if unit > 1 else 0)) * unit)
            steps.append((step.group(1), [int(step.group(i)) for i in (2, 3, 4)],
                          int(step.group(5)), [a.strip() for a in step.group(8).split(",")],
                          shared))
        buffer = re.match(r"\s+\d+\s+(\w+)\s+(\S+)\s+(\w+)\[([\d,]*)\]", line)
        if section == "buffers" and buffer:
            shape = [int(d) for d in buffer.group(4).split(",") if d]
            buffers[buffer.group(2)] = (buffer.group(1), buffer.group(3), shape)
            placement = re.search(r"output (\d+)$", line)
            if buffer.group(1) == "output" and placement:
                outputs[int(placement.group(1))] = buffer.group(2)
    for name, (kind, dtype, _) in buffers.items():
        if kind not in ("input", "output", "intermediate") or dtype not in STORAGE:
            raise Failed(f"{program}: buffer '{name}' is a {dtype} {kind}; the emulated run "
                         f"takes f32, f16, bf16, i32 or i64 inputs, outputs and intermediates")
    return steps, buffers, [outputs[i] for i in sorted(outputs)]


def as_float(array, dtype):
    if dtype == "bf16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def defined_functions(text):
    """The kiln_* functions and structs a source text defines (at the start of a line)."""
    return set(re.findall(r"^(?:[\w<>:,*][\w<>:,* ]* )?(kiln_\w+)(?:\(| \{)", text, re.M))


def library_without_replacements(library):
    """kiln's device functions (blocks separated by blank lines) less those the emulator
    defines."""
    with open(os.path.join(HERE, "cuda_emulator.h")) as file:
        replaced = defined_functions(file.read())
    return "\n\n".join(block for block in library.split("\n\n")
                       if not defined_functions(block) & replaced)


def build(cxx, work, kernels):
    """One shared library with every kernel ({name: dynamic shared bytes its launches ask for})
    and the device functions the emulator does not replace, each kernel in its own namespace
    (their vector structs and functions share names), and a run_<kernel>(void** args) entry for
    each; and whether any kernel uses mma. A kernel's dynamic shared memory (extern __shared__
    g_shared[]) becomes a shared array of the bytes its launches ask for."""
    sources, uses_mma = ['#include "cuda_emulator.h"'], False
    for name, shared_bytes in sorted(kernels.items()):
        with open(os.path.join(work, "cu", name + ".cu")) as file:
            text = file.read().replace(
                "extern __shared__ __align__(16) unsigned char g_shared[];",
                f"__shared__ __align__(16) unsigned char g_shared[{max(shared_bytes, 1)}];")
        uses_mma |= "kiln_mma_" in text
        starts = [at for at in (text.find("struct __align__"), text.find('extern "C"')) if at >= 0]
        kernel = library_without_replacements(text[:min(starts)]) + "\n" + text[min(starts):]
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
    run([cxx, "-O1", "-std=c++20", "-w", "-shared", "-fPIC", f"-I{HERE}",
         os.path.join(HERE, "cuda_emulator.cc"), source, "-o", library])
    return ctypes.CDLL(library), uses_mma


def judge(got, want, by_cosine):
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
    bad = 0 if by_cosine else int((errors > 1e-4 + 1e-3 * np.abs(want[finite])).sum())
    if bad:
        return f"{bad} elements beyond 1e-4 + 1e-3·|want|", summary
    return ("cosine below 0.9999" if cosine < 0.9999 else ""), summary


def reference_outputs(kiln, graph, precision, feeds, reference):
    """The graph's outputs from `kiln run --device cpu`, in order: it prints a line `NAME: TYPE
    [values]` for each and writes NAME.npy (unsafe characters as '_', an empty name as '_')."""
    text = run([kiln, "run", graph, "--device", "cpu", "--precision", precision, "--output-dir",
                reference, *feeds])
    names = re.findall(r"^(.*): \w+\[[\d,]*\] ", text, re.M)
    files = [re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_" for name in names]
    return [np.load(os.path.join(reference, file + ".npy")) for file in files]


def check(kiln, cxx, graph, precision, work):
    """Prints a line for each of the graph's outputs; returns whether all match the reference."""
    program = os.path.join(work, "program.kiln")
    run([kiln, "compile", graph, "--precision", precision, "--arch", "sm_80", "--emit-cuda",
         os.path.join(work, "cu"), "-o", program, "--cache-dir", os.path.join(work, "cache")])
    steps, buffers, outputs = inspect(kiln, program)
    rng = np.random.default_rng(1)
    arrays, feeds = {}, []
    for name, (kind, dtype, shape) in buffers.items():
        if kind == "input":
            if dtype in INTEGER_INPUT_RANGE:
                values = rng.integers(*INTEGER_INPUT_RANGE[dtype], size=shape, dtype=STORAGE[dtype])
            else:
                values = rng.standard_normal(shape).astype(np.float32)
            arrays[name] = ((values.view(np.uint32) >> 16).astype(np.uint16) if dtype == "bf16"
                            else values.astype(STORAGE[dtype]))
            path = os.path.join(work, name + ".npy")
            np.save(path, as_float(arrays[name], dtype) if dtype == "bf16" else arrays[name])
            feeds.append(f"--input={name}={path}")
        elif dtype in INTEGER_INPUT_RANGE:  # outputs and intermediates start as garbage
            arrays[name] = np.full(shape, np.iinfo(STORAGE[dtype]).min, STORAGE[dtype])
        else:
            arrays[name] = (np.full(shape, 0x7fc0, np.uint16) if dtype == "bf16"
                            else np.full(shape, np.nan, STORAGE[dtype]))
    shared_bytes = {}
    for step in steps:
        shared_bytes[step[0]] = max(shared_bytes.get(step[0], 0), step[4])
    library, uses_mma = build(cxx, work, shared_bytes)
    for kernel, grid, threads, args, _ in steps:
        pointers = (ctypes.c_void_p * len(args))(*[arrays[a].ctypes.data for a in args])
        library.emu_launch(getattr(library, "run_" + kernel), pointers, *grid, threads)
    wants = reference_outputs(kiln, graph, precision, feeds, os.path.join(work, "reference"))
    passed = True
    for name, want in zip(outputs, wants):
        dtype = buffers[name][1]
        if dtype in INTEGER_INPUT_RANGE:
            wrong = int((arrays[name].reshape(want.shape) != want).sum())
            problem, summary = (f"{wrong} elements differ" if wrong else ""), "compared exactly"
        else:
            got = as_float(arrays[name], dtype).reshape(want.shape)
            by_cosine = precision != "fp32" or dtype in ("f16", "bf16") or uses_mma
            problem, summary = judge(got, want.astype(np.float32), by_cosine)
        print(f"{'WRONG' if problem else 'ok   '} {os.path.basename(graph)} {precision} {name}: "
              f"{len(steps)} steps, {summary}{'; ' + problem if problem else ''}", flush=True)
        passed &= not problem
    return passed


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
