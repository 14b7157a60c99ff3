// The loop emitter (see the header).
#include "codegen/loop_emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "codegen/cuda_expr.h"
#include "codegen/element_emitter.h"
#include "codegen/grid_stride.h"
#include "codegen/op_expressions.h"
#include "codegen/vector_access.h"
#include "ir/error.h"
#include "ir/op_registry.h"

namespace kiln::codegen {
namespace {

// How a body is vectorized: `width` elements per thread (1: not at all), loading `operands`
// (inputs and constants of N elements) and storing the outputs as vectors.
struct Vectorization {
  int width = 1;
  std::vector<const Value*> operands;
};

Vectorization plan_vectorization(const KernelBody& body, int64_t count) {
  const std::set<const Value*> inputs(body.inputs.begin(), body.inputs.end());
  const auto is_buffer = [&](const Value* value) {
    return inputs.count(value) || value->is_constant();
  };
  Vectorization plan;
  size_t widest = 0;
  const auto use = [&](const Value* value) {
    widest = std::max(widest, dtype_size(value->type().dtype));
    if (is_buffer(value) &&
        std::find(plan.operands.begin(), plan.operands.end(), value) == plan.operands.end()) {
      plan.operands.push_back(value);
    }
  };
  for (const Node* node : body.nodes) {
    const OpCategory category = node->info().category;
    const bool elementwise =
        (category == OpCategory::kElementwise || category == OpCategory::kBroadcast) &&
        find_op_expression(node->op());
    if (!elementwise && node->op() != "reshape") return {};
    for (const Value* operand : node->operands()) {
      const int64_t elements = operand->type().num_elements();
      if (elements != count && elements != 1) return {};
      if (elements == count) use(operand);
    }
  }
  for (const Value* output : body.outputs) use(output);
  plan.width = vector_width_for(widest);
  if (plan.width < 2 || count < plan.width) return {};
  return plan;
}

std::string vector_definitions(const Vectorization& plan, const KernelBody& body) {
  std::set<DType> dtypes;
  for (const Value* value : plan.operands) dtypes.insert(value->type().dtype);
  for (const Value* value : body.outputs) dtypes.insert(value->type().dtype);
  std::string text;
  for (DType dtype : dtypes) {
    text += vector_definition(dtype, plan.width);
  }
  return text;
}

// The vector loop: thread `first` handles vectors first, first + stride, ...
void emit_vector_loop(ElementEmitter& e, const KernelBody& body, const Vectorization& plan,
                      const std::vector<std::string>& outputs, int64_t vectors) {
  CodeWriter& code = e.code();
  const int width = plan.width;
  e.open_block(fmt::format("for ({} j = first; j < {}; j += stride)", e.index_type(), vectors));
  std::vector<std::string> loaded;
  for (size_t k = 0; k < plan.operands.size(); ++k) {
    const Value* value = plan.operands[k];
    const std::string type = vector_type(value->type().dtype, width);
    loaded.push_back("a" + std::to_string(k));
    code.line(fmt::format("const {} {} = reinterpret_cast<const {}*>({})[j];", type, loaded[k],
                          type, e.params().read(value)));
  }
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    code.line(fmt::format("{} r{};", vector_type(body.outputs[k]->type().dtype, width), k));
  }
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int k = 0; k < {}; ++k)", width));
  for (size_t k = 0; k < plan.operands.size(); ++k) {
    const DType dtype = plan.operands[k]->type().dtype;
    e.bind(plan.operands[k], "i",
           e.temp(cuda_compute_type(dtype), widened(dtype, loaded[k] + ".v[k]")));
  }
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    code.line(fmt::format("r{}.v[k] = {};", k, e.stored(body.outputs[k], "i")));
  }
  e.close_block();
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    const std::string type = vector_type(body.outputs[k]->type().dtype, width);
    code.line(fmt::format("reinterpret_cast<{}*>({})[j] = r{};", type, outputs[k], k));
  }
  e.close_block();
}

// The scalar loop over elements [start, count).
void emit_scalar_loop(ElementEmitter& e, const KernelBody& body,
                      const std::vector<std::string>& outputs, int64_t start, int64_t count) {
  const std::string first = start == 0 ? "first" : std::to_string(start) + " + first";
  e.open_block(fmt::format("for ({} i = {}; i < {}; i += stride)", e.index_type(), first, count));
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    e.code().line(fmt::format("{}[i] = {};", outputs[k], e.stored(body.outputs[k], "i")));
  }
  e.close_block();
}

}  // namespace

KernelSpec emit_loop_kernel(const KernelBody& body) {
  const int64_t count = body.outputs.at(0)->type().num_elements();
  for (const Value* output : body.outputs) {
    if (output->type().num_elements() != count) {
      throw UnsupportedError(
          "a loop kernel's outputs must have as many elements; " + output->name() + " has " +
          std::to_string(output->type().num_elements()) + ", not " + std::to_string(count));
    }
  }
  const Vectorization plan = plan_vectorization(body, count);
  KernelSpec spec;
  const std::vector<std::string> outputs =
      begin_grid_stride_frame(spec, body, (count + plan.width - 1) / plan.width);

  CodeWriter code(1);
  ElementEmitter e(code, spec.params, grid_stride_index_type(body));
  declare_grid_stride(e);
  int64_t scalar_start = 0;
  if (plan.width > 1) {
    spec.definitions = vector_definitions(plan, body);
    emit_vector_loop(e, body, plan, outputs, count / plan.width);
    scalar_start = count / plan.width * plan.width;
  }
  if (scalar_start < count) emit_scalar_loop(e, body, outputs, scalar_start, count);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
