// The LRN emitter (see the header).
#include "codegen/lrn_emitter.h"

#include <fmt/format.h>

#include "codegen/cuda_expr.h"
#include "codegen/grid_stride.h"

namespace kiln::codegen {

KernelSpec emit_lrn_kernel(const KernelBody& body, const Node& lrn) {
  const Value* input = lrn.operand(0);
  const Shape& shape = input->type().shape;
  const int64_t count = input->type().num_elements();
  const int64_t channels = shape[1];
  const int64_t spatial = count == 0 ? 0 : count / shape[0] / channels;
  const int64_t size = lrn.int_attr("size");
  const DType dtype = lrn.result()->type().dtype;
  const std::string t(cuda_compute_type(dtype));

  KernelSpec spec;
  const std::vector<std::string> outputs = begin_grid_stride_spec(spec, body, lrn, count, count);
  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  open_grid_stride_loop(e, count);
  const std::string channel = e.coordinate("i", shape, 1);
  code.line(fmt::format("{} square_sum = 0;", t));
  e.open_block(
      fmt::format("for (int k = max(0, static_cast<int>({}) - {}); k <= min({}, "
                  "static_cast<int>({}) + {}); ++k)",
                  channel, (size - 1) / 2, channels - 1, channel, size / 2));
  const std::string neighbour = e.index_temp(fmt::format("i + (k - {}) * {}", channel, spatial));
  const std::string x = e.element(input, neighbour);
  code.line(fmt::format("square_sum += {0} * {0};", x));
  e.close_block();
  const std::string result =
      e.temp(t, fmt::format("{} / pow({} + {} / {} * square_sum, {})", e.element(input, "i"),
                            cuda_literal(lrn.float_attr("bias"), dtype),
                            cuda_literal(lrn.float_attr("alpha"), dtype),
                            cuda_literal(static_cast<double>(size), dtype),
                            cuda_literal(lrn.float_attr("beta"), dtype)));
  close_grid_stride_loop(e, body, lrn, result, outputs);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
