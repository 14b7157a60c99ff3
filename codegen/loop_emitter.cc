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
#include "ir/ops/op_helpers.h"

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
  // By lanes: concats along the last axis of the outputs' shape whose operands are buffers with
  // whole vectors along it, so each vector lies in one operand: it is loaded whole from there.
  std::vector<const Node*> concats;
  // By lanes: buffers of one element per column (per channel, channels-last) that ops broadcast
  // over the outputs' shape: each vector's columns are loaded as one vector.
  std::vector<const Value*> columns;
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

// Whether `node` is a concat of the outputs' shape along its last axis whose operands are buffers
// of the same dtype, each with a multiple of `width` elements along it (DenseNet's concat of its
// layers' outputs, read by the next layer's normalization): vector j lies in one operand.
bool is_vector_concat(const KernelBody& body, const Node& node, const Shape& shape, int width) {
  if (node.op() != "concat" || node.result(0)->type().shape != shape) return false;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (normalize_axis(node.int_attr("axis"), rank) != rank - 1) return false;
  const DType dtype = node.result(0)->type().dtype;
  if (dtype_size(dtype) * width > kVectorBytes) return false;
  for (const Value* operand : node.operands()) {
    if (!is_buffer(body, operand) || operand->type().dtype != dtype ||
        operand->type().shape.back() % width != 0) {
      return false;
    }
  }
  return true;
}

// Whether `value` is a buffer of one element per column of `shape` (its dims 1 but the last,
// which is shape's last): a vector of its columns is bound where an op of `shape` broadcasts it
// at lane k's own index. The vector fits 16 bytes (32 for a constant: weights are 256-byte
// aligned, graph inputs only 16).
bool is_column_vector(const KernelBody& body, const Value* value, const Shape& shape, int width) {
  const Shape& dims = value->type().shape;
  if (!is_buffer(body, value) || dims.empty() || dims.back() != shape.back() ||
      value->type().num_elements() != shape.back() || dims.size() > shape.size() ||
      value->type().num_elements() == num_elements(shape)) {
    return false;
  }
  const size_t most = value->is_constant() ? 2 * kVectorBytes : kVectorBytes;
  return dtype_size(value->type().dtype) * width <= most;
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
  for (const Node* node : body.nodes) {
    if (is_vector_concat(body, *node, shape, plan.width)) plan.concats.push_back(node);
    for (const Value* operand : node->operands()) {
      if (std::find(plan.columns.begin(), plan.columns.end(), operand) == plan.columns.end() &&
          is_column_vector(body, operand, shape, plan.width)) {
        plan.columns.push_back(operand);
      }
    }
  }
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
  for (const Node* concat : plan.concats) dtypes.insert(concat->result(0)->type().dtype);
  for (const Value* value : plan.columns) dtypes.insert(value->type().dtype);
  return vector_definitions(dtypes, plan.width);
}

// By lanes: loads vector j of each of plan.concats from the operand it lies in (`vector`: the
// vector's index along the last axis), into c0, c1, ...
std::vector<std::string> load_concat_vectors(ElementEmitter& e, const KernelBody& body,
                                             const Vectorization& plan, const std::string& vector) {
  CodeWriter& code = e.code();
  const int width = plan.width;
  const int64_t row_vectors = body.outputs[0]->type().shape.back() / width;
  const std::string row = row_vectors == 1 ? "j" : e.index_temp(fmt::format("j / {}", row_vectors));
  std::vector<std::string> loaded;
  for (const Node* concat : plan.concats) {
    const std::string type = vector_type(concat->result(0)->type().dtype, width);
    loaded.push_back("c" + std::to_string(loaded.size()));
    code.line(fmt::format("{} {};", type, loaded.back()));
    std::vector<const Value*> parts;
    for (const Value* operand : concat->operands()) {
      if (operand->type().shape.back() > 0) parts.push_back(operand);
    }
    int64_t offset = 0;  // in vectors
    for (size_t p = 0; p < parts.size(); ++p) {
      const int64_t vectors = parts[p]->type().shape.back() / width;
      if (parts.size() > 1) {
        e.open_branch(p, parts.size(), fmt::format("({} < {})", vector, offset + vectors));
      }
      const std::string at = fmt::format("{} * {} + {}{}", row, vectors, vector,
                                         offset ? fmt::format(" - {}", offset) : "");
      code.line(fmt::format("{} = reinterpret_cast<const {}*>({})[{}];", loaded.back(), type,
                            e.params().read(parts[p]), at));
      offset += vectors;
    }
    if (parts.size() > 1) e.close_block();
  }
  return loaded;
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
  const std::vector<std::string> concats = plan.concats.empty()
                                               ? std::vector<std::string>{}
                                               : load_concat_vectors(e, body, plan, shared.back());
  std::vector<std::string> columns;
  for (const Value* value : plan.columns) {
    const std::string type = vector_type(value->type().dtype, width);
    columns.push_back("w" + std::to_string(columns.size()));
    code.line(fmt::format("const {} {} = reinterpret_cast<const {}*>({})[{}];", type,
                          columns.back(), type, e.params().read(value), shared.back()));
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
  for (size_t c = 0; c < plan.concats.size(); ++c) {
    const DType dtype = plan.concats[c]->result(0)->type().dtype;
    e.bind(plan.concats[c]->result(0), "i",
           e.temp(cuda_compute_type(dtype), widened(dtype, concats[c] + ".v[k]")));
  }
  // A column buffer's element at lane k's own index (where an op of the outputs' shape
  // broadcasts it): the vector's lane; reads at other indices load as before.
  for (size_t c = 0; c < plan.columns.size(); ++c) {
    const Value* value = plan.columns[c];
    const DType dtype = value->type().dtype;
    e.bind(value, e.broadcast_index("i", body.outputs[0]->type().shape, value->type().shape),
           e.temp(cuda_compute_type(dtype), widened(dtype, columns[c] + ".v[k]")));
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
