// ONNX Attention (opsets 23, 24 and 25) as the ops its function body is made of, in the shape
// kiln's fusion makes one attention kernel (passes/fusion_planner.cc):
//
//   S = matmul(Q·√scale, (K·√scale)ᵀ) → softcap → + bias → softmax → zero fully masked rows
//   → matmul(·, V)
//
// Q, K and V are [batch, heads, sequence, head] or (3-D, split by q_num_heads and kv_num_heads)
// [batch, sequence, heads·head]; key/value heads are repeated for grouped-query attention, and
// past_key/past_value are concatenated before K and V (present_key/present_value). The bias sums
// attn_mask (boolean: False is −inf; float: added; padded with −inf up to the keys), the key
// positions each query may see (is_causal; opset 25's left_window_size and right_window_size),
// offset by the keys before the query block (past_key's length, or per batch
// nonpad_kv_seqlen − q_sequence_length), and opset 24's padding mask (keys from
// nonpad_kv_seqlen on are −inf). A row whose every bias is −inf gets zero probabilities, as the
// spec has it. qk_matmul_output is the scores after the matmul (mode 0), the softcap (1), the
// bias (2) or the softmax (3). softmax_precision casts the softmax's operand and result; kiln
// computes every softmax in f32 or more anyway.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();

Value* transpose(NodeImporter& node, Value* x, std::vector<int64_t> perm) {
  return node.emit1("transpose", {x}, {{"perm", std::move(perm)}});
}

Value* scalar(NodeImporter& node, DType dtype, double value) {
  return node.constant(Tensor::from_vector(dtype, {}, std::vector<double>{value}));
}

// 0, 1, ..., count − 1 as int64 of the given shape (count elements).
Value* iota(NodeImporter& node, int64_t count, Shape shape) {
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = i;
  return node.constant(Tensor::from_vector(DType::kI64, std::move(shape), values));
}

// 0 where `allowed`, −inf elsewhere, in `dtype`.
Value* additive_mask(NodeImporter& node, Value* allowed, DType dtype) {
  return node.emit1("where",
                    {allowed, scalar(node, dtype, 0.0), scalar(node, dtype, kNegativeInfinity)});
}

// Q, K or V as [batch, heads, sequence, head]. A 3-D input [batch, sequence, heads·head] is split
// into the `heads` its attribute names; a 4-D one must have them when the attribute is given.
Value* as_heads(NodeImporter& node, Value* x, const char* input, const char* heads_attr) {
  const Shape& shape = x->type().shape;
  const int64_t heads = node.attr_int(heads_attr, 0);
  if (shape.size() == 4) {
    if (node.has_attr(heads_attr) && node.opset() >= 25) {
      node.fail(std::string("attribute '") + heads_attr + "' is for 3-D inputs, and " + input +
                " is 4-D");
    }
    if (node.has_attr(heads_attr) && heads != shape[1]) {
      node.fail(std::string("attribute '") + heads_attr + "' is " + std::to_string(heads) +
                " but " + input + " " + type_to_string(x->type()) + " has " +
                std::to_string(shape[1]) + " heads");
    }
    return x;
  }
  if (shape.size() != 3) {
    node.fail(std::string(input) + " must be 3-D or 4-D, got " + type_to_string(x->type()));
  }
  if (heads <= 0 || shape[2] % heads != 0) {
    node.fail(std::string("3-D ") + input + " " + type_to_string(x->type()) + " needs attribute '" +
              heads_attr + "' dividing its hidden size " + std::to_string(shape[2]));
  }
  return transpose(node, node.emit_reshape(x, {shape[0], shape[1], heads, shape[2] / heads}),
                   {0, 2, 1, 3});
}

// K or V with each of its heads repeated `groups` times in place ([h0, h0, h1, h1, ...]), so
// query head h reads key/value head h / groups.
Value* repeat_heads(NodeImporter& node, Value* x, int64_t groups) {
  if (groups == 1) return x;
  const Shape& s = x->type().shape;
  Value* grouped = node.emit_reshape(x, {s[0], s[1], 1, s[2], s[3]});
  grouped = node.emit1("expand", {grouped},
                       {{"shape", std::vector<int64_t>{s[0], s[1], groups, s[2], s[3]}}});
  return node.emit_reshape(grouped, {s[0], s[1] * groups, s[2], s[3]});
}

// One limit on the keys a query sees, in terms of the query block's offset (the count of keys
// before it): query i sees key j when offset ≥ j − i + shift (at_least) or offset ≤ j − i + shift.
//   is_causal:            j ≤ i + offset        → offset ≥ j − i
//   left_window_size L:   i + offset − j ≤ L    → offset ≤ j − i + L
//   right_window_size R:  j − i − offset ≤ R    → offset ≥ j − i − R
struct PositionLimit {
  bool at_least;
  int64_t shift;
};

