// Model loading for the kiln commands.
#include "tools/model_loading.h"

#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/parser.h"

namespace kiln::tools {

std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : specs) {
    const size_t equals = spec.rfind('=');
    if (equals == std::string::npos || equals == 0) {
      throw InputError("--input-shape '" + spec + "': expected NAME=DIMS, e.g. x=1x3x224x224");
    }
    Shape shape;
    std::stringstream dims(spec.substr(equals + 1));
    std::string dim;
    while (std::getline(dims, dim, 'x')) {
      const bool digits = !dim.empty() && dim.size() <= 12 &&
                          dim.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) {
        throw InputError("--input-shape '" + spec + "': '" + dim +
                         "' is not a dimension (write dims as 1x3x224x224)");
      }
      shape.push_back(std::stoll(dim));
    }
    shapes[spec.substr(0, equals)] = shape;
  }
  return shapes;
}

std::unique_ptr<Graph> load_model(const std::string& path,
                                  const onnx_import::ImportOptions& options) {
  if (path.ends_with(".onnx")) return onnx_import::import_onnx_file(path, options);
  if (path.ends_with(".kir")) {
    std::ifstream file(path, std::ios::binary);
    if (!file) throw InputError(path + ": cannot open file");
    std::ostringstream text;
    text << file.rdbuf();
    return parse_graph(text.str(), path);
  }
  throw InputError(path + ": unknown model type (expected .onnx or .kir)");
}

}  // namespace kiln::tools
