"""Type stubs of kiln._kiln, the C++ extension module (python/src/module.cc)."""

from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy

__version__: str

_Spec = Tuple[str, Tuple[int, ...], str]

class Executable:
    @property
    def inputs(self) -> List[_Spec]: ...
    @property
    def outputs(self) -> List[_Spec]: ...
    @property
    def archs(self) -> List[str]: ...
    @property
    def name(self) -> str: ...
    @property
    def kernel_count(self) -> int: ...
    def save(self, path: str) -> None: ...
    def inspect(self) -> str: ...
    def run(self, inputs: List[numpy.ndarray]) -> List[numpy.ndarray]: ...
    def run_device(
        self, inputs: List[int], outputs: List[int], stream: Optional[int] = None
    ) -> None: ...
    def time(self, iterations: int, warmup: int) -> List[float]: ...
    def time_devices(
        self, devices: str, inputs: List[numpy.ndarray], iterations: int, warmup: int
    ) -> Dict[str, Any]: ...
    def device(self) -> str: ...

def compile(
    model: Union[str, bytes],
    base_dir: str,
    archs: List[str],
    pipeline: Dict[str, Any],
    input_shapes: Dict[str, List[int]],
    cache_dir: str,
    threads: int,
    progress: Optional[Callable[[int, int], None]],
    autotune: Optional[bool],
) -> Executable: ...
def load(path: str) -> Executable: ...
def dump_ir(
    model: Union[str, bytes],
    base_dir: str,
    stage: str,
    format: str,
    pipeline: Dict[str, Any],
    input_shapes: Dict[str, List[int]],
) -> str: ...
def run_reference(
    model: Union[str, bytes],
    base_dir: str,
    inputs: Dict[str, numpy.ndarray],
    stage: str,
    pipeline: Dict[str, Any],
) -> Dict[str, numpy.ndarray]: ...
def cuda_device_error() -> Optional[str]: ...
