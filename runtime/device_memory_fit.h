// Whether a program fits the GPU's free memory before a session allocates any of it: its
// weights, its arena (the planned intermediates) and its input and output buffers, against what
// cudaMemGetInfo reports free, so that a program too large for the GPU is an input error naming
// the bytes (exit 2) rather than a cudaMalloc failure halfway through loading; likewise for a
// further session sharing the weights.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/program.h"

namespace kiln {

// The device bytes a session of `program` allocates: weights + arena + inputs + outputs.
uint64_t device_bytes_needed(const Program& program);

// "" when `program` fits in `free_bytes`; else the message, e.g. "the program needs 1.50 GiB of
// GPU memory (weights 1.00 GiB, arena 512.0 MiB, inputs and outputs 1.2 MiB); the GPU has
// 1.00 GiB free".
std::string device_memory_shortfall(const Program& program, uint64_t free_bytes);

// The same for one more session sharing a loaded program's weights (Session::share): the arena
// it allocates at once (its input and output buffers come later, and only for runs on host
// tensors), e.g. "a shared session of the program needs 512.0 MiB of GPU memory for its arena
// (the weights are shared); the GPU has 100.0 MiB free".
std::string shared_session_shortfall(const Program& program, uint64_t free_bytes);

}  // namespace kiln
