// numpy arrays to kiln Tensors and back (host memory; the bytes are copied), and kiln dtypes as
// numpy dtype names. bf16 has no numpy dtype: such tensors are refused with an InputError.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "ir/tensor.h"

namespace kiln::python {

// "float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8", "bool".
std::string dtype_to_numpy_name(DType dtype);

// A copy of `array` (any layout) as a Tensor of the matching kiln dtype; `what` names it in the
// error for a dtype kiln lacks.
Tensor tensor_from_array(const pybind11::array& array, const std::string& what);

// Throws InputError unless numpy has `dtype` (bf16 it lacks); `what` names the tensor.
void check_numpy_dtype(DType dtype, const std::string& what);

// A new C-contiguous numpy array holding a copy of `tensor`.
pybind11::array array_from_tensor(const Tensor& tensor, const std::string& what);

}  // namespace kiln::python
