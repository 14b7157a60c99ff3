#!/usr/bin/env python3
"""Runs the kernel kiln generates for a one-kernel graph on the CPU (emu.h) and compares its
output with kiln's CPU reference interpreter.

    run_emulated.py --kiln BUILD/bin/kiln --cxx g++ --work-dir DIR GRAPH.kir PRECISION

The graph must lower to a single kernel whose inputs and outputs are f32, f16, i32 or i64 (the
graph's own, --io-precision declared). Steps: `kiln compile --emit-cuda` (sm_80) and `kiln
inspect` for the kernel, its grid, block and arguments; seeded inputs (normal; integers uniform
over a range where sums wrap); `kiln run --device cpu` for the reference; the kernel's source
after emu.h (without the device functions emu.h replaces), with a main() that launches the grid
block by block, compiled with the C++ compiler and run. Passes when, in fp32, every element is
within 1e-4 + 1e-3·|want|, and in fp16/bf16 (and for every f16 output) the cosine similarity is
at least 0.9999 (NaNs where the reference has them in both cases). Prints one line; exit status
1 on a mismatch or a failed step.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


class Failed(Exception):
    pass


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failed(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}{result.stderr}")
    return result.stdout


# Element types of the kernel parameters the emulation reads and writes: IR dtype -> (C type,
# numpy dtype).
PARAMETER_TYPES = {"f32": ("float", np.float32), "f16": ("unsigned short", np.float16),
                   "i32": ("int", np.int32), "i64": ("long long", np.int64)}


# Integer inputs are drawn uniformly from these ranges, wide enough for sums to wrap around.
INTEGER_INPUT_RANGE = {"i32": (-2**30, 2**30), "i64": (-2**62, 2**62)}


def dtype_of(type_text):
    """'f16' from 'f16[2,3,4]'."""
    return type_text.split("[")[0]


def shape_of(type_text):
    """[2, 3, 4] from 'f32[2,3,4]'."""
    dims = re.search(r"\[(.*)\]", type_text).group(1)
    return [int(d) for d in dims.split(",")] if dims else []


def inspect_program(kiln, program):
    """(kernel name, grid size, block size, argument names, {buffer: type}, input names) of a
    one-step program."""
    text = run([kiln, "inspect", program])
    steps = re.findall(r"^\s+\d+\s+(\S+)\s+(\d+)x1x1\s+(\d+)x1x1\s+\S+ B\s+(.*)$", text, re.M)
    if len(steps) != 1:
        raise Failed(f"{program}: expected one step of a one-dimensional grid, found:\n{text}")
    kernel, grid, block, arguments = steps[0]
    buffers = dict(re.findall(r"^\s+\d+\s+(?:input|output)\s+(\S+)\s+(\S+\])", text, re.M))
    inputs = re.findall(r"^\s+\d+\s+input\s+(\S+)", text, re.M)
    return kernel, int(grid), int(block), arguments.split(", "), buffers, inputs


def defined_functions(text):
    """The kiln_* functions and structs a source text defines (at the start of a line)."""
    return set(re.findall(r"^(?:[\w<>:,*][\w<>:,* ]* )?(kiln_\w+)(?:\(| \{)", text, re.M))


def library_without_replacements(library):
    """kiln's device functions (blocks separated by blank lines) less those emu.h defines."""
    with open(os.path.join(HERE, "emu.h")) as file:
        replaced = defined_functions(file.read())
    return "\n\n".join(block for block in library.split("\n\n")
                       if not defined_functions(block) & replaced)


def emulator_source(cuda, kernel, grid, block, arguments, buffers, work):
    """main.cc: the kernel after emu.h, with a main() reading pI.bin and writing out_NAME.bin."""
    starts = [at for at in (cuda.find("struct __align__"), cuda.find('extern "C"')) if at >= 0]
    kernel_text = cuda[min(starts):]
    signature = re.search(r"__launch_bounds__\(\d+\) \w+\((.*?)\) \{", kernel_text).group(1)
    parameters = [p.strip() for p in signature.split(",")]
    lines = [f'#include "{HERE}/emu.h"', "#include <fstream>",
             library_without_replacements(cuda[:min(starts)]), kernel_text, "int main() {"]
    for i, (parameter, name) in enumerate(zip(parameters, arguments)):
        c_type, numpy_type = PARAMETER_TYPES.get(dtype_of(buffers[name]), (None, None))
        if parameter.split("*")[0].replace("const", "").strip() != c_type:
            raise Failed(f"{kernel}: parameter '{parameter}' is not f32, f16, i32 or i64")
        count = int(np.prod(shape_of(buffers[name])))
        lines.append(f"  std::vector<{c_type}> p{i}({count});")
        if parameter.startswith("const"):
            lines.append(f'  std::ifstream("{work}/p{i}.bin", std::ios::binary)'
                         f".read(reinterpret_cast<char*>(p{i}.data()), "
                         f"{count * np.dtype(numpy_type).itemsize});")
    lines += [f"  blockDim.x = {block};", f"  gridDim.x = {grid};",
              f"  std::barrier<> block({block});", "  g_emu_block = &block;",
              "  for (auto& warp : g_emu_warp) warp = new std::barrier<>(32);",
              f"  for (unsigned b = 0; b < {grid}; ++b) {{",
              "    std::vector<std::thread> threads;",
              f"    for (unsigned t = 0; t < {block}; ++t) {{",
              "      threads.emplace_back([&, t] {", "        threadIdx.x = t;", "        blockIdx.x = b;",
              f"        {kernel}({', '.join(f'p{i}.data()' for i in range(len(parameters)))});",
              "      });", "    }", "    for (auto& thread : threads) thread.join();", "  }"]
    for i, (parameter, name) in enumerate(zip(parameters, arguments)):
        if not parameter.startswith("const"):
            lines.append(f'  std::ofstream("{work}/out_{name}.bin", std::ios::binary)'
                         f".write(reinterpret_cast<char*>(p{i}.data()), "
                         f"p{i}.size() * sizeof(p{i}[0]));")
    lines.append("}")
    return "\n".join(lines) + "\n"


