// ElementEmitter: values at an index as CUDA statements (see the header).
#include "codegen/element_emitter.h"

#include <cctype>

#include "codegen/cuda_expr.h"
#include "codegen/index_maps.h"
#include "codegen/op_expressions.h"
#include "codegen/resize_element.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

// Whether `text` is a lone identifier or number, which needs no variable or parentheses.
bool is_atom(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  }
  return true;
}

std::string parenthesized(const std::string& expression) {
  return is_atom(expression) ? expression : "(" + expression + ")";
}

int64_t product_of(const Shape& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t d = begin; d < end; ++d) result *= shape[d];
  return result;
}

// A one-element constant as a literal of its compute type.
std::string constant_literal(const Value* value) {
  const Tensor& data = value->data();
  const DType dtype = value->type().dtype;
  if (is_float(dtype)) return cuda_literal(data.get_double(0), dtype);
  if (dtype == DType::kBool) return data.get_int(0) != 0 ? "true" : "false";
  return cuda_integer_literal(data.get_int(0), dtype);
}

}  // namespace

std::string store_expression(DType dtype, const std::string& expression) {
  if (dtype == DType::kF16) return "kiln_f32_to_f16(" + expression + ")";
  if (dtype == DType::kBF16) return "kiln_f32_to_bf16(" + expression + ")";
  return expression;
}

ElementEmitter::ElementEmitter(CodeWriter& code, KernelParams& params, std::string index_type)
    : code_(code), params_(params), index_type_(std::move(index_type)), scopes_(1) {}

std::string ElementEmitter::element(const Value* value, const std::string& index) {
  if (std::string found = lookup(value, index); !found.empty()) return found;
  auto override_it = overrides_.find(value);
  std::string result =
      override_it != overrides_.end() ? override_it->second(index) : compute(value, index);
  scopes_.back().elements[{value, index}] = result;
  return result;
}

std::string ElementEmitter::stored(const Value* value, const std::string& index) {
  return store_expression(value->type().dtype, stored_value(value, index));
}

std::string ElementEmitter::stored_value(const Value* value, const std::string& index) {
  const DType dtype = value->type().dtype;
  const Node* node = value->producer();
  const bool rounding_cast = node && node->op() == "cast" && !node->body() &&
                             (dtype == DType::kF16 || dtype == DType::kBF16) &&
                             node->operand(0)->type().dtype != DType::kF64 &&
                             !params_.is_input(value) && !overrides_.count(value) &&
                             lookup(value, index).empty();
  if (!rounding_cast) return element(value, index);
  return "(float)" + element(node->operand(0), index);
}

std::string ElementEmitter::lookup(const Value* value, const std::string& index) const {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->elements.find({value, index});
    if (it != scope->elements.end()) return it->second;
  }
  return "";
}

std::string ElementEmitter::compute(const Value* value, const std::string& index) {
  if (params_.is_input(value)) return load(value, index);
  if (value->is_constant()) {
    return value->type().num_elements() == 1 ? constant_literal(value) : load(value, index);
  }
  const Node* node = value->producer();
  if (!node) throw InternalError("kernel value " + value->name() + " has no producer");
  if (node->body()) {
    throw UnsupportedError(node->describe() + ": a fusion nested in a kernel body");
  }
  switch (node->info().category) {
    case OpCategory::kElementwise:
    case OpCategory::kBroadcast:
      return op_element(*node, index);
    case OpCategory::kInjective:
      return injective_element(*this, *node, index);
    case OpCategory::kOpaque:
      if (node->op() == "resize") return resize_element(*this, *node, index);
      [[fallthrough]];
    default:
      throw UnsupportedError(node->describe() + ": " + node->op() + " is a " +
                             std::string(op_category_name(node->info().category)) +
                             " op, which a loop kernel does not compute");
  }
}

std::string ElementEmitter::load(const Value* value, const std::string& index) {
  const std::string access = params_.read(value) + "[" + index + "]";
  const DType dtype = value->type().dtype;
  std::string expression = access;
  if (dtype == DType::kF16) expression = "kiln_f16_to_f32(" + access + ")";
  if (dtype == DType::kBF16) expression = "kiln_bf16_to_f32(" + access + ")";
  return temp(cuda_compute_type(dtype), expression);
}

std::string ElementEmitter::op_element(const Node& node, const std::string& index) {
  const CudaExprFn expression = find_op_expression(node.op());
  if (!expression) {
    throw UnsupportedError(node.describe() + ": " + node.op() +
                           " has no CUDA expression (codegen/op_expressions.cc)");
  }
  const Shape& shape = node.result(0)->type().shape;
  // batch_normalization's scale, bias, mean and variance follow the channel axis (1).
  const bool per_channel = node.op() == "batch_normalization";
  CudaExprArgs args{node, {}};
  for (size_t k = 0; k < node.operands().size(); ++k) {
    const Value* operand = node.operand(k);
    const std::string operand_index = per_channel && k > 0
                                          ? coordinate(index, shape, 1)
                                          : broadcast_index(index, shape, operand->type().shape);
    args.operands.push_back(element(operand, operand_index));
  }
  return temp(cuda_compute_type(node.result(0)->type().dtype), expression(args));
}

