#!/usr/bin/env python3
"""Contraction kernels on the GPU: `kiln bench` of every graph in bench/contractions/ (matmul,
gemm and conv shapes of ResNet-50 and BERT, split-K cases, broadcasting, transposed operands,
grouped and dilated convolutions, odd sizes), fused, in each precision given. Prints one line a
graph and precision (median ms, TFLOP/s, max abs error, cosine vs kiln's CPU reference) and
exits 1 when any result is off: kiln bench's verdict (tools/compare.h, tolerance_for_model: in
fp32 every element within atol 1e-4 + rtol 1e-3, in 16 bits and tf32 the largest error against
the largest expected magnitude; the norm within 1% or 2%) and cosine at least 0.999 in
fp16/bf16/tf32, 0.999999 in fp32; 77 (ctest's SKIP_RETURN_CODE) when there is no CUDA device.
ctest runs it as gpu_contractions.

usage: bench/contractions.py KILN OUT_DIR [PRECISION...]   (default fp16 bf16 fp32)

fp16 and bf16 run twice: with f32 graph inputs (the kernel casts them as it loads them) and with
16-bit inputs (`--io-precision`, rows fp16io and bf16io).
"""
import glob
import os
import re
import sys

from kiln_bench import run_kiln_bench


def flops(kir_text):
    """2·M·N·K of the graph's matmul, gemm or conv, from its declared shapes."""
    shapes = {name: [int(d) for d in dims.split(",")]
              for name, dims in re.findall(r"%(\w+): f32\[([\d,]+)\]", kir_text)}
    # Values the graph computes (a transposed operand): their result types.
    shapes.update({name: [int(d) for d in dims.split(",")]
                   for name, dims in re.findall(r"%(\w+) = [^\n]*: f32\[([\d,]+)\]", kir_text)})
    match = re.search(r"= (matmul|gemm|conv)\(%(\w+), %(\w+).*?\{?.*: f32\[([\d,]+)\]", kir_text)
    op, a, b, out = match.group(1), match.group(2), match.group(3), match.group(4)
    out = [int(d) for d in out.split(",")]
    outputs = 1
    for d in out:
        outputs *= d
    if op == "matmul":
        depth = shapes[b][-2]
    elif op == "gemm":
        depth = shapes[a][0] if "transA=1" in kir_text else shapes[a][1]
    else:
        w = shapes[b]
        depth = w[1] * w[2] * w[3]
    return 2 * outputs * depth


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    kiln, out_dir = sys.argv[1], sys.argv[2]
    precisions = sys.argv[3:] or ["fp16", "bf16", "fp32"]
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contractions")
    os.makedirs(out_dir, exist_ok=True)
    failures = []
    rows = []
    for path in sorted(glob.glob(os.path.join(here, "*.kir"))):
        name = os.path.basename(path)[:-4]
        with open(path) as f:
            work = flops(f.read())
        runs = [(precision, ["--precision", precision]) for precision in precisions]
        # 16-bit inputs too, as inside a model: operands then come by cp.async (and, on an
        # H100/H200, eligible contractions take the sm_90a wgmma kernel).
        runs += [(precision + "io", ["--precision", precision, "--io-precision", precision])
                 for precision in precisions if precision in ("fp16", "bf16")]
        for precision, flags in runs:
            json_path = os.path.join(out_dir, f"{name}_{precision}.json")
            figures = run_kiln_bench(kiln, path, json_path, 50, 10, flags, variants="fused",
                                     first_sessions=False)
            if "error" in figures:
                if any("no CUDA device" in line for line in figures["error"]):
                    print("no CUDA device: skipped")
                    sys.exit(77)
                failures.append(f"{name} {precision}: {figures['error']}")
                continue
            fused = figures["fused"]
            ok = fused["matches_reference"] and (
                fused["cosine"] >= (0.999999 if precision == "fp32" else 0.999))
            if not ok:
                failures.append(f"{name} {precision}: {fused.get('mismatch', '')} cosine "
                                f"{fused['cosine']}, max abs {fused['max_abs_error']}")
            rows.append(f"{name:<28} {precision:<6} {fused['kernel_launches']:>3} "
                        f"{fused['median_ms']:>9.4f} {work / fused['median_ms'] / 1e9:>9.1f} "
                        f"{fused['max_abs_error']:>10.3g} {fused['cosine']:>10.6f} "
                        f"{'ok' if ok else 'WRONG'}")
    print(f"{'graph':<28} {'prec':<6} {'krn':>3} {'median ms':>9} {'TFLOP/s':>9} "
          f"{'max abs':>10} {'cosine':>10}")
    print("\n".join(rows))
    for failure in failures:
        print("FAILED: " + failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
