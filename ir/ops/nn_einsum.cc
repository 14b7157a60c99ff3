// einsum (ONNX Einsum): sums of products of the operands' elements over labeled axes, given by an
// equation such as "bij,bjk->bik". Supports "..." (broadcast dims), repeated labels within a term
// (diagonals), implicit outputs (no "->": the ellipsis dims, then the labels used exactly once, in
// character-code order, as numpy does) and size-1 dims broadcast against other operands. Float
// products and sums run in double (nn::Accumulator) and each result is rounded once, when stored.
#include <algorithm>

#include "ir/ops/einsum_plan.h"
#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

std::vector<Shape> operand_shapes(const Node& node) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < node.operands().size(); ++i) shapes.push_back(operand_type(node, i).shape);
  return shapes;
}

std::vector<TensorType> infer_einsum(const Node& node) {
  nn::require_operand_dtype(node, 0, nn::is_numeric_dtype, "Inputs", "a numeric tensor");
  for (size_t i = 1; i < node.operands().size(); ++i) require_same_dtype(node, 0, i);
  const EinsumPlan plan = plan_einsum(node.string_attr("equation"), operand_shapes(node));
  Shape shape;
  for (int label : plan.output_labels) shape.push_back(plan.label_sizes[label]);
  return {{operand_type(node, 0).dtype, shape}};
}

// Steps through every index of the labels `labels` (the last one fastest), keeping each
// operand's element offset: strides[k][label] is how far operand k moves per step of `label`.
class LabelOdometer {
 public:
  LabelOdometer(const std::vector<int>& labels, const EinsumPlan& plan,
                const std::vector<std::vector<int64_t>>& strides, std::vector<int64_t>& offsets)
      : labels_(labels), plan_(plan), strides_(strides), offsets_(offsets), index_(labels.size()) {}

  // Advances one step; false (with the offsets back where they started) after the last index.
  bool next() {
    for (size_t i = labels_.size(); i-- > 0;) {
      const int label = labels_[i];
      if (++index_[i] < plan_.label_sizes[label]) {
        move(label, 1);
        return true;
      }
      move(label, -(plan_.label_sizes[label] - 1));
      index_[i] = 0;
    }
    return false;
  }

 private:
  void move(int label, int64_t steps) {
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += steps * strides_[k][label];
  }

  const std::vector<int>& labels_;
  const EinsumPlan& plan_;
  const std::vector<std::vector<int64_t>>& strides_;
  std::vector<int64_t>& offsets_;
  std::vector<int64_t> index_;
};

template <class T>
void run_einsum(const Node& node, std::span<const Tensor* const> inputs, Tensor& output) {
  std::vector<Shape> shapes;
  for (const Tensor* input : inputs) shapes.push_back(input->shape());
  const EinsumPlan plan = plan_einsum(node.string_attr("equation"), shapes);
  // Per operand, the stride of each label (summed over repeats: a diagonal; 0 where broadcast).
  std::vector<std::vector<int64_t>> strides(inputs.size(),
                                            std::vector<int64_t>(plan.label_sizes.size(), 0));
  std::vector<std::vector<T>> values;
  for (size_t k = 0; k < inputs.size(); ++k) {
    values.push_back(nn::read_values<T>(*inputs[k]));
    const std::vector<int64_t> dim_strides = row_major_strides(shapes[k]);
    for (size_t d = 0; d < shapes[k].size(); ++d) {
      if (shapes[k][d] != 1) strides[k][plan.operand_labels[k][d]] += dim_strides[d];
    }
  }
  std::vector<T> result(static_cast<size_t>(output.num_elements()), T{});
  if (!result.empty() &&
      std::find(plan.label_sizes.begin(), plan.label_sizes.end(), 0) == plan.label_sizes.end()) {
    std::vector<int64_t> offsets(inputs.size(), 0);
    LabelOdometer outer(plan.output_labels, plan, strides, offsets);
    LabelOdometer inner(plan.summed_labels, plan, strides, offsets);
    size_t out = 0;
    do {
      T sum{};
      do {
        T product = values[0][offsets[0]];
        for (size_t k = 1; k < values.size(); ++k) {
          product = wrapping_mul(product, values[k][offsets[k]]);
        }
        sum = wrapping_add(sum, product);  // integers wrap as two's complement
      } while (inner.next());
      result[out++] = sum;
    } while (outer.next());
  }
  nn::write_values(output, result);
}

void einsum_reference(const Node& node, std::span<const Tensor* const> inputs,
                      std::span<Tensor> outputs) {
  nn::visit_compute_type(outputs[0].dtype(), [&](auto tag) {
    run_einsum<nn::Accumulator<decltype(tag)>>(node, inputs, outputs[0]);
  });
}

}  // namespace

void register_nn_einsum_ops(OpRegistry& registry) {
  registry.add({.name = "einsum",
                .category = OpCategory::kOpaque,
                .attrs = {{"equation", AttrKind::kString, std::nullopt}},
                .min_operands = 1,
                .max_operands = OpInfo::kVariadic,
                .infer = infer_einsum,
                .reference = einsum_reference,
                .precision = PrecisionClass::kLowPrecision});
}

}  // namespace kiln
