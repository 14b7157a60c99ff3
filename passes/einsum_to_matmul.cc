// einsum-to-matmul. The einsum's plan (ir/ops/einsum_plan.h) labels every dim of its operands.
// An operand's dim of size 1 whose label is larger elsewhere and summed (absent from the output)
// is dropped by a reshape, and the label counts as absent from that operand. A label of one
// operand that neither the output nor the other operand has is summed there by a reduce_sum.
// Then, with two operands A and B, a label in both is a batch label when the output has it
// (matmul and mul broadcast one of size 1) and summed otherwise; an output label of one operand
// only is free (a row of A, a column of B):
//   - with summed labels: A transposed to [batch, rows, summed] and reshaped to [batch, M, K], B
//     to [batch, K, N]; their matmul reshaped to [batch, rows, columns] and transposed to the
//     output's order. Without batch labels, A's rows but the last stay dims of their own (B is
//     shared by them: matmul [r1, r2, K] x [K, N], as an imported MatMul has it, which
//     matmul-add-to-gemm takes with a bias). The batch labels, rows and columns keep the
//     output's order, the summed labels A's; A and B swap when the output's first free label is
//     B's. So attention's "bhqd,bhkd->bhqk" is a matmul of A and B's transpose,
//     "bhqk,bhkd->bhqd" and "...ij,jk->...ik" a matmul alone;
//   - without: a mul of A and B, each transposed to the output's order and reshaped to its rank,
//     1 for the labels it lacks (outer and elementwise products).
// One operand is its reduce_sum transposed to the output's order; one copying its operand
// ("ij->ij") becomes a reshape to its own shape, a view simplify-reshape-transpose removes.
// A label summed in one operand is summed before the product, so a 16-bit result is rounded twice
// where the einsum rounds once. Refused, with the reason, and left to the einsum kernel: three or
// more operands, a label repeated in an operand (a diagonal), an operand with no elements, and
// labels summed in both operands of f64 or integers, whose products the contraction kernels would
// sum in f32 (the einsum kernel sums f64 in double, integers exactly, wrapping around).
#include "passes/einsum_to_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "ir/ops/einsum_plan.h"
#include "passes/pattern_match.h"

