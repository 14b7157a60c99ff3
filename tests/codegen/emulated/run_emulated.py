#!/usr/bin/env python3
"""Runs the kernels kiln generates for a graph on the CPU CUDA emulator (cuda_emulator.h) and
checks the outputs against kiln's CPU reference interpreter, so kiln's kernels (tensor-core
contractions, tiled attention, reduction rows, direct conv, LRN, cum_sum) are tested without a GPU.

    run_emulated.py --kiln KILN --cxx CXX --work-dir DIR [--precision P] [--mutation M]
                    [--disable-pass PASS,...] GRAPH.kir...

For each graph, in DIR/<graph>_<precision>: `kiln compile --emit-cuda` (sm_80) in the precision
(without the passes --disable-pass names: the einsum kernels' graphs keep their einsums from
einsum-to-matmul);
the steps, buffers and weights from the .kiln file; every kernel with kiln's device functions
less those the emulator replaces (the PTX ones), its shared memory declarations rewritten for the
emulator, compiled with the C++ compiler against the emulator into one library; the buffers in
the emulator's guarded memory, the inputs seeded (standard normal; integers uniform over a range
where sums wrap) and the weights (the constants kernels read) copied from the file, both
read-only; the steps run in order in each schedule of SCHEDULES, outputs and intermediates
starting as garbage each time (NaN, or the lowest integer); then `kiln run --device
cpu` in the same precision on the same inputs.

Every output and intermediate must have the same bits in every schedule. Each output must have
NaN where the reference has NaN and be finite where it is finite; integers must be equal; floats
are judged in the coarsest format the kernels compute in (the precision's, a 16-bit buffer's, an
mma's: fp32, tf32, fp16 or bf16, unit roundoff u) by three measures: the largest error within
ATOL + ERROR_FACTOR·u·max|want|, the norm ratio |got|/|want| within 1% (and ATOL·sqrt(n)), the
cosine similarity at least 0.9999; in fp32 each element must also lie within
1e-4 + 1e-3·|want|. The judge must reject each float output scaled by 1.5 and by 1.05 (a weak
judge or a degenerate output fails). Prints one line per output; exit status 1 when a graph
fails.

--mutation NAME breaks the kernels' source as MUTATIONS says (a barrier deleted, shared memory
left unwritten) to show that the emulator catches the bug: the graph must then fail.
"""
import argparse
import ctypes
import hashlib
import math
import os
import re
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
STORAGE = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16, "i32": np.int32,
           "i64": np.int64}
