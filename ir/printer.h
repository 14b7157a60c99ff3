// IR text printer. The format (see docs/IR.md) round-trips through ir/parser.h:
// print_graph(*parse_graph(text)) == text for any text print_graph produced.
#pragma once

#include <string>

#include "ir/graph.h"

namespace kiln {

struct PrintOptions {
  // Constants with at most this many elements print their data inline; larger ones print
  // only their type (their data is "elided" in the text).
  int64_t max_inline_elements = 16;
};

std::string print_graph(const Graph& graph, const PrintOptions& options = {});

}  // namespace kiln
