"""Executable: a compiled kiln program (from kiln.compile or kiln.load) and how Python runs it;
DynamicExecutable: one compiled for ranges of input shapes.

Host inputs (numpy arrays, CPU torch tensors) are copied to the GPU and their outputs come back
as numpy arrays (torch tensors for torch inputs). Device inputs (torch CUDA tensors, CuPy
arrays, DLPack CUDA tensors) run zero-copy through the session's run_device (kiln/_device.py).
The GPU session is created on the first run; without a GPU that raises kiln.UnsupportedError
"no CUDA device ...". Everything else (inputs, outputs, save, inspect) works without one.
"""

import os
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy

from . import _device
from ._kiln import DynamicExecutable as _NativeDynamicExecutable
from ._kiln import Executable as _NativeExecutable


class TensorInfo(NamedTuple):
    """An input or output of a program: its name, shape and numpy dtype name."""

    name: str
    shape: Tuple[int, ...]
    dtype: str


class _Program:
    """What Executable and DynamicExecutable share: the signature, save, inspect, and runs by
    position or by name (each class runs its ordered inputs in _run_ordered)."""

    def __init__(self, native: Any) -> None:
        self._native = native

    @property
    def inputs(self) -> List[TensorInfo]:
        return [TensorInfo(*spec) for spec in self._native.inputs]

    @property
    def outputs(self) -> List[TensorInfo]:
        return [TensorInfo(*spec) for spec in self._native.outputs]

    @property
    def device(self) -> str:
        """The GPU the program runs on, "NVIDIA H100 80GB HBM3 (sm_90)"; starts the session."""
        return self._native.device()

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the program as a .kiln file (kiln.load and `kiln run` read it)."""
        self._native.save(os.fspath(path))

    def inspect(self) -> str:
        """The report `kiln inspect` prints."""
        return self._native.inspect()

    def __call__(self, *inputs: Any) -> Any:
        outputs = self._run_ordered(list(inputs))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, Any]:
        """Runs on {input name: array or tensor}; returns {output name: result}."""
        names = [info.name for info in self.inputs]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise ValueError(f"no input named {unknown[0]!r}; the inputs are {names}")
        missing = [name for name in names if name not in inputs]
        if missing:
            raise ValueError(f"missing input {missing[0]!r}; the inputs are {names}")
        outputs = self._run_ordered([inputs[name] for name in names])
        return {info.name: y for info, y in zip(self.outputs, outputs)}

    def _run_ordered(self, inputs: List[Any]) -> List[Any]:
        raise NotImplementedError


class Executable(_Program):
    """A compiled program. exe(x) or exe(a, b) runs it on positional inputs and returns the
    output (a tuple for several); exe.run({"name": x}) returns {output name: value}."""

    def __init__(self, native: _NativeExecutable) -> None:
        super().__init__(native)

    @property
    def archs(self) -> List[str]:
        """The GPU architectures the program holds kernels for ("sm_80", "sm_90a", ...)."""
        return list(self._native.archs)

    @property
    def kernel_count(self) -> int:
        return int(self._native.kernel_count)

    def bench(
        self,
        inputs: Optional[Sequence[Any]] = None,
        iterations: int = 100,
        warmup: int = 10,
        devices: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Times CUDA-graph replays (after running once on `inputs`, if given, else on the last
        run's inputs, zeros before any): {"median_ms", "p90_ms", "min_ms", "iterations",
        "device"}.

        devices ("all", or indices such as "0,1"): the program as data-parallel replicas, one
        per listed GPU (host numpy inputs copied to each), timed alone on the first device and
        then on all at once, one host thread each, as `kiln bench --devices`: {"batch",
        "iterations", "devices": [{"device", "description", "median_ms", "p90_ms"}],
        "one_device_inferences_per_s", "inferences_per_s", "scaling"} (batch: the first
        input's leading dimension; throughput = batch x replays / wall time)."""
        if devices is not None:
            return self._bench_devices(inputs, iterations, warmup, devices)
        if inputs is not None:
            self._run_ordered(list(inputs))
        times = sorted(self._native.time(iterations, warmup))
        return {
            "median_ms": _percentile(times, 0.5),
            "p90_ms": _percentile(times, 0.9),
            "min_ms": times[0],
            "iterations": iterations,
            "device": self.device,
        }

    def _bench_devices(self, inputs: Optional[Sequence[Any]], iterations: int, warmup: int,
                       devices: str) -> Dict[str, Any]:
        if inputs is not None and any(_device.is_device_tensor(x) for x in inputs):
            raise ValueError("bench(devices=...) copies host inputs to every device; pass numpy "
                             "arrays or CPU tensors")
        arrays = [] if inputs is None else [_host_array(x) for x in inputs]
        if arrays and len(arrays) != len(self.inputs):
            raise ValueError(f"expected {len(self.inputs)} inputs, got {len(arrays)}")
        timing = self._native.time_devices(str(devices), arrays, iterations, warmup)
        shape = self.inputs[0].shape if self.inputs else ()
        batch = shape[0] if shape else 1
        per_device = []
        for index, description, times in timing["devices"]:
            times = sorted(times)
            per_device.append({"device": index, "description": description,
                               "median_ms": _percentile(times, 0.5),
                               "p90_ms": _percentile(times, 0.9)})
        one = batch * iterations / timing["one_device_wall_s"]
        every = batch * iterations * len(per_device) / timing["all_devices_wall_s"]
        return {"batch": batch, "iterations": iterations, "devices": per_device,
                "one_device_inferences_per_s": one, "inferences_per_s": every,
                "scaling": every / one if one > 0 else float("nan")}

    def _run_ordered(self, inputs: List[Any]) -> List[Any]:
        specs = self._native.inputs
        if len(inputs) != len(specs):
            names = [spec[0] for spec in specs]
            raise ValueError(f"expected {len(specs)} inputs {names}, got {len(inputs)}")
        if inputs and any(_device.is_device_tensor(x) for x in inputs):
            if not all(_device.is_device_tensor(x) for x in inputs):
                raise ValueError("inputs mix host and device tensors; pass all on one side")
            return _device.run_device(self._native.run_device, inputs, specs,
                                      self._native.outputs)
        torch_inputs = any(type(x).__module__.startswith("torch") for x in inputs)
        arrays = [_host_array(x) for x in inputs]
        outputs = self._native.run(arrays)
        if torch_inputs:
            import torch

            return [torch.from_numpy(y) for y in outputs]
        return list(outputs)


