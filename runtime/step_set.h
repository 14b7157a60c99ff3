// A set of a program's steps, by index, as one bit per step: the ancestors of a step in the step
// graph (step_dependencies.h), which the memory planner asks whether one step precedes another
// (memory_plan.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln {

class StepSet {
 public:
  explicit StepSet(size_t steps = 0) : words_((steps + 63) / 64, 0) {}

  void insert(int step) { words_[word(step)] |= bit(step); }
  bool contains(int step) const { return (words_[word(step)] & bit(step)) != 0; }
  void unite(const StepSet& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] |= other.words_[i];
  }

 private:
  static size_t word(int step) { return static_cast<size_t>(step) / 64; }
  static uint64_t bit(int step) { return uint64_t{1} << (static_cast<size_t>(step) % 64); }

  std::vector<uint64_t> words_;
};

}  // namespace kiln
