#!/usr/bin/env python3
"""Proves that `kiln test-onnx` cannot pass a wrong scale: copies a few ONNX node tests with their
expected float outputs multiplied by 1.5 or 1.05 and checks that every copy FAILS in every
precision (fp32 and tf32 by the element-wise error and the norm; fp16 and bf16 by the norm, which
must be within 1%, and for 1.5 the error bound too: cosine alone passes both). The unscaled
cases must pass, so a failure here is the judge's doing, not the cases'.

usage: scaled_expectations.py KILN NODE_TEST_DIR WORK_DIR [--device gpu]
"""
import os
import re
import shutil
import subprocess
import sys

import numpy as np
from onnx import TensorProto, load_tensor, numpy_helper

CASES = [
    "test_add_bcast", "test_averagepool_2d_default", "test_conv_with_strides_padding",
    "test_gelu_default_1", "test_gemm_default_no_bias", "test_layer_normalization_4d_axis0",
    "test_matmul_2d", "test_reduce_mean_default_axes_keepdims_random", "test_relu",
    "test_sigmoid", "test_softmax_example",
]
PRECISIONS = ["fp32", "tf32", "fp16", "bf16"]
# factor -> the precisions that must reject it
REJECTED = {1.5: PRECISIONS, 1.05: PRECISIONS}


def copy_scaled(source, destination, factor):
    shutil.copytree(source, destination)
    for root, _, files in os.walk(destination):
        for name in files:
            if not re.fullmatch(r"output_\d+\.pb", name):
                continue
            path = os.path.join(root, name)
            tensor = load_tensor(path)
            if tensor.data_type not in (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE):
                continue
            array = numpy_helper.to_array(tensor)
            scaled = numpy_helper.from_array((array * factor).astype(array.dtype), tensor.name)
            with open(path, "wb") as f:
                f.write(scaled.SerializeToString())


def totals(kiln, directory, precision, device):
    """(passed, failed, report) of kiln test-onnx over `directory`."""
    run = subprocess.run([kiln, "test-onnx", directory, "--precision", precision, "--device",
                          device], capture_output=True, text=True)
    if "no CUDA device" in run.stderr:
        sys.exit("kiln: error: no CUDA device")
    match = re.search(r"(\d+) passed, (\d+) failed, (\d+) skipped", run.stdout)
    if not match:
        sys.exit(f"unexpected test-onnx output:\n{run.stdout}{run.stderr}")
    return int(match.group(1)), int(match.group(2)), run.stdout


def main():
    kiln, node_dir, work = sys.argv[1:4]
    device = sys.argv[5] if sys.argv[4:5] == ["--device"] else "cpu"
    shutil.rmtree(work, ignore_errors=True)
    ok = True
    for factor in [1.0] + list(REJECTED):
        directory = os.path.join(work, f"scaled_{factor}")
        for case in CASES:
            copy_scaled(os.path.join(node_dir, case), os.path.join(directory, case), factor)
        for precision in PRECISIONS:
            passed, failed, report = totals(kiln, directory, precision, device)
            must_fail = precision in REJECTED.get(factor, [])
            good = (failed == len(CASES)) if must_fail else (passed == len(CASES))
            want = "every case FAIL" if must_fail else "every case PASS"
            print(f"expected outputs x{factor:g}, {precision} on the {device}: {passed} passed, {failed} failed "
                  f"({'ok' if good else 'WRONG'}: {want})")
            if not good:
                ok = False
                print(report)
    shutil.rmtree(work, ignore_errors=True)
    print("scaled expectations: " + ("all judged as they must be" if ok else "JUDGED WRONG"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
