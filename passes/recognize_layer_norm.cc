// recognize-layer-norm. Anchored at the normalizing node, d / sqrt(v), d * reciprocal(sqrt(v)) or
// d * (1 / sqrt(v)) (mul operands in either order), it checks
//   v = var + eps               eps a non-negative splat constant
//   var = reduce_mean(d * d)    or pow(d, 2), keepdims=1, over the last k axes of d
// and then either
//   d = x - reduce_mean(x)      keepdims=1, the same axes as var's: layer_normalization, taking
//                               an optional `* gamma` and `+ beta` above it
// or d is x itself (nothing subtracted): rms_normalization, taking an optional `* gamma`.
// gamma and beta are values broadcasting over the normalized axes only. A missing gamma becomes a
// constant of ones of the normalized shape.
#include "passes/recognize_layer_norm.h"

#include <algorithm>
#include <optional>

#include "ir/ops/layout_helpers.h"
#include "passes/pattern_match.h"

namespace kiln::passes {
namespace {

// The parts of the normalizing node: the centered value d, the square root's operand v.
struct Normalizer {
  Value* centered = nullptr;
  Value* variance = nullptr;
  std::vector<Node*> nodes;
};

std::optional<Normalizer> read_normalizer(Node& node) {
  Normalizer found;
  if (node.op() == "div") {
    // c / sqrt(v) with a constant c is a reciprocal: the mul using it is the normalizer.
    if (splat_value(node.operand(0))) return std::nullopt;
    if (Node* sqrt = producer_of(node.operand(1), "sqrt")) {
      found = {node.operand(0), sqrt->operand(0), {sqrt, &node}};
    }
  } else if (node.op() == "mul") {
    match_either_order(node, [&](Value* centered, Value* inverse) {
      // reciprocal(sqrt(v)), or 1 / sqrt(v) (T5's layer norm as torch exports it).
      Node* reciprocal = producer_of(inverse, "reciprocal");
      Value* root = reciprocal ? reciprocal->operand(0) : nullptr;
      if (Node* one_over = producer_of(inverse, "div");
          one_over && splat_value(one_over->operand(0)) == 1.0) {
        reciprocal = one_over;
        root = one_over->operand(1);
      }
      Node* sqrt = root ? producer_of(root, "sqrt") : nullptr;
      if (sqrt) found = {centered, sqrt->operand(0), {sqrt, reciprocal, &node}};
      return sqrt != nullptr;
    });
  }
  if (!found.centered) return std::nullopt;
  return found;
}

// Whether `axes` (sorted) are the last ones of a rank-`rank` tensor.
bool are_last_axes(const std::vector<int64_t>& axes, int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i)) return false;
  }
  return !axes.empty();
}

// Whether `shape` broadcasts to `x` and varies along the normalized axes (from `axis`) only.
bool broadcasts_over_normalized(const Shape& shape, const Shape& x, int64_t axis) {
  if (shape.size() > x.size()) return false;
  const size_t offset = x.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t along = x[offset + i];
    const bool normalized = static_cast<int64_t>(offset + i) >= axis;
    if (shape[i] != 1 && !(normalized && shape[i] == along)) return false;
  }
  return true;
}

// When the only user of the match's root is an `op` node (mul by gamma, add of beta) whose other
// operand broadcasts over the normalized axes and comes from outside the pattern, makes that node
// the root and returns the operand.
Value* take_affine(const Graph& graph, Match& match, const std::string& op, const Value* x,
                   int64_t axis) {
  Value* result = match.root->result();
  Node* user = sole_user(graph, result);
  if (!user || user->op() != op || user->operand(0) == user->operand(1) ||
      user->result()->type() != x->type()) {
    return nullptr;
  }
  Value* operand = other_operand(*user, result);
  const bool from_pattern =
      std::find(match.nodes.begin(), match.nodes.end(), operand->producer()) != match.nodes.end();
  if (from_pattern || !broadcasts_over_normalized(operand->type().shape, x->type().shape, axis)) {
    return nullptr;
  }
  match.nodes.push_back(user);
  match.root = user;
  return operand;
}

// A constant of ones of x's shape from `axis` on: the scale of a normalization without gamma.
Value* add_unit_scale(Graph& target, const Value* x, int64_t axis, const std::string& name) {
  const Shape& shape = x->type().shape;
  Tensor ones(x->type().dtype, Shape(shape.begin() + axis, shape.end()));
  for (int64_t i = 0; i < ones.num_elements(); ++i) ones.set_double(i, 1);
  return target.add_constant(name, ones);
}

