// The frame of kernels that compute one output element per thread (direct conv, LRN) or one
// line of them (cum_sum): blocks of 256 threads in a grid-stride loop over `i`, each thread
// writing every body output at its elements after the fusion's epilogue.
#pragma once

#include <string>
#include <vector>

#include "codegen/element_emitter.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Starts `spec` for `body` (begin_spec) with a grid for `count` threads' work; returns the
// outputs' parameter names. Throws UnsupportedError, naming `anchor`, for an output that does not
// have `output_elements` elements.
std::vector<std::string> begin_grid_stride_spec(KernelSpec& spec, const KernelBody& body,
                                                const Node& anchor, int64_t count,
                                                int64_t output_elements);

// The index type such a kernel needs.
std::string grid_stride_index_type(const KernelBody& body);

// Opens the loop over `i`.
void open_grid_stride_loop(ElementEmitter& e, int64_t count);

// Writes each body output at `i` (anchor's result bound to `result` there) and closes the loop.
void close_grid_stride_loop(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                            const std::string& result, const std::vector<std::string>& outputs);

}  // namespace kiln::codegen
