// The plan of an einsum (ONNX Einsum) equation against its operands' shapes: a label id for
// every axis (letters in character-code order, then one per "..." broadcast dim, right-aligned
// across operands), each label's size, the output's labels and the summed ones. The reference
// kernel (nn_einsum.cc) and the GPU's einsum kernel (codegen/einsum_emitter.h) walk it alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kiln {

// The equation resolved against the operand shapes. Every axis gets a label id: letters first
// (ids of `letters`), then one id per broadcast ("...") dim, right-aligned across operands.
struct EinsumPlan {
  std::vector<std::vector<int>> operand_labels;  // per operand, the label of each dim
  std::vector<int> output_labels;
  std::vector<int> summed_labels;  // labels absent from the output
  std::vector<int64_t> label_sizes;
  std::string letters;  // the letter of each letter label; the labels past them are "..." dims
};

// Throws InputError for an equation that does not fit the shapes.
EinsumPlan plan_einsum(const std::string& equation, const std::vector<Shape>& shapes);

}  // namespace kiln
