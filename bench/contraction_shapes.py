#!/usr/bin/env python3
"""kiln's contraction kernels against PyTorch's (cuBLAS, cuDNN) on the large matrix products and
convolutions of the dev models (BERT-base, ViT-B/16, ResNet-50; MobileNetV2's depthwise convs) at
batch 32 and some at batch 1,
and its fused attention kernel against PyTorch's
scaled_dot_product_attention, fp16, in one run on one card.

usage: bench/contraction_shapes.py KILN OUT_DIR [--shapes NAME,...] [--iters 50] [--warmup 10]
                                   [--mma-arch sm_90] [--kiln-graph-copies 20]

Each shape is written as a one-op kiln graph (OUT_DIR/<shape>.kir) and timed with
`kiln bench --compare fused --precision fp16 --io-precision fp16` (16-bit operands in, as inside
a model, so the kernel loads them directly), checked against kiln's CPU reference; PyTorch runs the
same op on fp16 tensors (torch.matmul; torch.nn.functional.conv2d on channels_last tensors,
cuDNN's choice, against kiln's channels-last conv as its channels-last pass gives 16-bit conv nets).
Prints median ms and TFLOP/s of both and kiln's time over PyTorch's; writes OUT_DIR/shapes.json.
Where measurement chose cuBLASLt (a library tactic) for kiln, kiln also runs with
--no-library-tactics: its own fastest kernel ("own" columns).
kiln runs twice: for this GPU (`--arch native`: on an H100/H200 sm_90a, whose eligible
contractions take the wgmma kernel) and for --mma-arch (default sm_90: the mma.sync kernels), so
one run compares both kernels of kiln with the library ('' skips the second).

Attention shapes ("attention", batch, heads, seq, head size, layout, mask) are one fusion.attention
as the models' exports give it after their projections: BERT-base's (layout "packed": Q, K and V
sliced from one [batch, seq, 3 · hidden] projection, as kiln's merged sibling gemms write it, an
additive key mask [batch, 1, 1, seq]) and torchvision ViT-B/16's (layout "torchvision": the
sequence-first [seq, batch, 3 · hidden] projection unflattened, unbound by a constant gather, batch
and heads merged and split again; no mask), both with Q' and K' scaled by sqrt(1/sqrt(head)) and
the NaN guard after the softmax, as torch.onnx exports scaled_dot_product_attention. The kiln
graph must compile to one kernel (launches column). PyTorch times
torch.nn.functional.scaled_dot_product_attention on the same strided fp16 views with each backend
that takes the case (flash takes no mask: with a mask, the memory-efficient and cuDNN backends),
the first listed being the one kiln's ratio is against; FLOPs are 4 · batch · heads · seq² · head.
PyTorch's ops are timed as replays of a CUDA graph of TORCH_REPS calls, divided by TORCH_REPS (per
call: its Python dispatch, 10–80 µs, would otherwise be what is timed); kiln's the same way
(`kiln bench --graph-copies TORCH_REPS`: a graph of the program's kernels TORCH_REPS times over,
per copy). Until session 21 kiln's were replays of a graph of one copy, so its times also held a
graph launch per kernel; --kiln-graph-copies 1 times it that way.
"""
import argparse
import json
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import chosen, time_cuda
from kiln_bench import run_kiln_bench

