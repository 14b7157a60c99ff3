// The top_k emitter (see the header).
#include "codegen/top_k_emitter.h"

#include <fmt/format.h>

#include "codegen/grid_stride.h"
#include "ir/error.h"
#include "ir/ops/op_helpers.h"

namespace kiln::codegen {
namespace {

const Node* top_k_node(const KernelBody& body) { return first_node_of(body, {"top_k"}); }

// Whether the element `u` ranks strictly before `v` by value alone (the reference's order before
// its tie on the index): the larger (smaller) first, NaN before (after) every number when
// `largest` (not); two NaNs are equal.
std::string ranks_before(const std::string& u, const std::string& v, bool largest, bool floats) {
  const std::string by_value = fmt::format("{} {} {}", u, largest ? ">" : "<", v);
  if (!floats) return "(" + by_value + ")";
  const std::string& nan = largest ? u : v;
  const std::string& number = largest ? v : u;
  return fmt::format("({} || ({} != {} && {} == {}))", by_value, nan, nan, number, number);
}

}  // namespace

bool is_top_k_body(const KernelBody& body) { return top_k_node(body) != nullptr; }

KernelSpec emit_top_k_kernel(const KernelBody& body) {
  const Node* node = top_k_node(body);
  if (!node) throw InternalError("emit_top_k_kernel: no top_k in the body");
  const Value* input = node->operand(0);
  const Shape& shape = input->type().shape;
  const size_t axis = static_cast<size_t>(
      normalize_axis(node->int_attr("axis"), static_cast<int64_t>(shape.size())));
  const int64_t count = shape[axis], inner = product(shape, axis + 1, shape.size());
  const int64_t k = node->int_attr("k");
  const bool largest = node->int_attr("largest") != 0;
  const bool floats = is_float(input->type().dtype);

  KernelSpec spec;
  const std::vector<std::string> outputs = begin_grid_stride_spec(
      spec, body, *node, input->type().num_elements(), node->result(0)->type().num_elements());
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  open_grid_stride_loop(e, input->type().num_elements());
  const std::string at = e.index_temp(inner == 1 ? fmt::format("i % {}", count)
                                                 : fmt::format("i / {} % {}", inner, count));
  const std::string line_start =
      e.index_temp(inner == 1 ? "i - " + at : fmt::format("i - {} * {}", at, inner));
  const std::string x = e.element(input, "i");
  code.line(
      fmt::format("// The rank of x (position {} of its line): how many come before it, the {}", at,
                  largest ? "larger" : "smaller"));
  code.line(floats ? "// ones (NaN the largest) and the equal ones at lower positions."
                   : "// ones and the equal ones at lower positions.");
  code.line(fmt::format("{} rank = 0;", e.index_type()));
  // A thread stops counting once its element is out of the first k (never, when k is the axis).
  const std::string in_top_k = k < count ? fmt::format(" && rank < {}", k) : "";
  e.open_block(
      fmt::format("for ({} other = 0; other < {}{}; ++other)", e.index_type(), count, in_top_k));
  const std::string y = e.element(
      input, e.index_temp(inner == 1 ? line_start + " + other"
                                     : fmt::format("{} + other * {}", line_start, inner)));
  code.line(fmt::format("rank += {} || (other < {} && !{});", ranks_before(y, x, largest, floats),
                        at, ranks_before(x, y, largest, floats)));
  e.close_block();
  e.open_block(fmt::format("if (rank < {})", k));
  const std::string out =
      e.index_temp(inner == 1 ? fmt::format("i / {} * {} + rank", count, k)
                              : fmt::format("(i / {} * {} + rank) * {} + i % {}", count * inner, k,
                                            inner, inner));
  e.bind(node->result(0), out, x);
  e.bind(node->result(1), out, e.temp("long long", "static_cast<long long>(" + at + ")"));
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    code.line(fmt::format("{}[{}] = {};", outputs[j], out, e.stored(body.outputs[j], out)));
  }
  e.close_block();
  e.close_block();
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
