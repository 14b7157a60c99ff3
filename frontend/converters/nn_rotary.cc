// ONNX RotaryEmbedding (opset 23) as the ops it is made of: the cos and sin rows gathered by
// position_ids (or given per batch and position), the head's first rotary_embedding_dim values
// split in halves (or, interleaved, even and odd ones), rotated — real = cos·x1 − sin·x2,
// imag = sin·x1 + cos·x2 — and put back, the rest passed through. The input is
// [batch, heads, sequence, head] or [batch, sequence, hidden] (num_heads heads). Fusion makes
// the pieces one loop kernel (or part of the attention's prologue).
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

// x[..., start:end:step] along the last axis.
Value* last_axis_slice(NodeImporter& node, Value* x, int64_t start, int64_t end, int64_t step) {
  return node.emit1("slice", {x},
                    {{"starts", std::vector<int64_t>{start}},
                     {"ends", std::vector<int64_t>{end}},
                     {"axes", std::vector<int64_t>{x->type().rank() - 1}},
                     {"steps", std::vector<int64_t>{step}}});
}

std::vector<Value*> convert_rotary_embedding(NodeImporter& node) {
  Value* input = node.input(0);
  const Shape& in = input->type().shape;
  const bool interleaved = node.attr_int("interleaved", 0) != 0;
  // x as [batch, heads, sequence, head] (4-D) or [batch, sequence, heads, head] (3-D), and the
  // axis of the heads, where cos and sin broadcast.
  Value* x = input;
  int64_t head_axis = 1;
  if (in.size() == 3) {
    const int64_t heads = node.attr_int("num_heads", 0);
    if (heads <= 0 || in[2] % heads != 0) {
      node.fail("a 3-D input needs num_heads dividing its hidden size " + std::to_string(in[2]));
    }
    x = node.emit_reshape(input, {in[0], in[1], heads, in[2] / heads});
    head_axis = 2;
  } else if (in.size() != 4) {
    node.fail("the input must be 3-D or 4-D, got " + type_to_string(input->type()));
  }
  const Shape& shape = x->type().shape;
  const int64_t batch = shape[0];
  const int64_t sequence = shape[head_axis == 1 ? 2 : 1];
  const int64_t head = shape[3];
  const int64_t rotary = node.attr_int("rotary_embedding_dim", 0) == 0
                             ? head
                             : node.attr_int("rotary_embedding_dim", 0);
  if (rotary % 2 != 0 || rotary > head) {
    node.fail("rotary_embedding_dim " + std::to_string(rotary) +
              " must be even and at most the head size " + std::to_string(head));
  }
  const int64_t half = rotary / 2;

  // cos and sin as [batch, 1, sequence, half] or [batch, sequence, 1, half].
  const Shape table_shape =
      head_axis == 1 ? Shape{batch, 1, sequence, half} : Shape{batch, sequence, 1, half};
  const auto table = [&](size_t i) {
    Value* rows = node.input(i);
    if (node.has_input(3))
      rows = node.emit1("gather", {rows, node.input(3)}, {{"axis", int64_t{0}}});
    if (rows->type().num_elements() != batch * sequence * half) {
      node.fail("input " + std::to_string(i) + " gives " + type_to_string(rows->type()) +
                " rows for a batch of " + std::to_string(batch) + " × " + std::to_string(sequence) +
                " positions of " + std::to_string(half) + " values");
    }
    return node.emit_reshape(rows, table_shape);
  };
  Value* cos = table(1);
  Value* sin = table(2);

  Value* rotated = rotary == head ? x : last_axis_slice(node, x, 0, rotary, 1);
  Value* x1 = interleaved ? last_axis_slice(node, rotated, 0, rotary, 2)
                          : last_axis_slice(node, rotated, 0, half, 1);
  Value* x2 = interleaved ? last_axis_slice(node, rotated, 1, rotary, 2)
                          : last_axis_slice(node, rotated, half, rotary, 1);
  Value* real = node.emit1("sub", {node.emit1("mul", {cos, x1}), node.emit1("mul", {sin, x2})});
  Value* imag = node.emit1("add", {node.emit1("mul", {sin, x1}), node.emit1("mul", {cos, x2})});
  Value* result;
  if (interleaved) {
    Shape pair = x1->type().shape;
    pair.push_back(1);
    result = node.emit1("concat", {node.emit_reshape(real, pair), node.emit_reshape(imag, pair)},
                        {{"axis", int64_t{-1}}});
    Shape whole = x1->type().shape;
    whole.back() = rotary;
    result = node.emit_reshape(result, whole);
  } else {
    result = node.emit1("concat", {real, imag}, {{"axis", int64_t{-1}}});
  }
  if (rotary < head) {
    result = node.emit1("concat", {result, last_axis_slice(node, x, rotary, head, 1)},
                        {{"axis", int64_t{-1}}});
  }
  if (in.size() == 3) result = node.emit_reshape(result, in);
  return {result};
}

}  // namespace

void register_rotary_converters(ConverterTable& table) {
  table.add("RotaryEmbedding", 23, convert_rotary_embedding);
}

}  // namespace kiln::onnx_import
