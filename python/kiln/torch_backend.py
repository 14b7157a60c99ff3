"""kiln as a torch.compile backend: torch.compile(model, backend="kiln").

    import torch, kiln.torch_backend                  # registers "kiln" (pip installs also
    compiled = torch.compile(model.half().cuda(),     #  register it by entry point)
                             backend="kiln", options={"precision": "fp16"})
    y = compiled(x)

Each graph TorchDynamo captures is exported to ONNX (torch.onnx.export of the FX graph) and
compiled by kiln for this GPU (kiln.compile, arch "native"); its runs pass torch CUDA tensors
zero-copy. The graph's parameters and buffers become the ONNX model's weights (dynamo passes
them as graph inputs; they are baked in at compile time, so the compiled graph is for inference:
later changes to the weights and buffers are not seen). Where kiln cannot take a graph — the
export fails, kiln refuses an op (its message names it), an input is not a tensor of fixed shape,
or the graph writes to an input or buffer in place (a KV cache, BatchNorm in training mode) — the
graph runs as eager PyTorch instead, with a warning saying why.

options (torch.compile's options=): precision "fp32" (default), "tf32", "fp16", "bf16"; any
other keyword of kiln.compile (fusion, keep_fp32, cache_dir, ...).
"""

import copy
import io
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
from torch.utils import _pytree

import kiln

__all__ = ["kiln_backend"]


class _WithBakedWeights(torch.nn.Module):
    """The graph module with the inputs at `weight_positions` held as buffers (exported as ONNX
    initializers) and the others as its arguments."""

    def __init__(self, graph: torch.fx.GraphModule, inputs: Sequence[Any],
                 weight_positions: Sequence[int]) -> None:
        super().__init__()
        self.graph_module = graph
        self.arity = len(inputs)
        self.weight_positions = list(weight_positions)
        for k, position in enumerate(self.weight_positions):
            self.register_buffer(f"weight_{k}", inputs[position].detach())

    def forward(self, *activations: torch.Tensor) -> Any:
        arguments: List[Any] = [None] * self.arity
        weights = iter(getattr(self, f"weight_{k}") for k in range(len(self.weight_positions)))
        activation = iter(activations)
        for position in range(self.arity):
            arguments[position] = next(weights) if position in self.weight_positions else next(
                activation)
        return self.graph_module(*arguments)


_ATTENTION = (torch.nn.functional.scaled_dot_product_attention,
              torch._C._nn.scaled_dot_product_attention)


