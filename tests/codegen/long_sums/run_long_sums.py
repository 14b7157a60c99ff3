#!/usr/bin/env python3
"""Long sums on the GPU (issue 15): long_sums.kir compiled for this GPU and run, its three
outputs checked against float64 values computed here without materializing the terms.

usage: run_long_sums.py KILN GRAPH WORK_DIR

  count  the sum of 1.0 expanded to 64000 × 64000 × 10: exactly 4.096e10;
  sum    Σ a[i] + b[j] over 2^17 × 2^17 pairs = 2^17 · (Σ a + Σ b);
  mean   the mean of a[i] · b[j] over those pairs = Σ a · Σ b / 2^34;
a and b seeded, uniform in [0, 1) squared (terms of one sign, skewed, so that rounding a running
sum that has outgrown them is biased). Each must be within 1e-6 of its value, relative. One
block sums a whole tensor, so each of its 1024 threads takes 2^24 or more terms: with one fp32
running sum a thread, 4e7 ones stop growing at 2^24 (count = 2^34 = 1.718e10), and the random
sums come out 1 to 3% low (simulated on the CPU: sum −1.2%, mean −2.9%); summed in chunks of at
most 1024 terms (codegen/reduction_emitter.cc) they are within 1e-8.

Exit status: 0 pass, 1 a value off or a failed step, 77 no CUDA device (`kiln compile --arch
native` says so; ctest's SKIP_RETURN_CODE).
"""
import os
import subprocess
import sys
import time

import numpy as np

SKIP_EXIT_CODE = 77
PAIRS_SIDE = 1 << 17
ONES = 64000 * 64000 * 10
RELATIVE_TOLERANCE = 1e-6


def run(command, env=None):
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    print(f"{' '.join(command)}: exit {result.returncode} in {time.monotonic() - start:.1f} s")
    return result


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kiln, graph, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    program = os.path.join(work, "long_sums.kiln")
    env = {**os.environ, "KILN_CACHE_DIR": os.path.join(work, "cache")}
    compiled = run([kiln, "compile", graph, "--arch", "native", "-o", program], env)
    if compiled.returncode != 0:
        if "no CUDA device" in compiled.stderr:
            print(f"no CUDA device: skipped ({compiled.stderr.strip()})")
            return SKIP_EXIT_CODE
        print(compiled.stderr)
        return 1

    rng = np.random.default_rng(15)
    inputs = {"one": np.array(1.0, dtype=np.float32),
              "a": (rng.random((PAIRS_SIDE, 1)) ** 2).astype(np.float32),
              "b": (rng.random((1, PAIRS_SIDE)) ** 2).astype(np.float32)}
    arguments = []
    for name, data in inputs.items():
        path = os.path.join(work, f"{name}.npy")
        np.save(path, data)
        arguments += ["--input", f"{name}={path}"]
    out = os.path.join(work, "out")
    ran = run([kiln, "run", program, "--device", "gpu", "--output-dir", out] + arguments, env)
    if ran.returncode != 0:
        print(ran.stderr)
        return 1

    sum_a = inputs["a"].astype(np.float64).sum()
    sum_b = inputs["b"].astype(np.float64).sum()
    want = {"count": float(ONES),
            "sum": PAIRS_SIDE * (sum_a + sum_b),
            "mean": sum_a * sum_b / PAIRS_SIDE**2}
    failed = False
    for name, value in want.items():
        got = float(np.load(os.path.join(out, f"{name}.npy")))
        error = abs(got - value) / abs(value)
        verdict = "ok" if error <= RELATIVE_TOLERANCE else "WRONG"
        failed |= verdict != "ok"
        print(f"{verdict:5} {name}: {got!r}, float64 {value!r}, relative error {error:.2e} "
              f"(at most {RELATIVE_TOLERANCE:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
