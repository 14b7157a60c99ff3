// Attribute kind names and typed accessors.
#include "ir/attribute.h"

#include "ir/error.h"

namespace kiln {

std::string_view attr_kind_name(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kString:
      return "string";
    case AttrKind::kInts:
      return "ints";
    case AttrKind::kFloats:
      return "floats";
    case AttrKind::kDType:
      return "dtype";
    case AttrKind::kTensor:
      return "tensor";
  }
  return "?";
}

bool Attribute::operator==(const Attribute& other) const {
  if (kind() != other.kind()) return false;
  return std::visit(
      [&](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        const T& theirs = std::get<T>(other.storage_);
        if constexpr (std::is_same_v<T, Tensor>) {
          return value.same_contents(theirs);
        } else {
          return value == theirs;
        }
      },
      storage_);
}

template <class T>
const T& Attribute::get(AttrKind expected) const {
  if (kind() != expected) {
    throw InternalError("attribute is " + std::string(attr_kind_name(kind())) + ", not " +
                        std::string(attr_kind_name(expected)));
  }
  return std::get<T>(storage_);
}

int64_t Attribute::as_int() const { return get<int64_t>(AttrKind::kInt); }
double Attribute::as_float() const { return get<double>(AttrKind::kFloat); }
const std::string& Attribute::as_string() const { return get<std::string>(AttrKind::kString); }
const std::vector<int64_t>& Attribute::as_ints() const {
  return get<std::vector<int64_t>>(AttrKind::kInts);
}
const std::vector<double>& Attribute::as_floats() const {
  return get<std::vector<double>>(AttrKind::kFloats);
}
DType Attribute::as_dtype() const { return get<DType>(AttrKind::kDType); }
const Tensor& Attribute::as_tensor() const { return get<Tensor>(AttrKind::kTensor); }

}  // namespace kiln
