#!/usr/bin/python3
"""Models beyond the dev models, for coverage: export each with random weights, compile it for a
GPU with kiln (no GPU needed: the kernels are generated and NVRTC-compiled for the target) and
run kiln's CPU reference interpreter on the fused graph (the whole pass pipeline, fusion
included, in fp32) against PyTorch's own output.

    PYTHON tests/models/sweep_models.py KILN WORK_DIR [MODEL[@dynamo] ...]
        [--arch sm_90a] [--precision fp16]

PYTHON needs torch, torchvision and transformers. MODEL is a name from MODELS below (default:
all of them); "@dynamo" exports with torch.onnx's dynamo exporter (opset 18) instead of the
TorchScript one (opset 17). Every float parameter is redrawn (weights ~ N(0, 1/fan_in), norms'
scales in [0.5, 1.5), BatchNorm statistics non-trivial) so that no output is nearly constant.
Prints a line per model: whether it exported, compiled (kernels, steps) and whether the CPU
reference's first output is within 1e-4 + 1e-3·|torch| of torch's everywhere (fp32), with the
largest error; exits 1 when any model failed. The GPU never runs here: the GPU tests
(run_gpu_model_test.py) are for that.
"""
import argparse
import inspect
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torchvision


def torchvision_model(name, size=224, **options):
    def make():
        model = getattr(torchvision.models, name)(weights=None, **options)
        return model, (torch.randn(1, 3, size, size),)
    return make


class FirstTensor(torch.nn.Module):
    """A model whose first output tensor is the output: of a tuple or list, its first item; of a
    dict, its "out" or its first value (a detector's boxes), recursively."""

    def __init__(self, inner, keywords=None):
        super().__init__()
        self.inner = inner
        self.keywords = keywords

    def forward(self, *inputs):
        if self.keywords:
            result = self.inner(**dict(zip(self.keywords, inputs)))
        else:
            result = self.inner(*inputs)
        while not isinstance(result, torch.Tensor):
            if isinstance(result, dict):
                result = result["out"] if "out" in result else next(iter(result.values()))
            else:
                result = result[0]
        return result


def torchvision_task_model(task, name, shapes, **options):
    def make():
        model = getattr(getattr(torchvision.models, task), name)(weights=None, **options)
        return FirstTensor(model), tuple(torch.randn(*shape) for shape in shapes)
    return make


def transformers_model(kind):
    """Small configurations (2 layers, width 128) with random weights; token ids and a mask."""
    def make():
        import transformers as hf
        small = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                     intermediate_size=256, vocab_size=1000)
        if kind == "gpt2":
            model = hf.GPT2Model(hf.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000,
                                               n_positions=64, use_cache=False))
        elif kind == "distilbert":
            model = hf.DistilBertModel(hf.DistilBertConfig(n_layers=2, dim=128, n_heads=4,
                                                           hidden_dim=256, vocab_size=1000))
        elif kind == "roberta":
            model = hf.RobertaModel(hf.RobertaConfig(**small))
        elif kind == "albert":
            model = hf.AlbertModel(hf.AlbertConfig(embedding_size=64, **small))
        elif kind == "deberta":
            model = hf.DebertaV2Model(hf.DebertaV2Config(**small))
        elif kind == "electra":
            model = hf.ElectraModel(hf.ElectraConfig(embedding_size=64, **small))
        elif kind == "mobilebert":
            model = hf.MobileBertModel(hf.MobileBertConfig(
                num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                intermediate_size=128, vocab_size=1000, embedding_size=64,
                intra_bottleneck_size=64, true_hidden_size=64))
        elif kind == "opt":
            model = hf.OPTModel(hf.OPTConfig(num_hidden_layers=2, hidden_size=128,
                                             num_attention_heads=4, ffn_dim=256, vocab_size=1000,
                                             word_embed_proj_dim=128, use_cache=False))
        elif kind == "bloom":
            model = hf.BloomModel(hf.BloomConfig(n_layer=2, hidden_size=128, n_head=4,
                                                 vocab_size=1000, use_cache=False))
        elif kind in ("mistral", "qwen2", "phi3", "gemma"):
            decoder = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                           num_key_value_heads=2, intermediate_size=256, vocab_size=1000,
                           use_cache=False, pad_token_id=0)
            config = {"mistral": hf.MistralConfig, "qwen2": hf.Qwen2Config,
                      "phi3": hf.Phi3Config, "gemma": hf.GemmaConfig}[kind]
            if kind == "gemma":
                decoder["head_dim"] = 32
            model = {"mistral": hf.MistralModel, "qwen2": hf.Qwen2Model, "phi3": hf.Phi3Model,
                     "gemma": hf.GemmaModel}[kind](config(**decoder))
        elif kind == "wav2vec2":
            model = hf.Wav2Vec2Model(hf.Wav2Vec2Config(
                hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4))
            return FirstTensor(model, ["input_values"]), (torch.randn(1, 4000),)
        elif kind == "clip_vision":
            model = hf.CLIPVisionModel(hf.CLIPVisionConfig(
                num_hidden_layers=2, hidden_size=128, num_attention_heads=4,
                intermediate_size=256, image_size=64, patch_size=16))
            return FirstTensor(model), (torch.randn(1, 3, 64, 64),)
        ids = torch.randint(0, 1000, (1, 32))
        mask = torch.ones(1, 32, dtype=torch.long)
        return FirstTensor(model, ["input_ids", "attention_mask"]), (ids, mask)
    return make


