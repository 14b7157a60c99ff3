// Graphviz DOT output of a graph: inputs, constants, nodes (op and ONNX provenance), edges
// labelled with types. (Fusion clusters come with the fusion passes.)
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln {

std::string graph_to_dot(const Graph& graph);

}  // namespace kiln
