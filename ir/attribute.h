// Typed node attributes: int, float, string, int list, float list, dtype, tensor.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace kiln {

enum class AttrKind { kInt, kFloat, kString, kInts, kFloats, kDType, kTensor };

std::string_view attr_kind_name(AttrKind kind);  // "int", "float", "string", "ints", ...

class Attribute {
 public:
  using Storage = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, DType, Tensor>;

  Attribute() = default;
  Attribute(int64_t value) : storage_(value) {}
  Attribute(int value) : storage_(static_cast<int64_t>(value)) {}
  Attribute(double value) : storage_(value) {}
  Attribute(std::string value) : storage_(std::move(value)) {}
  Attribute(const char* value) : storage_(std::string(value)) {}
  Attribute(std::vector<int64_t> value) : storage_(std::move(value)) {}
  Attribute(std::vector<double> value) : storage_(std::move(value)) {}
  Attribute(DType value) : storage_(value) {}
  Attribute(Tensor value) : storage_(std::move(value)) {}

  AttrKind kind() const { return static_cast<AttrKind>(storage_.index()); }

  // Same kind and value; floats compare with ==, tensors by type and bytes.
  bool operator==(const Attribute& other) const;

  // Typed reads; each throws InternalError when the kind differs.
  int64_t as_int() const;
  double as_float() const;
  const std::string& as_string() const;
  const std::vector<int64_t>& as_ints() const;
  const std::vector<double>& as_floats() const;
  DType as_dtype() const;
  const Tensor& as_tensor() const;

 private:
  template <class T>
  const T& get(AttrKind expected) const;

  Storage storage_;
};

// Attributes of a node, sorted by name so printing is deterministic.
using AttributeMap = std::map<std::string, Attribute>;

}  // namespace kiln
