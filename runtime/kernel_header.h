// What a kernel's source states about it in its header comment, beside the ONNX nodes: how it
// computes (its tactic, e.g. "wgmma 128x192x64 tile, 4 stages"), the floating-point operations
// one launch does (a contraction's 2·batch·M·N·K), how many parameters it takes and which of them
// it writes. Codegen writes the lines (kernel_source,
// codegen/kernel_spec.h); `kiln inspect` and `kiln bench --profile` read them back from a
// program's kernels, so a .kiln carries them in the sources it stores, with no field of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/program.h"

namespace kiln {

inline constexpr std::string_view kTacticLine = "// tactic: ";
inline constexpr std::string_view kFlopsLine = "// flops per launch: ";
inline constexpr std::string_view kParametersLine = "// parameters: ";
inline constexpr std::string_view kWrittenParametersLine = "// written parameters: ";

// The tactic the kernel's header states, or "" (kernels that state none: loops, reductions).
std::string kernel_tactic(const ProgramKernel& kernel);

// The floating-point operations per launch the header states, or 0.
int64_t kernel_flops(const ProgramKernel& kernel);

// The number of parameters (pointers) the kernel function takes, as the header states it, or
// -1 for a source that does not (one not written by codegen). Steps must pass exactly as many
// arguments (program_validation.h); the session checks the compiled kernel against it.
int kernel_parameter_count(const ProgramKernel& kernel);

// The positions of the parameters the kernel may write (its pointers that are not const), in
// increasing order, as the header states them ("// written parameters: 2, 3"), or nullopt for a
// source that does not state them or states them in another form. Without them a step's
// dependencies take every argument that is not an input or a weight as written
// (step_dependencies.h).
std::optional<std::vector<int>> kernel_written_parameters(const ProgramKernel& kernel);
// Whether the header has a written-parameters line at all (one kernel_written_parameters cannot
// read is malformed: program_validation.h refuses it).
bool kernel_states_written_parameters(const ProgramKernel& kernel);

}  // namespace kiln
