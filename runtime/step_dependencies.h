// The order a program's steps must keep when they may run at once: a step depends on an earlier
// one when both touch the same memory and either writes it (read after write, write after read,
// write after write). Steps with no path between them (Inception's branches, separate Q/K/V
// projections) may run concurrently: the session builds its CUDA graph from these edges
// (session.cc), and the memory planner lets two buffers share bytes only where the edges order
// every use of one before every use of the other (memory_plan.h).
//
//   What a step writes: the arguments at the positions its kernel's header states (outputs and
//   workspace; kernel_header.h). For a kernel that states none, every argument that is an
//   intermediate or an output (inputs and weights are only read). A step with a library call
//   also writes the call's workspace (ProgramLibraryGemm), which every call shares (before the
//   memory plan places it, one memory for all): the calls are ordered among themselves.
//   What part of it a step writes: all of it, or where the kernel's header states an output
//   region for the position (a concat's operand written into its slice of the concat's buffer,
//   codegen/output_placement.h), that region. Steps writing disjoint regions of one buffer do
//   not depend on each other; a region write and any other access of the memory do.
//   What memory an argument is: its buffer. With ArenaSharing::kOrdersSteps, intermediates whose
//   arena bytes overlap are the same memory, so a plan that is valid only for the steps in order
//   (one written before plans followed these edges) still runs correctly.
//   Which edges: the transitive reduction. An edge i -> j is left out when another path leads
//   from i to j. Every edge goes from an earlier step to a later one, so the steps in program
//   order are a topological order.
//
//        0 ──► 1 ──► 3        step 0 writes a; steps 1 and 2 read it and write b and c, and may
//        └───► 2 ──┘          run at once; step 3 reads b and c. Levels 0, 1, 1, 2: the widest
//                             level has 2 steps; 4 edges.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/program.h"
#include "runtime/step_set.h"

namespace kiln {

enum class ArenaSharing {
  kIgnored,      // each buffer is its own memory: the planner's view, before offsets exist
  kOrdersSteps,  // intermediates sharing arena bytes are one memory: the session's view
};

struct StepGraph {
  // Per step, the earlier steps it waits for: ascending, none reachable through another.
  std::vector<std::vector<int>> predecessors;

  int64_t edge_count() const;
};

// The step graph of a program whose step arguments are valid buffer indices (validate_program).
StepGraph step_dependencies(const Program& program, ArenaSharing sharing);

// Per step, the steps a path leads from: those that finish before it starts.
std::vector<StepSet> step_ancestors(const StepGraph& graph);

// Per step: 0 without predecessors, else one more than its predecessors' highest level.
std::vector<int> step_levels(const StepGraph& graph);

// The number of steps on the widest level (0 for no steps): steps on one level never depend on
// each other, so that many may run at once.
int widest_level(const StepGraph& graph);

}  // namespace kiln
