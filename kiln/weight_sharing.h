// One weight blob for several programs: each distinct weight's bytes held once, every program's
// weight buffers pointing at theirs in it. A dynamic program's variants (dynamic_compile.h) go
// through it, so variants whose weights differ in a few constants (each sequence size folds its
// own position embeddings) hold, store and upload the rest once: the variants then share one
// WeightBytes, which the file stores once and a DynamicSession uploads once.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "runtime/program.h"

namespace kiln {

class WeightSharing {
 public:
  // Moves `program`'s weights into the shared blob (the bytes it lacks appended, aligned to
  // kWeightAlignment) and points its weight buffers at them; its own weights are dropped until
  // finish() gives it the blob.
  void add(Program& program);
  // Gives every program added the blob. Call once, after the last add.
  void finish();

 private:
  std::vector<uint8_t> blob_;
  std::map<std::pair<uint64_t, uint64_t>, std::vector<uint64_t>> offsets_;  // (size, FNV-1a)
  std::vector<Program*> programs_;
};

}  // namespace kiln
