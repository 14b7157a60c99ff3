"""The checks on device inputs, without a GPU: __cuda_array_interface__ objects that only
describe memory (never dereferenced) are refused for their shape, dtype, alignment and layout
before anything reaches the session; host inputs are never taken for device ones."""

import numpy
import pytest

from kiln import _device

SPEC = ("image", (2, 3), "float32")


class FakeDeviceArray:
    """Describes a device array; kiln only reads the description in these tests."""

    def __init__(self, shape, typestr="<f4", pointer=0x10000, strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (pointer, False),
            "strides": strides, "version": 3,
        }


def test_accepts_a_matching_array():
    assert _device._cai_input(FakeDeviceArray((2, 3)), SPEC) == 0x10000


@pytest.mark.parametrize("array, message", [
    (FakeDeviceArray((3, 2)), r"expected float32\[2, 3\], got float32\[3, 2\]"),
    (FakeDeviceArray((2, 3), "<f8"), r"expected float32\[2, 3\], got float64\[2, 3\]"),
    (FakeDeviceArray((2, 3), pointer=0x10004), "is not 16-byte aligned"),
    (FakeDeviceArray((2, 3), strides=(4, 8)), "not C-contiguous"),
])
def test_refuses(array, message):
    with pytest.raises(ValueError, match=message):
        _device._cai_input(array, SPEC)


def test_contiguous_strides_pass():
    assert _device._cai_input(FakeDeviceArray((2, 3), strides=(12, 4)), SPEC) == 0x10000


def test_host_arrays_are_not_device_tensors():
    assert not _device.is_device_tensor(numpy.zeros(3, numpy.float32))
    assert _device.is_device_tensor(FakeDeviceArray((2, 3)))
