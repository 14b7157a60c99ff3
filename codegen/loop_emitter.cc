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
// (inputs and constants read at the output's own flat index) and storing the outputs as
// vectors. Contiguous: every op is elementwise at that index. By lanes: the vectors run along
// the outputs' last axis, and each lane's element is computed at its own index from the
// coordinates the vector shares.
struct Vectorization {
  int width = 1;
  bool by_lanes = false;
  std::vector<const Value*> operands;
};

bool is_buffer(const KernelBody& body, const Value* value) {
  return value->is_constant() ||
         std::find(body.inputs.begin(), body.inputs.end(), value) != body.inputs.end();
}

// Whether `node` reads each operand of `count` elements at its result's flat index.
bool reads_at_own_index(const Node& node) {
  const OpCategory category = node.info().category;
  return ((category == OpCategory::kElementwise || category == OpCategory::kBroadcast) &&
          find_op_expression(node.op())) ||
         node.op() == "reshape";
}

// The buffers of `count` elements the outputs read at their own flat index (through ops that
// keep it), in the order the body first reads them.
std::vector<const Value*> read_at_output_index(const KernelBody& body, int64_t count) {
  std::set<const Value*> at_index(body.outputs.begin(), body.outputs.end());
  for (auto node = body.nodes.rbegin(); node != body.nodes.rend(); ++node) {
    if (!at_index.count((*node)->result(0)) || !reads_at_own_index(**node)) continue;
    for (const Value* operand : (*node)->operands()) {
      if (operand->type().num_elements() == count) at_index.insert(operand);
    }
  }
  std::vector<const Value*> buffers;
  const auto add = [&](const Value* value) {
    if (at_index.count(value) && is_buffer(body, value) &&
        std::find(buffers.begin(), buffers.end(), value) == buffers.end()) {
      buffers.push_back(value);
    }
  };
  for (const Node* node : body.nodes) {
    for (const Value* operand : node->operands()) add(operand);
  }
  for (const Value* output : body.outputs) add(output);
  return buffers;
}

// The width 16-byte vectors of `values` (and the outputs) hold.
int width_for(const KernelBody& body, const std::vector<const Value*>& values) {
  size_t widest = 0;
  for (const Value* value : values) widest = std::max(widest, dtype_size(value->type().dtype));
  for (const Value* value : body.outputs) widest = std::max(widest, dtype_size(value->type().dtype));
  return vector_width_for(widest);
}

// Contiguous: every op elementwise at the output's index, every operand of N elements or one.
Vectorization plan_contiguous(const KernelBody& body, int64_t count) {
  std::vector<const Value*> values;  // every value of N elements it computes with
  for (const Node* node : body.nodes) {
    if (!reads_at_own_index(*node)) return {};
    for (const Value* operand : node->operands()) {
      const int64_t elements = operand->type().num_elements();
      if (elements != count && elements != 1) return {};
      if (elements == count) values.push_back(operand);
    }
  }
  Vectorization plan;
  plan.operands = read_at_output_index(body, count);
  plan.width = width_for(body, values);
  if (plan.width < 2 || count < plan.width) return {};
  return plan;
}

// By lanes: outputs of one shape whose last axis holds whole vectors.
Vectorization plan_lanes(const KernelBody& body, int64_t count) {
  const Shape& shape = body.outputs[0]->type().shape;
  for (const Value* output : body.outputs) {
    if (output->type().shape != shape) return {};
  }
  Vectorization plan;
  plan.by_lanes = true;
  plan.operands = read_at_output_index(body, count);
  plan.width = width_for(body, plan.operands);
  if (plan.width < 2 || shape.empty() || shape.back() % plan.width != 0 || count == 0) return {};
  return plan;
}

Vectorization plan_vectorization(const KernelBody& body, int64_t count) {
  const Vectorization contiguous = plan_contiguous(body, count);
  return contiguous.width > 1 ? contiguous : plan_lanes(body, count);
}

std::string plan_vector_definitions(const Vectorization& plan, const KernelBody& body) {
  std::set<DType> dtypes;
  for (const Value* value : plan.operands) dtypes.insert(value->type().dtype);
  for (const Value* value : body.outputs) dtypes.insert(value->type().dtype);
  return vector_definitions(dtypes, plan.width);
}

// By lanes: the coordinates of vector j in the outputs' shape with its last axis in vectors.
std::vector<std::string> vector_coordinates(ElementEmitter& e, const KernelBody& body, int width) {
  Shape vectors = body.outputs[0]->type().shape;
  vectors.back() /= width;
  std::vector<std::string> coordinates;
  for (size_t d = 0; d < vectors.size(); ++d) coordinates.push_back(e.coordinate("j", vectors, d));
  return coordinates;
}

// By lanes: declares lane k's flat index i and gives the element machinery its coordinates.
void bind_lane_coordinates(ElementEmitter& e, const KernelBody& body, int width,
                           std::vector<std::string> coordinates) {
  e.code().line(fmt::format("const {} i = j * {} + k;", e.index_type(), width));
  std::string& last = coordinates.back();
  last = last == "0" ? "k" : e.index_temp(fmt::format("{} * {} + k", last, width));
  e.set_coordinates("i", body.outputs[0]->type().shape, std::move(coordinates));
  e.remember_flat_coordinates();
}

// The vector loop: thread `first` handles vectors first, first + stride, ...
void emit_vector_loop(ElementEmitter& e, const KernelBody& body, const Vectorization& plan,
                      const std::vector<std::string>& outputs, int64_t vectors) {
  CodeWriter& code = e.code();
  const int width = plan.width;
  e.open_block(fmt::format("for ({} j = first; j < {}; j += stride)", e.index_type(), vectors));
  const std::vector<std::string> shared =
      plan.by_lanes ? vector_coordinates(e, body, width) : std::vector<std::string>{};
  std::vector<std::string> loaded;
  for (size_t k = 0; k < plan.operands.size(); ++k) {
    const Value* value = plan.operands[k];
    const std::string type = vector_type(value->type().dtype, width);
    loaded.push_back("a" + std::to_string(k));
    code.line(fmt::format("const {} {} = reinterpret_cast<const {}*>({})[j];", type, loaded[k],
                          type, e.params().read(value)));
  }
  declare_result_vectors(code, body.outputs, width);
  code.line("#pragma unroll");
  e.open_block(fmt::format("for (int k = 0; k < {}; ++k)", width));
  if (plan.by_lanes) bind_lane_coordinates(e, body, width, shared);
  for (size_t k = 0; k < plan.operands.size(); ++k) {
    const DType dtype = plan.operands[k]->type().dtype;
    e.bind(plan.operands[k], "i",
           e.temp(cuda_compute_type(dtype), widened(dtype, loaded[k] + ".v[k]")));
  }
  for (size_t k = 0; k < body.outputs.size(); ++k) {
    code.line(fmt::format("r{}.v[k] = {};", k, e.stored(body.outputs[k], "i")));
  }
  e.close_block();
  store_result_vectors(code, body.outputs, outputs, width, "j");
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
    spec.definitions = plan_vector_definitions(plan, body);
    emit_vector_loop(e, body, plan, outputs, count / plan.width);
    scalar_start = count / plan.width * plan.width;
  }
  if (scalar_start < count) emit_scalar_loop(e, body, outputs, scalar_start, count);
  spec.body = code.text();
  return spec;
}

}  // namespace kiln::codegen
