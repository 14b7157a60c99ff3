#!/usr/bin/env python3
"""Model benchmarks on the GPU host, fp16: PyTorch eager, torch.compile (default and
mode="reduce-overhead"; with --compile-modes ...,kiln also backend="kiln", kiln's Python package
on PYTHONPATH), kiln unfused and kiln fused, in one run on one card.

usage: bench/models.py KILN OUT_DIR [--models resnet50,mobilenetv2,bert,vit,...]
                       [--batches 1,32] [--extra-batches resnet50=128] [--iters 50]
                       [--warmup 10] [--no-compile | --compile-modes default,reduce-overhead]
                       [--kiln-profile N] [--kiln-args=ARGS]

Models have random weights: torchvision's ResNet-50, MobileNetV2 and ViT-B/16 (224×224), and
BERT-base (transformers' BertModel: 12 layers, hidden 768, sequence 128). Each runs at every
--batches size, plus its --extra-batches (default: ResNet-50 at 128 too). Each is exported to
ONNX at each batch size (opset 17 by TorchScript; BERT-base opset 18 by dynamo, see
DYNAMO_EXPORTS); kiln compiles that file with --precision fp16 (f32 inputs
and outputs, 16-bit convolutions and products) and `kiln bench` times its CUDA graph and checks
it against kiln's CPU reference. PyTorch runs the module in fp16 (model.half()). Times are
medians of CUDA-event timings after a warm-up, the calls issued back to back as `kiln bench`
replays its graph (bench/cuda_timing.py): a host that dispatches faster than the GPU computes is
not counted.

--kiln-profile N passes `--profile N` to kiln bench: its output (printed here) then lists each
kiln variant's N slowest kernel launches, and the JSON of each run holds every launch's time.
--kiln-args passes more arguments to kiln bench (--concat-copies: each concat a copy kernel).
--models may also name torchvision's concat nets of CONCAT_MODELS (SqueezeNet 1.1, GoogLeNet,
Inception v3, ShuffleNetV2, DenseNet-121) and its squeeze-excitation nets of SE_MODELS
(MobileNetV3-Large, EfficientNet-B0).

Prints two tables, median ms per system and kiln fused's speedup over each of the others (their
time over kiln fused's: above 1, kiln fused is faster), and writes OUT_DIR/models.json. A step
that fails for one model (the export, a PyTorch mode, kiln refusing an op) is recorded in that
model's row as an error, and the other steps and models still run; the exit status is then 1.
"""
import argparse
import json
import os
import sys
import tempfile
import traceback

import torch

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(SCRIPT_DIR, "..", "tests", "models"))  # export_models
from cuda_timing import chosen, time_cuda  # noqa: E402
from kiln_bench import run_kiln_bench  # noqa: E402

TORCH_COLUMNS = ["eager", "compile default", "compile reduce-overhead", "compile kiln"]
KILN_COLUMNS = ["kiln unfused", "kiln fused"]
MODELS = ["resnet50", "mobilenetv2", "bert", "vit"]
# Beyond the dev models: torchvision's convolution nets with concats (--models names them), for
# concat views (docs/FUSION.md); Inception v3 at 299 × 299. GoogLeNet and Inception v3 without
# their auxiliary classifiers (eval mode ignores them) and with torchvision's own initialization.
CONCAT_MODELS = ["squeezenet1_1", "googlenet", "inception_v3", "shufflenet_v2_x1_0",
                 "densenet121"]
AUX_LOGITS = {"googlenet", "inception_v3"}
# torchvision's nets with squeeze-excitation blocks (a channel scale computed from a global pool),
# for the scale's fusion into the next convolution.
SE_MODELS = ["mobilenet_v3_large", "efficientnet_b0"]


