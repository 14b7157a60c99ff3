// Parsing --input-shape specs (see the header).
#include "tools/input_shapes.h"

#include "ir/error.h"

namespace kiln::tools {
namespace {

int64_t parse_number(const std::string& spec, const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    throw InputError("--input-shape '" + spec + "': '" + text +
                     "' is not a dimension (write dims as 1x3x224x224, ranges as 1..16)");
  }
  if (text.size() > 12) {
    throw InputError("--input-shape '" + spec + "': dimension " + text + " is too large");
  }
  return std::stoll(text);
}

// The spec's name and its dims, each a number or LO..HI.
std::pair<std::string, std::vector<DimRange>> parse_spec(const std::string& spec) {
  const size_t equals = spec.rfind('=');
  if (equals == std::string::npos || equals == 0) {
    throw InputError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. x=1x3x224x224");
  }
  // DIMS is 'x'-separated numbers or ranges; an empty DIMS is a scalar.
  const std::string dims = spec.substr(equals + 1);
  std::vector<DimRange> ranges;
  for (size_t begin = 0, end = 0; !dims.empty() && end != std::string::npos; begin = end + 1) {
    end = dims.find('x', begin);
    const std::string dim = dims.substr(begin, end - begin);
    if (const size_t dots = dim.find(".."); dots != std::string::npos) {
      const DimRange range{parse_number(spec, dim.substr(0, dots)),
                           parse_number(spec, dim.substr(dots + 2))};
      if (range.min < 1 || range.min > range.max) {
        throw InputError("--input-shape '" + spec + "': range " + dim +
                         " is not LO..HI with 1 <= LO <= HI");
      }
      ranges.push_back(range);
    } else {
      const int64_t size = parse_number(spec, dim);
      ranges.push_back({size, size});
    }
  }
  return {spec.substr(0, equals), ranges};
}

}  // namespace

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    auto [name, ranges] = parse_spec(spec);
    Shape& shape = shapes[name];
    shape.clear();  // a later spec for the same input replaces an earlier one
    for (const DimRange& range : ranges) {
      if (range.min != range.max) {
        throw InputError("--input-shape '" + spec +
                         "': ranges are for kiln compile (one program for every shape in them); "
                         "this command takes one shape");
      }
      shape.push_back(range.min);
    }
  }
  return shapes;
}

InputRanges parse_input_ranges(const std::vector<std::string>& specs) {
  InputRanges ranges;
  for (const std::string& spec : specs) {
    auto [name, dims] = parse_spec(spec);
    ranges[name] = std::move(dims);
  }
  return ranges;
}

}  // namespace kiln::tools