def judge(got, want, by_cosine):
    """'' when got matches want, else what is wrong; and a summary of the errors."""
    errors = np.abs(got - want)
    finite = ~np.isnan(want)
    cosine = float((got[finite] * want[finite]).sum() /
                   np.sqrt((got[finite] ** 2).sum() * (want[finite] ** 2).sum()))
    summary = f"cosine {cosine:.7f}, max abs error {np.nanmax(errors):.3g}"
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return f"NaNs at {np.isnan(got).sum()} places, the reference at {np.isnan(want).sum()}", summary
    if not by_cosine:
        bad = int((errors[finite] > 1e-4 + 1e-3 * np.abs(want[finite])).sum())
        return (f"{bad} elements beyond 1e-4 + 1e-3·|want|" if bad else ""), summary
    return (f"cosine below 0.9999" if cosine < 0.9999 else ""), summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graph")
    parser.add_argument("precision", choices=["fp32", "fp16", "bf16"])
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--cxx", default="g++")
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    name = f"{os.path.splitext(os.path.basename(args.graph))[0]}_{args.precision}"
    work = os.path.join(os.path.abspath(args.work_dir), name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, KILN_CACHE_DIR=os.path.join(work, "cache"))
    try:
        run([args.kiln, "compile", args.graph, "--precision", args.precision, "--arch", "sm_80",
             "--emit-cuda", f"{work}/cu", "-o", f"{work}/program.kiln"], env=env)
        kernel, grid, block, arguments, buffers, inputs = inspect_program(args.kiln,
                                                                         f"{work}/program.kiln")
        rng = np.random.default_rng(7)
        feeds = []
        for input_name in inputs:
            dtype, shape = dtype_of(buffers[input_name]), shape_of(buffers[input_name])
            numpy_type = PARAMETER_TYPES[dtype][1]
            if dtype in INTEGER_INPUT_RANGE:
                values = rng.integers(*INTEGER_INPUT_RANGE[dtype], size=shape, dtype=numpy_type)
            else:
                values = rng.standard_normal(shape).astype(numpy_type)
            np.save(f"{work}/{input_name}.npy", values)
            feeds += ["--input", f"{input_name}={work}/{input_name}.npy"]
        run([args.kiln, "run", args.graph, "--device", "cpu", "--precision", args.precision,
             "--output-dir", f"{work}/reference", *feeds])
        for i, argument in enumerate(arguments):
            if argument in inputs:
                np.load(f"{work}/{argument}.npy").tofile(f"{work}/p{i}.bin")
        with open(f"{work}/cu/{kernel}.cu") as file:
            source = emulator_source(file.read(), kernel, grid, block, arguments, buffers, work)
        with open(f"{work}/main.cc", "w") as file:
            file.write(source)
        run([args.cxx, "-O1", "-std=c++20", "-pthread", f"{work}/main.cc", "-o", f"{work}/emulated"])
        run([f"{work}/emulated"])
        problems = []
        for output in (a for a in arguments if a not in inputs):
            want = np.load(f"{work}/reference/{output}.npy").astype(np.float64)
            dtype = dtype_of(buffers[output])
            got = np.fromfile(f"{work}/out_{output}.bin",
                              dtype=PARAMETER_TYPES[dtype][1]).astype(np.float64)
            problem, summary = judge(got.reshape(want.shape), want,
                                     args.precision != "fp32" or dtype == "f16")
            print(f"{name}: {kernel}, {grid} blocks of {block}: {output}: {summary}")
            if problem:
                problems.append(f"{output}: {problem}")
    except Failed as error:
        print(f"FAIL {name}: {error}")
        return 1
    if problems:
        print(f"FAIL {name}: {'; '.join(problems)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
