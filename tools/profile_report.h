// The per-launch profile table `kiln bench --profile N` prints for a variant: its N slowest
// launches (from the JSON launches profile_launches in cmd_bench.cc builds: step, kernel, ms,
// grid, block, shared_bytes, tactic, flops, bytes, nodes), each with its share of the sum, the
// TFLOP/s it achieved where its kernel states its flops (runtime/kernel_header.h), the GB/s of
// its buffers' bytes (each argument buffer read or written once: a lower bound of its memory
// traffic, to hold memory-bound kernels against the card's copy bandwidth), launch geometry,
// and the ONNX nodes and tactic of its kernel.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kiln::tools {

// The table, after a header line naming the variant, as text ending in a newline.
std::string profile_table(const std::string& variant, const nlohmann::json& launches, int count);

}  // namespace kiln::tools
