// channels-last (see the header).
#include "passes/channels_last.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/op_registry.h"
#include "passes/rewrite_util.h"

namespace kiln::passes {
namespace {

// A 4-D NCHW value in NHWC order is transpose(v, kToLast); back is transpose(v', kToFirst).
const std::vector<int64_t> kToLast = {0, 2, 3, 1};
const std::vector<int64_t> kToFirst = {0, 3, 1, 2};
// Where NCHW axis a lies in NHWC.
constexpr int64_t kAxisInLast[4] = {0, 3, 1, 2};


Shape last_shape(const Shape& s) { return {s[0], s[2], s[3], s[1]}; }

// Whether NCHW and NHWC order the elements of `s` alike (only size-1 dims move).
bool order_kept(const Shape& s) { return s[1] == 1 || s[2] * s[3] == 1; }

// A constant [N, C, H, W] tensor's bytes in NHWC order, with the given shape (of as many
// elements).
Tensor permuted_to_last(const Tensor& tensor, const Shape& shape4, Shape result_shape) {
  const size_t size = dtype_size(tensor.dtype());
  const int64_t outer = shape4[0], p = shape4[1], q = shape4[2] * shape4[3];
  Tensor moved(tensor.dtype(), std::move(result_shape));
  const std::byte* from = tensor.bytes();
  std::byte* to = moved.bytes();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < p; ++i) {
      for (int64_t j = 0; j < q; ++j) {
        std::memcpy(to + ((o * q + j) * p + i) * size, from + ((o * p + i) * q + j) * size, size);
      }
    }
  }
  return moved;
}

// An OHWI weight tensor [M, kh, kw, C] with its channels zero-padded to `channels`.
Tensor channels_padded(const Tensor& weights, int64_t channels) {
  const Shape& shape = weights.shape();
  const size_t size = dtype_size(weights.dtype());
  const int64_t rows = shape[0] * shape[1] * shape[2], have = shape[3];
  Tensor padded(weights.dtype(), Shape{shape[0], shape[1], shape[2], channels});
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(padded.bytes() + r * channels * size, weights.bytes() + r * have * size,
                have * size);
  }
  return padded;
}

std::string last_name(const Value* value) {
  return value->name().empty() ? "" : value->name() + ".nhwc";
}

bool is_reduction(const std::string& op) { return op.starts_with("reduce_"); }

class Rewriter {
 public:
  Rewriter(Graph& graph, PassContext& context) : graph_(graph), context_(context) {}

  bool run() {
    std::vector<Node*> convs;
    for (Node* node : graph_.nodes()) {
      if (node->op() == "conv" && conv_refusal(*node).empty()) convs.push_back(node);
    }
    if (convs.empty()) return false;
    for (Node* node : graph_.nodes()) {
      if (node->op() == "conv" && node->operand(0)->type().rank() == 4 &&
          node->int_attr("channels_last") == 0) {
        if (const std::string why = conv_refusal(*node); !why.empty()) {
          refuse(*node, "left channels-first: " + why);
        }
      }
      convert(*node);
    }
    move_back_where_read();
    graph_.erase_unused_constants();
    graph_.sort_topologically();
    return true;
  }

 private:
  // Why `conv` stays channels-first, or "".
  static std::string conv_refusal(const Node& conv) {
    if (conv.int_attr("channels_last") != 0) return "it is channels-last already";
    if (conv.operand(0)->type().rank() != 4) return "it is not 2-D";
    if (!is_16_bit_float(conv.operand(0)->type().dtype)) {
      return "its operands are " + std::string(dtype_name(conv.operand(0)->type().dtype)) +
             ", not 16-bit (the pass runs the 16-bit convs channels-last)";
    }
    if (!conv.operand(1)->is_constant() || !conv.operand(1)->has_data()) {
      return "its weights are not a constant, which would be transposed on every run";
    }
    return "";
  }

  void refuse(const Node& node, const std::string& reason) {
    context_.refusals.push_back(std::string(ChannelsLast::kName) + ": " + node.describe() + ": " +
                                reason);
  }

  // Whether `value` is held in NHWC by a converted node.
  bool produced_last(const Value* value) const { return produced_.count(value) != 0; }

  // `value` (4-D, NCHW) in NHWC order: the converted node's result, a repacked constant, or a
  // reshape or transpose of it.
  Value* to_last(Value* value) {
    if (auto it = last_.find(value); it != last_.end()) return it->second;
    const Shape& shape = value->type().shape;
    Value* moved;
    if (value->is_constant() && value->has_data()) {
      moved = graph_.add_constant(last_name(value),
                                  permuted_to_last(value->data(), shape, last_shape(shape)));
    } else if (order_kept(shape)) {
      moved = graph_.add_node("reshape", {value}, {{"shape", last_shape(shape)}})->result();
    } else {
      moved = graph_.add_node("transpose", {value}, {{"perm", kToLast}})->result();
    }
    last_[value] = moved;
    return moved;
  }

