// The frame of kernels that compute one output element per thread (direct conv, LRN): blocks of
// 256 threads in a grid-stride loop over the flat output index `i`, each thread writing every
// body output at `i` after the fusion's epilogue.
#pragma once

#include <string>
#include <vector>

#include "codegen/element_emitter.h"
#include "codegen/kernel_spec.h"

namespace kiln::codegen {

// Starts `spec` for `body` (begin_spec) with a grid for `count` elements; returns the outputs'
// parameter names. Throws UnsupportedError, naming `anchor`, for an output that does not have
// `count` elements.
std::vector<std::string> begin_grid_stride_spec(KernelSpec& spec, const KernelBody& body,
                                                const Node& anchor, int64_t count);

// The index type such a kernel needs.
std::string grid_stride_index_type(const KernelBody& body);

// Opens the loop over `i`.
void open_grid_stride_loop(ElementEmitter& e, int64_t count);

// Writes each body output at `i` (anchor's result bound to `result` there) and closes the loop.
void close_grid_stride_loop(ElementEmitter& e, const KernelBody& body, const Node& anchor,
                            const std::string& result, const std::vector<std::string>& outputs);

}  // namespace kiln::codegen
