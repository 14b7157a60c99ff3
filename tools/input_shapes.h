// The --input-shape option the commands share: "NAME=1x3x224x224" specs to shapes.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace kiln::tools {

// Parses "NAME=1x3x224x224" specs (an empty DIMS is a scalar); throws InputError naming the bad
// spec.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);

}  // namespace kiln::tools
