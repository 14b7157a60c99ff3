// The expression machinery every emitter shares: the element of an IR value at a flat
// (row-major) index, written as CUDA statements.
//
// element(value, index) returns the name of a variable (or a literal) holding that element in
// the value's compute type (codegen/cuda_expr.h), emitting the statements that compute it:
//   - a kernel input or a constant of several elements: a load from its parameter, widened
//     from f16/bf16 to float;
//   - a constant of one element: a literal;
//   - an elementwise or broadcast op: its CUDA expression (op_expressions.h) of its operands'
//     elements, each at the operand's index (numpy broadcasting: constant strides from the
//     static shapes);
//   - an injective op: its operand's element at the index the op's index map gives
//     (codegen/index_maps.h).
// Values and index arithmetic are computed once per index and scope: asking again returns the
// same variable. Scopes follow the C++ blocks the emitters open, so a variable is never used
// outside the block that defines it. Reductions plug in their results with set_override().
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/code_writer.h"
#include "codegen/kernel_params.h"
#include "ir/graph.h"

namespace kiln::codegen {

class ElementEmitter {
 public:
  // `index_type` is the C type of indices: "int", or "long long" for tensors of 2^31 elements
  // or more.
  ElementEmitter(CodeWriter& code, KernelParams& params, std::string index_type);

  // The element of `value` at flat index `index` (an expression of index_type).
  std::string element(const Value* value, const std::string& index);

  // The storage-typed value an output parameter gets for element(value, index): its
  // store_expression, except that a cast to f16/bf16 (from anything but f64) stores its
  // operand converted once, which rounds the same as the cast then the store would.
  std::string stored(const Value* value, const std::string& index);
  // The compute-typed expression whose store_expression stored() is.
  std::string stored_value(const Value* value, const std::string& index);

  // A const variable of `type` initialized to `expression`; an equal expression in scope gives
  // the existing variable. Identifiers and literals are returned as they are.
  std::string temp(std::string_view type, const std::string& expression);
  // An index expression as a variable of index_type.
  std::string index_temp(const std::string& expression);
  // A fresh variable name (for variables the caller declares itself).
  std::string fresh_name(char prefix);

  // Blocks: open_block writes "head {" and opens a scope; reopen_block writes "} head {".
  void open_block(std::string_view head);
  void reopen_block(std::string_view head);
  void close_block();
  // Branch `i` of `count` (at least 2) in an if / else if / else chain: "if (test)", "else if
  // (test)", or the last, "else" (its test unused); close_block() ends the chain.
  void open_branch(size_t i, size_t count, const std::string& test);

  // Makes element(value, index) return `element` in the current scope (a value already loaded
  // or cached by the caller).
  void bind(const Value* value, const std::string& index, const std::string& element);
  // Makes element(value, i) return compute(i) for every index (a reduction's results).
  using Override = std::function<std::string(const std::string& index)>;
  void set_override(const Value* value, Override compute);
  void clear_override(const Value* value);

  // Makes coordinate(index, shape, d) return coordinates[d] in the current scope (a kernel that
  // knows an index's coordinates saves the divisions that would recover them).
  void set_coordinates(const std::string& index, const Shape& shape,
                       std::vector<std::string> coordinates);

  // Makes coordinate(index, shape, d) of an innermost axis of `size` elements return `inner` in
  // the current scope: a kernel that knows only `index` modulo `size` (a contraction's column of
  // a flat result index) saves that modulo in every broadcast operand's index.
  void set_inner_coordinate(const std::string& index, int64_t size, std::string inner);
  // Makes flat_index() remember the coordinates it is given, so that coordinate() of the index
  // it returns gives them back instead of dividing it again (a transpose of a pad's operand).
  // Sound where every flat_index() gets coordinates inside the shape, as the index maps give.
  void remember_flat_coordinates() { remember_flat_coordinates_ = true; }

  // Shape arithmetic on flat indices (variables for anything not trivial):
  // coordinate d of `index` in a tensor of `shape`,
  std::string coordinate(const std::string& index, const Shape& shape, size_t d);
  // the flat index of `coordinates` in a tensor of `shape`,
  std::string flat_index(const std::vector<std::string>& coordinates, const Shape& shape);
  // the index into an operand of `from` shape broadcast (numpy rules) to `to` shape.
  std::string broadcast_index(const std::string& index, const Shape& to, const Shape& from);

  CodeWriter& code() { return code_; }
  KernelParams& params() { return params_; }
  const std::string& index_type() const { return index_type_; }

 private:
  std::string compute(const Value* value, const std::string& index);
  std::string load(const Value* value, const std::string& index);
  std::string op_element(const Node& node, const std::string& index);
  std::string lookup(const Value* value, const std::string& index) const;
  std::string named(std::string_view type, const std::string& expression, char prefix);

  struct Scope {
    std::map<std::pair<const Value*, std::string>, std::string> elements;
    std::map<std::string, std::string> temps;  // expression -> variable
    std::map<std::pair<std::string, Shape>, std::vector<std::string>> coordinates;
    std::map<std::pair<std::string, int64_t>, std::string> inner_coordinates;
  };

  CodeWriter& code_;
  KernelParams& params_;
  std::string index_type_;
  std::vector<Scope> scopes_;
  std::map<const Value*, Override> overrides_;
  int next_name_ = 0;
  bool remember_flat_coordinates_ = false;
};

// The storage-typed value to write for `expression`, an element in dtype's compute type:
// f16/bf16 round to nearest even.
std::string store_expression(DType dtype, const std::string& expression);

}  // namespace kiln::codegen
