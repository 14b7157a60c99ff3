// Step dependencies from the memory each step reads and writes, transitively reduced (the rules:
// step_dependencies.h).
#include "runtime/step_dependencies.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "runtime/kernel_header.h"

namespace kiln {
namespace {

// One past the last arena byte of an intermediate (validation keeps it within the arena).
int64_t end_byte(const ProgramBuffer& buffer) {
  return buffer.offset + static_cast<int64_t>(buffer.type.num_bytes());
}

// A library call's workspace, by the memory planner or not yet placed (offset -1).
bool has_workspace(const ProgramStep& step) {
  return step.library && step.library->workspace_bytes > 0;
}

// The memory each buffer stands for, as ids: a buffer's own index, or with arena sharing the
// pieces of the arena an intermediate covers (the arena cut at every intermediate's and library
// workspace's first byte and past its last), numbered after the buffers; then, per step, the
// memory of its library call's workspace (none without one): without arena sharing one id, the
// same for every call (the workspaces are not placed yet, and the planner gives them one), with
// it the pieces it covers.
struct MemoryIds {
  std::vector<std::vector<int>> buffers;
  std::vector<std::vector<int>> workspaces;
};

MemoryIds memory_ids(const Program& program, ArenaSharing sharing) {
  const auto shares_arena = [&](const ProgramBuffer& buffer) {
    return sharing == ArenaSharing::kOrdersSteps &&
           buffer.kind == ProgramBuffer::Kind::kIntermediate;
  };
  std::vector<int64_t> cuts;
  for (const ProgramBuffer& buffer : program.buffers) {
    if (!shares_arena(buffer)) continue;
    cuts.push_back(buffer.offset);
    cuts.push_back(end_byte(buffer));
  }
  if (sharing == ArenaSharing::kOrdersSteps) {
    for (const ProgramStep& step : program.steps) {
      if (!has_workspace(step)) continue;
      cuts.push_back(step.library->workspace_offset);
      cuts.push_back(step.library->workspace_offset + step.library->workspace_bytes);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  const auto piece = [&](int64_t byte) {
    return static_cast<int>(program.buffers.size()) +
           static_cast<int>(std::lower_bound(cuts.begin(), cuts.end(), byte) - cuts.begin());
  };
  MemoryIds memory;
  memory.buffers.resize(program.buffers.size());
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ProgramBuffer& buffer = program.buffers[i];
    if (!shares_arena(buffer)) {
      memory.buffers[i] = {static_cast<int>(i)};
      continue;
    }
    const int end = piece(end_byte(buffer));
    for (int id = piece(buffer.offset); id < end; ++id) memory.buffers[i].push_back(id);
  }
  memory.workspaces.resize(program.steps.size());
  const int shared_workspace = piece(std::numeric_limits<int64_t>::max()) + 1;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const ProgramStep& step = program.steps[s];
    if (!has_workspace(step)) continue;
    if (sharing != ArenaSharing::kOrdersSteps) {
      memory.workspaces[s] = {shared_workspace};
      continue;
    }
    const int64_t begin = step.library->workspace_offset;
    const int end = piece(begin + step.library->workspace_bytes);
    for (int id = piece(begin); id < end; ++id) memory.workspaces[s].push_back(id);
  }
  return memory;
}

// Per argument of `step`, whether it may write it (step_dependencies.h). `stated` holds the
// written positions its kernel's header states, if it does.
std::vector<bool> written_arguments(const Program& program, const ProgramStep& step,
                                    const std::optional<std::vector<int>>& stated) {
  std::vector<bool> written(step.args.size(), false);
  for (size_t position = 0; position < step.args.size(); ++position) {
    const ProgramBuffer::Kind kind = program.buffers[step.args[position]].kind;
    written[position] =
        stated ? std::binary_search(stated->begin(), stated->end(), static_cast<int>(position))
               : kind == ProgramBuffer::Kind::kIntermediate || kind == ProgramBuffer::Kind::kOutput;
  }
  return written;
}

// Per step, the output region (kernel_header.h) of each argument position its kernel writes
// only in part: a concat's operand written into its slice of the concat's buffer.
std::vector<std::map<int, KernelOutputRegion>> regions_of_steps(const Program& program) {
  std::vector<std::map<int, KernelOutputRegion>> regions_of_kernels;
  for (const ProgramKernel& kernel : program.kernels) {
    std::map<int, KernelOutputRegion>& regions = regions_of_kernels.emplace_back();
    for (const KernelOutputRegion& region :
         kernel_output_regions(kernel).value_or(std::vector<KernelOutputRegion>())) {
      regions[region.parameter] = region;
    }
  }
  std::vector<std::map<int, KernelOutputRegion>> regions;
  for (const ProgramStep& step : program.steps) regions.push_back(regions_of_kernels[step.kernel]);
  return regions;
}

// How a step touches a piece of memory: reads it, writes it whole, or writes regions of a
// buffer there.
struct Access {
  bool read = false;
  bool written = false;
  std::vector<std::pair<int, KernelOutputRegion>> regions;  // (buffer, region)
};

// Since the last whole write of a piece of memory: that write, the steps that read it, and the
// steps that wrote regions of a buffer there (steps writing disjoint regions of one buffer need
// not wait for each other; a region of another buffer sharing the bytes is taken to overlap).
struct RegionWrite {
  int step;
  int buffer;
  KernelOutputRegion region;
};
struct MemoryHistory {
  int last_writer = -1;
  std::vector<int> readers;
  std::vector<RegionWrite> region_writers;
};

// Adds to `hazards` the earlier steps that step `s` must wait for to make `access` to the memory
// `past` describes, and records the access there.
void access_memory(int s, const Access& access, MemoryHistory& past, std::vector<int>& hazards) {
  if (past.last_writer >= 0) hazards.push_back(past.last_writer);
  if (access.written) {
    hazards.insert(hazards.end(), past.readers.begin(), past.readers.end());
    for (const RegionWrite& write : past.region_writers) hazards.push_back(write.step);
    past.last_writer = s;
    past.readers.clear();
    past.region_writers.clear();
    return;
  }
  if (access.read) {
    for (const RegionWrite& write : past.region_writers) hazards.push_back(write.step);
  }
  if (!access.regions.empty()) {
    hazards.insert(hazards.end(), past.readers.begin(), past.readers.end());
    for (const RegionWrite& write : past.region_writers) {
      for (const auto& [buffer, region] : access.regions) {
        if (write.buffer != buffer || !write.region.disjoint_from(region)) {
          hazards.push_back(write.step);
          break;
        }
      }
    }
    for (const auto& [buffer, region] : access.regions) {
      past.region_writers.push_back({s, buffer, region});
    }
  }
  if (access.read) past.readers.push_back(s);
}

// Adds `predecessor` and every step before it to `ancestors`.
void add_ancestry(StepSet& ancestors, int predecessor, const std::vector<StepSet>& ancestors_of) {
  ancestors.unite(ancestors_of[predecessor]);
  ancestors.insert(predecessor);
}

}  // namespace

int64_t StepGraph::edge_count() const {
  int64_t edges = 0;
  for (const std::vector<int>& before : predecessors) edges += std::ssize(before);
  return edges;
}

StepGraph step_dependencies(const Program& program, ArenaSharing sharing) {
  const size_t steps = program.steps.size();
  const MemoryIds memory = memory_ids(program, sharing);
  std::vector<std::optional<std::vector<int>>> stated_writes;
  for (const ProgramKernel& kernel : program.kernels) {
    stated_writes.push_back(kernel_written_parameters(kernel));
  }
  const std::vector<std::map<int, KernelOutputRegion>> regions = regions_of_steps(program);
  std::map<int, MemoryHistory> history;
  std::vector<StepSet> ancestors;
  StepGraph graph;
  for (size_t s = 0; s < steps; ++s) {
    const ProgramStep& step = program.steps[s];
    const std::vector<bool> written = written_arguments(program, step, stated_writes[step.kernel]);
    std::map<int, Access> touched;  // memory id -> how this step touches it
    for (size_t position = 0; position < step.args.size(); ++position) {
      const int buffer = step.args[position];
      const auto region = regions[s].find(static_cast<int>(position));
      for (const int id : memory.buffers[buffer]) {
        Access& access = touched[id];
        if (!written[position]) {
          access.read = true;
        } else if (region != regions[s].end()) {
          access.regions.emplace_back(buffer, region->second);
        } else {
          access.written = true;
        }
      }
    }
    for (const int id : memory.workspaces[s]) touched[id].written = true;
    std::vector<int> hazards;
    for (const auto& [id, access] : touched) {
      access_memory(static_cast<int>(s), access, history[id], hazards);
    }
    // Latest first: a hazard reachable from a later kept one is implied by it.
    std::sort(hazards.begin(), hazards.end(), std::greater<>());
    hazards.erase(std::unique(hazards.begin(), hazards.end()), hazards.end());
    StepSet before(steps);
    std::vector<int> kept;
    for (const int hazard : hazards) {
      if (before.contains(hazard)) continue;
      kept.push_back(hazard);
      add_ancestry(before, hazard, ancestors);
    }
    std::reverse(kept.begin(), kept.end());
    graph.predecessors.push_back(std::move(kept));
    ancestors.push_back(std::move(before));
  }
  return graph;
}

std::vector<StepSet> step_ancestors(const StepGraph& graph) {
  const size_t steps = graph.predecessors.size();
  std::vector<StepSet> ancestors;
  for (const std::vector<int>& predecessors : graph.predecessors) {
    StepSet before(steps);
    for (const int predecessor : predecessors) add_ancestry(before, predecessor, ancestors);
    ancestors.push_back(std::move(before));
  }
  return ancestors;
}

std::vector<int> step_levels(const StepGraph& graph) {
  std::vector<int> levels;
  for (const std::vector<int>& predecessors : graph.predecessors) {
    int level = 0;
    for (const int predecessor : predecessors) level = std::max(level, levels[predecessor] + 1);
    levels.push_back(level);
  }
  return levels;
}

int widest_level(const StepGraph& graph) {
  std::vector<int> steps_on_level;
  for (const int level : step_levels(graph)) {
    if (level >= std::ssize(steps_on_level)) steps_on_level.resize(level + 1, 0);
    ++steps_on_level[level];
  }
  return steps_on_level.empty() ? 0
                                : *std::max_element(steps_on_level.begin(), steps_on_level.end());
}

}  // namespace kiln