def _percentile(ordered: List[float], fraction: float) -> float:
    """The element at `fraction` of the sorted times, as `kiln bench` reports (no interpolation)."""
    return ordered[int(fraction * (len(ordered) - 1))]


def _host_array(x: Any) -> numpy.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.detach().contiguous().numpy()
    return numpy.asarray(x)


class InputRange(NamedTuple):
    """A dim of an input that varies in a dynamic program, and whether smaller sizes run padded
    to a variant's (else each size has a variant of its own)."""

    input: str
    axis: int
    min: int
    max: int
    padded: bool


class DynamicExecutable(_Program):
    """A program compiled for ranges of input shapes (docs/DYNAMIC_SHAPES.md): exe(x) runs host
    inputs (numpy arrays, CPU torch tensors) of any shape in range on the variant that serves
    it; exe.run({"name": x}) returns {output name: value}. inputs and outputs show the largest
    variant's shapes; ranges the dims that vary; inspect() the ranges, classes and variants."""

    def __init__(self, native: _NativeDynamicExecutable) -> None:
        super().__init__(native)

    @property
    def ranges(self) -> List[InputRange]:
        return [InputRange(*spec) for spec in self._native.ranges]

    @property
    def variants(self) -> List[List[Tuple[int, ...]]]:
        """Each variant's input shapes."""
        return [list(shapes) for shapes in self._native.variants]

    def _run_ordered(self, inputs: List[Any]) -> List[Any]:
        if any(_device.is_device_tensor(x) for x in inputs):
            raise ValueError("a dynamic program runs host inputs (numpy arrays, CPU tensors); "
                             "device tensors are not supported yet")
        torch_inputs = any(type(x).__module__.startswith("torch") for x in inputs)
        outputs = self._native.run([_host_array(x) for x in inputs])
        if torch_inputs:
            import torch

            return [torch.from_numpy(y) for y in outputs]
        return list(outputs)