# name: ("matmul", M, K, N) or ("conv", batch, in channels, size, out channels, kernel, stride
# [, groups])
SHAPES = {
    "bert_b32_qkv": ("matmul", 4096, 768, 768),
    "bert_b32_qkv_packed": ("matmul", 4096, 768, 2304),
    "bert_b32_ffn_up": ("matmul", 4096, 768, 3072),
    "bert_b32_ffn_down": ("matmul", 4096, 3072, 768),
    "bert_b1_qkv_packed": ("matmul", 128, 768, 2304),
    "bert_b1_ffn_up": ("matmul", 128, 768, 3072),
    "bert_b1_ffn_down": ("matmul", 128, 3072, 768),
    # ViT-B/16 b32: 32 · 197 = 6304 tokens (128-row tiles quantize badly over 132 SMs).
    "vit_b32_qkv_packed": ("matmul", 6304, 768, 2304),
    "vit_b32_out_proj": ("matmul", 6304, 768, 768),
    "vit_b32_ffn_up": ("matmul", 6304, 768, 3072),
    "vit_b32_ffn_down": ("matmul", 6304, 3072, 768),
    "resnet_b32_conv3x3_56": ("conv", 32, 64, 56, 64, 3, 1),
    "resnet_b32_conv3x3_28": ("conv", 32, 128, 28, 128, 3, 1),
    "resnet_b32_conv3x3_14": ("conv", 32, 256, 14, 256, 3, 1),
    "resnet_b32_conv3x3_7": ("conv", 32, 512, 7, 512, 3, 1),
    "resnet_b1_conv3x3_56": ("conv", 1, 64, 56, 64, 3, 1),
    "resnet_b1_conv3x3_7": ("conv", 1, 512, 7, 512, 3, 1),
    "resnet_b32_conv1x1_56_up": ("conv", 32, 64, 56, 256, 1, 1),
    "resnet_b32_conv1x1_14_down": ("conv", 32, 1024, 14, 256, 1, 1),
    "resnet_b32_conv1x1_7_down": ("conv", 32, 2048, 7, 512, 1, 1),
    "resnet_b32_conv1x1_7_up": ("conv", 32, 512, 7, 2048, 1, 1),
    "resnet_b32_conv7x7_stem": ("conv", 32, 3, 224, 64, 7, 2),
    # MobileNetV2's depthwise 3×3 convs (one channel a group; kiln's direct kernel, not a
    # contraction: memory-bound, so the ratio matters more than the TFLOP/s).
    "mobilenet_b32_dw_112": ("conv", 32, 32, 112, 32, 3, 1, 32),
    "mobilenet_b32_dw_112_s2": ("conv", 32, 96, 112, 96, 3, 2, 96),
    "mobilenet_b32_dw_56": ("conv", 32, 144, 56, 144, 3, 1, 144),
    "mobilenet_b32_dw_14": ("conv", 32, 384, 14, 384, 3, 1, 384),
    "mobilenet_b32_dw_7": ("conv", 32, 960, 7, 960, 3, 1, 960),
    "bert_b32_attention": ("attention", 32, 12, 128, 64, "packed", True),
    "vit_b32_attention": ("attention", 32, 12, 197, 64, "torchvision", False),
    "bert_b1_attention": ("attention", 1, 12, 128, 64, "packed", True),
    "vit_b1_attention": ("attention", 1, 12, 197, 64, "torchvision", False),
    # Longer sequences than the dev models' (their key loops are 2-4 tiles deep): where the
    # attention tactics' 128 query rows a block (two row groups a warp) should pay.
    "seq1024_b4_attention": ("attention", 4, 12, 1024, 64, "packed", False),
    "seq512_b8_attention": ("attention", 8, 12, 512, 64, "packed", True),
}
# Calls of a PyTorch op in one timed CUDA graph.
TORCH_REPS = 20
# The backends PyTorch's attention is timed with, the first the one kiln is compared to.
# (name, backend, whether the mask is passed): flash takes no mask, so with a mask it runs the
# same shapes unmasked, for reference only.
BACKENDS_NO_MASK = [("flash", SDPBackend.FLASH_ATTENTION, False),
                    ("cudnn", SDPBackend.CUDNN_ATTENTION, False)]
BACKENDS_MASK = [("efficient", SDPBackend.EFFICIENT_ATTENTION, True),
                 ("cudnn", SDPBackend.CUDNN_ATTENTION, True),
                 ("flash_unmasked", SDPBackend.FLASH_ATTENTION, False)]


def dims(shape):
    return ",".join(str(d) for d in shape)


