// The einsum plan (see the header).
#include "ir/ops/einsum_plan.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "ir/error.h"

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

}  // namespace

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
  EinsumPlan plan;
  for (auto& [letter, uses] : letter_uses) {
    letter_ids[letter] = static_cast<int>(plan.letters.size());
    plan.letters += letter;
  }
  const int first_broadcast = static_cast<int>(plan.letters.size());

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

}  // namespace kiln
