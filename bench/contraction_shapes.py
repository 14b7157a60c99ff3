#!/usr/bin/env python3
"""kiln's contraction kernels against PyTorch's (cuBLAS, cuDNN) on the large matrix products and
convolutions of the dev models at batch 32, fp16, in one run on one card.

usage: bench/contraction_shapes.py KILN OUT_DIR [--shapes NAME,...] [--iters 50] [--warmup 10]
                                   [--mma-arch sm_90]

Each shape is written as a one-op kiln graph (OUT_DIR/<shape>.kir) and timed with
`kiln bench --compare fused --precision fp16 --io-precision fp16` (16-bit operands in, as inside
a model, so the kernel loads them directly), checked against kiln's CPU reference; PyTorch runs the
same op on fp16 tensors (torch.matmul, torch.nn.functional.conv2d on NCHW, cuDNN's choice).
Prints median ms and TFLOP/s of both and kiln's time over PyTorch's; writes OUT_DIR/shapes.json.
kiln runs twice: for this GPU (`--arch native`: on an H100/H200 sm_90a, whose eligible
contractions take the wgmma kernel) and for --mma-arch (default sm_90: the mma.sync kernels), so
one run compares both kernels of kiln with the library ('' skips the second).
"""
import argparse
import json
import os
import sys

import torch

from cuda_timing import chosen, time_cuda
from kiln_bench import run_kiln_bench

# name: ("matmul", M, K, N) or ("conv", batch, in channels, size, out channels, kernel, stride)
SHAPES = {
    "bert_b32_qkv": ("matmul", 4096, 768, 768),
    "bert_b32_qkv_packed": ("matmul", 4096, 768, 2304),
    "bert_b32_ffn_up": ("matmul", 4096, 768, 3072),
    "bert_b32_ffn_down": ("matmul", 4096, 3072, 768),
    "resnet_b32_conv3x3_56": ("conv", 32, 64, 56, 64, 3, 1),
    "resnet_b32_conv3x3_14": ("conv", 32, 256, 14, 256, 3, 1),
    "resnet_b32_conv1x1_56_up": ("conv", 32, 64, 56, 256, 1, 1),
    "resnet_b32_conv1x1_14_down": ("conv", 32, 1024, 14, 256, 1, 1),
    "resnet_b32_conv7x7_stem": ("conv", 32, 3, 224, 64, 7, 2),
}


def dims(shape):
    return ",".join(str(d) for d in shape)


def graph_and_flops(name, spec):
    """(the one-op graph's text, 2·M·N·K, the torch callable on random fp16 CUDA tensors)."""
    if spec[0] == "matmul":
        _, m, k, n = spec
        text = (f"graph @{name}(%a: f32[{m},{k}], %b: f32[{k},{n}]) -> (f32[{m},{n}]) {{\n"
                f"  %0 = matmul(%a, %b) : f32[{m},{n}] loc(\"/MatMul\")\n  return %0\n}}\n")
        a = torch.randn(m, k, device="cuda", dtype=torch.half)
        b = torch.randn(k, n, device="cuda", dtype=torch.half)
        return text, 2 * m * n * k, lambda: torch.matmul(a, b)
    _, batch, cin, size, cout, kernel, stride = spec
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    x_shape, w_shape, y_shape = [batch, cin, size, size], [cout, cin, kernel, kernel], \
        [batch, cout, out, out]
    text = (f"graph @{name}(%x: f32[{dims(x_shape)}], %w: f32[{dims(w_shape)}]) -> "
            f"(f32[{dims(y_shape)}]) {{\n"
            f"  %0 = conv(%x, %w) {{dilations=[1, 1], group=1, pads=[{pad}, {pad}, {pad}, {pad}], "
            f"strides=[{stride}, {stride}]}} : f32[{dims(y_shape)}] loc(\"/Conv\")\n"
            f"  return %0\n}}\n")
    x = torch.randn(*x_shape, device="cuda", dtype=torch.half)
    w = torch.randn(*w_shape, device="cuda", dtype=torch.half)
    flops = 2 * batch * cout * out * out * cin * kernel * kernel
    return text, flops, lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("out_dir")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--mma-arch", default="sm_90")
    args = parser.parse_args()
    names = chosen(parser, args.shapes, SHAPES, "shape")
    if not torch.cuda.is_available():
        print("no CUDA device: contraction shapes skipped")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    report = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "shapes": []}
    failed = False
    for name in names:
        text, flops, torch_op = graph_and_flops(name, SHAPES[name])
        path = os.path.join(args.out_dir, name + ".kir")
        with open(path, "w") as f:
            f.write(text)
        entry = {"shape": name, "flops": flops,
                 "torch_ms": time_cuda(torch_op, args.iters, args.warmup)[0]}
        for arch, key in (("native", "kiln"), (args.mma_arch, "kiln_mma")):
            if not arch:
                continue
            kiln = run_kiln_bench(args.kiln, path,
                                  os.path.join(args.out_dir, f"{name}_{key}.json"),
                                  args.iters, args.warmup,
                                  ["--precision", "fp16", "--io-precision", "fp16",
                                   "--arch", arch], variants="fused")
            fused = kiln.get("fused", {})
            if "median_ms" in fused:
                entry.update({key + "_ms": fused["median_ms"], key + "_cosine": fused["cosine"],
                              key + "_launches": fused["kernel_launches"]})
            else:
                failed = True
                entry[key + "_error"] = fused.get("error") or kiln.get("error")
        report["shapes"].append(entry)
    print(f"\n{report['card']}, fp16, median ms and TFLOP/s; kiln native (wgmma on sm_90a) "
          f"and {args.mma_arch or '-'} (mma.sync)")
    print(f"{'shape':<28} {'torch ms':>9} {'TFLOP/s':>8} {'kiln ms':>9} {'TFLOP/s':>8} "
          f"{'kiln/torch':>10} {'krn':>3} {'cosine':>9} {'mma ms':>9} {'mma/torch':>9}")
    for entry in report["shapes"]:
        torch_ms, work = entry["torch_ms"], entry["flops"]
        line = f"{entry['shape']:<28} {torch_ms:>9.4f} {work / torch_ms / 1e9:>8.1f}"
        if "kiln_ms" in entry:
            kiln_ms = entry["kiln_ms"]
            line += (f" {kiln_ms:>9.4f} {work / kiln_ms / 1e9:>8.1f} {kiln_ms / torch_ms:>9.2f}x "
                     f"{entry['kiln_launches']:>3} {entry['kiln_cosine']:>9.6f}")
        else:
            line += f" kiln failed: {entry.get('kiln_error')}"
        if "kiln_mma_ms" in entry:
            line += f" {entry['kiln_mma_ms']:>9.4f} {entry['kiln_mma_ms'] / torch_ms:>8.2f}x"
        elif "kiln_mma_error" in entry:
            line += f" mma failed: {entry['kiln_mma_error']}"
        print(line)
    with open(os.path.join(args.out_dir, "shapes.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
