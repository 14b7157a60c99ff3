#!/usr/bin/env python3
"""One real-model test: export with PyTorch, reference with onnxruntime, run kiln, compare.

Run with the interpreter that has the pip packages onnxruntime and numpy (ctest does this):
    python3 tests/models/run_model_test.py --kiln build/bin/kiln --work-dir DIR \
        --torch-python /usr/bin/python3 MODEL [--atol 1e-4] [--rtol 1e-3]

Steps, each timed:
  1. export: `TORCH_PYTHON export_models.py DIR MODEL`, skipped when DIR/<model>.onnx was made
     by the current export_models.py (a stamp file holds the script's hash);
  2. reference: reference_outputs.py (onnxruntime, optimizations off), skipped when its expected
     outputs are newer than the model;
  3. kiln: `kiln run DIR/<model>.onnx --device cpu --input NAME=FILE.npy... --output-dir
     DIR/<model>/got --expect DIR/<model>/expected --atol A --rtol R`;
  4. an independent comparison of got/ against expected/ with the same rule,
     |got - want| <= atol + rtol * |want|, so a kiln that writes nothing cannot pass.
With --precision fp16 or bf16 (and --stage fused), step 3 runs `kiln run --precision P` without
--expect, and step 4 requires each output's cosine similarity to onnxruntime's fp32 output to be
at least --min-cosine (0.999), its largest error and its norm within the precision's
SIXTEEN_BIT_BARS, printing them, max rel error and, for logits, top-1 agreement.
Exit status: 0 pass, 1 mismatch or a failed step, 77 skipped: the export interpreter lacks what
the model's export needs beyond torch and torchvision (OPTIONAL_EXPORT_NEEDS: transformers for
llama and t5).
"""
import argparse
import glob
import hashlib
import os
import subprocess
import sys
import time

import numpy as np

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
EXPORT_SCRIPT = os.path.join(SCRIPT_DIR, "export_models.py")
REFERENCE_SCRIPT = os.path.join(SCRIPT_DIR, "reference_outputs.py")


# Models whose export needs more than torch and torchvision, which the tests treat as optional:
# (what it needs, in words; Python code that fails without it). Without it the model's tests are
# skipped (SKIP_EXIT_CODE), not failed.
OPTIONAL_EXPORT_NEEDS = {
    "llama": ("transformers, onnxscript and torch's dynamo exporter",
              "import inspect, torch, transformers, onnxscript; "
              "assert 'dynamo' in inspect.signature(torch.onnx.export).parameters"),
    "t5": ("transformers", "import transformers"),
}
SKIP_EXIT_CODE = 77  # ctest's SKIP_RETURN_CODE for the model tests


class StepFailed(Exception):
    pass


class ExportSkipped(Exception):
    """The export interpreter lacks a model's OPTIONAL_EXPORT_NEEDS."""


def can_run(python, code):
    """Whether `python` exists and runs `code` without an error."""
    return os.path.exists(python) and subprocess.run(
        [python, "-c", code], capture_output=True).returncode == 0


def run_command(command):
    """Runs a command, echoing it and its output; returns (wall seconds, exit status)."""
    print(f"$ {' '.join(command)}", flush=True)
    start = time.time()
    result = subprocess.run(command)
    return time.time() - start, result.returncode


def run_step(title, command):
    """Runs a command that must succeed; returns its wall time in seconds."""
    seconds, status = run_command(command)
    if status != 0:
        raise StepFailed(f"{title} failed (exit status {status})")
    return seconds


