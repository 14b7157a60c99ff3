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

#include "ir/dtype.h"
#include "runtime/program.h"

namespace kiln {

inline constexpr std::string_view kTacticLine = "// tactic: ";
inline constexpr std::string_view kFlopsLine = "// flops per launch: ";
inline constexpr std::string_view kParametersLine = "// parameters: ";
inline constexpr std::string_view kWrittenParametersLine = "// written parameters: ";
inline constexpr std::string_view kTensorMapsLine = "// tensor maps: ";
inline constexpr std::string_view kOutputRegionsLine = "// output regions: ";
// The whole line: the kernel first waits for the kernels it depends on (griddepcontrol.wait on
// sm_90+), so the session may launch it while they finish (session.h, early launch).
inline constexpr std::string_view kEarlyLaunchLine =
    "// early launch: waits for the kernels it depends on (sm_90+)";

// The tactic the kernel's header states, or "" (kernels that state none: loops, reductions).
std::string kernel_tactic(const ProgramKernel& kernel);

// Whether the header has kEarlyLaunchLine: the kernel's code for sm_90 and newer starts by
// waiting for the kernels it depends on, so it may be launched before they finish.
bool kernel_waits_for_prior_grids(const ProgramKernel& kernel);

// The floating-point operations per launch the header states, or 0.
int64_t kernel_flops(const ProgramKernel& kernel);

// The number of pointer parameters the kernel function takes (its tensor maps follow them and are
// not counted), as the header states it, or
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

// A TMA tensor map (Hopper's bulk tensor copies, cp.async.bulk.tensor) that a kernel takes by
// value after its pointer parameters: the session encodes it for the device pointer the step
// passes as parameter `parameter` (cuTensorMapEncodeTiled, session.h) at every launch and graph
// build. The kernel receives it as a 128-byte `const __grid_constant__ kiln_tensor_map`.
struct KernelTensorMap {
  int parameter = 0;             // the pointer parameter whose buffer the map reads
  DType dtype = DType::kF16;     // its elements
  std::vector<int64_t> dims;     // elements along each dimension, innermost first (rank 2 to 5)
  std::vector<int64_t> strides;  // bytes from one index to the next along dims[1..]: rank - 1
  std::vector<int64_t> box;      // elements one copy moves along each dimension (1 to 256)
  int swizzle = 128;             // the shared-memory swizzle in bytes: 0 (none), 32, 64 or 128
  bool operator==(const KernelTensorMap&) const = default;
};

// The header line's value for `maps`, in kernel parameter order, "; "-separated, each
// "PARAM DTYPE dims D0xD1.. strides S1x.. box B0xB1.. swizzle W", e.g.
// "0 f16 dims 768x4096 strides 1536 box 64x128 swizzle 128" (dims and box innermost first, in
// elements; strides in bytes).
std::string format_tensor_maps(const std::vector<KernelTensorMap>& maps);
// The tensor maps the header states ("// tensor maps: ..."; none without the line), or nullopt
// where the line is malformed (program_validation.h refuses it).
std::optional<std::vector<KernelTensorMap>> kernel_tensor_maps(const ProgramKernel& kernel);

// The part of its buffer a written parameter covers, where the kernel writes only part of it: an
// output placed in its slice of a concat's buffer (codegen/output_placement.h). Its elements
// are runs of `block` elements, `stride` apart, the first at `offset` (block ≤ stride, offset +
// block ≤ stride), up to the buffer's end. Steps writing disjoint regions of one buffer do not
// depend on each other (step_dependencies.h).
struct KernelOutputRegion {
  int parameter = 0;
  int64_t block = 0, stride = 0, offset = 0;
  bool operator==(const KernelOutputRegion&) const = default;

  // Whether no element of this region is one of `other`'s (regions of one stride whose runs do
  // not meet; regions of different strides are taken to overlap).
  bool disjoint_from(const KernelOutputRegion& other) const;
};

// "PARAM block B stride S offset O", e.g. "3 block 64 stride 128 offset 64".
std::string format_output_region(const KernelOutputRegion& region);
// The regions the header states ("// output regions: ...", "; "-separated, in increasing
// parameter order; none without the line), or nullopt where the line is malformed or a region's
// numbers break the rules above (program_validation.h refuses it).
std::optional<std::vector<KernelOutputRegion>> kernel_output_regions(const ProgramKernel& kernel);

}  // namespace kiln