// x / sqrt(mean(x^2) + eps) [* gamma]: `variance` is the reduce_mean of x^2, read as `square`.
void rewrite_rms_norm(const Graph& graph, PatternRewriter& rewriter, Node& node,
                      const Normalizer& normalizer, Node* plus_epsilon, Node* variance,
                      const Product& square, double epsilon) {
  Value* x = normalizer.centered;
  const std::vector<int64_t> axes = reduced_axes(*variance);
  if (!are_last_axes(axes, x->type().rank()) || variance->int_attr("keepdims") == 0) {
    return rewriter.refuse(node, "the mean of squares reduces axes " + ints_to_string(axes) +
                                     ", not the last axes with keepdims=1");
  }
  if (node.result()->type() != x->type()) {
    return rewriter.refuse(
        node, "epsilon broadcasts the result to " + type_to_string(node.result()->type()));
  }
  Match match{&node, normalizer.nodes};
  match.nodes.insert(match.nodes.end(), {plus_epsilon, variance});
  match.nodes.insert(match.nodes.end(), square.nodes.begin(), square.nodes.end());
  const int64_t axis = axes[0];
  Value* gamma = take_affine(graph, match, "mul", x, axis);
  rewriter.rewrite(node, match, [&](Graph& target, const std::vector<std::string>& provenance) {
    if (!gamma) gamma = add_unit_scale(target, x, axis, "rms_norm_scale");
    const AttributeMap attrs = {{"axis", axis}, {"epsilon", epsilon}};
    return target.add_node("rms_normalization", {x, gamma}, attrs, provenance)->result();
  });
}

void match_layer_norm(const Graph& graph, PatternRewriter& rewriter, Node& node) {
  const std::optional<Normalizer> normalizer = read_normalizer(node);
  if (!normalizer) return;
  Value* centered = normalizer->centered;
  Node* plus_epsilon = producer_of(normalizer->variance, "add");
  Node* variance = nullptr;
  double epsilon = 0;
  if (plus_epsilon) {
    match_either_order(*plus_epsilon, [&](Value* mean, Value* constant) {
      const std::optional<double> splat = splat_value(constant);
      variance = splat && *splat >= 0 ? producer_of(mean, "reduce_mean") : nullptr;
      epsilon = splat.value_or(0);
      return variance != nullptr;
    });
  }
  if (!variance) {
    return rewriter.refuse(node, "the square root's operand is not reduce_mean(..) + epsilon");
  }
  const Product square = read_product(graph, variance->operand(0));
  if (square.coefficient != 1 || square.factors != std::vector<Value*>{centered, centered}) {
    return rewriter.refuse(node, "the variance averages " + describe_product(square) + ", not " +
                                     describe_value(centered) + "^2");
  }
  Node* sub = producer_of(centered, "sub");
  Node* mean = sub ? producer_of(sub->operand(1), "reduce_mean") : nullptr;
  if (!mean || mean->operand(0) != sub->operand(0)) {
    // Nothing subtracted: RMS normalization.
    return rewrite_rms_norm(graph, rewriter, node, *normalizer, plus_epsilon, variance, square,
                            epsilon);
  }
  Value* x = sub->operand(0);
  const std::vector<int64_t> axes = reduced_axes(*mean);
  if (reduced_axes(*variance) != axes || !are_last_axes(axes, x->type().rank()) ||
      mean->int_attr("keepdims") == 0 || variance->int_attr("keepdims") == 0) {
    return rewriter.refuse(node, "the means reduce axes " + ints_to_string(axes) + " and " +
                                     ints_to_string(reduced_axes(*variance)) +
                                     ", not the same last axes with keepdims=1");
  }
  if (node.result()->type() != x->type()) {
    return rewriter.refuse(
        node, "epsilon broadcasts the result to " + type_to_string(node.result()->type()));
  }
  Match match{&node, normalizer->nodes};
  match.nodes.insert(match.nodes.end(), {plus_epsilon, variance, sub, mean});
  match.nodes.insert(match.nodes.end(), square.nodes.begin(), square.nodes.end());
  const int64_t axis = axes[0];
  Value* gamma = take_affine(graph, match, "mul", x, axis);
  Value* beta = take_affine(graph, match, "add", x, axis);
  rewriter.rewrite(node, match, [&](Graph& target, const std::vector<std::string>& provenance) {
    if (!gamma) gamma = add_unit_scale(target, x, axis, "layer_norm_scale");
    std::vector<Value*> operands = {x, gamma};
    if (beta) operands.push_back(beta);
    const AttributeMap attrs = {{"axis", axis}, {"epsilon", epsilon}};
    return target.add_node("layer_normalization", operands, attrs, provenance)->result();
  });
}

}  // namespace

bool RecognizeLayerNorm::run(Graph& graph, PassContext& context) {
  PatternRewriter rewriter(graph, context, kName);
  rewriter.walk([&](Node& node) { match_layer_norm(graph, rewriter, node); });
  return rewriter.finish();
}

}  // namespace kiln::passes
