#!/usr/bin/env python3
"""Checks the model tests' judges (run_model_test.py) cannot pass a wrong scale: outputs scaled by
1.5 fail in fp32, fp16 and bf16, by 1.05 in fp32; the expected outputs themselves, and them
rounded to the 16-bit format, pass; and fp16 logits whose top-1 class changed where it led by 3%
of the largest logit fail, though within the error bound. Exit status 0 when every verdict is as
it must be.

usage: judge_selftest.py
"""
import contextlib
import io
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_model_test import compare_16bit, compare_outputs  # noqa: E402


def bf16_round(array):
    """array rounded to bfloat16 (nearest even), as float32."""
    bits = array.astype(np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.view(np.float32)


def verdict(judge, want, got):
    with tempfile.TemporaryDirectory() as work:
        expected_dir, got_dir = os.path.join(work, "expected"), os.path.join(work, "got")
        os.makedirs(expected_dir)
        os.makedirs(got_dir)
        np.save(os.path.join(expected_dir, "logits.npy"), want)
        np.save(os.path.join(got_dir, "logits.npy"), got)
        with contextlib.redirect_stdout(io.StringIO()):
            return judge(expected_dir, got_dir)


def main():
    want = np.random.default_rng(7).normal(size=(2, 1000)).astype(np.float32)
    judges = {
        "fp32": lambda e, g: compare_outputs(e, g, 1e-4, 1e-3),
        "fp16": lambda e, g: compare_16bit(e, g, "fp16", 0.999),
        "bf16": lambda e, g: compare_16bit(e, g, "bf16", 0.999),
    }
    rounded = {"fp32": want, "fp16": want.astype(np.float16).astype(np.float32),
               "bf16": bf16_round(want)}
    cases = [(precision, "as expected", rounded[precision], True) for precision in judges]
    cases += [(precision, "x1.5", want * 1.5, False) for precision in judges]
    cases += [("fp32", "x1.05", want * 1.05, False)]
    # Row 0's best two classes swapped, its best leading by 3% of the largest logit.
    top = want.copy()
    first, second = np.argsort(-top[0])[:2]
    top[0, second] = top[0, first] - 0.03 * np.abs(want).max()
    swapped = top.copy()
    swapped[0, [first, second]] = top[0, [second, first]]
    cases += [("fp16", "as expected (clear top-1)", top, True),
              ("fp16", "with row 0's top-1 swapped", swapped, False)]
    ok = True
    for precision, what, got, must_pass in cases:
        reference = top if "top-1" in what else want
        passed = verdict(judges[precision], reference, got)
        right = passed == must_pass
        ok = ok and right
        print(f"{precision} judge, outputs {what}: {'PASS' if passed else 'FAIL'} "
              f"({'as it must' if right else 'WRONG'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
