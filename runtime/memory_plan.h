// Static memory planning: the intermediates of a Program share one arena, at offsets chosen so
// that two buffers share bytes only when the steps that use them can never run at the same time
// (the session runs steps concurrently where the step graph of step_dependencies.h allows).
//
//   1. Live range of an intermediate: from the first step that passes it (its first write) to
//      the last step that passes it (its last read), both included, in program order.
//   2. Order: buffer a is before buffer b when every step that passes a is an ancestor of every
//      step that passes b in the step graph (each buffer its own memory: ArenaSharing::kIgnored).
//      Only buffers ordered one way or the other may share bytes. Disjoint live ranges are not
//      enough: a branch's buffer can die, in program order, before another branch's is born
//      while the two branches run at once. Ordered buffers have disjoint live ranges.
//   3. Each buffer takes its byte size rounded up to kArenaAlignment.
//   4. Greedy by size (as TFLite's GreedyBySize and TVM's storage planner): buffers in
//      decreasing size (ties: earlier first step, then lower index); each goes into the
//      smallest gap that fits between the already placed buffers it is not ordered with, or
//      above the highest of them.
//
//        bytes ▲ ┌─────┐   ┌─────┐
//              │ │  a  │   │  c  │        every step of a is an ancestor of every step of c:
//              │ └─────┘   └─────┘        c takes a's bytes again
//              │ ┌───────────────┐
//              │ │       b       │
//              │ └───────────────┘
//              └───────────────────► step
//
//   5. The library calls (ProgramLibraryGemm) share one workspace, as large as the largest
//      call's, above every buffer: each call writes it, so the step graph orders the calls
//      (step_dependencies.h) and none of them needs bytes of its own.
//   6. Figures: peak = the arena's size; naive = the sum of all sizes (no reuse); lower bound =
//      the largest sum of sizes live at one step in program order. No plan can use less (buffers
//      live at one step are never ordered), but steps running at once keep more apart, so the
//      peak of a program with concurrent branches may lie further above it.
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
