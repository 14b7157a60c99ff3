// The frame of kernels whose threads stride over a flat index `i`: blocks of 256 threads, at most
// 65535 blocks, the loop taking the rest. Loop, pooling, direct conv and LRN kernels compute one
// output element per index, cum_sum one line of them; the loop kernel a vector of them.
#pragma once

#include <string>
#include <vector>

#include "codegen/element_emitter.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Starts `spec` for `body` (begin_spec) with a grid for `threads` threads; returns the outputs'
// parameter names.
std::vector<std::string> begin_grid_stride_frame(KernelSpec& spec, const KernelBody& body,
                                                 int64_t threads);

// begin_grid_stride_frame for `count` threads' work, after checking the outputs. Throws
// UnsupportedError, naming `anchor`, for an output that does not have `output_elements` elements.
std::vector<std::string> begin_grid_stride_spec(KernelSpec& spec, const KernelBody& body,
                                                const Node& anchor, int64_t count,
                                                int64_t output_elements);

// The index type such a kernel needs.
std::string grid_stride_index_type(const KernelBody& body);

// Declares `stride` and `first` (this thread's first index), in the kernel's index type.
void declare_grid_stride(ElementEmitter& e);

// Declares them and opens the loop over `i`.
void open_grid_stride_loop(ElementEmitter& e, int64_t count);

// Writes each body output at `i` (anchor's result bound to `result` there) and closes the loop.
void close_grid_stride_loop(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                            const std::string& result, const std::vector<std::string>& outputs);

}  // namespace kiln::codegen
