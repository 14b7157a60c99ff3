// IR verifier: SSA (each value defined once, before use), node order, operand counts and
// attributes against the op table, result types against the shape functions, outputs defined.
#pragma once

#include "ir/graph.h"

namespace kiln {

// Throws InputError describing the first problem, naming the node or value.
void verify_graph(const Graph& graph);

}  // namespace kiln
