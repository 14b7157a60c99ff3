// ONNX NegativeLogLikelihoodLoss (12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13) -> kiln ops, as
// exported evaluation graphs carry them:
//
//   NLL     loss[n, d...] = −input[n, t, d...] · w[t], t = target[n, d...], w = weight or 1; a
//           target equal to ignore_index has weight 0 (and reads class 0: no gather leaves the
//           class axis, which other out-of-range targets are clamped into as well)
//   SCE     NLL of log_softmax(scores) along the class axis (axis 1); its optional second output
//           is that log_softmax
//   reduction none: loss; sum: Σ loss; mean: Σ loss / Σ w[t] (the weighted mean, ignored entries
//           left out of both), which ONNX's reference computes so
#include "frontend/converters/layout_converters.h"
#include "frontend/converters/nn_converters.h"

namespace kiln::onnx_import {
namespace {

// The NLL of `input` [N, C, d...] by `node`'s target (input 1), weight (input 2) and attributes.
Value* negative_log_likelihood(NodeImporter& node, Value* input) {
  const Shape& shape = input->type().shape;
  if (shape.size() < 2) node.fail("the input must be [N, C, d...]");
  if (!is_float(input->type().dtype)) node.fail("the input must hold floats");
  const int64_t classes = shape[1];
  Value* target = node.input(1);
  Shape expected{shape[0]};
  expected.insert(expected.end(), shape.begin() + 2, shape.end());
  if (target->type().shape != expected) {
    node.fail("the target must be [" + shape_to_string(expected) + "], not [" +
              shape_to_string(target->type().shape) + "]");
  }
  const DType dtype = input->type().dtype;
  const auto scalar = [&](double value) { return node.scalar_constant(dtype, value); };
  if (target->type().dtype != DType::kI64) {
    target = node.emit1("cast", {target}, {{"to", Attribute(DType::kI64)}});
  }
  Value* ignored = nullptr;
  if (node.has_attr("ignore_index")) {
    ignored = node.emit1(
        "equal", {target, node.constant(Tensor::scalar_i64(node.attr_int("ignore_index")))});
    target = node.emit1("where", {ignored, node.constant(Tensor::scalar_i64(0)), target});
  }
  target = node.emit1("min", {node.emit1("max", {target, node.constant(Tensor::scalar_i64(0))}),
                              node.constant(Tensor::scalar_i64(classes - 1))});
  // input[n, t, d...]: a gather_elements along the class axis by t as a size-1 axis.
  Shape index_shape = expected;
  index_shape.insert(index_shape.begin() + 1, 1);
  Value* picked = node.emit1("gather_elements", {input, node.emit_reshape(target, index_shape)},
                             {{"axis", int64_t{1}}});
  picked = node.emit_reshape(picked, expected);
  Value* weight = nullptr;
  if (node.has_input(2)) {
    Value* class_weights = node.input(2);
    if (class_weights->type().shape != Shape{classes}) {
      node.fail("the weight must be [" + std::to_string(classes) + "]");
    }
    weight = node.emit1("gather", {class_weights, target}, {{"axis", int64_t{0}}});
  }
  if (ignored) {
    weight = node.emit1("where", {ignored, scalar(0), weight ? weight : scalar(1)});
  }
  Value* loss = node.emit1("neg", {weight ? node.emit1("mul", {picked, weight}) : picked});
  const std::string reduction = node.attr_string("reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction != "sum" && reduction != "mean") {
    node.fail("reduction '" + reduction + "' is not none, sum or mean");
  }
  std::vector<int64_t> all(expected.size());
  for (size_t a = 0; a < all.size(); ++a) all[a] = static_cast<int64_t>(a);
  const auto total = [&](Value* v) {
    return node.emit1("reduce_sum", {v}, {{"axes", all}, {"keepdims", int64_t{0}}});
  };
  if (reduction == "sum") return total(loss);
  if (!weight) return node.emit1("reduce_mean", {loss}, {{"axes", all}, {"keepdims", int64_t{0}}});
  // The weight has the loss's shape here (a class weight gathered, or the ignore mask's).
  return node.emit1("div", {total(loss), total(weight)});
}

std::vector<Value*> convert_negative_log_likelihood_loss(NodeImporter& node) {
  return {negative_log_likelihood(node, node.input(0))};
}

std::vector<Value*> convert_softmax_cross_entropy_loss(NodeImporter& node) {
  Value* log_prob = node.emit1("log_softmax", {node.input(0)}, {{"axis", int64_t{1}}});
  return {negative_log_likelihood(node, log_prob), log_prob};
}

}  // namespace

void register_loss_converters(ConverterTable& table) {
  table.add("NegativeLogLikelihoodLoss", 12, convert_negative_log_likelihood_loss);
  table.add("SoftmaxCrossEntropyLoss", 12, convert_softmax_cross_entropy_loss);
}

}  // namespace kiln::onnx_import
