// Static memory planning: the intermediates of a Program share one arena, at offsets chosen from
// their live ranges over the steps (the steps run in order on one stream).
//
//   1. Live range of an intermediate: from the first step that passes it (its first write) to
//      the last step that passes it (its last read), both included. Buffers whose ranges are
//      disjoint may share bytes.
//   2. Each buffer takes its byte size rounded up to kArenaAlignment.
//   3. Greedy by size (as TFLite's GreedyBySize and TVM's storage planner): buffers in
//      decreasing size (ties: earlier first step, then lower index); each goes into the
//      smallest gap that fits between the already placed buffers whose ranges overlap its own,
//      or above the highest of them.
//
//        bytes ▲ ┌─────┐   ┌─────┐
//              │ │  a  │   │  c  │        a and c are never live together:
//              │ └─────┘   └─────┘        c takes a's bytes again
//              │ ┌───────────────┐
//              │ │       b       │
//              │ └───────────────┘
//              └───────────────────► step
//
//   4. Figures: peak = the arena's size; naive = the sum of all sizes (no reuse); lower bound =
//      the largest sum of sizes live at one step (no plan can use less).
// An intermediate that no step passes is live nowhere and sits at offset 0.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/program.h"

namespace kiln {

inline constexpr int64_t kArenaAlignment = 256;

// Steps [first_step, last_step], both included; first_step == -1 when no step uses the buffer.
struct LiveRange {
  int first_step = -1;
  int last_step = -1;

  bool used() const { return first_step >= 0; }
  bool overlaps(const LiveRange& other) const {
    return used() && other.used() && first_step <= other.last_step && other.first_step <= last_step;
  }
};

struct MemoryFigures {
  int64_t peak_bytes = 0;         // the arena
  int64_t naive_bytes = 0;        // every intermediate in its own bytes (at most INT64_MAX)
  int64_t lower_bound_bytes = 0;  // the largest live set
};

// Per buffer (indexed like Program::buffers): its live range over the steps. Step arguments
// must be valid buffer indices.
std::vector<LiveRange> live_ranges(const Program& program);

// The bytes an intermediate takes in the arena: its size rounded up to kArenaAlignment.
int64_t arena_footprint(const ProgramBuffer& buffer);

// Assigns every intermediate's offset and the program's arena_bytes; returns the figures.
MemoryFigures plan_memory(Program& program);

// The figures of the plan the program holds (offsets and arena_bytes as they are).
MemoryFigures memory_figures(const Program& program);

}  // namespace kiln
