// The scatter_elements and scatter_nd emitter (see the header).
#include "codegen/scatter_emitter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/cuda_expr.h"
#include "codegen/grid_stride.h"
#include "ir/error.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

const Node* scatter_node(const KernelBody& body) {
  return first_node_of(body, {"scatter_elements", "scatter_nd"});
}

// The type of a thread's running element: the compute type of floats, 64 bits for integers.
std::string accumulator_type(DType dtype) {
  return is_float(dtype) ? std::string(cuda_compute_type(dtype)) : "long long";
}

// The statement combining update `u` into the running element `acc`, per `reduction`, rounded to
// 16 bits where the reference's output element would be.
std::string combine_statement(const std::string& reduction, DType dtype, const std::string& u) {
  if (reduction == "none") return fmt::format("acc = {};", u);
  std::string value;
  if (reduction == "max") {
    value = fmt::format("acc < {0} ? {0} : acc", u);
  } else if (reduction == "min") {
    value = fmt::format("{0} < acc ? {0} : acc", u);
  } else {
    const char* op = reduction == "add" ? "+" : "*";
    value = is_float(dtype) ? fmt::format("acc {} {}", op, u)
                            : fmt::format(
                                  "static_cast<long long>(static_cast<unsigned long long>(acc) {} "
                                  "static_cast<unsigned long long>({}))",
                                  op, u);
  }
  if (dtype == DType::kF16) value = "kiln_round_to_f16(" + value + ")";
  if (dtype == DType::kBF16) value = "kiln_round_to_bf16(" + value + ")";
  return fmt::format("acc = {};", value);
}

// scatter_elements: the updates at output element i's coordinates with the axis running over the
// indices' axis, those whose index resolves to i's axis coordinate.
void apply_element_updates(ElementEmitter& e, const Node& node) {
  const Shape& shape = node.operand(0)->type().shape;
  const Value* indices = node.operand(1);
  const Shape& index_shape = indices->type().shape;
  const size_t axis = static_cast<size_t>(
      normalize_axis(node.int_attr("axis"), static_cast<int64_t>(shape.size())));
  std::vector<std::string> coordinates, inside;
  for (size_t d = 0; d < shape.size(); ++d) {
    coordinates.push_back(e.coordinate("i", shape, d));
    if (d != axis && index_shape[d] < shape[d]) {
      inside.push_back(fmt::format("{} < {}", coordinates[d], index_shape[d]));
    }
  }
  if (!inside.empty()) e.open_block(fmt::format("if ({})", fmt::join(inside, " && ")));
  const std::string coordinate = coordinates[axis];
  coordinates[axis] = "along";
  e.open_block(
      fmt::format("for ({} along = 0; along < {}; ++along)", e.index_type(), index_shape[axis]));
  const std::string at = e.flat_index(coordinates, index_shape);
  const std::string target = e.temp(
      "long long", fmt::format("kiln_resolve_index({}, {})", e.element(indices, at), shape[axis]));
  e.open_block(fmt::format("if ({} == {})", target, coordinate));
  e.code().line(combine_statement(node.string_attr("reduction"), node.result()->type().dtype,
                                  e.element(node.operand(2), at)));
  e.close_block();
  e.close_block();
  if (!inside.empty()) e.close_block();
}

// scatter_nd: updates[tuple, rest] for every index tuple that resolves to output element i's
// first `depth` coordinates (`rest` indexing the others).
void apply_nd_updates(ElementEmitter& e, const Node& node) {
  const Shape& shape = node.operand(0)->type().shape;
  const Value* indices = node.operand(1);
  const size_t depth = static_cast<size_t>(indices->type().shape.back());
  const int64_t block = product(shape, depth, shape.size());
  const int64_t tuples = indices->type().num_elements() / static_cast<int64_t>(depth);
  // Tuples of every index (block 1) name single elements: i itself.
  const std::string prefix = block == 1 ? "i" : e.index_temp(fmt::format("i / {}", block));
  const std::string rest = block == 1 ? "" : e.index_temp(fmt::format("i % {}", block));
  e.open_block(fmt::format("for ({} tuple = 0; tuple < {}; ++tuple)", e.index_type(), tuples));
  std::vector<std::string> terms;
  for (size_t j = 0; j < depth; ++j) {
    const std::string first = depth == 1 ? "tuple" : fmt::format("tuple * {}", depth);
    const std::string at = j == 0 ? first : fmt::format("{} + {}", first, j);
    const std::string index = e.element(indices, e.index_temp(at));
    const int64_t stride = product(shape, j + 1, depth);
    terms.push_back(fmt::format("kiln_resolve_index({}, {}){}", index, shape[j],
                                stride == 1 ? "" : fmt::format(" * {}", stride)));
  }
  const std::string target = e.temp("long long", fmt::format("{}", fmt::join(terms, " + ")));
  e.open_block(fmt::format("if ({} == {})", target, prefix));
  const std::string update_index =
      block == 1 ? "tuple" : e.index_temp(fmt::format("tuple * {} + {}", block, rest));
  e.code().line(combine_statement(node.string_attr("reduction"), node.result()->type().dtype,
                                  e.element(node.operand(2), update_index)));
  e.close_block();
  e.close_block();
}

}  // namespace

bool is_scatter_body(const KernelBody& body) { return scatter_node(body) != nullptr; }

KernelSpec emit_scatter_kernel(const KernelBody& body) {
  const Node* node = scatter_node(body);
  if (!node) throw InternalError("emit_scatter_kernel: no scatter in the body");
  const Value* data = node->operand(0);
  const DType dtype = data->type().dtype;
  const int64_t elements = data->type().num_elements();
  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_grid_stride_spec(spec, body, *node, elements, elements);
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  open_grid_stride_loop(e, elements);
  code.line(fmt::format("// Element i of the data, then every update landing on it, in order ({}).",
                        node->string_attr("reduction") == "none" ? "the last one wins"
                                                                 : node->string_attr("reduction")));
  code.line(fmt::format("{} acc = {};", accumulator_type(dtype), e.element(data, "i")));
  if (node->op() == "scatter_elements") {
    apply_element_updates(e, *node);
  } else {
    apply_nd_updates(e, *node);
  }
  const std::string compute_type(cuda_compute_type(dtype));
  const std::string result =
      is_float(dtype) ? "acc" : e.temp(compute_type, "static_cast<" + compute_type + ">(acc)");
  close_grid_stride_loop(e, body, *node, result, outputs);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