std::vector<PositionLimit> position_limits(const NodeImporter& node) {
  std::vector<PositionLimit> limits;
  if (node.attr_int("is_causal", 0) != 0) limits.push_back({true, 0});
  if (node.opset() < 25) return limits;
  const int64_t left = node.attr_int("left_window_size", -1);
  const int64_t right = node.attr_int("right_window_size", -1);
  for (const auto& [name, size] :
       {std::pair{"left_window_size", left}, {"right_window_size", right}}) {
    if (size < -1) {
      node.fail(std::string("attribute '") + name + "' is " + std::to_string(size) +
                ", must be -1 (unbounded) or at least 0");
    }
  }
  if (left >= 0) limits.push_back({false, left});
  if (right >= 0) limits.push_back({true, -right});
  return limits;
}

// The attention geometry: [batch, heads, queries, keys] of the scores.
struct Scores {
  int64_t batch, heads, queries, keys;
};

// The additive bias of the limits, [queries, keys] for a fixed offset or [batch, 1, queries,
// keys] for a per-batch one (an int64 [batch, 1, 1] value).
Value* position_bias(NodeImporter& node, const std::vector<PositionLimit>& limits, Value* offset,
                     const Scores& s, DType dtype) {
  // j − i, [queries, keys].
  Value* relative =
      node.emit1("sub", {iota(node, s.keys, {1, s.keys}), iota(node, s.queries, {s.queries, 1})});
  Value* allowed = nullptr;
  for (const PositionLimit& limit : limits) {
    Value* bound = node.emit1("add", {relative, scalar(node, DType::kI64, limit.shift)});
    Value* holds =
        node.emit1(limit.at_least ? "greater_or_equal" : "less_or_equal", {offset, bound});
    allowed = allowed ? node.emit1("and", {allowed, holds}) : holds;
  }
  Value* bias = additive_mask(node, allowed, dtype);
  if (bias->type().rank() == 3) bias = node.emit_reshape(bias, {s.batch, 1, s.queries, s.keys});
  return bias;
}

// For a fixed offset: whether each query row sees no key at all, as bool [queries, 1], or
// nullptr when every row sees one.
Value* rows_without_keys(NodeImporter& node, const std::vector<PositionLimit>& limits,
                         int64_t offset, const Scores& s) {
  Tensor empty(DType::kBool, {s.queries, 1});
  bool any = false;
  for (int64_t i = 0; i < s.queries; ++i) {
    // Keys j in [first, last]: at_least limits bound j from above, the others from below.
    int64_t first = 0, last = s.keys - 1;
    for (const PositionLimit& limit : limits) {
      const int64_t edge = i + offset - limit.shift;
      if (limit.at_least) {
        last = std::min(last, edge);
      } else {
        first = std::max(first, edge);
      }
    }
    empty.set_int(i, first > last);
    any = any || first > last;
  }
  return any ? node.constant(empty) : nullptr;
}

// attn_mask as an additive bias in `dtype`: a boolean mask's False is −inf; a mask shorter than
// the keys is padded with −inf. Fails unless it broadcasts to the scores.
Value* mask_bias(NodeImporter& node, const Scores& s, DType dtype) {
  Value* mask = node.input(3);
  const TensorType& type = mask->type();
  const Shape scores_shape = {s.batch, s.heads, s.queries, s.keys};
  bool fits = type.rank() >= 1 && type.rank() <= 4 && type.shape.back() <= s.keys;
  for (int64_t i = 2; fits && i <= type.rank(); ++i) {
    const int64_t d = type.shape[static_cast<size_t>(type.rank() - i)];
    fits = d == 1 || d == scores_shape[static_cast<size_t>(4 - i)];
  }
  if (!fits) {
    node.fail("attn_mask " + type_to_string(type) + " does not broadcast to the scores [" +
              shape_to_string(scores_shape) + "] (its last axis may be shorter)");
  }
  Value* bias = mask;
  if (type.dtype == DType::kBool) {
    bias = additive_mask(node, mask, dtype);
  } else if (!is_float(type.dtype)) {
    node.fail("attn_mask must be bool or float, got " + type_to_string(type));
  } else if (type.dtype != dtype) {
    bias = node.emit1("cast", {mask}, {{"to", Attribute(dtype)}});
  }
  const int64_t missing = s.keys - type.shape.back();
  if (missing > 0) {
    std::vector<int64_t> pads(2 * type.shape.size(), 0);
    pads.back() = missing;
    bias = node.emit1("pad", {bias}, {{"pads", pads}, {"constant_value", kNegativeInfinity}});
  }
  return bias;
}