def _float_attention_masks(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `graph` whose scaled_dot_product_attention calls take their boolean masks as
    additive masks in the query's dtype (0 where attended, half the dtype's lowest value where
    not). TorchScript's ONNX export turns a boolean mask into an fp32 one, so a half-precision
    graph came out promoted to fp32 around every attention, with LayerNormalization left mixing
    fp32 inputs and fp16 weights (an invalid model). A row with every key masked averages its
    values here where torch gives zeros."""
    rewritten = torch.fx.GraphModule(graph, copy.deepcopy(graph.graph))
    for node in list(rewritten.graph.nodes):
        if node.op != "call_function" or node.target not in _ATTENTION:
            continue
        mask = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
        query = node.args[0]
        if not isinstance(mask, torch.fx.Node) or not isinstance(query, torch.fx.Node):
            continue
        mask_value, query_value = mask.meta.get("example_value"), query.meta.get("example_value")
        if mask_value is None or query_value is None or mask_value.dtype != torch.bool:
            continue
        dtype = query_value.dtype
        with rewritten.graph.inserting_before(node):
            where = rewritten.graph.call_function(
                torch.where, (mask, 0.0, torch.finfo(dtype).min / 2))
            additive = rewritten.graph.call_method("to", (where, dtype))
        if "attn_mask" in node.kwargs:
            node.update_kwarg("attn_mask", additive)
        else:
            node.update_arg(3, additive)
    rewritten.recompile()
    return rewritten


def _weight_positions(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> List[int]:
    """The inputs that are the modules' parameters or registered buffers (BatchNorm's running
    statistics, BERT's position ids): dynamo passes them as graph inputs; the placeholder's source
    names where it found them. Baked in, BatchNorm folds into its convolution; as runtime inputs
    it could not (ResNet-50 b32 ran 4.5x slower)."""
    placeholders = [node for node in graph.graph.nodes if node.op == "placeholder"]
    positions = []
    for k, x in enumerate(inputs):
        if isinstance(x, torch.nn.Parameter):
            positions.append(k)
            continue
        source = getattr(placeholders[k].meta.get("grapharg"), "source", None) \
            if k < len(placeholders) else None
        name = getattr(source, "name", None)
        name = name() if callable(name) else name
        if isinstance(name, str) and "._buffers[" in name:
            positions.append(k)
    return positions


# Ops that return a view of their first operand: writing to the view writes to the operand.
_VIEWS = {"__getitem__", "getitem", "view", "reshape", "transpose", "permute", "narrow", "select",
          "expand", "squeeze", "unsqueeze", "t", "as_strided", "split", "chunk", "unbind",
          "flatten", "unflatten", "view_as", "expand_as", "movedim", "diagonal", "contiguous"}


# Python's in-place operators (x[i] = v, x += v, ...) as FX records them (operator.setitem, iadd).
_IN_PLACE_OPERATORS = {"setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow",
                       "iand", "ior", "ixor", "ilshift", "irshift", "imatmul", "__setitem__",
                       "__iadd__", "__isub__", "__imul__", "__itruediv__"}


def _name_of(target: Any) -> str:
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _written_input(graph: torch.fx.GraphModule) -> str:
    """Why the graph has side effects kiln would drop, or "": an input or buffer written in place
    (a KV cache, a counter; through views too, or as an out= argument), or BatchNorm in training
    mode (it updates its running statistics). Baked in or exported, such a write would be lost
    and later calls would read stale values."""
    def placeholder_behind(value: Any) -> Optional[torch.fx.Node]:
        while isinstance(value, torch.fx.Node):
            if value.op == "placeholder":
                return value
            if value.op not in ("call_function", "call_method") or not value.args or \
                    _name_of(value.target) not in _VIEWS:
                return None
            value = value.args[0]
        return None

    for node in graph.graph.nodes:
        if node.op not in ("call_function", "call_method"):
            continue
        name = _name_of(node.target)
        written = []
        if name in _IN_PLACE_OPERATORS or (name.endswith("_") and not name.startswith("_")) or \
                node.kwargs.get("inplace") is True:
            written.append(node.args[0] if node.args else None)
        if "out" in node.kwargs:
            written.append(node.kwargs["out"])
        for value in written:
            target = placeholder_behind(value)
            if target is not None:
                return f"the graph writes to its input {target.name!r} in place ({name})"
        if name == "batch_norm":
            training = node.kwargs.get("training", node.args[5] if len(node.args) > 5 else False)
            if training is True:
                return "BatchNorm runs in training mode (it updates its running statistics)"
    return ""


def _why_not_tensors(inputs: Sequence[Any]) -> str:
    for k, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            return f"input {k} is a {type(x).__name__}, not a tensor (compile with dynamic=False)"
    return ""


def _export(module: torch.nn.Module, activations: Sequence[torch.Tensor]) -> bytes:
    """The module as ONNX bytes, by the TorchScript exporter (opset 17), else by dynamo's."""
    errors = []
    for dynamo, opset in ((False, 17), (True, 18)):
        buffer = io.BytesIO()
        try:
            torch.onnx.export(module, tuple(activations), buffer, opset_version=opset,
                              dynamo=dynamo)
            return buffer.getvalue()
        except Exception as error:  # the other exporter may take it
            exporter = "dynamo" if dynamo else "TorchScript"
            errors.append(f"{exporter} exporter: {type(error).__name__}: {error}")
    raise RuntimeError("; ".join(errors))


def _eager(graph: torch.fx.GraphModule, reason: str) -> Callable[..., Any]:
    warnings.warn(f"kiln: {reason}; this graph runs as eager PyTorch", stacklevel=3)
    return graph.forward


def kiln_backend(graph: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: Optional[Dict[str, Any]] = None) -> Callable[..., Any]:
    """The TorchDynamo backend: a callable running `graph` through kiln, or its eager forward
    (with a warning) where kiln cannot take it. `options` (torch.compile's) go to kiln.compile."""
    why = _why_not_tensors(example_inputs) or _written_input(graph)
    if why:
        return _eager(graph, why)
    weight_positions = _weight_positions(graph, example_inputs)
    activation_positions = [k for k in range(len(example_inputs)) if k not in weight_positions]
    activations = [example_inputs[k] for k in activation_positions]
    module = _WithBakedWeights(_float_attention_masks(graph), example_inputs, weight_positions)
    with torch.no_grad():
        leaves, output_spec = _pytree.tree_flatten(graph(*example_inputs))
    if not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        return _eager(graph, "the graph returns values that are not tensors")
    try:
        model = _export(module, activations)
    except Exception as error:
        return _eager(graph, f"the ONNX export failed ({error})")
    settings = dict(options or {})
    settings.setdefault("arch", "native")
    try:
        executable = kiln.compile(model, **settings)
    except (kiln.UnsupportedError, kiln.InputError) as error:
        return _eager(graph, str(error))
    if len(executable.inputs) != len(activations) or len(executable.outputs) != len(leaves):
        # The exporter dropped an input the graph does not read, or merged equal outputs.
        return _eager(graph, f"the ONNX export has {len(executable.inputs)} inputs and "
                             f"{len(executable.outputs)} outputs for the graph's "
                             f"{len(activations)} and {len(leaves)}")

    def run(*inputs: Any) -> Any:
        outputs = executable(*[inputs[k] for k in activation_positions])
        if not isinstance(outputs, tuple):
            outputs = (outputs,)
        return _pytree.tree_unflatten(list(outputs), output_spec)

    return run


def _register() -> None:
    from torch._dynamo import list_backends, register_backend

    if "kiln" not in list_backends(exclude_tags=()):
        register_backend(compiler_fn=kiln_backend, name="kiln")


_register()
