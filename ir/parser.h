// IR text parser: the inverse of ir/printer.h. Errors are InputErrors of the form
// "FILE:LINE:COL: message" naming the offending token.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace kiln {

std::unique_ptr<Graph> parse_graph(std::string_view text, const std::string& filename = "<text>");

}  // namespace kiln