Value* add_bias(NodeImporter& node, Value* sum, Value* term) {
  return sum ? node.emit1("add", {sum, term}) : term;
}

// Q, K and V as [batch, heads, sequence, head], past_key and past_value before K and V.
struct Operands {
  Value* q;
  Value* k;
  Value* v;
  int64_t past;  // keys from past_key
  Scores scores;
};

Operands attention_operands(NodeImporter& node) {
  const int64_t rank = node.input(0)->type().rank();
  if (node.input(1)->type().rank() != rank || node.input(2)->type().rank() != rank) {
    node.fail("Q, K and V must have the same rank");
  }
  Operands o;
  o.q = as_heads(node, node.input(0), "Q", "q_num_heads");
  o.k = as_heads(node, node.input(1), "K", "kv_num_heads");
  o.v = as_heads(node, node.input(2), "V", "kv_num_heads");
  const DType dtype = o.q->type().dtype;
  if (!is_float(dtype) || o.k->type().dtype != dtype || o.v->type().dtype != dtype) {
    node.fail("Q, K and V must have one float type, got " + type_to_string(o.q->type()) + ", " +
              type_to_string(o.k->type()) + " and " + type_to_string(o.v->type()));
  }
  if (node.has_input(4) != node.has_input(5)) {
    node.fail("past_key and past_value must be given together");
  }
  o.past = 0;
  if (node.has_input(4)) {
    if (node.has_input(6)) node.fail("nonpad_kv_seqlen cannot be used with past_key");
    for (size_t i : {4, 5}) {
      Value* past = node.input(i);
      Value*& present = i == 4 ? o.k : o.v;
      const Shape& ps = past->type().shape;
      const Shape& s = present->type().shape;
      if (past->type().dtype != dtype || ps.size() != 4 || ps[0] != s[0] || ps[1] != s[1] ||
          ps[3] != s[3]) {
        node.fail(std::string(i == 4 ? "past_key " : "past_value ") + type_to_string(past->type()) +
                  " does not fit " + type_to_string(present->type()) +
                  " as [batch, heads, sequence, head]");
      }
      present = node.emit1("concat", {past, present}, {{"axis", int64_t{2}}});
    }
    o.past = node.input(4)->type().shape[2];
  }
  const Shape& qs = o.q->type().shape;
  const Shape& ks = o.k->type().shape;
  const Shape& vs = o.v->type().shape;
  o.scores = {qs[0], qs[1], qs[2], ks[2]};
  if (ks[0] != qs[0] || vs[0] != qs[0] || ks[3] != qs[3] || vs[1] != ks[1] || vs[2] != ks[2] ||
      qs[1] % ks[1] != 0) {
    node.fail("Q " + type_to_string(o.q->type()) + ", K " + type_to_string(o.k->type()) +
              " and V " + type_to_string(o.v->type()) +
              " (as [batch, heads, sequence, head]) do not fit: K and V need Q's batch, K Q's "
              "head size, V K's sequence, and the key/value heads must divide the query heads");
  }
  return o;
}

// The additive bias of the scores (nullptr when there is none), and whether some of it is known
// only at run time (attn_mask, nonpad_kv_seqlen): otherwise only the position limits make it.
struct Bias {
  Value* value = nullptr;
  bool run_time = false;
};

Bias attention_bias(NodeImporter& node, const Operands& o, const std::vector<PositionLimit>& limits,
                    DType dtype) {
  const Scores& s = o.scores;
  Bias bias;
  if (node.has_input(3)) bias = {mask_bias(node, s, dtype), true};
  Value* nonpad = node.has_input(6) ? node.input(6) : nullptr;
  if (nonpad && nonpad->type() != TensorType{DType::kI64, {s.batch}}) {
    node.fail("nonpad_kv_seqlen must be i64[" + std::to_string(s.batch) + "], got " +
              type_to_string(nonpad->type()));
  }
  if (!limits.empty()) {
    Value* offset = nonpad ? node.emit1("sub", {node.emit_reshape(nonpad, {s.batch, 1, 1}),
                                                scalar(node, DType::kI64, s.queries)})
                           : scalar(node, DType::kI64, o.past);
    bias.value = add_bias(node, bias.value, position_bias(node, limits, offset, s, dtype));
  }
  if (nonpad) {
    Value* kept = node.emit1(
        "less", {iota(node, s.keys, {1, s.keys}), node.emit_reshape(nonpad, {s.batch, 1})});
    bias.value =
        add_bias(node, bias.value,
                 node.emit_reshape(additive_mask(node, kept, dtype), {s.batch, 1, 1, s.keys}));
    bias.run_time = true;
  }
  return bias;
}