namespace kiln::passes {
namespace {

bool contains(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// The labels of `labels` that `keep` accepts, in order.
template <class Keep>
std::vector<int> labels_where(const std::vector<int>& labels, Keep keep) {
  std::vector<int> kept;
  std::copy_if(labels.begin(), labels.end(), std::back_inserter(kept), keep);
  return kept;
}

EinsumPlan plan_of(const Node& einsum) {
  std::vector<Shape> shapes;
  for (const Value* operand : einsum.operands()) shapes.push_back(operand->type().shape);
  return plan_einsum(einsum.string_attr("equation"), shapes);
}

// The labels of operand `k`'s dims, less the summed ones it broadcasts (of size 1 against a
// larger label the output lacks).
std::vector<int> own_labels(const EinsumPlan& plan, const Node& einsum, size_t k) {
  const Shape& shape = einsum.operand(k)->type().shape;
  std::vector<int> labels;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int label = plan.operand_labels[k][d];
    if (shape[d] != 1 || plan.label_sizes[label] == 1 || contains(plan.output_labels, label)) {
      labels.push_back(label);
    }
  }
  return labels;
}

// Whether matmuls of `dtype` lose nothing to the contraction kernels, which sum in f32 (the
// einsum kernel sums f64 in double and integers exactly).
bool sums_in_f32(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

// Why the rewrite cannot express `einsum`, or "".
std::string refusal(const Node& einsum, const EinsumPlan& plan) {
  const size_t operands = einsum.operands().size();
  if (operands > 2) return fmt::format("{} operands; the rewrite takes one or two", operands);
  for (size_t k = 0; k < operands; ++k) {
    const std::vector<int>& labels = plan.operand_labels[k];
    for (auto label = labels.begin(); label != labels.end(); ++label) {
      if (std::find(labels.begin(), label, *label) != label) {
        return fmt::format("operand {} repeats label '{}' (a diagonal)", k,
                           plan.letters[static_cast<size_t>(*label)]);
      }
    }
    if (einsum.operand(k)->type().num_elements() == 0) {
      return fmt::format("operand {} {} has no elements", k,
                         type_to_string(einsum.operand(k)->type()));
    }
  }
  const DType dtype = einsum.operand(0)->type().dtype;
  if (operands == 2 && !sums_in_f32(dtype)) {
    const std::vector<int> b_labels = own_labels(plan, einsum, 1);
    for (int label : own_labels(plan, einsum, 0)) {
      if (contains(b_labels, label) && !contains(plan.output_labels, label)) {
        return fmt::format("the contraction kernels would sum its {} products in f32",
                           dtype_name(dtype));
      }
    }
  }
  return "";
}

// A value and the label of each of its dims.
struct LabeledValue {
  Value* value;
  std::vector<int> labels;
};

// The size of `label` in `x`: its dim's (1 where x broadcasts it), 1 where x lacks it.
int64_t size_in(const LabeledValue& x, int label) {
  const auto at = std::find(x.labels.begin(), x.labels.end(), label);
  return at == x.labels.end() ? 1 : x.value->type().shape[at - x.labels.begin()];
}

// Adds the rewrite's nodes, each with the einsum's provenance.
class EinsumBuilder {
 public:
  EinsumBuilder(Graph& graph, const EinsumPlan& plan, const std::vector<std::string>& provenance)
      : graph_(graph), plan_(plan), provenance_(provenance) {}

  Value* add(const std::string& op, std::vector<Value*> operands, AttributeMap attrs = {}) {
    return graph_.add_node(op, std::move(operands), std::move(attrs), provenance_)->result();
  }

  Shape sizes(const std::vector<int>& labels) const {
    Shape shape;
    for (int label : labels) shape.push_back(plan_.label_sizes[label]);
    return shape;
  }

  // `value` reshaped to `shape`, by no node when it has that shape.
  Value* reshaped(Value* value, const Shape& shape) {
    if (value->type().shape == shape) return value;
    return add("reshape", {value}, {{"shape", shape}});
  }

  // Operand `k` of `einsum` without the summed dims it broadcasts.
  LabeledValue operand(const Node& einsum, size_t k) {
    const LabeledValue whole{einsum.operand(k), plan_.operand_labels[k]};
    const std::vector<int> labels = own_labels(plan_, einsum, k);
    Shape shape;
    for (int label : labels) shape.push_back(size_in(whole, label));
    return {reshaped(whole.value, shape), labels};
  }

  // `x` summed over its labels that `needed` lacks.
  LabeledValue summed(const LabeledValue& x, const std::vector<int>& needed) {
    LabeledValue result{x.value, {}};
    std::vector<int64_t> axes;
    for (size_t d = 0; d < x.labels.size(); ++d) {
      if (contains(needed, x.labels[d])) {
        result.labels.push_back(x.labels[d]);
      } else {
        axes.push_back(static_cast<int64_t>(d));
      }
    }
    if (!axes.empty()) {
      result.value = add("reduce_sum", {x.value}, {{"axes", axes}, {"keepdims", 0}});
    }
    return result;
  }

  // `x` with its labels in `order`, a permutation of them.
  LabeledValue ordered(const LabeledValue& x, const std::vector<int>& order) {
    if (x.labels == order) return x;
    std::vector<int64_t> perm;
    for (int label : order) {
      perm.push_back(std::find(x.labels.begin(), x.labels.end(), label) - x.labels.begin());
    }
    return {add("transpose", {x.value}, {{"perm", perm}}), order};
  }

  // `x` as a stack of matrices: [batch dims..., rows, columns], each of rows and columns the
  // product of its labels' sizes.
  Value* matrices(const LabeledValue& x, const std::vector<int>& batch,
                  const std::vector<int>& rows, const std::vector<int>& columns) {
    Shape shape;
    for (int label : batch) shape.push_back(size_in(x, label));
    shape.push_back(num_elements(sizes(rows)));
    shape.push_back(num_elements(sizes(columns)));
    std::vector<int> order = batch;
    order.insert(order.end(), rows.begin(), rows.end());
    order.insert(order.end(), columns.begin(), columns.end());
    return reshaped(ordered(x, order).value, shape);
  }

  // `x` transposed to the order of `output` and reshaped to its rank, 1 for the labels x lacks.
  Value* broadcast_to_output(const LabeledValue& x, const std::vector<int>& output) {
    Shape shape;
    for (int label : output) shape.push_back(size_in(x, label));
    const auto in_x = [&](int label) { return contains(x.labels, label); };
    return reshaped(ordered(x, labels_where(output, in_x)).value, shape);
  }

 private:
  Graph& graph_;
  const EinsumPlan& plan_;
  const std::vector<std::string>& provenance_;
};

Value* one_operand(EinsumBuilder& builder, const Node& einsum, const EinsumPlan& plan) {
  const LabeledValue x = builder.summed(builder.operand(einsum, 0), plan.output_labels);
  Value* result = builder.ordered(x, plan.output_labels).value;
  if (result != einsum.operand(0)) return result;
  return builder.add("reshape", {result}, {{"shape", result->type().shape}});
}

// The matmul of `a` and `b` summing over `summed`, in the order of `output`.
Value* matrix_product(EinsumBuilder& builder, const LabeledValue& a, const LabeledValue& b,
                      const std::vector<int>& summed, const std::vector<int>& output) {
  const std::vector<int> batch = labels_where(
      output, [&](int label) { return contains(a.labels, label) && contains(b.labels, label); });
  const std::vector<int> rows = labels_where(
      output, [&](int label) { return contains(a.labels, label) && !contains(b.labels, label); });
  const std::vector<int> columns = labels_where(
      output, [&](int label) { return contains(b.labels, label) && !contains(a.labels, label); });
  // Without batch labels, A's rows but the last stay dims of their own, which matmul reads as a
  // batch B is shared by: the matmul of an imported MatMul of a rank-3 activation.
  const size_t leading_rows = batch.empty() && !rows.empty() ? rows.size() - 1 : 0;
  std::vector<int> a_batch = batch;
  a_batch.insert(a_batch.end(), rows.begin(), rows.begin() + leading_rows);
  const std::vector<int> a_rows(rows.begin() + leading_rows, rows.end());
  Value* product = builder.add("matmul", {builder.matrices(a, a_batch, a_rows, summed),
                                          builder.matrices(b, batch, summed, columns)});
  std::vector<int> labels = batch;
  labels.insert(labels.end(), rows.begin(), rows.end());
  labels.insert(labels.end(), columns.begin(), columns.end());
  const LabeledValue result{builder.reshaped(product, builder.sizes(labels)), labels};
  return builder.ordered(result, output).value;
}

Value* two_operands(EinsumBuilder& builder, const Node& einsum, const EinsumPlan& plan) {
  const std::vector<int>& output = plan.output_labels;
  LabeledValue a = builder.operand(einsum, 0);
  LabeledValue b = builder.operand(einsum, 1);
  const auto needed_beside = [&](const LabeledValue& other) {
    std::vector<int> needed = output;
    needed.insert(needed.end(), other.labels.begin(), other.labels.end());
    return needed;
  };
  a = builder.summed(a, needed_beside(b));
  b = builder.summed(b, needed_beside(a));
  const std::vector<int> free = labels_where(
      output, [&](int label) { return !contains(a.labels, label) || !contains(b.labels, label); });
  if (!free.empty() && contains(b.labels, free.front())) std::swap(a, b);
  const std::vector<int> summed = labels_where(
      a.labels, [&](int label) { return contains(b.labels, label) && !contains(output, label); });
  if (!summed.empty()) return matrix_product(builder, a, b, summed, output);
  return builder.add(
      "mul", {builder.broadcast_to_output(a, output), builder.broadcast_to_output(b, output)});
}

}  // namespace

bool EinsumToMatmul::run(Graph& graph, PassContext& context) {
  PatternRewriter rewriter(graph, context, kName);
  rewriter.walk([&](Node& node) {
    if (node.op() != "einsum") return;
    const EinsumPlan plan = plan_of(node);
    if (const std::string why = refusal(node, plan); !why.empty()) {
      rewriter.refuse(node, why);
      return;
    }
    rewriter.rewrite(node, {&node, {&node}},
                     [&](Graph& graph, const std::vector<std::string>& provenance) {
                       EinsumBuilder builder(graph, plan, provenance);
                       return node.operands().size() == 1 ? one_operand(builder, node, plan)
                                                          : two_operands(builder, node, plan);
                     });
  });
  return rewriter.finish();
}

}  // namespace kiln::passes