def transformers_vision_model(model_class, config_class, size=64, **config):
    """A transformers image model at a small configuration, on a size × size image."""
    def make():
        import transformers as hf
        model = getattr(hf, model_class)(getattr(hf, config_class)(**config))
        return FirstTensor(model, ["pixel_values"]), (torch.randn(1, 3, size, size),)
    return make


SMALL_VIT = dict(image_size=64, patch_size=16, num_hidden_layers=2, hidden_size=64,
                 num_attention_heads=4, intermediate_size=128)

MODELS = {
    "alexnet": torchvision_model("alexnet"),
    "vgg11": torchvision_model("vgg11"),
    "squeezenet1_1": torchvision_model("squeezenet1_1"),
    "googlenet": torchvision_model("googlenet", init_weights=True, aux_logits=False),
    "inception_v3": torchvision_model("inception_v3", 299, init_weights=True, aux_logits=False),
    "densenet121": torchvision_model("densenet121"),
    "resnext50_32x4d": torchvision_model("resnext50_32x4d"),
    "shufflenet_v2_x1_0": torchvision_model("shufflenet_v2_x1_0"),
    "mnasnet0_5": torchvision_model("mnasnet0_5"),
    "mobilenet_v3_small": torchvision_model("mobilenet_v3_small"),
    "mobilenet_v3_large": torchvision_model("mobilenet_v3_large"),
    "efficientnet_b0": torchvision_model("efficientnet_b0"),
    "efficientnet_v2_s": torchvision_model("efficientnet_v2_s"),
    "regnet_x_400mf": torchvision_model("regnet_x_400mf"),
    "regnet_y_400mf": torchvision_model("regnet_y_400mf"),
    "convnext_tiny": torchvision_model("convnext_tiny"),
    "swin_t": torchvision_model("swin_t"),
    "maxvit_t": torchvision_model("maxvit_t"),
    "vit_b_16": torchvision_model("vit_b_16"),
    "deeplabv3_mobilenet_v3": torchvision_task_model(
        "segmentation", "deeplabv3_mobilenet_v3_large", [(1, 3, 224, 224)], num_classes=5,
        weights_backbone=None, aux_loss=False),
    "lraspp_mobilenet_v3": torchvision_task_model(
        "segmentation", "lraspp_mobilenet_v3_large", [(1, 3, 224, 224)], num_classes=5,
        weights_backbone=None),
    "r3d_18": torchvision_task_model("video", "r3d_18", [(1, 3, 8, 56, 56)]),
    "ssdlite320_mobilenet_v3": torchvision_task_model(
        "detection", "ssdlite320_mobilenet_v3_large", [(1, 3, 320, 320)], num_classes=5,
        weights_backbone=None),
    "gpt2": transformers_model("gpt2"),
    "distilbert": transformers_model("distilbert"),
    "roberta": transformers_model("roberta"),
    "albert": transformers_model("albert"),
    "deberta": transformers_model("deberta"),
    "electra": transformers_model("electra"),
    "clip_vision": transformers_model("clip_vision"),
    "mobilebert": transformers_model("mobilebert"),
    "opt": transformers_model("opt"),
    "bloom": transformers_model("bloom"),
    "mistral": transformers_model("mistral"),
    "qwen2": transformers_model("qwen2"),
    "phi3": transformers_model("phi3"),
    "gemma": transformers_model("gemma"),
    "deit": transformers_vision_model("DeiTModel", "DeiTConfig", **SMALL_VIT),
    "beit": transformers_vision_model("BeitModel", "BeitConfig", use_relative_position_bias=True,
                                      **SMALL_VIT),
    "dinov2": transformers_vision_model("Dinov2Model", "Dinov2Config", **SMALL_VIT),
    "mobilevit": transformers_vision_model("MobileViTModel", "MobileViTConfig", image_size=64,
                                           hidden_sizes=[32, 48, 64],
                                           neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]),
    "segformer": transformers_vision_model(
        "SegformerModel", "SegformerConfig", num_encoder_blocks=2, depths=[1, 1],
        sr_ratios=[2, 1], hidden_sizes=[16, 32], num_attention_heads=[1, 2], patch_sizes=[7, 3],
        strides=[4, 2], mlp_ratios=[2, 2]),
    "swinv2": transformers_vision_model("Swinv2Model", "Swinv2Config", image_size=64,
                                        patch_size=4, embed_dim=16, depths=[1, 1],
                                        num_heads=[1, 2], window_size=4),
    "convnextv2": transformers_vision_model("ConvNextV2Model", "ConvNextV2Config",
                                            hidden_sizes=[16, 32], depths=[1, 1], num_stages=2),
    "levit": transformers_vision_model("LevitModel", "LevitConfig", image_size=64,
                                       hidden_sizes=[32, 48, 64], num_attention_heads=[1, 2, 2],
                                       depths=[1, 1, 1], key_dim=[8, 8, 8]),
    "wav2vec2": transformers_model("wav2vec2"),
}