  // An operand of a broadcasting op whose result is 4-D, moved so that it broadcasts against
  // the NHWC result as it did against the NCHW one: its shape aligned to 4 dims from the right,
  // moved, and (for a constant) stripped of leading size-1 dims, so a bias [C,1,1] becomes [C].
  Value* broadcast_operand_to_last(Value* value) {
    const Shape& shape = value->type().shape;
    if (shape.size() == 4) return to_last(value);
    if (value->type().num_elements() == 1 && shape.size() <= 1) return value;
    Shape shape4(4 - shape.size(), 1);
    shape4.insert(shape4.end(), shape.begin(), shape.end());
    Shape moved_shape = last_shape(shape4);
    if (value->is_constant() && value->has_data()) {
      while (moved_shape.size() > 1 && moved_shape.front() == 1) moved_shape.erase(moved_shape.begin());
      return graph_.add_constant(last_name(value),
                                 permuted_to_last(value->data(), shape4, moved_shape));
    }
    if (order_kept(shape4)) {
      return graph_.add_node("reshape", {value}, {{"shape", moved_shape}})->result();
    }
    Value* widened = graph_.add_node("reshape", {value}, {{"shape", shape4}})->result();
    return graph_.add_node("transpose", {widened}, {{"perm", kToLast}})->result();
  }

  // Adds `op` on `operands` in NHWC standing for `node`, whose result it holds in NHWC order.
  void replace(Node& node, const std::string& op, std::vector<Value*> operands, AttributeMap attrs) {
    Node* last = graph_.add_node(op, std::move(operands), std::move(attrs), node.provenance());
    last->result()->set_name(last_name(node.result()));
    last_[node.result()] = last->result();
    produced_.insert(node.result());
    replaced_.push_back(&node);
    replaced_set_.insert(&node);
  }

