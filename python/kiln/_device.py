"""Device tensors in and out of Executable.run: torch CUDA tensors, CuPy arrays (and anything
with __cuda_array_interface__), and DLPack-only CUDA tensors viewed through torch or CuPy.

Inputs are passed zero-copy: their device pointers go to the session's run_device. Outputs are
allocated by the first input's library on its device. Stream semantics: kiln's CUDA graph is
enqueued on that library's current stream (torch.cuda.current_stream(), CuPy's current stream),
after the work already queued there, and the call returns without waiting, as a torch op does:
use the outputs on that stream, or synchronize. Inputs of another library are waited for first
(their current stream synchronized).
"""

from typing import Any, Callable, List, Sequence, Tuple

ALIGNMENT = 16  # bytes; kiln's kernels move 16 bytes at a time (runtime/session.h)

Spec = Tuple[str, Tuple[int, ...], str]  # (name, shape, numpy dtype name)


def _library(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def is_device_tensor(x: Any) -> bool:
    """True for CUDA tensors of torch, CuPy or any __cuda_array_interface__/DLPack library."""
    if _library(x) == "torch":
        return bool(x.is_cuda)
    if hasattr(x, "__cuda_array_interface__"):
        return True
    device = getattr(x, "__dlpack_device__", None)
    return callable(device) and device()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged


def _from_dlpack(x: Any) -> Any:
    """A DLPack-only CUDA tensor as a torch tensor (or CuPy array), sharing its memory."""
    try:
        import torch

        return torch.from_dlpack(x)
    except ImportError:
        pass
    try:
        import cupy

        return cupy.from_dlpack(x)
    except ImportError:
        raise TypeError(
            f"{type(x).__name__}: DLPack tensors are run through torch or CuPy, "
            "and neither is installed"
        ) from None


def _check(name: str, shape: Tuple[int, ...], dtype: str, spec: Spec, pointer: int) -> None:
    _, want_shape, want_dtype = spec
    if tuple(shape) != tuple(want_shape) or dtype != want_dtype:
        raise ValueError(
            f"input '{name}': expected {want_dtype}{list(want_shape)}, got {dtype}{list(shape)}"
        )
    if pointer % ALIGNMENT:
        raise ValueError(
            f"input '{name}': device pointer {pointer:#x} is not {ALIGNMENT}-byte aligned "
            "(pass a fresh tensor, or .clone() this view)"
        )


def _torch_input(x: Any, spec: Spec) -> int:
    name = spec[0]
    if not x.is_contiguous():
        raise ValueError(f"input '{name}': not contiguous (call .contiguous())")
    _check(name, tuple(x.shape), str(x.dtype).removeprefix("torch."), spec, x.data_ptr())
    return int(x.data_ptr())


def _cai_input(x: Any, spec: Spec) -> int:
    import numpy

    name = spec[0]
    interface = x.__cuda_array_interface__
    shape = tuple(interface["shape"])
    dtype = numpy.dtype(interface["typestr"])
    strides = interface.get("strides")
    if strides is not None and tuple(strides) != _contiguous_strides(shape, dtype.itemsize):
        raise ValueError(f"input '{name}': not C-contiguous")
    pointer = int(interface["data"][0])
    _check(name, shape, dtype.name, spec, pointer)
    return pointer


def _contiguous_strides(shape: Tuple[int, ...], itemsize: int) -> Tuple[int, ...]:
    strides: List[int] = []
    step = itemsize
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return tuple(strides)


def _torch_outputs(like: Any, specs: Sequence[Spec]) -> List[Any]:
    import torch

    return [torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
            for _, shape, dtype in specs]


def _cupy_outputs(like: Any, specs: Sequence[Spec]) -> List[Any]:
    import cupy

    with cupy.cuda.Device(like.device.id):
        return [cupy.empty(shape, dtype=dtype) for _, shape, dtype in specs]


def _current_stream(x: Any) -> int:
    """The handle of x's library's current CUDA stream on x's device (0: the legacy stream)."""
    if _library(x) == "torch":
        import torch

        return int(torch.cuda.current_stream(x.device).cuda_stream)
    import cupy

    return int(cupy.cuda.get_current_stream().ptr)


def _synchronize_producer(x: Any) -> None:
    if _library(x) == "torch":
        import torch

        torch.cuda.current_stream(x.device).synchronize()
    elif _library(x) == "cupy":
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def run_device(
    run: Callable[[List[int], List[int], int], None],
    inputs: Sequence[Any],
    input_specs: Sequence[Spec],
    output_specs: Sequence[Spec],
) -> List[Any]:
    """Runs `run` (the session's run_device) on the inputs' device pointers, on the first
    input's library's current stream; returns outputs allocated by that library."""
    tensors = [x if hasattr(x, "__cuda_array_interface__") or _library(x) == "torch"
               else _from_dlpack(x) for x in inputs]
    pointers = [_torch_input(x, spec) if _library(x) == "torch" else _cai_input(x, spec)
                for x, spec in zip(tensors, input_specs)]
    first = tensors[0]
    if _library(first) == "torch":
        outputs = _torch_outputs(first, output_specs)
        output_pointers = [int(y.data_ptr()) for y in outputs]
    elif _library(first) == "cupy":
        outputs = _cupy_outputs(first, output_specs)
        output_pointers = [int(y.data.ptr) for y in outputs]
    else:
        raise TypeError(
            f"{type(first).__name__}: kiln allocates device outputs with torch or CuPy; "
            "pass torch tensors or CuPy arrays"
        )
    for x in tensors:
        if _library(x) != _library(first):
            _synchronize_producer(x)
    run(pointers, output_pointers, _current_stream(first))
    return outputs
