// Weight sharing among programs (see the header).
#include "kiln/weight_sharing.h"

#include <cstring>

#include "ir/error.h"
#include "runtime/fnv1a.h"

namespace kiln {

void WeightSharing::add(Program& program) {
  for (ProgramBuffer& buffer : program.buffers) {
    if (buffer.kind != ProgramBuffer::Kind::kWeight) continue;
    const uint64_t size = buffer.type.num_bytes();
    if (size == 0) {
      buffer.offset = 0;
      continue;
    }
    if (buffer.offset < 0 || static_cast<uint64_t>(buffer.offset) + size > program.weights.size()) {
      throw InternalError("WeightSharing: a weight buffer outside its program's weights");
    }
    const uint8_t* bytes = program.weights.data() + buffer.offset;
    const std::pair<uint64_t, uint64_t> key = {size, fnv1a_64({bytes, size})};
    std::vector<uint64_t>& same_hash = offsets_[key];
    int64_t found = -1;
    for (const uint64_t offset : same_hash) {
      if (std::memcmp(blob_.data() + offset, bytes, size) == 0) {
        found = static_cast<int64_t>(offset);
        break;
      }
    }
    if (found < 0) {
      found = static_cast<int64_t>(blob_.size());
      blob_.insert(blob_.end(), bytes, bytes + size);
      blob_.resize((blob_.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment, 0);
      same_hash.push_back(static_cast<uint64_t>(found));
    }
    buffer.offset = found;
  }
  program.weights.clear();
  programs_.push_back(&program);
}

void WeightSharing::finish() {
  const WeightBytes shared(std::move(blob_));
  for (Program* program : programs_) program->weights = shared;
  programs_.clear();
  offsets_.clear();
}

}  // namespace kiln
