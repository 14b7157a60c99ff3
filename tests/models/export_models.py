#!/usr/bin/python3
"""Exports the real-model test networks to ONNX (opset 17), with seeded random weights and inputs.

Run with an interpreter that has PyTorch and torchvision (Debian's /usr/bin/python3):
    /usr/bin/python3 tests/models/export_models.py WORK_DIR [MODEL...] [--batch N] [--dynamic]

For each MODEL (resnet50, mobilenetv2, bert, vit, llama; default: all) it writes
    WORK_DIR/<model>.onnx
    WORK_DIR/<model>/inputs/<input name>.npy      (batch N, default 1: the same weights)
Weights are random but seeded (torch.manual_seed). BatchNormalization nodes are kept (not folded
into the convolutions) and their statistics are made non-trivial: gamma and beta are randomized,
then the running mean and variance are measured on a few random batches, so activations stay in
a realistic range through the deep networks. The BERT-style encoder is written here in torch.nn;
the ViT is torchvision's VisionTransformer, scaled down. The Llama-style decoder is
transformers' LlamaModel at a small configuration; it needs the transformers package (imported
only for it) and torch's dynamo exporter (opset 18), since the TorchScript exporter has no
aten::diff.

--dynamic exports the inputs' and outputs' dim 0 as a symbolic "batch" (and, for bert and llama,
dim 1 of the inputs as "sequence"), for kiln's dynamic-shape tests; the file is then
WORK_DIR/<model>_dynamic.onnx.
"""
import argparse
import inspect
import math
import os
import time

import numpy as np
import torch
import torchvision
from torch import nn

OPSET = 17
SEED = 1234


# --- BERT-style encoder ---------------------------------------------------------------------

