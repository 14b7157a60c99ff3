#!/usr/bin/env python3
"""Fusion test of one dev model: kernel counts after fusion, and fused equals unfused.

Run with the interpreter that has numpy (ctest does this):
    python3 tests/models/check_fusion.py MODEL --kiln build/bin/kiln --work-dir DIR \
        --expected tests/models/expected_kernels.json [--atol 1e-4] [--rtol 1e-3]

  1. export the model if needed (as run_model_test.py does, same cache);
  2. `kiln dump-ir --stage fused --format json`: the kernel counts (total, fusions by kind,
     unfused ops by op) must equal the committed ones in expected_kernels.json; a difference
     prints both, so an intended change is a one-line update of that file;
  3. `kiln run --stage imported` and `kiln run --stage fused` on the model's inputs: the fused
     graph's outputs must equal the unfused graph's within |fused - unfused| <= atol + rtol *
     |unfused| (both on kiln's reference interpreter).
Exit status: 0 pass, 1 mismatch or a failed step, 77 skipped (run_model_test.py's
OPTIONAL_EXPORT_NEEDS missing).
"""
import argparse
import json
import os
import subprocess
import sys

from run_model_test import (SKIP_EXIT_CODE, ExportSkipped, StepFailed, clear_outputs,
                            compare_outputs, export_if_needed, input_arguments, run_step)


def kernel_counts(kiln, model_path):
    command = [kiln, "dump-ir", model_path, "--stage", "fused", "--format", "json"]
    print(f"$ {' '.join(command)}", flush=True)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise StepFailed(f"dump-ir failed (exit status {result.returncode}): {result.stderr}")
    kernels = json.loads(result.stdout)["kernels"]
    return {"total": kernels["total"], "fusions": kernels["fusions"],
            "unfused": kernels["unfused"]}


def run_stage(kiln, model_path, model_dir, stage):
    got_dir = os.path.join(model_dir, f"got_{stage}")
    clear_outputs(got_dir)
    command = [kiln, "run", model_path, "--device", "cpu", "--stage", stage,
               "--output-dir", got_dir, *input_arguments(model_dir)]
    run_step(f"kiln run --stage {stage}", command)
    return got_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    parser.add_argument("--expected", required=True, help="expected_kernels.json")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-3)
    args = parser.parse_args()

    model_path = os.path.join(args.work_dir, f"{args.model}.onnx")
    model_dir = os.path.join(args.work_dir, args.model)
    os.makedirs(model_dir, exist_ok=True)
    with open(args.expected) as f:
        expected = json.load(f)[args.model]
    try:
        export_if_needed(args, model_path, model_dir)
        counts = kernel_counts(args.kiln, model_path)
        print(f"kernels after fusion: {json.dumps(counts, sort_keys=True)}")
        counts_ok = counts == expected
        if not counts_ok:
            print(f"expected (from {args.expected}): {json.dumps(expected, sort_keys=True)}")
        unfused_dir = run_stage(args.kiln, model_path, model_dir, "imported")
        fused_dir = run_stage(args.kiln, model_path, model_dir, "fused")
        print(f"fused vs unfused (atol {args.atol:g}, rtol {args.rtol:g}):")
        outputs_ok = compare_outputs(unfused_dir, fused_dir, args.atol, args.rtol)
    except StepFailed as failure:
        print(f"FAIL {args.model}: {failure}")
        return 1
    except ExportSkipped as reason:
        print(f"SKIP {args.model}: {reason}")
        return SKIP_EXIT_CODE
    if counts_ok and outputs_ok:
        print(f"PASS {args.model}")
        return 0
    print(f"FAIL {args.model}" + ("" if counts_ok else ": kernel counts differ"))
    return 1


if __name__ == "__main__":
    sys.exit(main())
