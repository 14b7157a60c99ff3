"""kiln as a torch.compile backend: torch.compile(model, backend="kiln").

    import torch, kiln.torch_backend                  # registers "kiln" (pip installs also
    compiled = torch.compile(model.half().cuda(),     #  register it by entry point)
                             backend="kiln", options={"precision": "fp16"})
    y = compiled(x)

Each graph TorchDynamo captures is exported to ONNX (torch.onnx.export of the FX graph) and
compiled by kiln for this GPU (kiln.compile, arch "native"); its runs pass torch CUDA tensors
zero-copy. The graph's parameters and buffers become the ONNX model's weights (dynamo passes
them as graph inputs; they are baked in at compile time, so the compiled graph is for inference:
later changes to the weights are not seen). Where kiln cannot take a graph — the export fails,
kiln refuses an op (its message names it), or an input is not a tensor of fixed shape — the
graph runs as eager PyTorch instead, with a warning saying why.

options (torch.compile's options=): precision "fp32" (default), "tf32", "fp16", "bf16"; any
other keyword of kiln.compile (fusion, keep_fp32, cache_dir, ...).
"""

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
    why = _why_not_tensors(example_inputs)
    if why:
        return _eager(graph, why)
    weight_positions = [k for k, x in enumerate(example_inputs)
                        if isinstance(x, torch.nn.Parameter)]
    activation_positions = [k for k in range(len(example_inputs)) if k not in weight_positions]
    activations = [example_inputs[k] for k in activation_positions]
    module = _WithBakedWeights(graph, example_inputs, weight_positions)
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