def attention_graph(name, batch, heads, seq, head, layout, mask):
    """The kiln graph of one attention (see the module's doc), and the torch tensors (packed
    projection, and q, k, v views of it as [batch, heads, seq, head]; the mask or None)."""
    hidden = heads * head
    bhsd, bhds = f"[{batch},{heads},{seq},{head}]", f"[{batch},{heads},{head},{seq}]"
    scores = f"[{batch},{heads},{seq},{seq}]"
    lines = []
    if layout == "packed":
        inputs = f"%x: f32[{batch},{seq},{3 * hidden}]"
        for i, part in enumerate("qkv"):
            lines += [
                f"%{part}0 = slice(%x) {{axes=[2], ends=[{(i + 1) * hidden}], starts=[{i * hidden}], "
                f"steps=[1]}} : f32[{batch},{seq},{hidden}]",
                f"%{part}1 = reshape(%{part}0) {{shape=[{batch}, {seq}, {heads}, {head}]}} : "
                f"f32[{batch},{seq},{heads},{head}]",
                f"%{part} = transpose(%{part}1) {{perm=[0, 2, 1, 3]}} : f32{bhsd}"]
        x = torch.randn(batch, seq, 3 * hidden, device="cuda", dtype=torch.half)
        views = [x[:, :, i * hidden:(i + 1) * hidden].unflatten(2, (heads, head)).transpose(1, 2)
                 for i in range(3)]
    else:  # torchvision's nn.MultiheadAttention, sequence first inside
        inputs = f"%x: f32[{seq},{batch},{3 * hidden}]"
        lines += [
            f"%u = reshape(%x) {{shape=[{seq}, {batch}, 3, {hidden}]}} : f32[{seq},{batch},3,{hidden}]",
            f"%w = reshape(%u) {{shape=[1, {seq}, {batch}, 3, {hidden}]}} : "
            f"f32[1,{seq},{batch},3,{hidden}]",
            f"%t = transpose(%w) {{perm=[3, 1, 2, 0, 4]}} : f32[3,{seq},{batch},1,{hidden}]",
            f"%qkv = reshape(%t) {{shape=[3, {seq}, {batch}, {hidden}]}} : f32[3,{seq},{batch},{hidden}]"]
        for i, part in enumerate("qkv"):
            lines += [
                f"%{part}i = const i64[] {i}",
                f"%{part}0 = gather(%qkv, %{part}i) {{axis=0}} : f32[{seq},{batch},{hidden}]",
                f"%{part}1 = reshape(%{part}0) {{shape=[{seq}, {batch * heads}, {head}]}} : "
                f"f32[{seq},{batch * heads},{head}]",
                f"%{part}2 = transpose(%{part}1) {{perm=[1, 0, 2]}} : f32[{batch * heads},{seq},{head}]",
                f"%{part} = reshape(%{part}2) {{shape=[{batch}, {heads}, {seq}, {head}]}} : f32{bhsd}"]
        x = torch.randn(seq, batch, 3 * hidden, device="cuda", dtype=torch.half)
        views = [x[:, :, i * hidden:(i + 1) * hidden].unflatten(2, (heads, head)).permute(1, 2, 0, 3)
                 for i in range(3)]
    lines += [
        f"%kt = transpose(%k) {{perm=[0, 1, 3, 2]}} : f32{bhds}",
        f"%root = const f32[] {head ** -0.25:.9g}",
        f"%qs = mul(%q, %root) : f32{bhsd}",
        f"%ks = mul(%kt, %root) : f32{bhds}",
        f"%s = matmul(%qs, %ks) : f32{scores}"]
    if mask:
        inputs += f", %mask: f32[{batch},1,1,{seq}]"
        lines.append(f"%sm = add(%s, %mask) : f32{scores}")
    lines += [
        f"%p = softmax(%{'sm' if mask else 's'}) {{axis=-1}} : f32{scores}",
        f"%nan = is_nan(%p) : bool{scores}",
        "%zero = const f32[] 0.0",
        f"%g = where(%nan, %zero, %p) : f32{scores}",
        f"%o = matmul(%g, %v) : f32{bhsd}"]
    text = (f"graph @{name}({inputs}) -> (f32{bhsd}) {{\n" +
            "".join(f"  {line}\n" for line in lines) + "  return %o\n}\n")
    # A key-padding mask: the last quarter of each sequence's keys masked for half the batch.
    additive = None
    if mask:
        additive = torch.zeros(batch, 1, 1, seq, device="cuda", dtype=torch.half)
        additive[: (batch + 1) // 2, :, :, seq * 3 // 4:] = -10000.0
    return text, views, additive


def grouped_conv_bytes(spec):
    """The fp16 bytes a grouped conv (groups > 1) reads and writes once each (X, W, Y); None for
    any other shape: its kernels are memory-bound, so GB/s says more than TFLOP/s."""
    if spec[0] != "conv" or len(spec) < 8 or spec[7] == 1:
        return None
    _, batch, cin, size, cout, kernel, stride, group = spec
    out = (size + 2 * (kernel // 2) - kernel) // stride + 1
    return 2 * (batch * size * size * cin + cout * kernel * kernel * (cin // group) +
                batch * out * out * cout)


def graph_and_flops(name, spec):
    """(the one-op graph's text, 2·M·N·K, the torch callable on random fp16 CUDA tensors)."""
    if spec[0] == "attention":
        _, batch, heads, seq, head, layout, mask = spec
        text, (q, k, v), additive = attention_graph(name, batch, heads, seq, head, layout, mask)
        backends = BACKENDS_MASK if mask else BACKENDS_NO_MASK
        calls = {}
        for backend_name, backend, masked in backends:
            def call(backend=backend, mask=additive if masked else None):
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(
                        q, k, v, attn_mask=mask)
            calls[backend_name] = call
        return text, 4 * batch * heads * seq * seq * head, calls
    if spec[0] == "matmul":
        _, m, k, n = spec
        text = (f"graph @{name}(%a: f32[{m},{k}], %b: f32[{k},{n}]) -> (f32[{m},{n}]) {{\n"
                f"  %0 = matmul(%a, %b) : f32[{m},{n}] loc(\"/MatMul\")\n  return %0\n}}\n")
        a = torch.randn(m, k, device="cuda", dtype=torch.half)
        b = torch.randn(k, n, device="cuda", dtype=torch.half)
        return text, 2 * m * n * k, lambda: torch.matmul(a, b)
    _, batch, cin, size, cout, kernel, stride, *rest = spec
    group = rest[0] if rest else 1
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    # Channels-last, as kiln's channels-last pass runs 16-bit conv nets and as cuDNN runs them
    # fastest: X [N, H, W, C], W [M, kh, kw, C / group] (OHWI), Y [N, H', W', M].
    x_shape, w_shape, y_shape = [batch, size, size, cin], [cout, kernel, kernel, cin // group], \
        [batch, out, out, cout]
    text = (f"graph @{name}(%x: f32[{dims(x_shape)}], %w: f32[{dims(w_shape)}]) -> "
            f"(f32[{dims(y_shape)}]) {{\n"
            f"  %0 = conv(%x, %w) {{channels_last=1, dilations=[1, 1], group={group}, "
            f"pads=[{pad}, {pad}, {pad}, {pad}], strides=[{stride}, {stride}]}} : "
            f"f32[{dims(y_shape)}] loc(\"/Conv\")\n"
            f"  return %0\n}}\n")
    x = torch.randn(batch, cin, size, size, device="cuda", dtype=torch.half).to(
        memory_format=torch.channels_last)
    w = torch.randn(cout, cin // group, kernel, kernel, device="cuda", dtype=torch.half).to(
        memory_format=torch.channels_last)
    flops = 2 * batch * cout * out * out * (cin // group) * kernel * kernel
    return text, flops, lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=pad,
                                                           groups=group)


def graphed(call, reps):
    """A callable replaying a CUDA graph of `reps` calls of `call` (warmed up first)."""
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(reps):
                call()
    torch.cuda.synchronize()
    return graph.replay


def time_graphed(call, args):
    """Median ms of one call of `call`, timed as replays of a CUDA graph of TORCH_REPS calls."""
    return time_cuda(graphed(call, TORCH_REPS), args.iters, args.warmup)[0] / TORCH_REPS


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("out_dir")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--mma-arch", default="sm_90")
    parser.add_argument("--kiln-graph-copies", type=int, default=TORCH_REPS,
                        help="copies of kiln's program in its timed graph (kiln bench "
                             "--graph-copies; default TORCH_REPS, as torch's calls are timed)")
    args = parser.parse_args()
    names = chosen(parser, args.shapes, SHAPES, "shape")
    if not torch.cuda.is_available():
        print("no CUDA device: contraction shapes skipped")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    report = {"card": torch.cuda.get_device_name(), "torch": torch.__version__,
              "torch_graph_calls": TORCH_REPS, "kiln_graph_copies": args.kiln_graph_copies,
              "shapes": []}
    failed = False
    for name in names:
        text, flops, torch_op = graph_and_flops(name, SHAPES[name])
        path = os.path.join(args.out_dir, name + ".kir")
        with open(path, "w") as f:
            f.write(text)
        entry = {"shape": name, "flops": flops}
        if isinstance(torch_op, dict):  # attention: each backend; the first is compared to
            entry["torch_backends"] = {}
            for backend, call in torch_op.items():
                try:
                    entry["torch_backends"][backend] = time_graphed(call, args)
                except RuntimeError as error:  # a backend that does not take the case
                    entry["torch_backends"][backend] = None
                    print(f"{name}: torch {backend}: {str(error).splitlines()[0]}")
            timed = [(b, ms) for b, ms in entry["torch_backends"].items() if ms is not None]
            entry["torch_backend"], entry["torch_ms"] = timed[0] if timed else ("none", float("nan"))
        else:
            entry["torch_ms"] = time_graphed(torch_op, args)
        for arch, key, flags in (("native", "kiln", []),
                                 ("native", "kiln_own", ["--no-library-tactics"]),
                                 (args.mma_arch, "kiln_mma", [])):
            if not arch:
                continue
            if key == "kiln_own" and entry.get("kiln_tactic") != "cuBLASLt":
                # kiln's chosen tactic is its own kernel: that is its best own kernel too.
                for field in ("ms", "cosine", "launches", "error"):
                    if "kiln_" + field in entry:
                        entry["kiln_own_" + field] = entry["kiln_" + field]
                continue
            kiln = run_kiln_bench(args.kiln, path,
                                  os.path.join(args.out_dir, f"{name}_{key}.json"),
                                  args.iters, args.warmup,
                                  ["--precision", "fp16", "--io-precision", "fp16",
                                   "--arch", arch, "--graph-copies",
                                   str(args.kiln_graph_copies), *flags], variants="fused")
            fused = kiln.get("fused", {})
            if "median_ms" in fused:
                entry.update({key + "_ms": fused["median_ms"], key + "_cosine": fused["cosine"],
                              key + "_launches": fused["kernel_launches"]})
                sites = fused.get("tactics", {}).get("sites", [])
                entry[key + "_tactic"] = sites[0]["chosen"] if sites else "-"
            else:
                failed = True
                entry[key + "_error"] = fused.get("error") or kiln.get("error")
        report["shapes"].append(entry)
        # A line as each shape finishes, so a run cut short by a time limit still reports.
        print(f"{name}: torch {entry['torch_ms']:.4f} ms, kiln "
              f"{entry.get('kiln_ms', float('nan')):.4f} ms", flush=True)
    print(f"\n{report['card']}, fp16, median ms and TFLOP/s; kiln native (wgmma on sm_90a) "
          f"and {args.mma_arch or '-'} (mma.sync); per call in a CUDA graph of {TORCH_REPS} "
          f"calls (torch), of {args.kiln_graph_copies} program copies (kiln)")
    print("kiln: the tactic measurement chose (cuBLASLt among them); own: kiln's fastest own "
          "kernel (--no-library-tactics), where the chosen one is cuBLASLt")
    print(f"{'shape':<28} {'torch ms':>9} {'TFLOP/s':>8} {'kiln ms':>9} {'TFLOP/s':>8} "
          f"{'kiln/torch':>10} {'krn':>3} {'cosine':>9} {'own ms':>9} {'own/torch':>9} "
          f"{'mma ms':>9} {'mma/torch':>9}  tactic")
    for entry in report["shapes"]:
        torch_ms, work = entry["torch_ms"], entry["flops"]
        line = f"{entry['shape']:<28} {torch_ms:>9.4f} {work / torch_ms / 1e9:>8.1f}"
        if "torch_backends" in entry:
            others = ", ".join(f"{b} {ms:.4f}" if ms is not None else f"{b} n/a"
                               for b, ms in entry["torch_backends"].items())
            print(f"  ({entry['shape']}: torch sdpa {others} ms; ratio vs {entry['torch_backend']})")
        moved = grouped_conv_bytes(SHAPES[entry["shape"]])
        if moved and "kiln_ms" in entry:
            print(f"  ({entry['shape']}: {moved / 1e6:.1f} MB of X, W and Y; torch "
                  f"{moved / torch_ms / 1e6:.0f} GB/s, kiln {moved / entry['kiln_ms'] / 1e6:.0f} "
                  "GB/s)")
        if "kiln_ms" in entry:
            kiln_ms = entry["kiln_ms"]
            line += (f" {kiln_ms:>9.4f} {work / kiln_ms / 1e9:>8.1f} {kiln_ms / torch_ms:>9.2f}x "
                     f"{entry['kiln_launches']:>3} {entry['kiln_cosine']:>9.6f}")
        else:
            line += f" kiln failed: {entry.get('kiln_error')}"
        if "kiln_own_ms" in entry:
            line += f" {entry['kiln_own_ms']:>9.4f} {entry['kiln_own_ms'] / torch_ms:>8.2f}x"
        elif "kiln_own_error" in entry:
            line += f" own failed: {entry['kiln_own_error']}"
        if "kiln_mma_ms" in entry:
            line += f" {entry['kiln_mma_ms']:>9.4f} {entry['kiln_mma_ms'] / torch_ms:>8.2f}x"
        elif "kiln_mma_error" in entry:
            line += f" mma failed: {entry['kiln_mma_error']}"
        print(line + f"  {entry.get('kiln_tactic', '-')}")
    with open(os.path.join(args.out_dir, "shapes.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