  // Converts `node` when it has an NHWC form and reads a value held in NHWC (a conv: always);
  // otherwise records why, for the refusal of the transpose back it may need.
  void convert(Node& node) {
    const std::string& op = node.op();
    const std::vector<Value*>& operands = node.operands();
    const bool reads_last = std::any_of(operands.begin(), operands.end(),
                                        [&](const Value* v) { return produced_last(v); });
    if (op == "conv") {
      if (const std::string why = conv_refusal(node); !why.empty()) {
        return not_converted(node, "the conv stays channels-first: " + why);
      }
      // W [M, C/g, kh, kw] -> [M, kh, kw, C/g]; the bias [M] stays.
      std::vector<Value*> moved = {to_last(node.operand(0)), to_last(node.operand(1))};
      if (operands.size() > 2) moved.push_back(node.operand(2));
      pad_channels(node, moved);
      AttributeMap attrs = node.attrs();
      attrs["channels_last"] = Attribute(1);
      return replace(node, op, moved, attrs);
    }
    if (!reads_last) return;
    if (node.results().size() != 1) return not_converted(node, op + " has no channels-last form");
    const Shape& shape = node.result()->type().shape;
    const OpCategory category = node.info().category;
    if (category == OpCategory::kElementwise && operands.size() == 1 && shape.size() == 4 &&
        operands[0]->type().shape == shape) {
      return replace(node, op, {to_last(operands[0])}, node.attrs());
    }
    if (category == OpCategory::kBroadcast && op != "batch_normalization" && shape.size() == 4) {
      std::vector<Value*> moved;
      for (Value* operand : operands) moved.push_back(broadcast_operand_to_last(operand));
      return replace(node, op, moved, node.attrs());
    }
    if (op == "global_average_pool" && shape.size() == 4) {
      return replace(node, "reduce_mean", {to_last(operands[0])},
                     {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", Attribute(1)}});
    }
    if (is_reduction(op) && operands.size() == 1 && operands[0]->type().rank() == 4) {
      if (node.int_attr("keepdims") == 0) {
        return not_converted(node, op + " with keepdims=0 drops axes of the layout");
      }
      std::vector<int64_t> axes;
      for (int64_t axis : node.ints_attr("axes")) axes.push_back(kAxisInLast[axis < 0 ? axis + 4 : axis]);
      std::sort(axes.begin(), axes.end());
      AttributeMap attrs = node.attrs();
      attrs["axes"] = axes;
      return replace(node, op, {to_last(operands[0])}, attrs);
    }
    if (op == "concat" && shape.size() == 4) {
      std::vector<Value*> moved;
      for (Value* operand : operands) moved.push_back(to_last(operand));
      const int64_t axis = node.int_attr("axis");
      AttributeMap attrs = node.attrs();
      attrs["axis"] = Attribute(kAxisInLast[axis < 0 ? axis + 4 : axis]);
      return replace(node, op, moved, attrs);
    }
    if (op == "pad" && shape.size() == 4 && operands.size() == 1) {
      const std::vector<int64_t>& pads = node.ints_attr("pads");
      std::vector<int64_t> moved(8);
      for (int64_t axis = 0; axis < 4; ++axis) {
        moved[kAxisInLast[axis]] = pads[axis];
        moved[4 + kAxisInLast[axis]] = pads[4 + axis];
      }
      AttributeMap attrs = node.attrs();
      attrs["pads"] = moved;
      return replace(node, op, {to_last(operands[0])}, attrs);
    }
    if ((op == "max_pool" || op == "average_pool") && shape.size() == 4) {
      AttributeMap attrs = node.attrs();
      attrs["channels_last"] = Attribute(1);
      return replace(node, op, {to_last(operands[0])}, attrs);
    }
    if (op == "reshape") {
      return not_converted(node, "reshape mixes the channels with the pixels");
    }
    not_converted(node, op + " has no channels-last form");
  }

  // An ungrouped conv whose input comes from outside the NHWC region (a graph input: an RGB
  // stem's 3 channels) with channels not a multiple of 8 reads them zero-padded to one
  // (padded_conv_channels): its input by a pad op after the move (which the kernel that moves it
  // computes too), its weights as a padded constant; the padded channels add 0 · 0 to every sum,
  // and a pixel's channels become whole 16-byte vectors that kernels can copy. (A value an NHWC op
  // computes is not padded: that would take a kernel of its own.)
  void pad_channels(const Node& conv, std::vector<Value*>& moved) {
    const int64_t channels = conv.operand(0)->type().shape[1];
    const int64_t padded = padded_conv_channels(channels);
    if (conv.int_attr("group") != 1 || padded == channels || produced_last(conv.operand(0))) {
      return;
    }
    moved[0] = graph_
                   .add_node("pad", {moved[0]},
                             {{"pads", std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, padded - channels}}},
                             conv.provenance())
                   ->result();
    moved[1] = graph_.add_constant(moved[1]->name().empty() ? "" : moved[1]->name() + ".padded",
                                   channels_padded(moved[1]->data(), padded));
  }

  void not_converted(const Node& node, const std::string& why) { why_[&node] = why; }

  // Each converted node's NCHW result, where anything still reads it, from its NHWC value.
  void move_back_where_read() {
    for (Node* node : replaced_) {
      Value* result = node->result();
      const bool output = graph_.is_output(result);
      std::vector<Node*> users;  // other than the converted nodes, which go
      for (Node* user : graph_.users(result)) {
        if (!replaced_set_.count(user)) users.push_back(user);
      }
      if (users.empty() && !output) continue;
      Value* last = last_.at(result);
      const Shape& shape = result->type().shape;
      Node* back = order_kept(shape)
                       ? graph_.add_node("reshape", {last}, {{"shape", shape}})
                       : graph_.add_node("transpose", {last}, {{"perm", kToFirst}});
      if (!order_kept(shape)) {
          for (const Node* user : users) {
          const auto why = why_.find(user);
          refuse(*user, "reads " + display_name(result) + " channels-first, so a transpose to NCHW is inserted: " +
                            (why == why_.end() ? user->op() + " has no channels-last form" : why->second));
        }
        if (output) {
          refuse(*node, "its result is graph output %" + result->name() +
                            ", which keeps NCHW: a transpose to NCHW is inserted");
        }
      }
      back->result()->set_name(result->name());
      graph_.replace_all_uses(result, back->result());
    }
    for (auto it = replaced_.rbegin(); it != replaced_.rend(); ++it) graph_.erase_node(*it);
  }

  static std::string display_name(const Value* value) {
    return value->name().empty() ? "the result of " + value->producer()->describe()
                                 : "%" + value->name();
  }

  Graph& graph_;
  PassContext& context_;
  std::map<const Value*, Value*> last_;  // NCHW value -> the value holding it in NHWC order
  std::set<const Value*> produced_;      // values whose NHWC form a converted node computes
  std::vector<Node*> replaced_;
  std::set<const Node*> replaced_set_;
  std::map<const Node*, std::string> why_;
};

}  // namespace

bool ChannelsLast::run(Graph& graph, PassContext& context) {
  if (context.precision != Precision::kFP16 && context.precision != Precision::kBF16) return false;
  return Rewriter(graph, context).run();
}

}  // namespace kiln::passes
