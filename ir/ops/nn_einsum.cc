// einsum (ONNX Einsum): sums of products of the operands' elements over labeled axes, given by an
// equation such as "bij,bjk->bik". Supports "..." (broadcast dims), repeated labels within a term
// (diagonals), implicit outputs (no "->": the ellipsis dims, then the labels used exactly once, in
// character-code order, as numpy does) and size-1 dims broadcast against other operands. Float
// products and sums run in double (nn::Accumulator) and each result is rounded once, when stored.
#include <algorithm>
#include <cctype>
#include <map>

#include "ir/ops/nn_kernel_util.h"
#include "ir/ops/nn_ops.h"
#include "ir/ops/op_helpers.h"

namespace kiln {
namespace {

// One term of the equation: its letters in order, and where "..." stands among them (-1: none).
struct Term {
  std::string letters;
  int ellipsis_at = -1;
};

Term parse_term(const std::string& text, const std::string& equation) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "...") == 0) {
      if (term.ellipsis_at >= 0) {
        throw InputError("equation \"" + equation + "\" has two \"...\" in one term");
      }
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
    } else if (std::isalpha(static_cast<unsigned char>(text[i]))) {
      term.letters += text[i];
    } else {
      throw InputError("equation \"" + equation + "\" has an unexpected character '" + text[i] +
                       "'");
    }
  }
  return term;
}

// The equation resolved against the operand shapes. Every axis gets a label id: letters first
// (ids of `letters`), then one id per broadcast ("...") dim, right-aligned across operands.
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;  // per operand, the label of each dim
  std::vector<int> output_labels;
  std::vector<int> summed_labels;  // labels absent from the output
  std::vector<int64_t> label_sizes;
};

EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string spaceless;
  for (char c : equation) {
    if (!std::isspace(static_cast<unsigned char>(c))) spaceless += c;
  }
  const size_t arrow = spaceless.find("->");
  const std::string inputs_text = spaceless.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = inputs_text.find(',', start);
    terms.push_back(parse_term(inputs_text.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    throw InputError("equation \"" + equation + "\" has " + std::to_string(terms.size()) +
                     " input terms for " + std::to_string(shapes.size()) + " operands");
  }

  // Letter ids in character-code order (the implicit output's order), then broadcast dims.
  std::map<char, int> letter_ids;
  std::map<char, int> letter_uses;
  int64_t broadcast_rank = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t rank = static_cast<int64_t>(shapes[k].size());
    const int64_t letters = static_cast<int64_t>(terms[k].letters.size());
    if (terms[k].ellipsis_at < 0 ? rank != letters : rank < letters) {
      throw InputError("term " + std::to_string(k) + " of equation \"" + equation + "\" has " +
                       std::to_string(letters) + " labels for operand " + std::to_string(k) +
                       " of rank " + std::to_string(rank));
    }
    if (terms[k].ellipsis_at >= 0) broadcast_rank = std::max(broadcast_rank, rank - letters);
    for (char c : terms[k].letters) ++letter_uses[c];
  }
  for (auto& [letter, uses] : letter_uses) {
    const int id = static_cast<int>(letter_ids.size());
    letter_ids[letter] = id;
  }
  const int first_broadcast = static_cast<int>(letter_ids.size());

  EinsumPlan plan;
  plan.label_sizes.assign(first_broadcast + broadcast_rank, 1);
  for (size_t k = 0; k < terms.size(); ++k) {
    const Term& term = terms[k];
    const int64_t rank = static_cast<int64_t>(shapes[k].size());
    const int64_t ellipsis_dims = term.ellipsis_at < 0 ? 0 : rank - term.letters.size();
    std::vector<int>& labels = plan.operand_labels.emplace_back();
    for (int i = 0; i <= static_cast<int>(term.letters.size()); ++i) {
      if (i == term.ellipsis_at) {
        for (int64_t e = 0; e < ellipsis_dims; ++e) {
          labels.push_back(first_broadcast + static_cast<int>(broadcast_rank - ellipsis_dims + e));
        }
      }
      if (i < static_cast<int>(term.letters.size())) labels.push_back(letter_ids[term.letters[i]]);
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      int64_t& size = plan.label_sizes[labels[d]];
      const int64_t dim = shapes[k][d];
      if (size != 1 && dim != 1 && dim != size) {
        throw InputError("equation \"" + equation + "\": operand " + std::to_string(k) + " dim " +
                         std::to_string(d) + " has size " + std::to_string(dim) +
                         ", but its label has size " + std::to_string(size) + " elsewhere");
      }
      if (dim != 1) size = dim;
    }
  }

  if (arrow == std::string::npos) {
    for (int e = 0; e < broadcast_rank; ++e) plan.output_labels.push_back(first_broadcast + e);
    for (const auto& [letter, uses] : letter_uses) {
      if (uses == 1) plan.output_labels.push_back(letter_ids[letter]);
    }
  } else {
    const Term output = parse_term(spaceless.substr(arrow + 2), equation);
    for (int i = 0; i <= static_cast<int>(output.letters.size()); ++i) {
      if (i == output.ellipsis_at) {
        for (int e = 0; e < broadcast_rank; ++e) plan.output_labels.push_back(first_broadcast + e);
      }
      if (i == static_cast<int>(output.letters.size())) break;
      const char letter = output.letters[i];
      if (!letter_ids.count(letter)) {
        throw InputError("equation \"" + equation + "\": output label '" + letter +
                         "' is in no input term");
      }
      if (output.letters.find(letter) != static_cast<size_t>(i)) {
        throw InputError("equation \"" + equation + "\": output label '" + letter +
                         "' is repeated");
      }
      plan.output_labels.push_back(letter_ids[letter]);
    }
    if (output.ellipsis_at < 0 && broadcast_rank > 0) {
      throw InputError("equation \"" + equation + "\": the output needs \"...\" for the " +
                       std::to_string(broadcast_rank) + " broadcast dims");
    }
  }
  for (int label = 0; label < static_cast<int>(plan.label_sizes.size()); ++label) {
    if (std::find(plan.output_labels.begin(), plan.output_labels.end(), label) ==
        plan.output_labels.end()) {
      plan.summed_labels.push_back(label);
    }
  }
  return plan;
}

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
