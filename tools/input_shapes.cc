// Parsing --input-shape specs (see the header).
#include "tools/input_shapes.h"

#include "ir/error.h"

namespace kiln::tools {

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t equals = spec.rfind('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. x=1x3x224x224");
    }
    // DIMS is 'x'-separated numbers; an empty DIMS is a scalar.
    const std::string dims = spec.substr(equals + 1);
    Shape shape;
    for (size_t begin = 0, end = 0; !dims.empty() && end != std::string::npos; begin = end + 1) {
      end = dims.find('x', begin);
      const std::string dim = dims.substr(begin, end - begin);
      if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError("--input-shape '" + spec + "': '" + dim +
                         "' is not a dimension (write dims as 1x3x224x224)");
      }
      if (dim.size() > 12) {
        throw InputError("--input-shape '" + spec + "': dimension " + dim + " is too large");
      }
      shape.push_back(std::stoll(dim));
    }
    shapes[spec.substr(0, equals)] = shape;
  }
  return shapes;
}

}  // namespace kiln::tools
