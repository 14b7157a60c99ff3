// A set of a program's steps, by index, as one bit per step: the ancestors of a step in the step
// graph (step_dependencies.h) and the users of a buffer (memory_plan.h), which the memory planner
// compares pairwise.
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
  void intersect(const StepSet& other) {
    for (size_t i = 0; i < words_.size(); ++i) words_[i] &= other.words_[i];
  }
  // Whether every step of `other` (a set over as many steps) is in this set.
  bool includes(const StepSet& other) const {
    for (size_t i = 0; i < words_.size(); ++i) {
      if ((other.words_[i] & ~words_[i]) != 0) return false;
    }
    return true;
  }

 private:
  static size_t word(int step) { return static_cast<size_t>(step) / 64; }
  static uint64_t bit(int step) { return uint64_t{1} << (static_cast<size_t>(step) % 64); }

  std::vector<uint64_t> words_;
};

}  // namespace kiln