NORMS = (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d, torch.nn.LayerNorm, torch.nn.GroupNorm)


@torch.no_grad()
def redraw_parameters(model):
    for module in model.modules():
        for name, parameter in module.named_parameters(recurse=False):
            if parameter.dim() >= 2:
                parameter.copy_(torch.randn_like(parameter) / parameter[0].numel() ** 0.5)
            elif isinstance(module, NORMS) and name == "weight":
                parameter.copy_(torch.rand_like(parameter) + 0.5)
            else:
                parameter.copy_(torch.randn_like(parameter) * 0.1)
        if isinstance(module, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
            module.running_mean.copy_(torch.randn_like(module.running_mean) * 0.1)
            module.running_var.copy_(torch.rand_like(module.running_var) + 0.5)


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def file_name(tensor_name):
    """The file kiln run writes for an output (characters other than [A-Za-z0-9._-] as _)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in tensor_name) + ".npy"


def sweep_one(spec, args):
    """One model's line; raises nothing."""
    import onnx
    name, _, exporter = spec.partition("@")
    if name not in MODELS:
        return False, f"{spec}: unknown model (known: {', '.join(MODELS)})"
    work = os.path.join(args.work_dir, spec.replace("@", "_"))
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    try:
        torch.manual_seed(0)
        model, inputs = MODELS[name]()
        model.eval()
        redraw_parameters(model)
        with torch.no_grad():
            want = FirstTensor(model)(*inputs).numpy()
        if exporter == "dynamo":
            torch.onnx.export(model, inputs, path, dynamo=True, external_data=False)
        else:
            # Older torch (Debian's 1.13) has only the TorchScript exporter, and no dynamo flag.
            legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
            torch.onnx.export(model, inputs, path, opset_version=17, **legacy)
    except Exception as error:  # the exporter's failure, not kiln's
        return False, f"{spec}: export failed: {type(error).__name__}: {str(error)[:200]}"
    start = time.time()
    compiled = subprocess.run(
        [args.kiln, "compile", path, "--arch", args.arch, "--precision", args.precision,
         "--no-autotune", "-o", os.path.join(work, "model.kiln"),
         "--cache-dir", os.path.join(args.work_dir, "cache")],
        capture_output=True, text=True)
    seconds = time.time() - start
    if compiled.returncode != 0:
        compile_text = f"compile FAILED: {last_line(compiled.stderr)}"
    else:
        # "kiln compile: 142 steps, 83 kernels for sm_90a: 83 NVRTC compilations, ..."
        lines = [line for line in compiled.stderr.splitlines() if " kernels for " in line]
        summary = lines[-1].removeprefix("kiln compile: ").split(":")[0] if lines else ""
        compile_text = f"compiled in {seconds:.1f} s ({summary.removeprefix('kiln compile: ')})"
    graph = onnx.load(path, load_external_data=False).graph
    arguments = []
    for value, tensor in zip(graph.input, inputs):
        npy = os.path.join(work, file_name(value.name))
        np.save(npy, tensor.numpy())
        arguments += ["--input", f"{value.name}={npy}"]
    outputs = os.path.join(work, "outputs")
    reference = subprocess.run(
        [args.kiln, "run", path, "--device", "cpu", "--stage", "fused", "--output-dir", outputs,
         *arguments],
        capture_output=True, text=True)
    if reference.returncode != 0:
        return False, f"{spec}: {compile_text}; CPU reference FAILED: {last_line(reference.stderr)}"
    got = np.load(os.path.join(outputs, file_name(graph.output[0].name)))
    if got.shape != want.shape:
        return False, f"{spec}: {compile_text}; CPU reference shape {got.shape}, torch {want.shape}"
    error = np.abs(got - want)
    matches = bool(np.all(error <= 1e-4 + 1e-3 * np.abs(want)))
    verdict = (f"CPU reference {'matches' if matches else 'DIFFERS FROM'} torch (max abs error "
               f"{error.max():.2e}, largest |output| {np.abs(want).max():.2e})")
    return compiled.returncode == 0 and matches, f"{spec}: {compile_text}; {verdict}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kiln")
    parser.add_argument("work_dir")
    parser.add_argument("models", nargs="*", default=list(MODELS))
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--precision", default="fp16")
    args = parser.parse_args()
    failed = 0
    for spec in args.models:
        ok, line = sweep_one(spec, args)
        failed += not ok
        print(line, flush=True)
    print(f"{len(args.models) - failed} of {len(args.models)} models compiled and matched torch")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
