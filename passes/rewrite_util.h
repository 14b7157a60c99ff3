// Graph edits the rewriting passes share: merging the provenance of the nodes a rewrite replaces,
// and replacing a node that computes nothing (an identity, a reshape to its operand's shape) by its
// operand while graph outputs keep their names.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

// The ONNX node names of `nodes`, in order, each once.
std::vector<std::string> merged_provenance(const std::vector<Node*>& nodes);

// Rewires the uses of `node`'s result to its operand 0 and erases the node. When the result is a
// graph output, the operand takes its name; if the operand is a graph input or output itself
// (whose name the caller binds by), the node stays. Returns "" when done, else why not.
std::string forward_to_operand(Graph& graph, Node* node);

}  // namespace kiln::passes
