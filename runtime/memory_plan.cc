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

// Per buffer, the steps that pass it, in order (a handful: its writer and its readers).
std::vector<std::vector<int>> buffer_users(const Program& program) {
  std::vector<std::vector<int>> users(program.buffers.size());
  for (size_t step = 0; step < program.steps.size(); ++step) {
    for (const int arg : program.steps[step].args) {
      std::vector<int>& of_buffer = users[static_cast<size_t>(arg)];
      if (of_buffer.empty() || of_buffer.back() != static_cast<int>(step)) {
        of_buffer.push_back(static_cast<int>(step));
      }
    }
  }
  return users;
}

// Whether every use of one buffer happens before every use of the other (memory_plan.h, 2): the
// buffers' live ranges are disjoint and each user of the earlier one is an ancestor of each user
// of the later one. A few bit tests a pair, so that planning stays quadratic in the buffers
// rather than growing with the steps as well (a 24,000-step chain planned in minutes when whole
// step sets were compared).
bool ordered(const LiveRange& a_range, const std::vector<int>& a_users, const LiveRange& b_range,
             const std::vector<int>& b_users, const std::vector<StepSet>& ancestors) {
  if (a_range.overlaps(b_range)) return false;
  const bool a_first = a_range.last_step < b_range.first_step;
  const std::vector<int>& earlier = a_first ? a_users : b_users;
  const std::vector<int>& later = a_first ? b_users : a_users;
  for (const int late : later) {
    for (const int early : earlier) {
      if (!ancestors[static_cast<size_t>(late)].contains(early)) return false;
    }
  }
  return true;
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
  const std::vector<std::vector<int>> users = buffer_users(program);
  const std::vector<StepSet> ancestors =
      step_ancestors(step_dependencies(program, ArenaSharing::kIgnored));
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
        if (!ordered(ranges[other.index], users[other.index], ranges[index], users[index],
                     ancestors)) {
          neighbours.push_back(other);
        }
      }
      buffer.offset = best_fit_offset(size, std::move(neighbours));
      placed.push_back({index, buffer.offset, size});
    }
    arena_bytes = std::max(arena_bytes, buffer.offset + size);
  }
  // One workspace for every library call, above the buffers: the calls write it, so the step
  // graph orders them (step_dependencies.h).
  int64_t workspace_bytes = 0;
  for (const ProgramStep& step : program.steps) {
    if (step.library) workspace_bytes = std::max(workspace_bytes, step.library->workspace_bytes);
  }
  if (workspace_bytes > 0) {
    arena_bytes = (arena_bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    for (ProgramStep& step : program.steps) {
      if (step.library) step.library->workspace_offset = arena_bytes;
    }
    arena_bytes += workspace_bytes;
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