std::string ElementEmitter::temp(std::string_view type, const std::string& expression) {
  return named(type, expression, 'v');
}

std::string ElementEmitter::index_temp(const std::string& expression) {
  return named(index_type_, expression, 't');
}

std::string ElementEmitter::named(std::string_view type, const std::string& expression,
                                  char prefix) {
  if (is_atom(expression)) return expression;
  const std::string key = std::string(type) + " " + expression;
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->temps.find(key);
    if (it != scope->temps.end()) return it->second;
  }
  const std::string name = fresh_name(prefix);
  code_.line("const " + std::string(type) + " " + name + " = " + expression + ";");
  scopes_.back().temps[key] = name;
  return name;
}

std::string ElementEmitter::fresh_name(char prefix) {
  return std::string(1, prefix) + std::to_string(next_name_++);
}

void ElementEmitter::open_block(std::string_view head) {
  code_.open(head);
  scopes_.emplace_back();
}

void ElementEmitter::reopen_block(std::string_view head) {
  scopes_.pop_back();
  code_.reopen(head);
  scopes_.emplace_back();
}

void ElementEmitter::close_block() {
  if (scopes_.size() < 2) throw InternalError("ElementEmitter: close_block() without open_block()");
  scopes_.pop_back();
  code_.close();
}

void ElementEmitter::bind(const Value* value, const std::string& index,
                          const std::string& element) {
  scopes_.back().elements[{value, index}] = element;
}

void ElementEmitter::open_branch(size_t i, size_t count, const std::string& test) {
  if (i == 0) {
    open_block("if " + test);
  } else if (i + 1 < count) {
    reopen_block("else if " + test);
  } else {
    reopen_block("else");
  }
}

void ElementEmitter::set_override(const Value* value, Override compute) {
  overrides_[value] = std::move(compute);
}

void ElementEmitter::clear_override(const Value* value) { overrides_.erase(value); }

void ElementEmitter::set_coordinates(const std::string& index, const Shape& shape,
                                     std::vector<std::string> coordinates) {
  for (std::string& coordinate : coordinates) coordinate = parenthesized(coordinate);
  scopes_.back().coordinates[{index, shape}] = std::move(coordinates);
}

void ElementEmitter::set_inner_coordinate(const std::string& index, int64_t size,
                                          std::string inner) {
  // Parenthesized: callers splice a coordinate into arithmetic ("g_n + 1" times a slice's step).
  scopes_.back().inner_coordinates[{index, size}] = parenthesized(inner);
}

std::string ElementEmitter::coordinate(const std::string& index, const Shape& shape, size_t d) {
  if (shape[d] == 1) return "0";
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->coordinates.find({index, shape});
    if (it != scope->coordinates.end()) return it->second[d];
    if (d + 1 == shape.size()) {
      auto inner = scope->inner_coordinates.find({index, shape[d]});
      if (inner != scope->inner_coordinates.end()) return inner->second;
    }
  }
  const int64_t stride = product_of(shape, d + 1, shape.size());
  std::string expression = parenthesized(index);
  if (stride != 1) expression += " / " + std::to_string(stride);
  // The outermost dim of more than one element needs no modulo: the index is in range.
  if (product_of(shape, 0, d) != 1) expression += " % " + std::to_string(shape[d]);
  return index_temp(expression);
}

std::string ElementEmitter::flat_index(const std::vector<std::string>& coordinates,
                                       const Shape& shape) {
  std::string expression;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1 || coordinates[d] == "0") continue;
    const int64_t stride = product_of(shape, d + 1, shape.size());
    if (!expression.empty()) expression += " + ";
    expression += stride == 1 ? coordinates[d]
                              : parenthesized(coordinates[d]) + " * " + std::to_string(stride);
  }
  if (expression.empty()) return "0";
  const std::string index = index_temp(expression);
  if (remember_flat_coordinates_) set_coordinates(index, shape, coordinates);
  return index;
}

std::string ElementEmitter::broadcast_index(const std::string& index, const Shape& to,
                                            const Shape& from) {
  // Broadcasting only inserts dims of 1: with as many elements, the order is the same.
  if (num_elements(from) == num_elements(to)) return index;
  if (num_elements(from) == 1) return "0";
  const size_t lead = to.size() - from.size();
  std::vector<std::string> coordinates;
  for (size_t d = 0; d < from.size(); ++d) {
    coordinates.push_back(from[d] == 1 ? "0" : coordinate(index, to, d + lead));
  }
  return flat_index(coordinates, from);
}

}  // namespace kiln::codegen
