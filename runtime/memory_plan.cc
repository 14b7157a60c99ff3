// Live ranges, the order of buffers, greedy-by-size placement and the memory figures (the
// algorithm: memory_plan.h).
#include "runtime/memory_plan.h"

#include <algorithm>
#include <limits>

#include "runtime/step_dependencies.h"

namespace kiln {
namespace {

bool is_intermediate(const ProgramBuffer& buffer) {
  return buffer.kind == ProgramBuffer::Kind::kIntermediate;
}

// The steps that pass a buffer, and the steps that finish before any of them starts (the
// ancestors common to all of them in the step graph).
struct BufferUses {
  StepSet users;
  StepSet before;
};

std::vector<BufferUses> buffer_uses(const Program& program) {
  const size_t steps = program.steps.size();
  const std::vector<StepSet> ancestors =
      step_ancestors(step_dependencies(program, ArenaSharing::kIgnored));
  std::vector<BufferUses> uses(program.buffers.size(), {StepSet(steps), StepSet(steps)});
  std::vector<bool> used(program.buffers.size(), false);
  for (size_t step = 0; step < steps; ++step) {
    for (const int arg : program.steps[step].args) {
      BufferUses& buffer = uses[arg];
      if (used[arg]) {
        buffer.before.intersect(ancestors[step]);
      } else {
        buffer.before = ancestors[step];
        used[arg] = true;
      }
      buffer.users.insert(static_cast<int>(step));
    }
  }
  return uses;
}

// Whether every use of one buffer happens before every use of the other (memory_plan.h, 2).
// Buffers live at a common step never are; the live ranges tell that quickly.
bool ordered(const LiveRange& a_range, const BufferUses& a, const LiveRange& b_range,
             const BufferUses& b) {
  if (a_range.overlaps(b_range)) return false;
  return b.before.includes(a.users) || a.before.includes(b.users);
}

struct PlacedBuffer {
  int index = 0;
  int64_t offset = 0;
  int64_t size = 0;
};

// The start of the smallest gap of at least `size` bytes between `neighbours` (the placed
// buffers not ordered with the new one), or the end of the highest of them.
int64_t best_fit_offset(int64_t size, std::vector<PlacedBuffer> neighbours) {
  std::sort(neighbours.begin(), neighbours.end(),
            [](const PlacedBuffer& a, const PlacedBuffer& b) { return a.offset < b.offset; });
  int64_t best_offset = -1;
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  int64_t free_from = 0;
  for (const PlacedBuffer& neighbour : neighbours) {
    const int64_t gap = neighbour.offset - free_from;
    if (gap >= size && gap < best_gap) {
      best_offset = free_from;
      best_gap = gap;
    }
    free_from = std::max(free_from, neighbour.offset + neighbour.size);
  }
  return best_offset >= 0 ? best_offset : free_from;
}

// Intermediates' indices, largest first (ties: earlier first step, then lower index).
std::vector<int> placement_order(const Program& program, const std::vector<LiveRange>& ranges) {
  std::vector<int> order;
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    if (is_intermediate(program.buffers[i])) order.push_back(static_cast<int>(i));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const int64_t size_a = arena_footprint(program.buffers[a]);
    const int64_t size_b = arena_footprint(program.buffers[b]);
    if (size_a != size_b) return size_a > size_b;
    if (ranges[a].first_step != ranges[b].first_step) {
      return ranges[a].first_step < ranges[b].first_step;
    }
    return a < b;
  });
  return order;
}

}  // namespace

std::vector<LiveRange> live_ranges(const Program& program) {
  std::vector<LiveRange> ranges(program.buffers.size());
  for (size_t step = 0; step < program.steps.size(); ++step) {
    for (const int arg : program.steps[step].args) {
      LiveRange& range = ranges.at(static_cast<size_t>(arg));
      if (!range.used()) range.first_step = static_cast<int>(step);
      range.last_step = static_cast<int>(step);
    }
  }
  return ranges;
}

int64_t arena_footprint(const ProgramBuffer& buffer) {
  const auto bytes = static_cast<int64_t>(buffer.type.num_bytes());
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

MemoryFigures plan_memory(Program& program) {
  const std::vector<LiveRange> ranges = live_ranges(program);
  const std::vector<BufferUses> uses = buffer_uses(program);
  std::vector<PlacedBuffer> placed;
  int64_t arena_bytes = 0;
  for (const int index : placement_order(program, ranges)) {
    ProgramBuffer& buffer = program.buffers[index];
    const int64_t size = arena_footprint(buffer);
    if (!ranges[index].used()) {
      buffer.offset = 0;
    } else {
      std::vector<PlacedBuffer> neighbours;
      for (const PlacedBuffer& other : placed) {
        if (!ordered(ranges[other.index], uses[other.index], ranges[index], uses[index])) {
          neighbours.push_back(other);
        }
      }
      buffer.offset = best_fit_offset(size, std::move(neighbours));
      placed.push_back({index, buffer.offset, size});
    }
    arena_bytes = std::max(arena_bytes, buffer.offset + size);
  }
  program.arena_bytes = arena_bytes;
  return memory_figures(program);
}

MemoryFigures memory_figures(const Program& program) {
  const std::vector<LiveRange> ranges = live_ranges(program);
  MemoryFigures figures;
  figures.peak_bytes = program.arena_bytes;
  // live_change[s]: bytes that become live at step s minus those that died after step s - 1.
  std::vector<int64_t> live_change(program.steps.size() + 1, 0);
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    if (!is_intermediate(program.buffers[i])) continue;
    const int64_t size = arena_footprint(program.buffers[i]);
    // Each buffer fits the arena, but a (crafted) program's sum of them need not fit int64.
    if (__builtin_add_overflow(figures.naive_bytes, size, &figures.naive_bytes)) {
      figures.naive_bytes = std::numeric_limits<int64_t>::max();
    }
    if (!ranges[i].used()) continue;
    live_change[ranges[i].first_step] += size;
    live_change[ranges[i].last_step + 1] -= size;
  }
  int64_t live_bytes = 0;
  for (const int64_t change : live_change) {
    live_bytes += change;
    figures.lower_bound_bytes = std::max(figures.lower_bound_bytes, live_bytes);
  }
  return figures;
}

}  // namespace kiln
