// The text `kiln inspect` prints for a compiled program: target archs, kernels (provenance,
// binary sizes), the launch schedule (geometry, the steps each waits for, arguments), buffers
// (where each lives, live ranges), the step graph (edges, levels, the widest level: how many
// steps may run at once; runtime/step_dependencies.h), the memory plan (arena peak against the
// naive sum and the lower bound) and weights.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/program.h"

namespace kiln::tools {

// "312 B", "64.0 KiB", "1.5 MiB", "2.0 GiB".
std::string format_bytes(int64_t bytes);

// The report for a valid program (validate_program).
std::string inspect_report(const Program& program);

}  // namespace kiln::tools