def make_model(name, batch):
    """(module, example inputs as a dict of CPU tensors). The weights are randomized as the
    model tests' are (tests/models/export_models.py), so that no output is constant: the CNNs'
    BatchNorm statistics measured on random batches (with torchvision's initial ones, MobileNetV2's
    logits are about 1e-9, zero in fp16), the ViT's zero head and constant parameters drawn."""
    torch.manual_seed(0)
    if name == "bert":
        from transformers import BertConfig, BertModel
        model = BertModel(BertConfig(), add_pooling_layer=True)
        ids = torch.randint(1, 30000, (batch, 128))
        mask = torch.ones(batch, 128, dtype=torch.long)
        return model.eval(), {"input_ids": ids, "attention_mask": mask}
    import torchvision
    from export_models import randomize_batch_norms, randomize_vit_parameters
    if name in CONCAT_MODELS or name in SE_MODELS:
        options = {"aux_logits": False, "init_weights": True} if name in AUX_LOGITS else {}
        model = getattr(torchvision.models, name)(weights=None, **options)
    else:
        model = {"resnet50": torchvision.models.resnet50,
                 "mobilenetv2": torchvision.models.mobilenet_v2,
                 "vit": torchvision.models.vit_b_16}[name]()
    size = 299 if name == "inception_v3" else 224
    if name == "vit":
        randomize_vit_parameters(model)
    else:
        randomize_batch_norms(model, [torch.randn(8, 3, size, size) for _ in range(2)])
    return model.eval(), {"input": torch.randn(batch, 3, size, size)}


# The models torch's dynamo exporter exports (it writes opset 18); the others go through the
# TorchScript exporter at opset 17. BERT-base: transformers 5's BertModel.forward takes more
# positional parameters than the TorchScript exporter can pass it ("got multiple values for
# argument 'use_cache'"), so it has always been exported by dynamo, every BERT figure in
# docs/PERF.md included.
DYNAMO_EXPORTS = {"bert"}


def exporter(name):
    return "dynamo (opset 18)" if name in DYNAMO_EXPORTS else "TorchScript (opset 17)"


def export(name, model, inputs, path):
    if os.path.exists(path):
        return
    args = tuple(inputs.values())
    kwargs = dict(opset_version=17, input_names=list(inputs), do_constant_folding=True)
    torch.onnx.export(model, args, path, dynamo=name in DYNAMO_EXPORTS, **kwargs)


def failure(step, error):
    """Prints a step's failure with its traceback; returns the line the report keeps."""
    traceback.print_exc()
    message = str(error).strip().splitlines()
    return f"{step}: {type(error).__name__}" + (f": {message[0]}" if message else "")


def time_torch(entry, model, inputs, args):
    """Adds eager's and torch.compile's medians to `entry`, or their errors."""
    gpu_model = model.half().cuda()
    gpu_inputs = [t.cuda().half() if t.is_floating_point() else t.cuda() for t in inputs.values()]
    modes = [] if args.no_compile else args.compile_modes.split(",")
    for column in ["eager"] + [f"compile {mode}" for mode in modes]:
        try:
            if column == "eager":
                run = gpu_model
            elif column == "compile kiln":
                import kiln.torch_backend  # noqa: F401  (registers the backend)
                torch._dynamo.reset()
                run = torch.compile(gpu_model, backend="kiln", dynamic=False,
                                    options={"precision": "fp16"})
            else:
                torch._dynamo.reset()
                run = torch.compile(gpu_model, mode=column.split(" ", 1)[1])
            entry[column] = time_cuda(lambda: run(*gpu_inputs), args.iters, args.warmup)[0]
            # Progress, so that a run stopped by a time limit still shows what it measured.
            print(f"{entry['model']} b{entry['batch']} {column}: {entry[column]:.4f} ms",
                  flush=True)
        except Exception as error:  # one mode failing leaves the others to run
            entry.setdefault("errors", []).append(failure(column, error))
    del gpu_model, gpu_inputs
    torch._dynamo.reset()
    torch.cuda.empty_cache()


def time_kiln(entry, path, name, batch, args):
    """Adds kiln unfused's and fused's medians and cosines to `entry`, or kiln's error."""
    profile = ["--profile", str(args.kiln_profile)] if args.kiln_profile else []
    kiln = run_kiln_bench(args.kiln, path, os.path.join(args.out_dir, f"{name}_b{batch}_kiln.json"),
                          args.iters, args.warmup,
                          ["--precision", "fp16"] + profile + args.kiln_args.split(),
                          variants=args.kiln_variants)
    for variant in args.kiln_variants.split(","):
        figures = kiln.get(variant, {})
        if "median_ms" in figures:
            entry[f"kiln {variant}"] = figures["median_ms"]
            entry[f"kiln {variant} cosine"] = figures["cosine"]
        elif "error" in figures:
            entry.setdefault("errors", []).append(f"kiln {variant}: {figures['error']}")
    if "error" in kiln and not entry.get("errors"):
        entry.setdefault("errors", []).append("kiln: " + " ".join(kiln["error"]))


def add_speedups(entry):
    """entry["kiln fused speedup"][column]: that column's time over kiln fused's."""
    if "kiln fused" not in entry:
        return
    entry["kiln fused speedup"] = {column: entry[column] / entry["kiln fused"]
                                   for column in TORCH_COLUMNS + ["kiln unfused"]
                                   if column in entry}


