// The --input-shape option the commands share: "NAME=1x3x224x224" specs to shapes, and for kiln
// compile "NAME=1..16x3x224x224" specs to ranges (a program for every shape in them).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/tensor.h"
#include "kiln/dynamic_compile.h"

namespace kiln::tools {

// Parses "NAME=1x3x224x224" specs (an empty DIMS is a scalar); throws InputError naming the bad
// spec (a range among them: this command takes one shape).
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);

// Parses specs whose dims are numbers or ranges LO..HI ("input_ids=1..32x128").
InputRanges parse_input_ranges(const std::vector<std::string>& specs);

}  // namespace kiln::tools
