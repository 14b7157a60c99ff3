// Lowering: a fused graph (after the pass pipeline) to a Program (runtime/program.h) with one
// kernel per kernel node, its buffers, its weights and its launch schedule. The kernels get
// their CUDA source here; compile_program (compile_program.h) compiles them.
//
//   buffers  the graph's inputs and outputs (in signature order), weights (constants a kernel
//            reads, their bytes at kWeightAlignment offsets in Program::weights) and
//            intermediates (offset -1, for the memory planner). A reshape is a view: its users
//            get the buffer of the value it views, and it has no step.
//   outputs  a kernel writes a graph output directly into the output's buffer; an output that
//            is a graph input, a constant, or the same value as an earlier output (through
//            views or not) gets its own buffer, filled by a copy kernel at the end.
//   kernels  each kernel node's body goes to the first emitter of the emitter table
//            (emitter_table.h: attention, pool, direct conv, cum_sum, contraction, reduction,
//            resize, loop) that takes it, which emits its kernels for CodegenOptions::target (a
//            split-K contraction is two, sharing a workspace). Kernels of equal code are one
//            ProgramKernel launched by several steps; its source's comment names every step's ONNX
//            nodes.
//   tactics  a kernel node its emitter can compute several ways (kernel_tactics) takes the one
//            CodegenOptions::choose_tactic picks (the heuristic's without it); the report lists
//            each such node, its tactic and its steps.
//   concats  a concat whose operands' producers can write their slices of its buffer launches
//            nothing: they do (output_placement.h; CodegenOptions::concat_views).
//            A kernel whose outputs have no elements still gets a step (one block that does
//            nothing), so that every output buffer is passed to a step, as the runtime requires.
//
// Other kernel nodes (opaque ops no emitter anchors, such as top_k or einsum, and any op an
// emitter cannot compute) make lowering throw one UnsupportedError listing them all: "the GPU
// backend does not generate these kernels yet: ...".
#pragma once

#include <string>
#include <vector>

#include "codegen/options.h"
#include "codegen/tactic_site.h"
#include "ir/graph.h"
#include "runtime/program.h"

namespace kiln::codegen {

// What lowering left out with CodegenOptions::skip_unsupported (each kernel node and why), and
// the kernel nodes that have several tactics, in step order, with the one each took.
struct LoweringReport {
  std::vector<std::string> skipped;
  std::vector<TacticUse> tactics;
};

Program lower_graph(const Graph& fused_graph, const CodegenOptions& options,
                    LoweringReport* report = nullptr);

}  // namespace kiln::codegen
