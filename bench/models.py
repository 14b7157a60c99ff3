#!/usr/bin/env python3
"""Model benchmarks on the GPU host, fp16: PyTorch eager, torch.compile (default and
mode="reduce-overhead"), kiln unfused and kiln fused, in one run on one card.

usage: bench/models.py KILN OUT_DIR [--models resnet50,mobilenetv2,bert,vit]
                       [--batches 1,32] [--iters 50] [--warmup 10] [--no-compile]

Models have random weights: torchvision's ResNet-50, MobileNetV2 and ViT-B/16 (224×224), and
BERT-base (transformers' BertModel: 12 layers, hidden 768, sequence 128). Each is exported to
ONNX (opset 17) at each batch size; kiln compiles that file with --precision fp16 (f32 inputs
and outputs, 16-bit convolutions and products) and `kiln bench` times its CUDA graph and checks
it against kiln's CPU reference. PyTorch runs the module in fp16 (model.half()). Times are
medians of CUDA-event timings after a warm-up. Prints a table and writes OUT_DIR/models.json.
"""
import argparse
import json
import os
import sys

import torch

from cuda_timing import time_cuda
from kiln_bench import run_kiln_bench


def make_model(name, batch):
    """(module, example inputs as a dict of CPU tensors)."""
    torch.manual_seed(0)
    if name == "bert":
        from transformers import BertConfig, BertModel
        model = BertModel(BertConfig(), add_pooling_layer=True)
        ids = torch.randint(1, 30000, (batch, 128))
        mask = torch.ones(batch, 128, dtype=torch.long)
        return model.eval(), {"input_ids": ids, "attention_mask": mask}
    import torchvision
    constructor = {"resnet50": torchvision.models.resnet50,
                   "mobilenetv2": torchvision.models.mobilenet_v2,
                   "vit": torchvision.models.vit_b_16}[name]
    return constructor().eval(), {"input": torch.randn(batch, 3, 224, 224)}


def export(model, inputs, path):
    if os.path.exists(path):
        return
    args = tuple(inputs.values())
    kwargs = dict(opset_version=17, input_names=list(inputs), do_constant_folding=True)
    try:
        torch.onnx.export(model, args, path, dynamo=False, **kwargs)
    except TypeError:  # a torch without the dynamo switch
        torch.onnx.export(model, args, path, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("out_dir")
    parser.add_argument("--models", default="resnet50,mobilenetv2,bert,vit")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: model benchmarks skipped")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    report = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": []}
    for name in args.models.split(","):
        for batch in [int(b) for b in args.batches.split(",")]:
            model, inputs = make_model(name, batch)
            path = os.path.join(args.out_dir, f"{name}_b{batch}.onnx")
            export(model, inputs, path)
            entry = {"model": name, "batch": batch}
            gpu_model = model.half().cuda()
            gpu_inputs = [t.cuda().half() if t.is_floating_point() else t.cuda()
                          for t in inputs.values()]
            entry["eager"] = time_cuda(lambda: gpu_model(*gpu_inputs), args.iters, args.warmup)[0]
            if not args.no_compile:
                for mode in ("default", "reduce-overhead"):
                    torch._dynamo.reset()
                    compiled = torch.compile(gpu_model, mode=mode)
                    entry[f"compile {mode}"] = time_cuda(lambda: compiled(*gpu_inputs),
                                                         args.iters, args.warmup)[0]
            del gpu_model
            torch.cuda.empty_cache()
            kiln = run_kiln_bench(args.kiln, path,
                                  os.path.join(args.out_dir, f"{name}_b{batch}_kiln.json"),
                                  args.iters, args.warmup, ["--precision", "fp16"])
            for variant in ("unfused", "fused"):
                if variant in kiln:
                    entry[f"kiln {variant}"] = kiln[variant]["median_ms"]
                    entry[f"kiln {variant} cosine"] = kiln[variant]["cosine"]
            if "error" in kiln:
                entry["kiln error"] = kiln["error"]
            report["runs"].append(entry)
            print(json.dumps(entry), flush=True)

    columns = ["eager", "compile default", "compile reduce-overhead", "kiln unfused",
               "kiln fused"]
    print(f"\n{report['card']}, fp16, median ms")
    print(f"{'model':<12} {'batch':>5} " + " ".join(f"{c:>24}" for c in columns))
    for entry in report["runs"]:
        cells = [f"{entry[c]:.3f}" if c in entry else "—" for c in columns]
        print(f"{entry['model']:<12} {entry['batch']:>5} " + " ".join(f"{c:>24}" for c in cells))
    with open(os.path.join(args.out_dir, "models.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