class SelfAttention(nn.Module):
    """Multi-head self-attention with explicit Q, K, V projections and an additive mask."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_size = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def split_heads(self, x):
        # [batch, seq, hidden] -> [batch, heads, seq, head_size]
        new_shape = x.size()[:-1] + (self.heads, self.head_size)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, additive_mask):
        q = self.split_heads(self.query(hidden_states))
        k = self.split_heads(self.key(hidden_states))
        v = self.split_heads(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probabilities = torch.softmax(scores + additive_mask, dim=-1)
        context = torch.matmul(probabilities, v).permute(0, 2, 1, 3).contiguous()
        context = context.view(context.size()[:-2] + (self.heads * self.head_size,))
        return self.output(context)


class EncoderLayer(nn.Module):
    """Post-LayerNorm transformer layer: attention and a GELU feed-forward, each with residual."""

    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.feed_forward = nn.Sequential(
            nn.Linear(hidden, intermediate), nn.GELU(), nn.Linear(intermediate, hidden))
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, hidden_states, additive_mask):
        hidden_states = self.attention_norm(
            hidden_states + self.attention(hidden_states, additive_mask))
        return self.output_norm(hidden_states + self.feed_forward(hidden_states))


class BertEncoder(nn.Module):
    """Embeddings (token + position + token type), LayerNorm, encoder layers and a tanh pooler."""

    def __init__(self, vocab=1000, hidden=256, heads=4, intermediate=1024, layers=2,
                 max_positions=128, token_types=2):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, hidden)
        self.position_embedding = nn.Embedding(max_positions, hidden)
        self.token_type_embedding = nn.Embedding(token_types, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.register_buffer("position_ids", torch.arange(max_positions).unsqueeze(0))
        self.register_buffer("token_type_ids", torch.zeros(1, max_positions, dtype=torch.long))
        self.layers = nn.ModuleList(
            [EncoderLayer(hidden, heads, intermediate) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)
        for module in self.modules():  # BERT's initialization: N(0, 0.02) weights.
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.size(1)
        embeddings = (self.token_embedding(input_ids)
                      + self.position_embedding(self.position_ids[:, :seq])
                      + self.token_type_embedding(self.token_type_ids[:, :seq]))
        hidden_states = self.embedding_norm(embeddings)
        # [batch, seq] of 0/1 -> [batch, 1, 1, seq] of 0 (attend) / -10000 (masked).
        additive_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            hidden_states = layer(hidden_states, additive_mask)
        pooled = torch.tanh(self.pooler(hidden_states[:, 0]))
        return hidden_states, pooled


# --- Model table ----------------------------------------------------------------------------

def randomize_batch_norms(model, calibration_batches):
    """Random gamma/beta, then running statistics measured on the calibration batches."""
    batch_norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    with torch.no_grad():
        for bn in batch_norms:
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average over the calibration batches
        model.train()
        for batch in calibration_batches:
            model(batch)
    model.eval()


def make_cnn(constructor):
    def make(batch):
        model = constructor()
        randomize_batch_norms(model, [torch.randn(8, 3, 224, 224) for _ in range(2)])
        image = torch.randn(batch, 3, 224, 224)
        return model, {"input": image}, ["logits"]
    return make


def make_bert(batch):
    model = BertEncoder().eval()
    seq = 64
    input_ids = torch.randint(1, 1000, (batch, seq), dtype=torch.long)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    attention_mask[:, seq - 13:] = 0  # the last 13 positions are padding
    return (model, {"input_ids": input_ids, "attention_mask": attention_mask},
            ["last_hidden_state", "pooler_output"])


def randomize_vit_parameters(model):
    """torchvision sets some of a VisionTransformer's parameters to constants: a zero head (hence
    all-equal logits), a zero class token, zero attention and patch-embedding biases, LayerNorms
    of ones and zeros. Randomizes each, so that every parameter shows in the logits."""
    hidden = model.hidden_dim
    with torch.no_grad():
        nn.init.normal_(model.class_token, std=0.02)  # the scale of the position embedding
        nn.init.normal_(model.conv_proj.bias, std=0.02)
        nn.init.trunc_normal_(model.heads.head.weight, std=math.sqrt(1 / hidden))
        nn.init.normal_(model.heads.head.bias, std=0.02)
        for module in model.modules():
            if isinstance(module, nn.MultiheadAttention):
                nn.init.normal_(module.in_proj_bias, std=0.02)
                nn.init.normal_(module.out_proj.bias, std=0.02)
            elif isinstance(module, nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0.0, 0.1)


def make_vit(batch):
    """torchvision's ViT: ViT-B/16's image, patch and head sizes and MLP ratio; 4 layers of 256."""
    hidden = 256
    model = torchvision.models.vision_transformer.VisionTransformer(
        image_size=224, patch_size=16, num_layers=4, num_heads=4, hidden_dim=hidden,
        mlp_dim=4 * hidden, num_classes=1000)
    randomize_vit_parameters(model)
    image = torch.randn(batch, 3, 224, 224)
    return model, {"input": image}, ["logits"]


def make_llama(batch):
    """transformers' LlamaModel, 2 layers of 256: grouped-query attention (4 query heads sharing 2
    key/value heads of 64), rotary embeddings, RMSNorm (eps 1e-6), a SiLU-gated MLP of 688 and a
    causal mask. Weights N(0, 0.05) (transformers' N(0, 0.02) leaves the attention near uniform);
    the RMSNorm weights, ones in transformers, uniform in [0.5, 1.5]."""
    from transformers import LlamaConfig, LlamaModel

    config = LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=688,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=128, rms_norm_eps=1e-6, initializer_range=0.05,
                         attn_implementation="eager", use_cache=False)
    decoder = LlamaModel(config)
    with torch.no_grad():
        for name, parameter in decoder.named_parameters():
            if name.endswith("norm.weight"):
                parameter.uniform_(0.5, 1.5)
    input_ids = torch.randint(1, 1000, (batch, 64), dtype=torch.long)
    return LastHiddenState(decoder), {"input_ids": input_ids}, ["last_hidden_state"]


def make_t5(batch):
    """transformers' T5EncoderModel, 2 layers of 256: 4 heads of 64, relative position bias (32
    buckets, up to 128 apart) added to the scores of every layer, T5's RMS layer norm (eps 1e-6),
    a ReLU MLP of 512. Weights N(0, 0.05); the layer norm weights uniform in [0.5, 1.5]."""
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=1000, d_model=256, d_kv=64, d_ff=512, num_layers=2, num_heads=4,
                      relative_attention_num_buckets=32, relative_attention_max_distance=128,
                      layer_norm_epsilon=1e-6, dropout_rate=0.0, feed_forward_proj="relu",
                      initializer_factor=1.0, use_cache=False)
    encoder = T5EncoderModel(config)
    with torch.no_grad():
        for name, parameter in encoder.named_parameters():
            if "layer_norm" in name:
                parameter.uniform_(0.5, 1.5)
            else:
                parameter.normal_(0.0, 0.05)
    input_ids = torch.randint(1, 1000, (batch, 64), dtype=torch.long)
    return LastHiddenState(encoder), {"input_ids": input_ids}, ["last_hidden_state"]


class LastHiddenState(nn.Module):
    """A transformers model's last_hidden_state as the one output, without the key/value cache."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).last_hidden_state


