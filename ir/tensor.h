// Shapes, tensor types and tensors (typed, shaped, owning their bytes).
//
// A Tensor's bytes are shared between copies (copying a Tensor is cheap, like a handle);
// `clone()` makes an independent copy. Element access converts through a compute type:
// f32/f16/bf16 read and write as float, f64 as double, integers and bool as int64_t.
// Writes into f16/bf16 round to nearest even; a float read or written as an integer truncates
// toward zero and saturates to int64 (NaN gives 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace kiln {

using Shape = std::vector<int64_t>;

// The product of the dims; throws InputError when it overflows int64 (and no dim is 0).
int64_t num_elements(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "1,3,224,224" (empty for a scalar)
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& shape);

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t num_elements() const { return kiln::num_elements(shape); }
  size_t num_bytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype); }
  bool operator==(const TensorType&) const = default;
};

// "f32[1,3,224,224]"; a scalar is "f32[]".
std::string type_to_string(const TensorType& type);

class Tensor {
 public:
  Tensor() = default;
  // A zero-filled tensor of the given type.
  explicit Tensor(TensorType type);
  Tensor(DType dtype, Shape shape) : Tensor(TensorType{dtype, std::move(shape)}) {}

  template <class T>
  static Tensor from_vector(DType dtype, Shape shape, const std::vector<T>& values);
  static Tensor scalar_i64(int64_t value);
  static Tensor scalar_f32(float value);

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t rank() const { return type_.rank(); }
  int64_t num_elements() const { return type_.num_elements(); }
  size_t num_bytes() const { return type_.num_bytes(); }

  std::byte* bytes() { return bytes_ ? bytes_->data() : nullptr; }
  const std::byte* bytes() const { return bytes_ ? bytes_->data() : nullptr; }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes());
  }

  // Element access through the compute type (see the file comment).
  float get_float(int64_t index) const;
  double get_double(int64_t index) const;
  int64_t get_int(int64_t index) const;
  void set_float(int64_t index, float value);
  void set_double(int64_t index, double value);
  void set_int(int64_t index, int64_t value);

  // Every element, converted.
  std::vector<float> to_floats() const;
  std::vector<double> to_doubles() const;
  std::vector<int64_t> to_ints() const;

  // Same type and the same bytes (so NaN equals a NaN of the same bits).
  bool same_contents(const Tensor& other) const;

  Tensor clone() const;
  // A float tensor's elements in another float dtype, each rounded once (to nearest even).
  Tensor converted(DType dtype) const;
  // Same bytes viewed with another shape of equal element count.
  Tensor reshaped(Shape shape) const;

 private:
  TensorType type_;
  std::shared_ptr<std::vector<std::byte>> bytes_;
};

template <class T>
Tensor Tensor::from_vector(DType dtype, Shape shape, const std::vector<T>& values) {
  Tensor tensor(dtype, std::move(shape));
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < tensor.num_elements(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      tensor.set_double(static_cast<int64_t>(i), static_cast<double>(values[i]));
    } else {
      tensor.set_int(static_cast<int64_t>(i), static_cast<int64_t>(values[i]));
    }
  }
  return tensor;
}

}  // namespace kiln
