// The cum_sum emitter (see the header).
#include "codegen/cum_sum_emitter.h"

#include <fmt/format.h>

#include "codegen/cuda_expr.h"
#include "codegen/grid_stride.h"
#include "ir/error.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

const Node* cum_sum_node(const KernelBody& body) {
  return first_node_of(body, {"cum_sum", "cum_prod"});
}

}  // namespace

bool is_cum_sum_body(const KernelBody& body) { return cum_sum_node(body) != nullptr; }

KernelSpec emit_cum_sum_kernel(const KernelBody& body) {
  const Node* node = cum_sum_node(body);
  if (!node) throw InternalError("emit_cum_sum_kernel: no cum_sum in the body");
  const Value* input = node->operand(0);
  const Shape& shape = input->type().shape;
  const size_t axis = static_cast<size_t>(
      normalize_axis(node->int_attr("axis"), static_cast<int64_t>(shape.size())));
  const int64_t count = shape[axis], inner = product(shape, axis + 1, shape.size());
  const int64_t lines = product(shape, 0, axis) * inner;
  const bool exclusive = node->int_attr("exclusive") != 0;
  const bool reverse = node->int_attr("reverse") != 0;
  const bool product = node->op() == "cum_prod";
  const DType dtype = node->result()->type().dtype;
  const std::string result_type(cuda_compute_type(dtype));
  const std::string sum_type = is_float(dtype) ? result_type : "unsigned long long";

  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_grid_stride_spec(spec, body, *node, lines, input->type().num_elements());
  CodeWriter code(1);
  // The scan's step counts up to the axis length, which reaches 2^31 only in a tensor that
  // large: the index type covers both.
  const std::string index_type = grid_stride_index_type(body);
  ElementEmitter e(code, spec.params, index_type);
  open_grid_stride_loop(e, lines);
  const std::string start =
      e.index_temp(fmt::format("i / {} * {} + i % {}", inner, count * inner, inner));
  code.line(fmt::format("{} sum = {};", sum_type, product ? 1 : 0));
  e.open_block(fmt::format("for ({} s = 0; s < {}; ++s)", index_type, count));
  const std::string step = reverse ? fmt::format("({} - s)", count - 1) : "s";
  const std::string index = e.index_temp(
      inner == 1 ? start + " + " + step : fmt::format("{} + {} * {}", start, step, inner));
  const std::string x = e.element(input, index);
  // Unsigned integer products and sums wrap around, as the reference's do.
  const std::string add =
      fmt::format("sum {}= static_cast<{}>({});", product ? "*" : "+", sum_type, x);
  if (!exclusive) code.line(add);
  e.bind(node->result(), index, e.temp(result_type, "static_cast<" + result_type + ">(sum)"));
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    code.line(fmt::format("{}[{}] = {};", outputs[k], index, e.stored(body.outputs[k], index)));
  }
  if (exclusive) code.line(add);
  e.close_block();
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