// Whether each row of the bias (broadcast to the scores) is −inf throughout, as bool
// [..., queries, 1]; nullptr when that is known at import to hold for no row.
Value* fully_masked_rows(NodeImporter& node, Value* bias) {
  Value* row_max = node.emit1(
      "reduce_max", {bias},
      {{"axes", std::vector<int64_t>{bias->type().rank() - 1}}, {"keepdims", int64_t{1}}});
  Value* masked =
      node.emit1("equal", {row_max, scalar(node, bias->type().dtype, kNegativeInfinity)});
  if (masked->is_constant() && masked->has_data()) {
    const std::vector<int64_t> rows = masked->data().to_ints();
    if (std::none_of(rows.begin(), rows.end(), [](int64_t row) { return row != 0; })) {
      return nullptr;
    }
  }
  return masked;
}

std::vector<Value*> convert_attention(NodeImporter& node) {
  const Operands o = attention_operands(node);
  const Scores& s = o.scores;
  const DType dtype = o.q->type().dtype;
  const int64_t head = o.q->type().shape[3];
  const int64_t groups = s.heads / o.k->type().shape[1];

  // The scores, Q and K each scaled by √scale first, as the spec has it (no f16 overflow).
  const double scale = node.has_attr("scale") ? node.attr_float("scale")
                                              : 1.0 / std::sqrt(static_cast<double>(head));
  if (!(scale >= 0)) node.fail("attribute 'scale' " + std::to_string(scale) + " is negative");
  Value* root_scale = scalar(node, dtype, std::sqrt(scale));
  Value* keys = transpose(node, repeat_heads(node, o.k, groups), {0, 1, 3, 2});
  Value* raw_scores = node.emit1(
      "matmul", {node.emit1("mul", {o.q, root_scale}), node.emit1("mul", {keys, root_scale})});
  Value* capped_scores = raw_scores;
  const double softcap = node.attr_float("softcap", 0.0);
  if (softcap > 0) {
    Value* cap = scalar(node, dtype, softcap);
    capped_scores =
        node.emit1("mul", {node.emit1("tanh", {node.emit1("div", {raw_scores, cap})}), cap});
  }
  const std::vector<PositionLimit> limits = position_limits(node);
  const Bias bias = attention_bias(node, o, limits, dtype);
  Value* biased_scores =
      bias.value ? node.emit1("add", {capped_scores, bias.value}) : capped_scores;

  // The probabilities, fully masked rows zero.
  const DType softmax_dtype =
      node.has_attr("softmax_precision") ? float_dtype_attr(node, "softmax_precision", 1) : dtype;
  Value* logits = softmax_dtype == dtype
                      ? biased_scores
                      : node.emit1("cast", {biased_scores}, {{"to", Attribute(softmax_dtype)}});
  Value* probabilities = node.emit1("softmax", {logits}, {{"axis", int64_t{-1}}});
  if (softmax_dtype != dtype) {
    probabilities = node.emit1("cast", {probabilities}, {{"to", Attribute(dtype)}});
  }
  Value* masked_rows = !bias.value     ? nullptr
                       : bias.run_time ? fully_masked_rows(node, bias.value)
                                       : rows_without_keys(node, limits, o.past, s);
  if (masked_rows) {
    probabilities = node.emit1("where", {masked_rows, scalar(node, dtype, 0.0), probabilities});
  }

  Value* y = node.emit1("matmul", {probabilities, repeat_heads(node, o.v, groups)});
  if (node.input(0)->type().rank() == 3) {
    y = node.emit_reshape(transpose(node, y, {0, 2, 1, 3}),
                          {s.batch, s.queries, s.heads * o.v->type().shape[3]});
  }
  std::vector<Value*> results = {y, o.k, o.v};
  if (node.has_output(3)) {
    const int64_t mode = node.attr_int("qk_matmul_output_mode", 0);
    const std::vector<Value*> modes = {raw_scores, capped_scores, biased_scores, probabilities};
    if (mode < 0 || mode >= static_cast<int64_t>(modes.size())) {
      node.fail("attribute 'qk_matmul_output_mode' is " + std::to_string(mode) +
                ", must be 0, 1, 2 or 3");
    }
    results.push_back(modes[static_cast<size_t>(mode)]);
  }
  return results;
}

}  // namespace

void register_attention_converters(ConverterTable& table) {
  table.add("Attention", 23, convert_attention);
  table.add("Attention", 24, convert_attention);  // nonpad_kv_seqlen
  table.add("Attention", 25, convert_attention);  // left_window_size, right_window_size
}

}  // namespace kiln::onnx_import
