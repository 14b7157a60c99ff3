// Tensor storage and typed element access.
#include "ir/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/error.h"
#include "ir/half.h"

namespace kiln {

int64_t num_elements(const Shape& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      // A zero dim later on still makes the tensor empty.
      for (int64_t rest : shape) {
        if (rest == 0) return 0;
      }
      throw InputError("shape [" + shape_to_string(shape) + "] has more elements than int64 holds");
    }
  }
  return count;
}

std::string shape_to_string(const Shape& shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(shape[i]);
  }
  return text;
}

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

std::string type_to_string(const TensorType& type) {
  return std::string(dtype_name(type.dtype)) + "[" + shape_to_string(type.shape) + "]";
}

Tensor::Tensor(TensorType type)
    : type_(std::move(type)), bytes_(std::make_shared<std::vector<std::byte>>(type_.num_bytes())) {}

Tensor Tensor::scalar_i64(int64_t value) {
  Tensor tensor(DType::kI64, {});
  tensor.set_int(0, value);
  return tensor;
}

Tensor Tensor::scalar_f32(float value) {
  Tensor tensor(DType::kF32, {});
  tensor.set_float(0, value);
  return tensor;
}

namespace {

// Float -> int64 as a saturating conversion (NaN gives 0), so out-of-range values are defined.
int64_t saturating_int64(double value) {
  if (std::isnan(value)) return 0;
  if (value <= -0x1p63) return std::numeric_limits<int64_t>::min();
  if (value >= 0x1p63) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(value);
}

}  // namespace

// The float dtypes are read and written in get_double/set_double (set_float too, without the
// detour through double), the integer dtypes and bool in get_int/set_int; each forwards the
// other kinds to its counterpart.

double Tensor::get_double(int64_t i) const {
  switch (dtype()) {
    case DType::kF32:
      return data<float>()[i];
    case DType::kF16:
      return half_bits_to_float(data<uint16_t>()[i]);
    case DType::kBF16:
      return bfloat16_bits_to_float(data<uint16_t>()[i]);
    case DType::kF64:
      return data<double>()[i];
    default:
      return static_cast<double>(get_int(i));
  }
}

float Tensor::get_float(int64_t i) const { return static_cast<float>(get_double(i)); }

int64_t Tensor::get_int(int64_t i) const {
  switch (dtype()) {
    case DType::kI64:
      return data<int64_t>()[i];
    case DType::kI32:
      return data<int32_t>()[i];
    case DType::kI8:
      return data<int8_t>()[i];
    case DType::kU8:
      return data<uint8_t>()[i];
    case DType::kBool:
      return data<uint8_t>()[i] ? 1 : 0;
    default:
      return saturating_int64(get_double(i));
  }
}

void Tensor::set_double(int64_t i, double value) {
  switch (dtype()) {
    case DType::kF32:
      data<float>()[i] = static_cast<float>(value);
      return;
    case DType::kF16:
      data<uint16_t>()[i] = double_to_half_bits(value);
      return;
    case DType::kBF16:
      data<uint16_t>()[i] = double_to_bfloat16_bits(value);
      return;
    case DType::kF64:
      data<double>()[i] = value;
      return;
    case DType::kBool:
      data<uint8_t>()[i] = value != 0.0;
      return;
    default:
      set_int(i, saturating_int64(value));
      return;
  }
}

void Tensor::set_float(int64_t i, float value) {
  switch (dtype()) {
    case DType::kF32:
      data<float>()[i] = value;
      return;
    case DType::kF16:
      data<uint16_t>()[i] = float_to_half_bits(value);
      return;
    case DType::kBF16:
      data<uint16_t>()[i] = float_to_bfloat16_bits(value);
      return;
    default:
      set_double(i, value);
      return;
  }
}

void Tensor::set_int(int64_t i, int64_t value) {
  switch (dtype()) {
    case DType::kI64:
      data<int64_t>()[i] = value;
      return;
    case DType::kI32:
      data<int32_t>()[i] = static_cast<int32_t>(value);
      return;
    case DType::kI8:
      data<int8_t>()[i] = static_cast<int8_t>(value);
      return;
    case DType::kU8:
      data<uint8_t>()[i] = static_cast<uint8_t>(value);
      return;
    case DType::kBool:
      data<uint8_t>()[i] = value != 0;
      return;
    default:
      set_double(i, static_cast<double>(value));
      return;
  }
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> values(static_cast<size_t>(num_elements()));
  for (int64_t i = 0; i < num_elements(); ++i) values[i] = get_float(i);
  return values;
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<double> values(static_cast<size_t>(num_elements()));
  for (int64_t i = 0; i < num_elements(); ++i) values[i] = get_double(i);
  return values;
}

std::vector<int64_t> Tensor::to_ints() const {
  std::vector<int64_t> values(static_cast<size_t>(num_elements()));
  for (int64_t i = 0; i < num_elements(); ++i) values[i] = get_int(i);
  return values;
}

bool Tensor::same_contents(const Tensor& other) const {
  return type_ == other.type_ &&
         (num_bytes() == 0 || std::memcmp(bytes(), other.bytes(), num_bytes()) == 0);
}

Tensor Tensor::clone() const {
  Tensor copy(type_);
  if (num_bytes()) std::memcpy(copy.bytes(), bytes(), num_bytes());
  return copy;
}

Tensor Tensor::converted(DType dtype) const {
  if (!is_float(this->dtype()) || !is_float(dtype)) {
    throw InternalError("converted: " + type_to_string(type_) + " to " +
                        std::string(dtype_name(dtype)) + " is not a float conversion");
  }
  Tensor result(dtype, shape());
  const auto count = static_cast<size_t>(num_elements());
  // An f32 value is exact in double, so rounding it straight from f32 is what set_double does;
  // whole arrays convert much faster than element by element.
  if (this->dtype() == DType::kF32 && dtype == DType::kF16) {
    floats_to_half_bits({data<float>(), count}, {result.data<uint16_t>(), count});
  } else if (this->dtype() == DType::kF32 && dtype == DType::kBF16) {
    floats_to_bfloat16_bits({data<float>(), count}, {result.data<uint16_t>(), count});
  } else {
    for (int64_t i = 0; i < num_elements(); ++i) result.set_double(i, get_double(i));
  }
  return result;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (kiln::num_elements(shape) != num_elements()) {
    throw InternalError("reshaped: element count changes from " + type_to_string(type_) + " to [" +
                        shape_to_string(shape) + "]");
  }
  Tensor view = *this;
  view.type_.shape = std::move(shape);
  return view;
}

}  // namespace kiln
