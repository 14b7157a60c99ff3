// IR verifier: SSA (each value defined once, before use), node order, operand counts and
// attributes against the op table, result types against the shape functions, outputs defined.
#pragma once

#include "ir/graph.h"

namespace kiln {

// Throws InputError describing the first problem, naming the node or value.
void verify_graph(const Graph& graph);

// The per-node part of verify_graph: operand count and attributes against the op table, and
// result types equal to what the op's shape function infers. Throws InputError naming the node.
void verify_node(const Node& node);

}  // namespace kiln
