#!/usr/bin/env python3
"""Dynamic shapes on a real model: one `kiln compile` for a range of batch sizes, then every batch.

Run with the interpreter that has numpy (and, for --device gpu, onnxruntime):
    python3 tests/models/run_dynamic_test.py MODEL --kiln build/bin/kiln --work-dir DIR \
        --torch-python PYTHON --batches 1..16 [--device cpu|gpu] [--sequence 60..64]

Steps:
  1. export: `export_models.py DIR MODEL --dynamic` (dim 0 symbolic; bert's dim 1 too), once;
     batch-b inputs: row k is the exported row rolled by 3·k along its last axis (rows differ, so
     a kernel mixing rows shows);
  2. `kiln compile DIR/MODEL_dynamic.onnx --input-shape NAME=LO..HIx... -o DIR/MODEL_dynamic.kiln`
     (--arch native --no-autotune with --device gpu), and `kiln inspect` of it: the batch must be padded and
     the variants must be the powers of two in the range and its end (times the sequence sizes);
     (with --sequence, the sequence length's variants too: padded, since the additive attention
     mask padded with zeros masks the padded keys);
  3. --device cpu: for each batch b and the variant size B it runs at, kiln's CPU reference on
     the inputs padded with zero rows to B (and zeros to the variant's sequence length), cut back
     to b rows (and the sequence), against the reference at b (|got - want| <= 1e-5 +
     1e-4·|want|): the padding the analysis allowed changes no real row;
     --device gpu: `kiln run DIR/MODEL_dynamic.kiln` at each batch (and each --sequence length)
     against onnxruntime at that shape, |got - want| <= 1e-4 + 1e-3·|want|.
Exit status: 0 pass, 1 mismatch or a failed step, 77 (gpu) no CUDA device, or no transformers
to export llama.
"""
import argparse
import ctypes
import os
import re
import subprocess
import sys

import numpy as np

from run_model_test import OPTIONAL_EXPORT_NEEDS  # llama's export needs transformers

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
SKIP_EXIT_CODE = 77


def parse_range(text):
    low, high = (int(part) for part in text.split(".."))
    return low, high


