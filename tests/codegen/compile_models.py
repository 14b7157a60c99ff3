#!/usr/bin/env python3
"""Compiles every kernel the GPU backend generates for the dev models.

    python3 tests/codegen/compile_models.py --compiler BUILD/kiln_compile_all_kernels \
        --work-dir BUILD/models-work [--torch-python /usr/bin/python3] [--precisions fp32,fp16]
        [--arch sm_80,sm_90] MODEL...

Exports each model if needed (the model tests' export and cache: tests/models/run_model_test.py),
then runs kiln_compile_all_kernels on them: it lowers each (once per precision of --precisions,
default fp32) with any kernel the GPU backend does not generate left out, compiles the rest for
sm_80 and sm_90 and prints per model and precision the kernels compiled and the kernel nodes
skipped (--arch: other archs, e.g. sm_90a alone). Exit status: that of the compiler, 1 when an
export fails, or 77 when the export interpreter lacks what a model needs beyond torch and
torchvision (run_model_test.py's OPTIONAL_EXPORT_NEEDS).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from run_model_test import (SKIP_EXIT_CODE, ExportSkipped, StepFailed,  # noqa: E402
                            export_if_needed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--compiler", required=True, help="kiln_compile_all_kernels")
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--torch-python", default="/usr/bin/python3")
    parser.add_argument("--precisions", default="fp32")
    parser.add_argument("--arch", default="sm_80,sm_90")
    args = parser.parse_args()
    paths = []
    try:
        for model in args.models:
            model_dir = os.path.join(args.work_dir, model)
            os.makedirs(model_dir, exist_ok=True)
            model_path = os.path.join(args.work_dir, f"{model}.onnx")
            export_args = argparse.Namespace(torch_python=args.torch_python,
                                             work_dir=args.work_dir, model=model)
            export_if_needed(export_args, model_path, model_dir)
            paths.append(model_path)
    except StepFailed as error:
        print(f"FAIL: {error}")
        return 1
    except ExportSkipped as reason:
        print(f"SKIP: {reason}")
        return SKIP_EXIT_CODE
    command = [args.compiler, "--arch", args.arch, "--precisions", args.precisions, *paths]
    print(f"$ {' '.join(command)}", flush=True)
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())
