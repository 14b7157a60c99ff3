// numpy <-> kiln::Tensor copies, by a table of the dtypes both have.
#include "tensors.h"

#include <cstring>
#include <optional>

#include "ir/error.h"

namespace kiln::python {

namespace py = pybind11;

namespace {

struct DTypeName {
  DType dtype;
  const char* numpy_name;
};

constexpr DTypeName kDTypes[] = {
    {DType::kF32, "float32"}, {DType::kF16, "float16"}, {DType::kF64, "float64"},
    {DType::kI64, "int64"},   {DType::kI32, "int32"},   {DType::kI8, "int8"},
    {DType::kU8, "uint8"},    {DType::kBool, "bool"},
};

std::optional<DType> dtype_from_numpy(const py::dtype& dtype) {
  const std::string name = py::str(dtype.attr("name"));
  for (const DTypeName& entry : kDTypes) {
    if (name == entry.numpy_name) return entry.dtype;
  }
  return std::nullopt;
}

}  // namespace

std::string dtype_to_numpy_name(DType dtype) {
  if (dtype == DType::kBF16) return "bfloat16";
  for (const DTypeName& entry : kDTypes) {
    if (entry.dtype == dtype) return entry.numpy_name;
  }
  throw InternalError("dtype_to_numpy_name: a dtype without a name");
}

Tensor tensor_from_array(const py::array& array, const std::string& what) {
  const std::optional<DType> dtype = dtype_from_numpy(array.dtype());
  if (!dtype) {
    throw InputError(what + ": numpy dtype " + std::string(py::str(array.dtype())) +
                     " has no kiln dtype (float32, float16, float64, int64, int32, int8, "
                     "uint8, bool)");
  }
  auto contiguous = py::array::ensure(array, py::array::c_style);
  Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  Tensor tensor(*dtype, shape);
  if (tensor.num_bytes() > 0) std::memcpy(tensor.bytes(), contiguous.data(), tensor.num_bytes());
  return tensor;
}

void check_numpy_dtype(DType dtype, const std::string& what) {
  if (dtype == DType::kBF16) {
    throw InputError(what + " is bf16, which numpy lacks: pass torch tensors, or compile with "
                            "io_precision='fp16' or without it");
  }
}

py::array array_from_tensor(const Tensor& tensor, const std::string& what) {
  check_numpy_dtype(tensor.dtype(), what);
  py::array array(py::dtype(dtype_to_numpy_name(tensor.dtype())),
                  std::vector<py::ssize_t>(tensor.shape().begin(), tensor.shape().end()));
  if (tensor.num_bytes() > 0) std::memcpy(array.mutable_data(), tensor.bytes(), tensor.num_bytes());
  return array;
}

}  // namespace kiln::python
