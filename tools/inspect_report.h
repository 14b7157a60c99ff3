// The text `kiln inspect` prints for a compiled program: target archs, kernels (provenance,
// binary sizes), the launch schedule (geometry, the steps each waits for, arguments), buffers
// (where each lives, live ranges), the step graph (edges, levels, the widest level: how many
// steps may run at once; runtime/step_dependencies.h), the memory plan (arena peak against the
// naive sum and the lower bound) and weights; for a dynamic program (compiled for ranges of
// input shapes) its ranges and variants first.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/dynamic_program.h"
#include "runtime/program.h"

namespace kiln::tools {

// "312 B", "64.0 KiB", "1.5 MiB", "2.0 GiB".
std::string format_bytes(int64_t bytes);

// The report for a valid program (validate_program).
std::string inspect_report(const Program& program);

// A dynamic program's report: its varying dims and ranges, each class (padded, or why not),
// each variant (sizes, input shapes, steps, arena, weight set), then the largest variant's
// report.
std::string dynamic_inspect_report(const DynamicProgram& program);

}  // namespace kiln::tools