def benchmark(name, batch, args):
    """One model at one batch size: its report entry."""
    entry = {"model": name, "batch": batch, "exporter": exporter(name)}
    # The exports (hundreds of MB) go to a work directory; OUT gets the reports only.
    work_dir = os.path.join(tempfile.gettempdir(), "kiln-bench-models")
    os.makedirs(work_dir, exist_ok=True)
    path = os.path.join(work_dir, f"{name}_b{batch}.onnx")
    try:
        model, inputs = make_model(name, batch)
        export(name, model, inputs, path)
    except Exception as error:
        entry["errors"] = [failure("export", error)]
        return entry
    time_torch(entry, model, inputs, args)
    time_kiln(entry, path, name, batch, args)
    add_speedups(entry)
    return entry


def print_tables(report):
    print(f"\n{report['card']}, fp16, median ms")
    columns = TORCH_COLUMNS + KILN_COLUMNS
    print(f"{'model':<12} {'batch':>5} " + " ".join(f"{c:>24}" for c in columns))
    for entry in report["runs"]:
        cells = [f"{entry[c]:.3f}" if c in entry else "—" for c in columns]
        print(f"{entry['model']:<12} {entry['batch']:>5} " + " ".join(f"{c:>24}" for c in cells))
    print("\nkiln fused's speedup over each (its time / kiln fused's; above 1: kiln fused is "
          "faster)")
    others = TORCH_COLUMNS + ["kiln unfused"]
    print(f"{'model':<12} {'batch':>5} " + " ".join(f"{c:>24}" for c in others))
    for entry in report["runs"]:
        speedups = entry.get("kiln fused speedup", {})
        cells = [f"{speedups[c]:.2f}x" if c in speedups else "—" for c in others]
        print(f"{entry['model']:<12} {entry['batch']:>5} " + " ".join(f"{c:>24}" for c in cells))
    failed = [entry for entry in report["runs"] if entry.get("errors")]
    if failed:
        print("\nerrors (— above):")
        for entry in failed:
            for error in entry["errors"]:
                print(f"  {entry['model']} batch {entry['batch']}: {error}")


def batch_sizes(args):
    """{model: [batch, ...]}: --batches for every model plus its --extra-batches."""
    extra = {}
    for item in filter(None, args.extra_batches.split(",")):
        model, _, batch = item.partition("=")
        extra.setdefault(model, []).append(int(batch))
    common = [int(b) for b in args.batches.split(",")]
    return {name: common + [b for b in extra.get(name, []) if b not in common]
            for name in args.models.split(",")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--batches", default="1,32", help="batch sizes of every model")
    parser.add_argument("--extra-batches", default="resnet50=128",
                        help="MODEL=BATCH,...: more batch sizes for some models ('' for none)")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument("--compile-modes", default="default,reduce-overhead",
                        help="torch.compile modes to time (default: default,reduce-overhead)")
    parser.add_argument("--kiln-profile", type=int, default=0, metavar="N",
                        help="print kiln's N slowest kernel launches per variant")
    parser.add_argument("--kiln-args", default="",
                        help="more arguments for kiln bench, e.g. --concat-copies")
    parser.add_argument("--kiln-variants", default="unfused,fused",
                        help="kiln variants to time (fused alone halves kiln's share of the run: "
                             "each variant checks against the CPU reference twice)")
    args = parser.parse_args()
    chosen(parser, args.models, MODELS + CONCAT_MODELS + SE_MODELS, "model")
    chosen(parser, args.kiln_variants, ["unfused", "fused"], "kiln variant")
    chosen(parser, args.compile_modes, ["default", "reduce-overhead", "kiln"],
           "torch.compile mode")
    if not torch.cuda.is_available():
        print("no CUDA device: model benchmarks skipped")
        return 0
    os.makedirs(args.out_dir, exist_ok=True)
    report = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": []}
    for name, batches in batch_sizes(args).items():
        for batch in batches:
            entry = benchmark(name, batch, args)
            report["runs"].append(entry)
            print(json.dumps(entry), flush=True)
    print_tables(report)
    with open(os.path.join(args.out_dir, "models.json"), "w") as f:
        json.dump(report, f, indent=2)
    return 1 if any(entry.get("errors") for entry in report["runs"]) else 0


if __name__ == "__main__":
    sys.exit(main())
