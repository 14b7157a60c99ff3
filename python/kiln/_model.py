"""Model arguments as the extension takes them: a path (str) or a serialized ONNX ModelProto."""

import os
from typing import Any, Mapping, Optional, Sequence, Union


def model_argument(model: object) -> Union[str, bytes]:
    """A path to an .onnx or .kir file, the bytes of a ModelProto, or an onnx.ModelProto."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    serialize = getattr(model, "SerializeToString", None)
    if callable(serialize):
        return serialize()
    raise TypeError(
        f"model: expected a path (.onnx or .kir), an onnx.ModelProto or its bytes, "
        f"not {type(model).__name__}"
    )


def shapes_argument(
    input_shapes: Optional[Mapping[str, Sequence[int]]],
) -> dict[str, list[int]]:
    """{name: dims} with the dims as ints, for binding symbolic input dimensions."""
    return {name: [int(d) for d in dims] for name, dims in (input_shapes or {}).items()}


def is_range(dim: object) -> bool:
    """A dim given as range(lo, hi + 1) or "lo..hi"."""
    return isinstance(dim, range) or (isinstance(dim, str) and ".." in dim)


def has_ranges(input_shapes: Optional[Mapping[str, Sequence[Any]]]) -> bool:
    """Whether any dim of `input_shapes` is a range (a dynamic program is compiled)."""
    return any(is_range(d) for dims in (input_shapes or {}).values() for d in dims)


def ranges_argument(input_shapes: Mapping[str, Sequence[Any]]) -> dict[str, list[tuple[int, int]]]:
    """{name: [(min, max) per dim]}: an int n is (n, n), range(lo, hi + 1) and "lo..hi" are
    (lo, hi)."""
    result = {}
    for name, dims in input_shapes.items():
        pairs = []
        for dim in dims:
            if isinstance(dim, range):
                if dim.step != 1 or len(dim) == 0:
                    raise ValueError(f"input_shapes[{name!r}]: {dim} must be a non-empty range "
                                     "with step 1")
                pairs.append((dim.start, dim.stop - 1))
            elif isinstance(dim, str) and ".." in dim:
                low, _, high = dim.partition("..")
                pairs.append((int(low), int(high)))
            else:
                pairs.append((int(dim), int(dim)))
        result[name] = pairs
    return result


def arch_argument(arch: Union[str, Sequence[str]]) -> list[str]:
    """'native', 'sm_90a', 'sm_80,sm_90' or a list of names to a list of names."""
    names = arch.split(",") if isinstance(arch, str) else list(arch)
    return [name.strip() for name in names if name.strip()]


def names_argument(names: Union[str, Sequence[str], None]) -> list[str]:
    """A comma-separated string or a sequence of names (ops, passes) to a list."""
    return arch_argument(names or ())


def pipeline_argument(
    precision: str,
    io_precision: Optional[str] = None,
    keep_fp32: Union[str, Sequence[str], None] = None,
    fusion: bool = True,
    disabled_passes: Union[str, Sequence[str], None] = None,
    concat_views: bool = True,
) -> dict[str, Any]:
    """The pass pipeline's options as the extension takes them (kiln::PipelineOptions), and
    whether concats are views (kiln::CompileOptions::concat_views; compiling reads it)."""
    return {
        "precision": precision,
        "io_precision": io_precision,
        "keep_fp32": names_argument(keep_fp32),
        "fusion": bool(fusion),
        "disabled_passes": names_argument(disabled_passes),
        "concat_views": bool(concat_views),
    }


def base_dir_argument(base_dir: Optional[str]) -> str:
    """Where a ModelProto's external data files are: base_dir, else the working directory."""
    return os.fspath(base_dir) if base_dir is not None else os.getcwd()
