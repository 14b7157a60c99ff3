#!/usr/bin/env python3
"""One real-model test on the GPU: compile with kiln, run the .kiln file on the GPU, and check it
against onnxruntime and against kiln's CPU reference interpreter.

Run with the interpreter that has onnxruntime and numpy (ctest does this):
    python3 tests/models/run_gpu_model_test.py MODEL --kiln build/bin/kiln --work-dir DIR \
        --torch-python PYTHON [--precision fp32|fp16|bf16] [--unfused] [--atol 1e-4] \
        [--rtol 1e-3] [--min-cosine 0.999]

Without a CUDA device (the driver, libcuda.so.1, absent or reporting no device) it prints
"no CUDA device: skipped" and exits 77 (ctest's SKIP_RETURN_CODE) before any other step.
Otherwise, each step timed:
  1. export and onnxruntime reference, as run_model_test.py does (same cache in DIR);
  2. kiln's CPU reference: `kiln run MODEL.onnx --device cpu --stage fused` with the same
     --precision and, for --unfused, the fusion passes disabled: the graph the GPU program
     computes, on the interpreter;
  3. `kiln compile MODEL.onnx --arch native [--precision P] [--no-fusion] -o FILE.kiln`;
  4. `kiln run FILE.kiln --device gpu --runs 2 --output-dir ...` on the exported inputs: the
     second run, a replay of the CUDA graph (its concurrent branches and early launches), is
     the one checked;
  5. the GPU outputs against onnxruntime's and against the CPU reference's: in fp32 every
     element within |got - want| <= atol + rtol * |want| and the norm within 1%; in fp16 and
     bf16 each output's cosine similarity at least --min-cosine, its error and norm within
     run_model_test.py's SIXTEEN_BIT_BARS (with top-1 agreement printed).
Exit status: 0 pass, 1 mismatch or a failed step, 77 no CUDA device, or the export interpreter
lacks what the model needs beyond torch and torchvision (run_model_test.py's
OPTIONAL_EXPORT_NEEDS).
"""
import ctypes
import os
import sys

from run_model_test import (SKIP_EXIT_CODE, ExportSkipped, StepFailed, clear_outputs,
                            compare_at_precision, export_if_needed, input_arguments,
                            model_test_parser, reference_if_needed, report_verdict, run_step)

FUSION_PASSES = "fuse-kernels,fuse-siblings"


def cuda_device_problem():
    """None when the CUDA driver reports a device, else why not (as kiln's --arch native asks)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "the CUDA driver libcuda.so.1 is not installed"
    status = driver.cuInit(0)
    if status != 0:
        return f"cuInit failed with CUDA error {status}"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return "the driver reports no device"
    return None


def main():
    parser = model_test_parser(__doc__.splitlines()[0])
    parser.add_argument("--unfused", action="store_true",
                        help="compile with --no-fusion (one kernel per op)")
    args = parser.parse_args()

    problem = cuda_device_problem()
    if problem:
        print(f"no CUDA device: skipped ({problem})")
        return SKIP_EXIT_CODE

    variant = f"{'unfused' if args.unfused else 'fused'}_{args.precision}"
    model_path = os.path.join(args.work_dir, f"{args.model}.onnx")
    model_dir = os.path.join(args.work_dir, args.model)
    expected_dir = os.path.join(model_dir, "expected")
    cpu_dir = os.path.join(model_dir, f"cpu_{variant}")
    gpu_dir = os.path.join(model_dir, f"gpu_{variant}")
    program_path = os.path.join(model_dir, f"{variant}.kiln")
    os.makedirs(model_dir, exist_ok=True)
    precision = [] if args.precision == "fp32" else ["--precision", args.precision]
    timings = {}
    try:
        timings["export"] = export_if_needed(args, model_path, model_dir)
        timings["onnxruntime"] = reference_if_needed(args, model_path, model_dir)
        inputs = input_arguments(model_dir)
        for stale in (cpu_dir, gpu_dir):
            clear_outputs(stale)
        if os.path.exists(program_path):
            os.remove(program_path)
        timings["kiln cpu"] = run_step(
            "kiln run --device cpu",
            [args.kiln, "run", model_path, "--device", "cpu", "--stage", "fused", *precision,
             *(["--disable-pass", FUSION_PASSES] if args.unfused else []), *inputs,
             "--output-dir", cpu_dir])
        timings["kiln compile"] = run_step(
            "kiln compile",
            [args.kiln, "compile", model_path, "--arch", "native", *precision,
             *(["--no-fusion"] if args.unfused else []), "-o", program_path])
        timings["kiln gpu"] = run_step(
            "kiln run --device gpu",
            [args.kiln, "run", program_path, "--device", "gpu", "--runs", "2", *inputs,
             "--output-dir", gpu_dir])
        against_onnxruntime = compare_at_precision("GPU against onnxruntime", expected_dir,
                                                   gpu_dir, args)
        against_cpu = compare_at_precision("GPU against kiln's CPU reference", cpu_dir, gpu_dir,
                                           args)
    except StepFailed as failure:
        print(f"FAIL {args.model} {variant}: {failure}")
        return 1
    except ExportSkipped as reason:
        print(f"SKIP {args.model} {variant}: {reason}")
        return SKIP_EXIT_CODE
    return report_verdict(f"{args.model} {variant}", timings, against_onnxruntime and against_cpu)


if __name__ == "__main__":
    sys.exit(main())
