"""kiln: an ONNX -> CUDA graph compiler (docs/PYTHON.md).

    import kiln
    exe = kiln.compile("model.onnx", precision="fp16", input_shapes={"x": (1, 3, 224, 224)})
    y = exe(x)                           # numpy in, numpy out; torch CUDA tensors zero-copy
    exe.save("model.kiln"); exe = kiln.load("model.kiln")
    dyn = kiln.compile("model.onnx", input_shapes={"x": (range(1, 17), 3, 224, 224)})
    y5 = dyn(x5)                         # any batch 1..16 (docs/DYNAMIC_SHAPES.md)
    print(kiln.dump_ir("model.onnx", stage="fused"))
    want = kiln.run_reference("model.onnx", {"x": x})   # the CPU oracle, no GPU needed
"""

import os
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

from . import _kiln
from ._model import (
    arch_argument,
    base_dir_argument,
    has_ranges,
    model_argument,
    pipeline_argument,
    ranges_argument,
    shapes_argument,
)
from .errors import InputError, InternalError, KilnError, UnsupportedError
from .executable import DynamicExecutable, Executable, TensorInfo

__version__: str = _kiln.__version__

__all__ = [
    "DynamicExecutable",
    "Executable",
    "InputError",
    "InternalError",
    "KilnError",
    "TensorInfo",
    "UnsupportedError",
    "__version__",
    "compile",
    "cuda_device_error",
    "dump_ir",
    "load",
    "run_reference",
]

Shapes = Optional[Mapping[str, Sequence[int]]]
RangedShapes = Optional[Mapping[str, Sequence[Union[int, range, str]]]]


def compile(
    model: Any,
    *,
    precision: str = "fp32",
    arch: Union[str, Sequence[str]] = "native",
    fusion: bool = True,
    input_shapes: RangedShapes = None,
    io_precision: Optional[str] = None,
    keep_fp32: Union[str, Sequence[str], None] = None,
    disabled_passes: Union[str, Sequence[str], None] = None,
    cache_dir: Optional[str] = None,
    threads: int = 0,
    progress: Optional[Callable[[int, int], None]] = None,
    base_dir: Optional[str] = None,
    autotune: Optional[bool] = None,
    opt_shapes: Shapes = None,
    concat_views: bool = True,
) -> Union[Executable, DynamicExecutable]:
    """Compiles an ONNX model (a path, an onnx.ModelProto or its bytes) or a .kir file.

    precision: "fp32", "tf32", "fp16" or "bf16". arch: "native" (this machine's GPU), or names
    such as "sm_80,sm_90" or ["sm_90a"] (no GPU needed). input_shapes binds symbolic input
    dimensions ({"x": (8, 3, 224, 224)}); unbound ones become 1 with a UserWarning.
    io_precision "fp16"/"bf16" makes float inputs and outputs 16-bit. progress(done, total) is
    called as kernels compile. base_dir: where a ModelProto's external data files are.
    autotune: time each kernel's candidate tactics on this GPU (None: for arch "native";
    True with other archs is an InputError; False: the heuristics), as `kiln compile --autotune`.
    concat_views=False keeps every concat a copy kernel (`kiln compile --concat-copies`) rather
    than having its operands' kernels write their slices of it.

    A dim of input_shapes given as a range (range(1, 17) or "1..16") compiles a dynamic program
    for every size in it, returned as a DynamicExecutable (docs/DYNAMIC_SHAPES.md; progress is
    not reported); opt_shapes names shapes to compile a variant of their own for.
    """
    if has_ranges(input_shapes):
        return DynamicExecutable(_kiln.compile_dynamic(
            model_argument(model), base_dir_argument(base_dir), arch_argument(arch),
            pipeline_argument(precision, io_precision, keep_fp32, fusion, disabled_passes,
                              concat_views),
            ranges_argument(input_shapes or {}), shapes_argument(opt_shapes),
            os.fspath(cache_dir) if cache_dir is not None else "", threads, autotune,
        ))
    if opt_shapes:
        raise ValueError("opt_shapes names shapes within input_shapes ranges; no dim of "
                         "input_shapes is a range")
    native = _kiln.compile(
        model_argument(model), base_dir_argument(base_dir), arch_argument(arch),
        pipeline_argument(precision, io_precision, keep_fp32, fusion, disabled_passes,
                          concat_views),
        shapes_argument(input_shapes), os.fspath(cache_dir) if cache_dir is not None else "",
        threads, progress, autotune,
    )
    return Executable(native)


def load(path: Union[str, "os.PathLike[str]"]) -> Union[Executable, DynamicExecutable]:
    """Reads a .kiln program (validated): an Executable, or a DynamicExecutable for one
    compiled for ranges of input shapes; runs need a GPU, the rest does not."""
    native = _kiln.load(os.fspath(path))
    if isinstance(native, _kiln.DynamicExecutable):
        return DynamicExecutable(native)
    return Executable(native)


def dump_ir(
    model: Any,
    *,
    stage: str = "fused",
    format: str = "text",
    precision: str = "fp32",
    fusion: bool = True,
    input_shapes: Shapes = None,
    io_precision: Optional[str] = None,
    keep_fp32: Union[str, Sequence[str], None] = None,
    disabled_passes: Union[str, Sequence[str], None] = None,
    base_dir: Optional[str] = None,
) -> str:
    """The model's IR after `stage` ("imported", "optimized" or "fused") as `format` ("text",
    "dot", "json" or "summary"): what `kiln dump-ir` prints."""
    return _kiln.dump_ir(
        model_argument(model), base_dir_argument(base_dir), stage, format,
        pipeline_argument(precision, io_precision, keep_fp32, fusion, disabled_passes),
        shapes_argument(input_shapes),
    )


def run_reference(
    model: Any,
    inputs: Mapping[str, Any],
    *,
    stage: str = "imported",
    precision: str = "fp32",
    base_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """Runs the model on kiln's CPU reference interpreter (the oracle; no GPU needed) on
    {input name: numpy array}; the arrays' shapes bind symbolic dimensions. Returns {output
    name: numpy array}. stage "optimized" or "fused" runs the graph after those passes."""
    return _kiln.run_reference(
        model_argument(model), base_dir_argument(base_dir), dict(inputs), stage,
        pipeline_argument(precision),
    )


def cuda_device_error() -> Optional[str]:
    """None when a CUDA device can be used, else why not ("no CUDA device: ...")."""
    return _kiln.cuda_device_error()
