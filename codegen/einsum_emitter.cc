// The einsum emitter (see the header).
#include "codegen/einsum_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/cuda_expr.h"
#include "codegen/double_store.h"
#include "codegen/grid_stride.h"
#include "ir/error.h"
#include "ir/ops/einsum_plan.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

const Node* einsum_node(const KernelBody& body) { return first_node_of(body, {"einsum"}); }

// The flat index in operand `k` of the element at the labels' coordinates `at` (by label id).
std::string operand_index(const EinsumPlan& plan, size_t k, const Shape& shape,
                          const std::vector<std::string>& at) {
  const std::vector<int64_t> strides = row_major_strides(shape);
  std::vector<std::string> terms;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const std::string& coordinate = at[static_cast<size_t>(plan.operand_labels[k][d])];
    terms.push_back(strides[d] == 1 ? coordinate : fmt::format("{} * {}", coordinate, strides[d]));
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

// Whether operand `k` is read along a summed label (else its element is one per output element).
bool reads_along_summed_labels(const EinsumPlan& plan, size_t k, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const int label = plan.operand_labels[k][d];
    if (shape[d] != 1 && std::find(plan.summed_labels.begin(), plan.summed_labels.end(), label) !=
                             plan.summed_labels.end()) {
      return true;
    }
  }
  return false;
}

// Operand k's element at the labels' coordinates `at`, as a `sum_type` factor.
std::string factor(ElementEmitter& e, const Node& node, const EinsumPlan& plan, size_t k,
                   const std::vector<std::string>& at, const std::string& sum_type) {
  const Value* operand = node.operand(k);
  const std::string index = e.index_temp(operand_index(plan, k, operand->type().shape, at));
  return fmt::format("static_cast<{}>({})", sum_type, e.element(operand, index));
}

}  // namespace

bool is_einsum_body(const KernelBody& body) { return einsum_node(body) != nullptr; }

KernelSpec emit_einsum_kernel(const KernelBody& body) {
  const Node* node = einsum_node(body);
  if (!node) throw InternalError("emit_einsum_kernel: no einsum in the body");
  std::vector<Shape> shapes;
  for (const Value* operand : node->operands()) shapes.push_back(operand->type().shape);
  const EinsumPlan plan = plan_einsum(node->string_attr("equation"), shapes);
  const Value* result = node->result();
  const Shape& result_shape = result->type().shape;
  const DType dtype = result->type().dtype;
  const std::string sum_type = is_float(dtype) ? "double" : "unsigned long long";
  const int64_t elements = result->type().num_elements();

  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_grid_stride_spec(spec, body, *node, elements, elements);
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  open_grid_stride_loop(e, elements);
  // Each label's coordinate: the output's from i, the summed ones' from their loops.
  std::vector<std::string> at(plan.label_sizes.size());
  for (size_t d = 0; d < plan.output_labels.size(); ++d) {
    at[static_cast<size_t>(plan.output_labels[d])] = e.coordinate("i", result_shape, d);
  }
  for (size_t s = 0; s < plan.summed_labels.size(); ++s) {
    at[static_cast<size_t>(plan.summed_labels[s])] = fmt::format("summed{}", s);
  }
  // The factors of operands read at the output's labels alone are read once, before the loops.
  std::vector<std::string> factors(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (!reads_along_summed_labels(plan, k, shapes[k])) {
      factors[k] = factor(e, *node, plan, k, at, sum_type);
    }
  }
  code.line(
      fmt::format("// The sum over the summed labels of the operands' products, in {}.", sum_type));
  code.line(fmt::format("{} sum = 0;", sum_type));
  for (size_t s = 0; s < plan.summed_labels.size(); ++s) {
    const size_t label = static_cast<size_t>(plan.summed_labels[s]);
    e.open_block(fmt::format("for ({0} {1} = 0; {1} < {2}; ++{1})", e.index_type(), at[label],
                             plan.label_sizes[label]));
  }
  for (size_t k = 0; k < shapes.size(); ++k) {
    if (factors[k].empty()) factors[k] = factor(e, *node, plan, k, at, sum_type);
  }
  code.line(fmt::format("sum += {};", fmt::join(factors, " * ")));
  for (size_t s = 0; s < plan.summed_labels.size(); ++s) e.close_block();
  const std::string compute_type(cuda_compute_type(dtype));
  const std::string stored = is_float(dtype)
                                 ? stored_from_double(e, dtype, "sum")
                                 : e.temp(compute_type, "static_cast<" + compute_type + ">(sum)");
  close_grid_stride_loop(e, body, *node, stored, outputs);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