MODELS = {
    "resnet50": make_cnn(torchvision.models.resnet50),
    "mobilenetv2": make_cnn(torchvision.models.mobilenet_v2),
    "bert": make_bert,
    "vit": make_vit,
    "llama": make_llama,
    "t5": make_t5,
}
# Exported by torch's dynamo exporter, at its least opset; the others by the TorchScript one.
DYNAMO_MODELS = {"llama"}
DYNAMO_OPSET = 18


def dynamic_axes(name, inputs, output_names, dynamo):
    """Dim 0 of every input and output is "batch"; bert's and llama's inputs' dim 1 is
    "sequence". (The dynamo exporter infers the outputs' from the inputs'.)"""
    axes = {input_name: {0: "batch"} for input_name in inputs}
    if name in ("bert", "llama"):
        axes = {input_name: {0: "batch", 1: "sequence"} for input_name in inputs}
    if not dynamo:
        axes.update({output_name: {0: "batch"} for output_name in output_names})
    return axes


def export(name, work_dir, batch, dynamic=False):
    # torch 2 defaults to its newer exporter from 2.9 on; the TorchScript one (dynamo=False) makes
    # the same graphs as torch 1.13's, so the tests see one export whichever torch runs them.
    dynamo = name in DYNAMO_MODELS
    if dynamic and dynamo:
        # torch.export specializes a dim whose example size is 1: a batch-1 example left a
        # gather_nd sized for one batch row in llama's graph, which kiln refused at batch 2.
        batch = max(batch, 2)
    torch.manual_seed(SEED)
    model, inputs, output_names = MODELS[name](batch)
    model.eval()
    path = os.path.join(work_dir, f"{name}_dynamic.onnx" if dynamic else f"{name}.onnx")
    version_options = ({"dynamo": dynamo}
                       if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})
    if dynamo:
        version_options["external_data"] = False  # the weights in the .onnx file, as the others
    torch.onnx.export(
        model, tuple(inputs.values()), path,
        opset_version=DYNAMO_OPSET if dynamo else OPSET,
        input_names=list(inputs), output_names=output_names,
        # PRESERVE (with the model in eval mode) keeps BatchNormalization nodes for kiln to fold.
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
        **({"dynamic_axes": dynamic_axes(name, inputs, output_names, dynamo)} if dynamic else {}),
        **version_options)
    input_dir = os.path.join(work_dir, name, "inputs")
    os.makedirs(input_dir, exist_ok=True)
    for input_name, tensor in inputs.items():
        np.save(os.path.join(input_dir, f"{input_name}.npy"), tensor.numpy())
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work_dir")
    parser.add_argument("models", nargs="*", metavar="MODEL",
                        help=f"one of {', '.join(MODELS)} (default: all)")
    parser.add_argument("--batch", type=int, default=1,
                        help="the batch size of the inputs (the weights do not depend on it)")
    parser.add_argument("--dynamic", action="store_true",
                        help="symbolic batch (and bert's and llama's sequence) dims: "
                             "<model>_dynamic.onnx")
    args = parser.parse_args()
    unknown = [name for name in args.models if name not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    torch.set_num_threads(1)  # results independent of the core count
    os.makedirs(args.work_dir, exist_ok=True)
    for name in args.models or list(MODELS):
        start = time.time()
        path = export(name, args.work_dir, args.batch, args.dynamic)
        print(f"export {name}: {path} ({os.path.getsize(path) / 1e6:.1f} MB, "
              f"{time.time() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
