// A graph as text for people and tools, at any stage of the pipeline: kiln IR text (docs/IR.md),
// Graphviz DOT (fusions as clusters), a JSON summary or a short text summary.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln {

enum class DumpFormat { kText, kDot, kJson, kSummary };

// "text", "dot", "json" or "summary"; throws InputError on anything else.
DumpFormat parse_dump_format(const std::string& name);

// kText: print(parse(t)) == t. kJson: {"graph", "inputs", "outputs", "nodes", "constants",
// "constant_bytes", "ops": {op: count}, "kernels": {"total", "fusions": {kind: count},
// "unfused": {op: count}, "views"}}. kSummary: a few lines of counts.
std::string dump_graph(const Graph& graph, DumpFormat format);

}  // namespace kiln