def file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def export_if_needed(args, model_path, model_dir):
    stamp_path = os.path.join(model_dir, "export.stamp")
    batch = getattr(args, "batch", 1)  # the callers without a --batch option export batch 1
    wanted = f"{file_hash(EXPORT_SCRIPT)} batch {batch}"
    if os.path.exists(model_path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == wanted:
                print(f"export: cached {model_path}")
                return None
    if not can_run(args.torch_python, "import torch, torchvision"):
        raise StepFailed(
            f"export needs PyTorch and torchvision, but '{args.torch_python}' cannot import them "
            "(Debian: apt-get install python3-torch python3-torchvision; or configure with "
            "-DKILN_TORCH_PYTHON=/path/to/python)")
    if args.model in OPTIONAL_EXPORT_NEEDS:
        needs, probe = OPTIONAL_EXPORT_NEEDS[args.model]
        if not can_run(args.torch_python, probe):
            raise ExportSkipped(
                f"the export of {args.model} needs {needs}, which '{args.torch_python}' lacks "
                "(configure with -DKILN_TRANSFORMERS_PYTHON=/path/to/python)")
    seconds = run_step("export", [args.torch_python, EXPORT_SCRIPT, args.work_dir, args.model,
                                  "--batch", str(batch)])
    with open(stamp_path, "w") as f:
        f.write(wanted + "\n")
    return seconds


def reference_if_needed(args, model_path, model_dir):
    expected = glob.glob(os.path.join(model_dir, "expected", "*.npy"))
    if expected and min(os.path.getmtime(p) for p in expected) > os.path.getmtime(model_path):
        print(f"reference: cached {os.path.dirname(expected[0])}")
        return None
    return run_step("onnxruntime reference",
                    [sys.executable, REFERENCE_SCRIPT, args.work_dir, args.model])


def input_arguments(model_dir):
    """`--input NAME=FILE.npy` for each of the model's exported inputs, for kiln run."""
    arguments = []
    for input_path in sorted(glob.glob(os.path.join(model_dir, "inputs", "*.npy"))):
        input_name = os.path.splitext(os.path.basename(input_path))[0]
        arguments += ["--input", f"{input_name}={input_path}"]
    return arguments


def clear_outputs(got_dir):
    """Removes a previous run's outputs, so that a kiln that writes nothing cannot pass."""
    for stale in glob.glob(os.path.join(got_dir, "*.npy")):
        os.remove(stale)


def output_pairs(expected_dir, got_dir):
    """(name, want, got) in float64 for each expected output; prints the missing and misshapen
    ones and returns (pairs, whether all outputs are there in the expected shapes)."""
    pairs, all_there = [], True
    for want_path in sorted(glob.glob(os.path.join(expected_dir, "*.npy"))):
        name = os.path.basename(want_path)
        got_path = os.path.join(got_dir, name)
        if not os.path.exists(got_path):
            print(f"  {name}: MISSING from {got_dir}")
            all_there = False
            continue
        want = np.load(want_path).astype(np.float64)
        got = np.load(got_path).astype(np.float64)
        if got.shape != want.shape:
            print(f"  {name}: shape {list(got.shape)}, expected {list(want.shape)}")
            all_there = False
            continue
        pairs.append((name, want, got))
    return pairs, all_there


def compare_outputs(expected_dir, got_dir, atol, rtol):
    """Prints max abs/rel error and the norm ratio per output; returns True when every element is
    in tolerance and each norm within 1% (plus atol * sqrt(n)) of the expected one's."""
    pairs, all_ok = output_pairs(expected_dir, got_dir)
    for name, want, got in pairs:
        error = np.abs(got - want)
        bad = int(np.count_nonzero(~(error <= atol + rtol * np.abs(want))))
        relative = error / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
        # Largest error as a fraction of its element's allowance: < 1 passes, shows headroom.
        budget_used = error / (atol + rtol * np.abs(want))
        worst = np.unravel_index(np.argmax(error), error.shape) if error.size else ()
        print(f"  {name}: max abs error {error.max(initial=0):.3g}"
              f"{f' at {list(map(int, worst))}' if error.size else ''}, "
              f"max rel error {relative.max(initial=0):.3g}, "
              f"max error/tolerance {budget_used.max(initial=0):.3g}, "
              f"norm ratio {norm_ratio(got, want):.6f}, "
              f"{bad}/{want.size} elements out of tolerance")
        norm_ok = abs(np.linalg.norm(got) - np.linalg.norm(want)) <= (
            0.01 * np.linalg.norm(want) + atol * np.sqrt(want.size))
        all_ok = all_ok and bad == 0 and norm_ok
    return all_ok


# The 16-bit bars of a model's outputs against onnxruntime's fp32 ones, besides cosine: the
# largest error as a fraction of the largest expected magnitude, and the norm ratio's distance
# from 1. Calibrated on the dev models with random weights (docs/MODELS.md: fp16 at most 0.021
# and 0.09%, bf16 at most 0.111 and 0.73%, ResNet-50 and MobileNetV2 the worst), so an output
# scaled by 1.5 fails in both.
SIXTEEN_BIT_BARS = {"fp16": (0.05, 0.01), "bf16": (0.2, 0.02)}
# In fp16 a classifier's top-1 class must agree with the reference's on every row where that
# class leads by more than this fraction of the largest logit.
TOP1_MARGIN = 0.01


def norm_ratio(got, want):
    """||got|| / ||want|| (1 when both are 0)."""
    want_norm, got_norm = np.linalg.norm(want), np.linalg.norm(got)
    return float(got_norm / want_norm) if want_norm else (1.0 if not got_norm else float("inf"))


def compare_16bit(expected_dir, got_dir, precision, min_cosine):
    """For 16-bit runs: prints each output's cosine similarity to the expected one, its largest
    error (also as a fraction of the largest expected magnitude), norm ratio and max rel error,
    and for logits the top-1 agreement (with the reference's margin between its two best
    classes, which a top-1 flip needs the error to exceed) and the top-5 overlap. Returns True
    when every output is finite, its cosine at least min_cosine and its error and norm within
    the precision's SIXTEEN_BIT_BARS."""
    max_error_of_max, norm_tolerance = SIXTEEN_BIT_BARS[precision]
    pairs, all_ok = output_pairs(expected_dir, got_dir)
    for name, want, got in pairs:
        error = np.abs(got - want)
        relative = error / np.maximum(np.abs(want), np.finfo(np.float32).tiny)
        norms = np.linalg.norm(want) * np.linalg.norm(got)
        cosine = float(np.sum(want * got) / norms) if norms > 0 else float(
            np.array_equal(want, got))
        largest = np.abs(want).max(initial=0)
        of_max = float(error.max(initial=0) / largest) if largest else float(error.max(initial=0))
        ratio = norm_ratio(got, want)
        failed = [rule for rule, bad in [
            ("not finite", not np.isfinite(got).all()),
            (f"cosine below {min_cosine:g}", cosine < min_cosine),
            (f"error above {max_error_of_max:g} of max |want|", of_max > max_error_of_max),
            (f"norm off by more than {norm_tolerance:.0%}", abs(ratio - 1) > norm_tolerance)]
            if bad]
        print(f"  {name}: cosine {cosine:.6f}, max abs error {error.max(initial=0):.3g} "
              f"({of_max:.3g} of max |want|), norm ratio {ratio:.6f}, "
              f"max rel error {relative.max(initial=0):.3g}"
              + (f"; FAILED: {', '.join(failed)}" if failed else ""))
        if name == "logits.npy":
            # fp16 must keep the reference's top-1 class wherever it leads by more than 1% of the
            # largest logit (a flip there fits the error bound but is wrong); nearer ties are
            # reported only, as are bf16's flips.
            for row_want, row_got in zip(want.reshape(len(want), -1), got.reshape(len(got), -1)):
                best_want, best_got = np.argsort(-row_want)[:5], np.argsort(-row_got)[:5]
                margin = row_want[best_want[0]] - row_want[best_want[1]]
                agrees = best_want[0] == best_got[0]
                required = precision == "fp16" and margin > TOP1_MARGIN * largest
                print(f"    top-1 {'agrees' if agrees else 'DIFFERS'} (class {best_want[0]} "
                      f"expected, {best_got[0]} got; expected margin to the second class "
                      f"{margin:.3g}{', agreement required' if required else ''}), top-5 "
                      f"overlap {len(set(best_want) & set(best_got))}/5")
                if required and not agrees:
                    failed.append("top-1 differs with a clear margin")
        all_ok = all_ok and not failed
    return all_ok


def compare_at_precision(title, expected_dir, got_dir, args):
    """compare_outputs with args.atol and args.rtol for args.precision fp32, else
    compare_16bit; prints the rule after `title`."""
    if args.precision == "fp32":
        print(f"{title} (atol {args.atol:g}, rtol {args.rtol:g}, norm within 1%):")
        return compare_outputs(expected_dir, got_dir, args.atol, args.rtol)
    max_error_of_max, norm_tolerance = SIXTEEN_BIT_BARS[args.precision]
    print(f"{title} ({args.precision}: cosine at least {args.min_cosine:g}, max error at most "
          f"{max_error_of_max:g} of max |want|, norm within {norm_tolerance:.0%}):")
    return compare_16bit(expected_dir, got_dir, args.precision, args.min_cosine)


def report_verdict(name, timings, passed):
    """Prints the steps' timings and PASS or FAIL `name`; returns the exit status."""
    print("timings: " + ", ".join(f"{step} {seconds:.2f} s" for step, seconds in timings.items()
                                  if seconds is not None))
    print(f"{'PASS' if passed else 'FAIL'} {name}")
    return 0 if passed else 1


def model_test_parser(description):
    """The arguments every model test takes: the model, kiln, the work directory, the export's
    interpreter, --precision and the pass bar (--atol, --rtol, --min-cosine)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("model")
    parser.add_argument("--kiln", required=True, help="the kiln binary")
    parser.add_argument("--work-dir", required=True, help="where models and data are cached")
    parser.add_argument("--torch-python", default="/usr/bin/python3",
                        help="an interpreter with torch and torchvision, for the export")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "bf16"],
                        help="kiln --precision (fp16, bf16: judged by cosine similarity, the "
                             "error against the largest expected magnitude and the norm instead "
                             "of atol/rtol)")
    parser.add_argument("--batch", type=int, default=1,
                        help="the batch size the model is exported with (give each its own "
                             "--work-dir)")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--min-cosine", type=float, default=0.999,
                        help="with --precision fp16 or bf16, the least cosine per output")
    return parser


def main():
    parser = model_test_parser(__doc__.splitlines()[0])
    parser.add_argument("--stage", default="imported", choices=["imported", "optimized", "fused"],
                        help="kiln run --stage: the imported graph, or after the pass pipeline "
                             "(--precision fp16 and bf16 need fused)")
    args = parser.parse_args()
    sixteen_bit = args.precision != "fp32"
    if sixteen_bit and args.stage != "fused":
        parser.error(f"--precision {args.precision} runs at --stage fused")

    model_path = os.path.join(args.work_dir, f"{args.model}.onnx")
    model_dir = os.path.join(args.work_dir, args.model)
    got_dir = os.path.join(model_dir, f"got_{args.stage}" +
                           (f"_{args.precision}" if sixteen_bit else ""))
    expected_dir = os.path.join(model_dir, "expected")
    os.makedirs(model_dir, exist_ok=True)
    timings = {}
    try:
        timings["export"] = export_if_needed(args, model_path, model_dir)
        timings["onnxruntime"] = reference_if_needed(args, model_path, model_dir)
        clear_outputs(got_dir)
        command = [args.kiln, "run", model_path, "--device", "cpu", "--stage", args.stage,
                   *input_arguments(model_dir), "--output-dir", got_dir]
        if sixteen_bit:
            command += ["--precision", args.precision]
        else:
            command += ["--expect", expected_dir, "--atol", str(args.atol), "--rtol",
                        str(args.rtol)]
        timings["kiln"], kiln_status = run_command(command)
        if kiln_status != 0:
            print(f"kiln run failed (exit status {kiln_status})")
        outputs_ok = compare_at_precision("comparison", expected_dir, got_dir, args)
    except StepFailed as failure:
        print(f"FAIL {args.model}: {failure}")
        return 1
    except ExportSkipped as reason:
        print(f"SKIP {args.model}: {reason}")
        return SKIP_EXIT_CODE
    return report_verdict(args.model, timings, kiln_status == 0 and outputs_ok)


if __name__ == "__main__":
    sys.exit(main())