# The .kiln file's codes for buffer kinds and dtypes: their positions here.
BUFFER_KINDS = ["input", "output", "weight", "intermediate"]
DTYPE_CODES = ["f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"]
# The alignment of the weights' bytes in a .kiln file (runtime/program.h, kWeightAlignment).
WEIGHT_ALIGNMENT = 256
# Integer inputs are drawn uniformly from these ranges, wide enough for sums to wrap around.
INTEGER_INPUT_RANGE = {"i32": (-2**30, 2**30), "i64": (-2**62, 2**62)}
# The emulator's schedules (cuda_emulator.h), each with its seed; the first one's outputs are
# judged, the others must have the same bits.
SCHEDULES = [("forward", 0), ("reverse", 0), ("interleaved", 0), ("shuffled", 1), ("shuffled", 2)]
# The unit roundoff of each arithmetic format, and the judge's bound on the largest error in it
# (times max|want|; ATOL for outputs near zero). Calibrated on graphs/ (run_emulated.py prints the
# error in these units): at most 2.1 in fp16 and 1.7 in bf16, 0.001 in tf32 (the reference rounds
# the operands alike), 9.5 in fp32 but 103 for the softmax over 40000 columns.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "tf32": 2.0**-11, "fp16": 2.0**-11, "bf16": 2.0**-8}
ERROR_FACTOR = {"fp32": 512, "tf32": 16, "fp16": 16, "bf16": 16}
ATOL = 1e-9
FORMAT_OF_DTYPE = {"f16": "fp16", "bf16": "bf16"}
# Bugs for --mutation, each a regex whose first match in a kernel's source (in every kernel that
# has one) is replaced (re.sub's replacement: a template or a function of the match).
MUTATIONS = {
    # The tiled attention's key loop opens with a barrier: no warp overwrites the K' tile (or the
    # Q' staged there) while another still reads it.
    "no_barrier_before_key_tile": (r"(for \(int g_key0 = 0; [^\n]*\n\s*)__syncthreads\(\);\n",
                                   r"\1"),
    # The strided attention's key loop waits for the tile's cp.async copies before its barrier:
    # without the wait, warps read a K'/V' tile still in flight.
    "no_cp_async_wait_in_key_loop": (r"(g_buf \^= 1\) \{\n\s*)kiln_cp_async_wait<0>\(\);\n",
                                     r"\1"),
    # kiln_block_reduce closes with a barrier: no warp writes `partials` again (the next
    # reduction's) while another still reads them.
    "no_barrier_closing_block_reduce": (
        r"(value = op\(value, partials\[w\]\);\n\s*)__syncthreads\(\);\n", r"\1"),
    # The f32 tiled attention writes zeros for the V' rows past the last key (P is 0 there, but
    # 0·NaN is not 0): left unwritten, they are whatever shared memory held.
    "unwritten_value_padding": (r"(g_v\[[^\]]*\]) = (g_key0 \+ g_r < \d+) \? ([^;]*) : 0\.0f;",
                                r"if (\2) \1 = \3;"),
    # The tiled attention's row maxima declared half as long as it uses them.
    "short_shared_array": (r"(__shared__ float g_row_max\[)(\d+)",
                           lambda match: match[1] + str(int(match[2]) // 2)),
    # The tiled attention stores the rows of its last query tile past M too.
    "no_output_row_check": (r"if \(g_q < \d+\)", "if (true)"),
    # The vectorized depthwise conv multiplies every channel's weight by the vector's first X.
    "depthwise_first_channel_only": (r"xv\.v\[j\]", "xv.v[0]"),
    # The vectorized depthwise conv's weights in registers read at the wrong lane of their vector.
    "depthwise_weight_lane_zero": (r"(wv\[t\d+ / 8\]\.v)\[t\d+ % 8\]", r"\1[0]"),
    # The columns tactic's first multiply-add of column 0 with the weight of the next tap.
    "depthwise_columns_wrong_tap": (r"(acc\[0\]\[j\] \+= xj \* w_row\[j\]\[)0\]", r"\g<1>1]"),
    # A kernel's __launch_bounds__ below the threads it is launched with.
    "low_launch_bounds": (r"__launch_bounds__\(\d+\)", "__launch_bounds__(32)"),
}


class Failed(Exception):
    pass


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failed(f"{' '.join(command)} exited {result.returncode}:\n"
                     f"{result.stdout}{result.stderr}")
    return result.stdout


class ProgramReader:
    """The fields of a .kiln file in order (its layout: runtime/program_io.h)."""

    def __init__(self, path):
        with open(path, "rb") as file:
            self.data, self.at = file.read(), 0
        if self.take(4) != b"KILN" or self.u32() != 2:
            raise Failed(f"{path}: not a .kiln file of format version 2")

    def take(self, size):
        self.at += size
        return self.data[self.at - size:self.at]

    def unpack(self, code, count=1):
        return struct.unpack(f"<{count}{code}", self.take(struct.calcsize(f"<{count}{code}")))

    def u32(self):
        return self.unpack("I")[0]

    def string(self):
        return self.take(self.u32()).decode()

    def skip_blob(self):
        self.take(self.unpack("Q")[0])

    def indices(self):
        return self.unpack("I", self.u32())


def read_program(path):
    """A program's steps (kernel, grid, threads, argument buffer names, dynamic shared bytes),
    buffers ({name: (kind, dtype, shape)}), output buffer names in the graph's order and weights
    ({name: the weight buffer's bytes})."""
    reader = ProgramReader(path)
    reader.string()  # the program's name
    for _ in range(reader.u32()):  # archs
        reader.string()
    kernels = []
    for _ in range(reader.u32()):
        kernels.append(reader.string())
        reader.string()  # source
        reader.take(8)  # source hash
        for _ in range(reader.u32()):  # provenance
            reader.string()
        for _ in range(reader.u32()):  # binaries
            reader.string()
            reader.skip_blob()
        reader.skip_blob()  # PTX
    names, buffers, weight_offsets = [], {}, {}
    for _ in range(reader.u32()):
        kind, name, dtype = reader.unpack("B")[0], reader.string(), reader.unpack("B")[0]
        shape = list(reader.unpack("q", reader.u32()))
        offset = reader.unpack("q")[0]
        kind, dtype = BUFFER_KINDS[kind], DTYPE_CODES[dtype]
        if dtype not in STORAGE:
            raise Failed(f"{path}: buffer '{name}' is a {dtype} {kind}; the emulated run takes "
                         f"f32, f16, bf16, i32 or i64 buffers")
        names.append(name)
        buffers[name] = (kind, dtype, shape)
        if kind == "weight":
            weight_offsets[name] = offset
    reader.indices()  # inputs
    outputs = [names[i] for i in reader.indices()]
    steps = []
    for _ in range(reader.u32()):
        kernel, grid, block = reader.u32(), list(reader.unpack("I", 3)), reader.unpack("I", 3)
        shared = reader.u32()
        if block[1:] != (1, 1):
            raise Failed(f"{path}: a step of {kernels[kernel]} has a {block} block; the "
                         f"emulator runs blocks of threads in x only")
        args = [names[i] for i in reader.indices()]
        if reader.unpack("B")[0] != 0:  # a library call: the emulator runs the kernel instead
            reader.take(5 * 8 + 1 + 12 * 8 + 2 * 4)
        steps.append((kernels[kernel], grid, block[0], args, shared))
    reader.take(8)  # the arena's size
    size = reader.unpack("Q")[0]
    reader.take(-reader.at % WEIGHT_ALIGNMENT)
    blob = reader.take(size)
    weights = {}
    for name, offset in weight_offsets.items():
        _, dtype, shape = buffers[name]
        weights[name] = blob[offset:offset + math.prod(shape) * np.dtype(STORAGE[dtype]).itemsize]
    return steps, buffers, outputs, weights


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


SHARED_ARRAYS = re.compile(r"__shared__ (?:__align__\(\d+\) )?(\w+(?: \w+)*?) "
                           r"(\w+(?:\[\d+\])+(?:, \w+(?:\[\d+\])+)*);")
DYNAMIC_SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?unsigned char (\w+)\[\];")


def with_emulated_shared_memory(name, text):
    """The kernel's source with its shared memory declarations in the emulator's terms
    (cuda_emulator.h: emu_shared, emu_dynamic_shared)."""
    def arrays(match):
        element = match.group(1)
        return " ".join(f'static {element} (&{array}){dims} = emu_shared<{element}{dims}>'
                        f'("{array}");'
                        for array, dims in re.findall(r"(\w+)((?:\[\d+\])+)", match.group(2)))
    text = SHARED_ARRAYS.sub(arrays, DYNAMIC_SHARED.sub(
        r"unsigned char* const \1 = emu_dynamic_shared();", text))
    if "__shared__" in text:
        line = text[text.index("__shared__"):].split("\n")[0]
        raise Failed(f"{name}: a shared memory declaration the emulator does not take: {line}")
    return text


def compile_emulator(cxx, work_dir):
    """cuda_emulator.cc compiled once for every run that shares `work_dir`: the object file is
    named by a hash of the compiler and the emulator's source, and written whole or not at all
    (tests run in parallel)."""
    digest = hashlib.sha256(cxx.encode())
    for name in ("cuda_emulator.h", "cuda_emulator.cc"):
        with open(os.path.join(HERE, name), "rb") as file:
            digest.update(file.read())
    path = os.path.join(work_dir, f"cuda_emulator_{digest.hexdigest()[:16]}.o")
    if not os.path.exists(path):
        partial = f"{path}.{os.getpid()}"
        run([cxx, "-O1", "-std=c++20", "-w", "-fPIC", "-c", os.path.join(HERE, "cuda_emulator.cc"),
             "-o", partial])
        os.replace(partial, path)
    return path


def build(cxx, emulator, work, kernels, mutation):
    """One shared library with the emulator (its object file), the kernels (names) and the device
    functions the emulator does not replace, each kernel in its own namespace (their vector
    structs and functions share names), and a run_<kernel>(void** args) entry for each; the
    kernels' __launch_bounds__ ({name: threads}, 1024 where none); and the formats of the mma
    they use. With `mutation` (a key of MUTATIONS), each kernel's source mutated first."""
    sources, launch_bounds, mma_formats = ['#include "cuda_emulator.h"'], {}, set()
    mutated = 0
    for name in sorted(kernels):
        with open(os.path.join(work, "cu", name + ".cu")) as file:
            text = file.read()
        if mutation:
            text, count = re.subn(*MUTATIONS[mutation], text, count=1)
            mutated += count
        mma_formats |= {fmt for fmt, call in [("fp16", "kiln_mma_f16_"), ("bf16", "kiln_mma_bf16_"),
                                             ("tf32", "kiln_mma_tf32_")] if call in text}
        bounds = re.search(r"__launch_bounds__\((\d+)\) " + re.escape(name) + r"\(", text)
        launch_bounds[name] = int(bounds.group(1)) if bounds else 1024
        starts = [at for at in (text.find("struct __align__"), text.find('extern "C"')) if at >= 0]
        kernel = with_emulated_shared_memory(
            name, library_without_replacements(text[:min(starts)]) + "\n" + text[min(starts):])
        signature = re.search(re.escape(name) + r"\((.*?)\) \{", kernel).group(1)
        types = [param.rsplit("*", 1)[0].replace("const ", "") + "*"
                 for param in signature.split(", ")]
        call = ", ".join(f"({t})args[{i}]" for i, t in enumerate(types))
        sources += [f"namespace {name} {{", kernel,
                    f'extern "C" void run_{name}(void** args) {{ {name}({call}); }}', "}"]
    if mutation and not mutated:
        raise Failed(f"the mutation {mutation} matches no kernel's source")
    source = os.path.join(work, "kernels.cc")
    with open(source, "w") as file:
        file.write("\n".join(sources) + "\n")
    library = os.path.join(work, "kernels.so")
    run([cxx, "-O1", "-std=c++20", "-w", "-shared", "-fPIC", f"-I{HERE}", emulator, source, "-o",
         library])
    library = ctypes.CDLL(library)
    library.emu_global_alloc.restype = ctypes.c_void_p
    library.emu_global_alloc.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    library.emu_global_read_only.argtypes = [ctypes.c_void_p]
    library.emu_set_schedule.argtypes = [ctypes.c_char_p, ctypes.c_uint]
    library.emu_launch.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p] + \
        [ctypes.c_uint] * 4 + [ctypes.c_size_t, ctypes.c_uint]
    return library, launch_bounds, mma_formats


def allocate(library, buffers):
    """{name: array} over the emulator's guarded memory for every buffer."""
    arrays = {}
    for name, (_, dtype, shape) in buffers.items():
        storage = np.dtype(STORAGE[dtype])
        size = math.prod(shape) * storage.itemsize
        address = library.emu_global_alloc(name.encode(), size)
        memory = (ctypes.c_uint8 * size).from_address(address)
        arrays[name] = np.frombuffer(memory, storage).reshape(shape)
    return arrays


def run_schedules(library, steps, launch_bounds, arrays, garbage):
    """Runs the steps in every schedule, the arrays of `garbage` ({name: value}) set to their
    garbage first; returns those arrays after the first schedule, and {name: what is wrong} for
    each that another schedule leaves with other bits."""
    first, differences = None, {}
    for kind, seed in SCHEDULES:
        library.emu_set_schedule(kind.encode(), seed)
        for name, value in garbage.items():
            arrays[name][...] = value
        for kernel, grid, threads, args, shared in steps:
            pointers = (ctypes.c_void_p * len(args))(*[arrays[a].ctypes.data for a in args])
            library.emu_launch(kernel.encode(), ctypes.cast(getattr(library, "run_" + kernel),
                                                            ctypes.c_void_p),
                               pointers, *grid, threads, shared, launch_bounds[kernel])
        if first is None:
            first = {name: arrays[name].copy() for name in garbage}
            continue
        for name in garbage:
            bits = f"u{arrays[name].itemsize}"
            differ = int((arrays[name].view(bits) != first[name].view(bits)).sum())
            if differ and name not in differences:
                schedule = f"{kind} (seed {seed})" if kind == "shuffled" else kind
                differences[name] = (f"{differ} of {arrays[name].size} elements differ between "
                                     f"the {SCHEDULES[0][0]} and {schedule} schedules")
    return first, differences


def judge(got, want, fmt):
    """'' when got matches want computed in the arithmetic format `fmt`, else what is wrong; and
    a summary of the errors."""
    finite = np.isfinite(want) & np.isfinite(got)
    errors = np.abs(got[finite] - want[finite])
    max_error = float(errors.max(initial=0))
    max_want = float(np.abs(want[finite]).max(initial=0))
    got_norm, want_norm = float(np.linalg.norm(got[finite])), float(np.linalg.norm(want[finite]))
    cosine = float(np.dot(got[finite], want[finite]) / (got_norm * want_norm)) \
        if got_norm * want_norm else 1.0
    ratio = got_norm / want_norm if want_norm else float(got_norm == 0)
    error_in_u = max_error / (UNIT_ROUNDOFF[fmt] * max_want) if max_want else 0.0
    summary = (f"{fmt}: max error {max_error:.3g} = {error_in_u:.3g} (of {ERROR_FACTOR[fmt]}) "
               f"u·max|want|, norm ratio {ratio:.6f}, cosine {cosine:.7f}")
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return f"NaN at {np.isnan(got).sum()} places, the reference at {np.isnan(want).sum()}", \
            summary
    if not np.array_equal(np.isfinite(got), np.isfinite(want)):
        return "infinite where the reference is finite, or the other way round", summary
    problems = []
    if max_error > ATOL + ERROR_FACTOR[fmt] * UNIT_ROUNDOFF[fmt] * max_want:
        problems.append(f"max error beyond {ATOL:g} + {ERROR_FACTOR[fmt]} u·max|want|")
    if abs(got_norm - want_norm) > 0.01 * want_norm + ATOL * math.sqrt(want.size):
        problems.append("norm ratio beyond 1 ± 1%")
    if cosine < 0.9999:
        problems.append("cosine below 0.9999")
    if fmt == "fp32":
        bad = int((errors > 1e-4 + 1e-3 * np.abs(want[finite])).sum())
        if bad:
            problems.append(f"{bad} elements beyond 1e-4 + 1e-3·|want|")
    return "; ".join(problems), summary


def reference_outputs(kiln, graph, precision, feeds, reference):
    """The graph's outputs from `kiln run --device cpu`, in order: it prints a line `NAME: TYPE
    [values]` for each and writes NAME.npy (unsafe characters as '_', an empty name as '_')."""
    text = run([kiln, "run", graph, "--device", "cpu", "--precision", precision, "--output-dir",
                reference, *feeds])
    names = re.findall(r"^(.*): \w+\[[\d,]*\] ", text, re.M)
    files = [re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_" for name in names]
    return [np.load(os.path.join(reference, file + ".npy")) for file in files]


def check(kiln, cxx, emulator, graph, precision, work, mutation, disabled_passes, tactic):
    """Prints a line for each of the graph's outputs (and intermediate that a schedule changes);
    returns whether all match the reference."""
    program = os.path.join(work, "program.kiln")
    disable = [f"--disable-pass={disabled_passes}"] if disabled_passes else []
    disable += [f"--tactic={tactic}"] if tactic else []
    run([kiln, "compile", graph, "--precision", precision, "--arch", "sm_80", "--emit-cuda",
         os.path.join(work, "cu"), "-o", program, "--cache-dir", os.path.join(work, "cache"),
         *disable])
    steps, buffers, outputs, weights = read_program(program)
    library, launch_bounds, mma_formats = build(cxx, emulator, work, {step[0] for step in steps},
                                                mutation)
    arrays = allocate(library, buffers)
    rng = np.random.default_rng(1)
    feeds, garbage = [], {}
    for name, (kind, dtype, shape) in buffers.items():
        if kind == "input":
            if dtype in INTEGER_INPUT_RANGE:
                values = rng.integers(*INTEGER_INPUT_RANGE[dtype], size=shape, dtype=STORAGE[dtype])
            else:
                values = rng.standard_normal(shape).astype(np.float32)
            arrays[name][...] = ((values.view(np.uint32) >> 16).astype(np.uint16)
                                 if dtype == "bf16" else values.astype(STORAGE[dtype]))
            library.emu_global_read_only(arrays[name].ctypes.data)
            path = os.path.join(work, name + ".npy")
            np.save(path, as_float(arrays[name], dtype) if dtype == "bf16" else arrays[name])
            feeds.append(f"--input={name}={path}")
        elif kind == "weight":
            arrays[name].reshape(-1).view(np.uint8)[...] = np.frombuffer(weights[name], np.uint8)
            library.emu_global_read_only(arrays[name].ctypes.data)
        elif dtype in INTEGER_INPUT_RANGE:
            garbage[name] = np.iinfo(STORAGE[dtype]).min
        else:
            garbage[name] = 0x7fc0 if dtype == "bf16" else np.nan
    results, differences = run_schedules(library, steps, launch_bounds, arrays, garbage)
    wants = reference_outputs(kiln, graph, precision, feeds, os.path.join(work, "reference"))
    fmt = max([precision, *mma_formats,
               *[FORMAT_OF_DTYPE[d] for _, d, _ in buffers.values() if d in FORMAT_OF_DTYPE]],
              key=UNIT_ROUNDOFF.get)
    lines = [(name, [], differences[name]) for name in differences if name not in outputs]
    for name, want in zip(outputs, wants):
        dtype = buffers[name][1]
        if dtype in INTEGER_INPUT_RANGE:
            wrong = int((results[name].reshape(want.shape) != want).sum())
            problem, summary = (f"{wrong} elements differ" if wrong else ""), ["compared exactly"]
        else:
            got, want = as_float(results[name], dtype).reshape(want.shape), want.astype(np.float32)
            problem, summary = judge(got, want, fmt)
            summary = [summary, "scaled by 1.5 or 1.05 rejected"]
            accepted = [scale for scale in (1.5, 1.05) if not judge(got * scale, want, fmt)[0]]
            if accepted and not problem:
                problem = f"the judge accepts it scaled by {accepted[0]}"
        lines.append((name, summary, "; ".join(p for p in (differences.get(name), problem) if p)))
    for name, summary, problem in lines:
        facts = [f"{len(steps)} steps", f"{len(SCHEDULES)} schedules", *summary]
        print(f"{'WRONG' if problem else 'ok   '} {os.path.basename(graph)} {precision} {name}: "
              f"{', '.join(facts)}{'; ' + problem if problem else ''}", flush=True)
    return not any(problem for _, _, problem in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("graphs", nargs="+")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--cxx", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--precision", choices=["fp32", "tf32", "fp16", "bf16"], default="fp32")
    parser.add_argument("--mutation", choices=sorted(MUTATIONS))
    parser.add_argument("--disable-pass", default="", help="passes kiln compile skips: a,b")
    parser.add_argument("--tactic", default="",
                        help="kiln compile --tactic: the tactic kernels with several take")
    args = parser.parse_args()
    work_dir = os.path.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    try:
        emulator = compile_emulator(args.cxx, work_dir)
    except Failed as error:
        print(f"FAIL the emulator: {error}", flush=True)
        return 1
    passed = True
    for graph in args.graphs:
        name = f"{os.path.splitext(os.path.basename(graph))[0]}_{args.precision}"
        if args.mutation:
            name += "_" + args.mutation
        if args.tactic:
            name += "_" + re.sub(r"[^A-Za-z0-9]+", "_", args.tactic)
        work = os.path.join(work_dir, name)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        try:
            passed &= check(args.kiln, args.cxx, emulator, graph, args.precision, work,
                            args.mutation, args.disable_pass, args.tactic)
        except Failed as error:
            print(f"FAIL {name}: {error}", flush=True)
            passed = False
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