def run(command):
    print("+ " + " ".join(command), flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        raise SystemExit(f"FAILED: exit {result.returncode}")
    return result.stdout + result.stderr


def has_cuda_device():
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0 \
        and count.value > 0


def inputs_at(base_inputs, batch, sequence=None):
    """Batch-`batch` inputs from the exported batch-1 ones (sequence: cut or tiled to that length)."""
    inputs = {}
    for name, row in base_inputs.items():
        row = row[0]
        if sequence is not None:
            row = np.resize(row, (sequence,) + row.shape[1:])
        inputs[name] = np.stack([np.roll(row, 3 * k, axis=-1) for k in range(batch)])
    return inputs


def write_inputs(directory, inputs):
    os.makedirs(directory, exist_ok=True)
    arguments = []
    for name, value in inputs.items():
        path = os.path.join(directory, f"{name}.npy")
        np.save(path, value)
        arguments += ["--input", f"{name}={path}"]
    return arguments


def read_outputs(directory):
    return {os.path.splitext(f)[0]: np.load(os.path.join(directory, f))
            for f in sorted(os.listdir(directory)) if f.endswith(".npy")}


def close(got, want, atol, rtol):
    if got.shape != want.shape:
        return False, f"shape {got.shape} vs {want.shape}"
    error = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = atol + rtol * np.abs(want.astype(np.float64))
    worst = float(np.max(error - bound)) if error.size else -1.0
    return bool(np.all(error <= bound)), f"max |error| {float(error.max()) if error.size else 0:.3g}"


def reference_run(args, work, model_path, inputs, tag):
    """kiln's CPU reference on `inputs`; the outputs by name."""
    directory = os.path.join(work, tag)
    out_dir = os.path.join(directory, "out")
    os.makedirs(out_dir, exist_ok=True)
    run([args.kiln, "run", model_path, "--device", "cpu", "--output-dir", out_dir]
        + write_inputs(os.path.join(directory, "in"), inputs))
    return read_outputs(out_dir)


def variant_sizes(inspect_text, position=0):
    """The sizes of each variant's class `position` (0: the batch; 1: bert's sequence), from
    `kiln inspect`'s variant lines."""
    return sorted({int(m.group(1).split(",")[position])
                   for m in re.finditer(r"^\s+\d+: sizes ([\d,]+)", inspect_text, re.M)})


def powers_of_two_and_end(low, high):
    return sorted({p for p in (2 ** i for i in range(32)) if low <= p < high} | {high})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--torch-python", required=True)
    parser.add_argument("--batches", required=True, type=parse_range)
    parser.add_argument("--sequence", type=parse_range,
                        help="bert, llama: also vary the sequence length over LO..HI")
    parser.add_argument("--check", default="",
                        help="comma-separated batches to check (default: every one)")
    parser.add_argument("--check-sequences", default="",
                        help="comma-separated sequence lengths to check (default: every one)")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args()
    if args.device == "gpu" and not has_cuda_device():
        print("no CUDA device: skipped")
        return SKIP_EXIT_CODE

    work = os.path.join(args.work_dir, f"{args.model}-dynamic-{args.device}")
    os.makedirs(work, exist_ok=True)
    model_path = os.path.join(args.work_dir, f"{args.model}_dynamic.onnx")
    if args.model in OPTIONAL_EXPORT_NEEDS and not os.path.exists(model_path):
        needs, code = OPTIONAL_EXPORT_NEEDS[args.model]
        if subprocess.run([args.torch_python, "-c", code], capture_output=True).returncode != 0:
            print(f"{args.torch_python} lacks {needs}: skipped")
            return SKIP_EXIT_CODE
    if not os.path.exists(model_path):
        run([args.torch_python, os.path.join(SCRIPT_DIR, "export_models.py"), args.work_dir,
             args.model, "--dynamic"])
    input_dir = os.path.join(args.work_dir, args.model, "inputs")
    base = {os.path.splitext(f)[0]: np.load(os.path.join(input_dir, f))
            for f in sorted(os.listdir(input_dir)) if f.endswith(".npy")}

    low, high = args.batches
    specs = []
    for name, value in base.items():
        dims = [f"{low}..{high}"] + [str(d) for d in value.shape[1:]]
        if args.sequence:
            dims[1] = f"{args.sequence[0]}..{args.sequence[1]}"
        specs += ["--input-shape", f"{name}={'x'.join(dims)}"]
    program = os.path.join(work, f"{args.model}_dynamic.kiln")
    # Heuristic tactics: the tests check results (gpu_autotune checks the tuning).
    arch = ["--arch", "native", "--no-autotune"] if args.device == "gpu" else ["--arch", "sm_90a"]
    print(run([args.kiln, "compile", model_path, "-o", program] + arch + specs))
    report = run([args.kiln, "inspect", program])
    print(report.split("\nvariant ")[0])
    sizes = variant_sizes(report)
    expected = powers_of_two_and_end(low, high)
    if sizes != expected:
        print(f"FAILED: batch sizes of the variants {sizes}, expected {expected}")
        return 1
    if report.count("padded: a run of size n") != (2 if args.sequence else 1):
        print("FAILED: the batch (and the sequence) are not padded")
        return 1
    if args.sequence and "softmax over padded elements masked" not in report:
        print("FAILED: inspect does not say that the sequence's padding relies on masked keys")
        return 1
    sequence_sizes = variant_sizes(report, 1) if args.sequence else []
    if args.sequence and sequence_sizes != powers_of_two_and_end(*args.sequence):
        print(f"FAILED: sequence sizes of the variants {sequence_sizes}, expected "
              f"{powers_of_two_and_end(*args.sequence)}")
        return 1

    batches = ([int(b) for b in args.check.split(",")] if args.check
               else list(range(low, high + 1)))
    sequences = ([int(s) for s in args.check_sequences.split(",")] if args.check_sequences
                 else range(args.sequence[0], args.sequence[1] + 1) if args.sequence else [None])
    failures = 0
    for sequence in sequences:
        for batch in batches:
            inputs = inputs_at(base, batch, sequence)
            tag = f"b{batch}" + (f"s{sequence}" if sequence else "")
            if args.device == "cpu":
                bucket = min(s for s in sizes if s >= batch)
                length = min((s for s in sequence_sizes if s >= sequence), default=sequence)
                want = reference_run(args, work, model_path, inputs, tag)
                padded = {}
                for name, value in inputs.items():
                    widths = [(0, bucket - batch)] + [(0, 0)] * (value.ndim - 1)
                    if sequence:
                        widths[1] = (0, length - sequence)
                    padded[name] = np.pad(value, widths)
                got = {}
                for name, value in reference_run(args, work, model_path, padded,
                                                 tag + "-padded").items():
                    value = value[:batch]
                    if sequence and value.ndim >= 3 and value.shape[1] == length:
                        value = value[:, :sequence]  # bert's last hidden state [B, S, H]
                    got[name] = value
                what, atol, rtol = (f"padded to {bucket}" + (f"x{length}" if sequence else "")
                                    + " on the CPU reference", 1e-5, 1e-4)
            else:
                import onnxruntime
                session = onnxruntime.InferenceSession(model_path,
                                                       providers=["CPUExecutionProvider"])
                names = [o.name for o in session.get_outputs()]
                want = dict(zip(names, session.run(None, inputs)))
                out_dir = os.path.join(work, tag, "out")
                os.makedirs(out_dir, exist_ok=True)
                run([args.kiln, "run", program, "--output-dir", out_dir]
                    + write_inputs(os.path.join(work, tag, "in"), inputs))
                got = read_outputs(out_dir)
                what, atol, rtol = "kiln on the GPU vs onnxruntime", 1e-4, 1e-3
            for name, value in want.items():
                ok, detail = close(got[name], value, atol, rtol)
                print(f"{tag} {name}: {'ok' if ok else 'MISMATCH'} ({what}; {detail})")
                failures += not ok
    print("PASSED" if failures == 0 else f"FAILED: {failures} mismatches")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
